# Unit tests of Get-StormatrixGuestFacts (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1. The
# installed storage drivers are read from the driver store, whatever controller the VM has now. The same
# function runs against the data-described fake Windows guest in tests/windows/test_winrm_guest_module.py and
# tests/harness/executors/test_winrm_e2e.py.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Get-StormatrixGuestFacts' {
    It 'Should report the OS build, controllers and disks with partitions' {
        Mock Get-CimInstance { [pscustomobject]@{ Caption = 'Microsoft Windows Server 2022 Standard'; Version = '10.0.20348'; BuildNumber = '20348'; LastBootUpTime = [datetime]'2026-01-01T00:00:00Z' } }
        Mock Get-Disk { @((New-TestDisk -Number 0 -Serial 'BOOT' -PartitionStyle 'GPT' -IsOffline $false -IsBoot $true), (New-TestDisk -Number 1)) }
        Mock Get-Partition { @([pscustomobject]@{ PartitionNumber = 1; DriveLetter = 'C'; Size = 100GB; Type = 'Basic' }) }
        Mock Get-StormatrixStorageController { [pscustomobject]@{ Name = 'sata'; DriverBound = $true } }
        Mock Get-StorageSetting { [pscustomobject]@{ NewDiskPolicy = 'OfflineShared' } }
        $facts = Get-StormatrixGuestFacts -Serial 'STORMATRIX01'
        $facts.SanPolicy | Should -Be 'OfflineShared'
        $facts.OsBuild | Should -Be '20348'
        $facts.TestDisk | Should -Be 1
        $facts.Disks | Should -HaveCount 2
        $facts.Disks[1].SerialNumber | Should -Be 'STORMATRIX01'
        $facts.Disks[0].Partitions[0].DriveLetter | Should -Be 'C'
        $facts.Controllers[0].Name | Should -Be 'sata'
        Should -Invoke Get-Partition -Exactly -Times 1 -Scope It -ParameterFilter { $DiskNumber -eq 0 }
    }
}

Describe 'Get-StormatrixGuestFacts installed storage drivers' {
    # the driver store (%SystemRoot%\System32\DriverStore\FileRepository, one folder per staged package
    # holding its INF) is a real folder tree under TestDrive with $env:SystemRoot pointing at it
    BeforeAll {
        $script:savedSystemRoot = $env:SystemRoot
        function script:New-DriverPackage {
            # a staged package as Windows keeps it: <inf>_<arch>_<hash>\<inf>
            param([string]$Root, [string]$Folder, [string]$Inf)
            $path = Join-Path (Join-Path $Root 'System32/DriverStore/FileRepository') $Folder
            $null = New-Item -ItemType Directory -Path $path -Force
            if ($Inf) { Set-Content -LiteralPath (Join-Path $path $Inf) -Value "; $Inf" }
        }
    }
    AfterAll {
        $env:SystemRoot = $script:savedSystemRoot
    }
    BeforeEach {
        Mock Get-CimInstance { [pscustomobject]@{ Caption = 'Microsoft Windows Server 2022 Standard'; Version = '10.0.20348'; BuildNumber = '20348'; LastBootUpTime = [datetime]'2026-01-01T00:00:00Z' } }
        Mock Get-Disk { @() }
        Mock Get-StormatrixStorageController { [pscustomobject]@{ Name = 'sata'; DriverBound = $true; Service = 'storahci' } }
        Mock Get-StorageSetting { [pscustomobject]@{ NewDiskPolicy = 'OfflineShared' } }
    }

    It 'Should list the virtio-win drivers staged in the driver store, also without their controller' {
        $root = Join-Path $TestDrive 'win-both'
        New-DriverPackage -Root $root -Folder 'vioscsi.inf_amd64_78d8cd53bcd4d1b2' -Inf 'vioscsi.inf'
        New-DriverPackage -Root $root -Folder 'viostor.inf_amd64_5a8f3c1e2b7d9e04' -Inf 'viostor.inf'
        New-DriverPackage -Root $root -Folder 'netkvm.inf_amd64_0c1d2e3f4a5b6c7d' -Inf 'netkvm.inf'
        $env:SystemRoot = $root
        $facts = Get-StormatrixGuestFacts
        @($facts.InstalledStorageDrivers) | Should -Be @('viostor', 'vioscsi')
        $facts.StorageDriverPackages | Should -Contain 'vioscsi.inf_amd64_78d8cd53bcd4d1b2'
        $facts.StorageDriverPackages | Should -Not -Contain 'netkvm.inf_amd64_0c1d2e3f4a5b6c7d'
    }

    It 'Should leave out a driver whose package folder lacks its INF, and one that is not staged' {
        $root = Join-Path $TestDrive 'win-scsi'
        New-DriverPackage -Root $root -Folder 'vioscsi.inf_amd64_78d8cd53bcd4d1b2' -Inf 'vioscsi.inf'
        New-DriverPackage -Root $root -Folder 'viostor.inf_amd64_5a8f3c1e2b7d9e04' -Inf ''
        $env:SystemRoot = $root
        $facts = Get-StormatrixGuestFacts
        @($facts.InstalledStorageDrivers) | Should -Be @('vioscsi')
        $facts.StorageDriverPackages | Should -Be @('vioscsi.inf_amd64_78d8cd53bcd4d1b2')
    }

    It 'Should report an empty list, not nothing, for a driver store without virtio-win' {
        $root = Join-Path $TestDrive 'win-none'
        New-DriverPackage -Root $root -Folder 'netkvm.inf_amd64_0c1d2e3f4a5b6c7d' -Inf 'netkvm.inf'
        $env:SystemRoot = $root
        $facts = Get-StormatrixGuestFacts
        $facts.InstalledStorageDrivers -is [array] | Should -BeTrue
        @($facts.InstalledStorageDrivers) | Should -HaveCount 0
        ($facts | ConvertTo-Json -Depth 5) | Should -Match '"InstalledStorageDrivers":\s*\[\s*\]'
    }

    It 'Should report null when the driver store cannot be read, so the controller cannot mistake it for none' {
        $env:SystemRoot = Join-Path $TestDrive 'no-such-windows'
        $facts = Get-StormatrixGuestFacts
        $facts.InstalledStorageDrivers | Should -BeNullOrEmpty
        $facts.PSObject.Properties['InstalledStorageDrivers'] | Should -Not -BeNullOrEmpty
        ($facts | ConvertTo-Json -Depth 5) | Should -Match '"InstalledStorageDrivers":\s*null'
    }
}
