# Unit tests of Restore-StormatrixVMwareLayout (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Restore-StormatrixVMwareLayout' {
    BeforeEach {
        # a cell moved the test disk to an added ParaVirtual controller 1002
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2; $lab.vms[0].disks[1].controllerKey = 1002 }
        Connect-TestLab
        $script:original = @{ VMName = 'bench01'; DiskName = 'Hard disk 2'; ControllerKey = 1001; ControllerType = 'LsiLogicSAS'
            KeepControllerKey = @(1000, 1001); Filename = '[ds1] bench01/bench01_1.vmdk'; PowerState = 'PoweredOn'; UnitNumber = 0 }
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should move the disk back, remove the added controller and power on' {
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeTrue
        $r.RemovedControllerKeys | Should -Be @(1002)
        $r.ControllerReplaced | Should -BeFalse
        $r.UnitNumberChanged | Should -BeFalse
        $calls = Get-TestCall
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 1001
        $calls.IndexOf('Set-HardDisk') | Should -BeLessThan $calls.IndexOf('ReconfigVM')
        $calls.IndexOf('ReconfigVM') | Should -BeLessThan $calls.IndexOf('Start-VM')
        (Get-TestDisk).controllerKey | Should -Be 1001
        @((Get-TestVM).controllers).Count | Should -Be 2
        (Get-TestVM).powerState | Should -Be 'PoweredOn'
    }
    It 'Should do nothing when the layout is already the original' {
        New-TestLab
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeFalse
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        Get-TestCall | Should -Not -Contain 'Set-HardDisk'
    }
    It 'Should finish a restore that a failure left half-done with the VM off' {
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2; $lab.vms[0].disks[1].controllerKey = 1002
            $lab.vms[0].powerState = 'PoweredOff'; $lab.vms[0].bootTime = $null }
        $null = Restore-StormatrixVMwareLayout @script:original
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        @(Get-TestCall | Where-Object { $_ -eq 'Start-VM' }).Count | Should -Be 1
    }
    It 'Should keep a VM that was off, off' {
        $script:original.PowerState = 'PoweredOff'
        $null = Restore-StormatrixVMwareLayout @script:original
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        Get-TestCall | Should -Not -Contain 'Start-VM'
    }
    It 'Should refuse to restore a disk backed by another file' {
        $script:original.Filename = '[ds1] other.vmdk'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskChanged'
        Get-TestCall | Should -Not -Contain 'Set-HardDisk'
    }
    It 'Should put the disk on a new controller of the original type when the original is gone' {
        New-TestLab -Change { param($lab)
            Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2
            $lab.vms[0].disks[1].controllerKey = 1002
            $lab.vms[0].controllers = @($lab.vms[0].controllers | Where-Object { $_.key -ne 1001 }) }
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.ControllerReplaced | Should -BeTrue
        $r.Layout.Controller.Type | Should -Be 'LsiLogicSAS'
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'VirtualLsiLogicSAS'
        @((Get-TestVM).controllers).Count | Should -Be 2
    }
    It 'Should fail with PowerCLI''s words when moving back fails, and succeed when run again' {
        Set-TestFault -Step 'Set-HardDisk' -Message 'Set-HardDisk refused: boom'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskMoveFailed' -ExpectedMessage '*boom*'
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Layout.Disk.ControllerKey | Should -Be 1001
        (Get-TestVM).powerState | Should -Be 'PoweredOn'
    }
    It 'Should report a controller that cannot be removed' {
        Set-TestFault -Step 'ReconfigVM' -Message 'A general system error occurred: boom'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.ControllerRemoveFailed' -ExpectedMessage '*boom*'
    }

    It 'Should change nothing under -WhatIf' {
        $null = Restore-StormatrixVMwareLayout @script:original -WhatIf
        Get-TestCall | Should -Not -Contain 'Set-HardDisk'
        Get-TestCall | Should -Not -Contain 'ReconfigVM'
        (Get-TestDisk).controllerKey | Should -Be 1002
    }
}
