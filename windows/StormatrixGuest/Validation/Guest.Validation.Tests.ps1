# Checks that a guest can run a stormatrix matrix. Run through Invoke-StormatrixGuestValidation
# (Pester 5 container with -Data); every failure message says how to fix it.
param(
    [Parameter(Mandatory)][string]$Serial,
    [string]$Controller = '',
    [ValidateSet('fio', 'diskspd')][string]$Engine = 'fio',
    [string]$FioPath = 'C:\Program Files\fio\fio.exe',
    [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',
    [string]$ModulePath = (Join-Path (Split-Path -Parent $PSScriptRoot) 'StormatrixGuest.psd1')
)

BeforeAll {
    Import-Module -Name $ModulePath -Force
    $script:disk = $null
    $script:diskProblem = ''
    try {
        $script:disk = Find-StormatrixTestDisk -Serial $Serial
    }
    catch {
        $script:diskProblem = $_.Exception.Message
    }
}

Describe 'Test disk' {
    It 'Should find exactly one disk with the serial' {
        $script:diskProblem | Should -BeNullOrEmpty -Because 'the benchmark addresses the test disk by serial, never by number'
    }

    It 'Should not be the boot or system disk' {
        $script:disk | Should -Not -BeNullOrEmpty -Because "no disk has serial '$Serial'"
        ($script:disk.IsBoot -or $script:disk.IsSystem) | Should -BeFalse -Because "disk $($script:disk.Number) holds Windows. Fix: give the serial to a separate, empty disk"
    }

    It 'Should be raw (no partition table)' {
        $script:disk | Should -Not -BeNullOrEmpty -Because "no disk has serial '$Serial'"
        [string]$script:disk.PartitionStyle | Should -Be 'RAW' -Because "Windows refuses raw writes over volumes. Fix: Initialize-StormatrixGuest -Serial $Serial -ClearTestDisk (destroys the disk's data)"
    }

    It 'Should be offline' {
        $script:disk | Should -Not -BeNullOrEmpty -Because "no disk has serial '$Serial'"
        [bool]$script:disk.IsOffline | Should -BeTrue -Because "an online disk can be mounted and written by Windows. Fix: Set-Disk -Number $($script:disk.Number) -IsOffline `$true (or Initialize-StormatrixGuest -Serial $Serial)"
    }
}

Describe 'Controller driver' {
    It 'Should have a driver bound for the controller under test' -Skip:(-not $Controller) {
        $controllers = @(Get-StormatrixStorageController -Controller $Controller)
        $controllers.Count | Should -BeGreaterThan 0 -Because "no $Controller controller is visible to Windows. Fix: attach the test disk to a $Controller controller on the hypervisor"
        @($controllers | Where-Object { $_.DriverBound }).Count | Should -BeGreaterThan 0 -Because ("the $Controller controller has no working driver (status $(($controllers | ForEach-Object { $_.Status }) -join ', ')). " +
            'Fix: install its driver (virtio-win for virtio-blk/virtio-scsi) with pnputil /add-driver <inf> /install, then reboot')
    }
}

Describe 'Benchmark engine' {
    It 'Should have fio present and supported' -Skip:($Engine -ne 'fio') {
        Test-Path -LiteralPath $FioPath -PathType Leaf | Should -BeTrue -Because "fio.exe is not at $FioPath. Fix: Initialize-StormatrixGuest -Serial $Serial -FioSource <folder or share with fio.exe>"
        $version = Get-StormatrixEngineVersion -Engine fio -Path $FioPath
        $version.Supported | Should -BeTrue -Because "fio '$($version.Version)' is older than $($version.Minimum). Fix: install a newer fio build"
    }

    It 'Should have DiskSpd present and supported' -Skip:($Engine -ne 'diskspd') {
        Test-Path -LiteralPath $DiskSpdPath -PathType Leaf | Should -BeTrue -Because "diskspd.exe is not at $DiskSpdPath. Fix: copy diskspd.exe (amd64) there"
        $version = Get-StormatrixEngineVersion -Engine diskspd -Path $DiskSpdPath
        $version.Supported | Should -BeTrue -Because "DiskSpd '$($version.Version)' is older than $($version.Minimum). Fix: install DiskSpd 2.0.20 or newer"
    }
}

Describe 'System state' {
    It 'Should use the High performance power plan' {
        $plan = Get-StormatrixPowerPlan
        $plan.IsHighPerformance | Should -BeTrue -Because "the active plan is '$($plan.Name)'. Fix: powercfg /setactive 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c"
    }

    It 'Should have no reboot pending' {
        $pending = Test-StormatrixPendingReboot
        $pending.Pending | Should -BeFalse -Because ("Windows waits for a reboot ($($pending.Reasons -join '; ')). Fix: Restart-Computer, then check again")
    }
}
