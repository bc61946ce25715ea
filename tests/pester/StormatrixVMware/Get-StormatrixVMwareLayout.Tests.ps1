# Unit tests of Get-StormatrixVMwareLayout (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Get-StormatrixVMwareLayout' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should name the disk''s controller in stormatrix terms and list every controller with its disks' {
        $l = Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2'
        $l.Controller.Type | Should -Be 'LsiLogicSAS'
        $l.Controller.Key | Should -Be 1001
        $l.Disk.ControllerKey | Should -Be 1001
        $l.Disk.Filename | Should -Be '[ds1] bench01/bench01_1.vmdk'
        $l.Disk.Uuid | Should -Be '6000C29a-85e1-7c3f-0b44-e2d0a9b1c7f5'
        @($l.Controllers).Count | Should -Be 2
        @($l.Controllers | Where-Object { $_.Key -eq 1000 })[0].Disks | Should -Be @(2000)
        $l.DiskEnableUUID | Should -BeTrue
        $l.PowerState | Should -Be 'PoweredOn'
    }
    It 'Should report DiskEnableUUID false when the VM has <_>' -ForEach @('no disk.EnableUUID', 'disk.EnableUUID = FALSE') {
        $value = $_
        New-TestLab -Change { param($lab) if ($value -like 'no*') { $lab.vms[0].extraConfig = [pscustomobject]@{} } else { $lab.vms[0].extraConfig.'disk.EnableUUID' = 'FALSE' } }
        (Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2').DiskEnableUUID | Should -BeFalse
    }
    It 'Should find a VM whose name holds wildcard characters, exactly' {
        $l = Get-StormatrixVMwareLayout -VMName 'lab[1]' -DiskName 'Hard disk 2'
        $l.VMName | Should -Be 'lab[1]'
        $l.Controller.Type | Should -Be 'NVMe'
        $l.PowerState | Should -Be 'PoweredOff'
        $l.BootTime | Should -BeNullOrEmpty
    }
    It 'Should refuse the VM name pattern <_>' -ForEach @('bench*', 'bench0?', 'bench0[1]') {
        { Get-StormatrixVMwareLayout -VMName $_ -DiskName 'Hard disk 2' } | Should -Throw -ErrorId 'Stormatrix.VMware.VmNotFound'
    }
    It 'Should refuse the disk name pattern <_>' -ForEach @('Hard disk ?', 'Hard disk [2]', 'Hard*') {
        { Get-StormatrixVMwareLayout -VMName bench01 -DiskName $_ } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskNotFound'
    }
    It 'Should carry PowerCLI''s words when the VM does not exist' {
        $err = $null
        try { Get-StormatrixVMwareLayout -VMName nothere -DiskName 'Hard disk 2' } catch { $err = $_ }
        $err.FullyQualifiedErrorId | Should -Be 'Stormatrix.VMware.VmNotFound'
        $err.Exception.InnerException.Message | Should -BeLike "*VM with name 'nothere' was not found*"
    }
}
