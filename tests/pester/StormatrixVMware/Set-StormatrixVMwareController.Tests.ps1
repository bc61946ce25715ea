# Unit tests of Set-StormatrixVMwareController (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Set-StormatrixVMwareController' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should power off, create a ParaVirtual controller with the disk, power on and wait for Tools' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001 -ReadyTimeoutSeconds 60
        $r.Moved | Should -BeTrue
        $r.PowerCycled | Should -BeTrue
        $r.After.Controller.Type | Should -Be 'ParaVirtual'
        $r.After.Disk.Filename | Should -Be $r.Before.Disk.Filename
        $r.After.BootTime | Should -Not -Be $r.Before.BootTime
        $calls = Get-TestCall
        $calls.IndexOf('Stop-VM') | Should -BeLessThan $calls.IndexOf('New-ScsiController')
        $calls.IndexOf('New-ScsiController') | Should -BeLessThan $calls.IndexOf('Start-VM')
        $calls.IndexOf('Start-VM') | Should -BeLessThan $calls.IndexOf('Wait-Tools')
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'ParaVirtual'
        (Get-TestCall -Cmdlet 'Wait-Tools')[0].TimeoutSeconds | Should -Be 60
        $calls | Should -Not -Contain 'ReconfigVM'
        (Get-TestVM).bootedWith.'Hard disk 2' | Should -Be 'ParaVirtual'
    }
    It 'Should move the disk to an empty controller of the type with Set-HardDisk instead of creating one' {
        New-TestLab -Change { param($lab) $lab.vms[0].disks[1].controllerKey = 1000; $lab.vms[0].disks[1].unitNumber = 1 }
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogicSAS -KeepControllerKey 1000, 1001
        $r.After.Controller.Key | Should -Be 1001
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 1001
        Get-TestCall | Should -Not -Contain 'New-ScsiController'
    }
    It 'Should add an NVMe controller and move the disk onto it' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -KeepControllerKey 1000, 1001
        $r.After.Controller.Type | Should -Be 'NVMe'
        @(Get-TestCall -Cmdlet 'New-NvmeController').Count | Should -Be 1
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 31000
    }
    It 'Should move the disk to LsiLogic on a new controller' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogic -KeepControllerKey 1000, 1001
        $r.After.Controller.Type | Should -Be 'LsiLogic'
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'VirtualLsiLogic'
    }
    It 'Should remove a controller an earlier cell left, and never an original one' {
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1003 -Type 'VirtualLsiLogic' -Bus 3 }
        $null = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001
        (Get-TestCall -Cmdlet 'ReconfigVM').Operations | Should -Be @('remove:1003')
        @((Get-TestVM).controllers | ForEach-Object { $_.key }) | Should -Contain 1001
    }
    It 'Should throw DiskMoveFailed with PowerCLI''s message and leave the VM off' {
        Set-TestFault -Step 'New-ScsiController' -Message 'The operation for the entity "bench01" failed: boom'
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskMoveFailed' -ExpectedMessage '*boom*'
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        (Get-TestDisk).controllerKey | Should -Be 1001
        Get-TestCall | Should -Not -Contain 'Start-VM'
    }
    It 'Should throw GuestNotReady when VMware Tools do not start' {
        New-TestLab -Change { param($lab) $lab.vms[0].tools = 'never' }
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.GuestNotReady'
    }
    It 'Should refuse when the VM has 4 SCSI controllers and none of the type is free' {
        New-TestLab -Change { param($lab)
            Add-TestController -Lab $lab -Key 1002 -Type 'VirtualLsiLogic' -Bus 2
            Add-TestController -Lab $lab -Key 1003 -Type 'VirtualLsiLogic' -Bus 3
            Add-TestDisk -Lab $lab -Key 2032 -Name 'Hard disk 3' -Controller 1002
            Add-TestDisk -Lab $lab -Key 2048 -Name 'Hard disk 4' -Controller 1003 }
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogic -KeepControllerKey 1000, 1001, 1002, 1003 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.ControllerLimit'
        Get-TestCall | Should -Not -Contain 'New-ScsiController'
    }
    It 'Should change nothing under -WhatIf' {
        $null = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -WhatIf
        Get-TestCall | Should -Not -Contain 'Stop-VM'
    }
}
