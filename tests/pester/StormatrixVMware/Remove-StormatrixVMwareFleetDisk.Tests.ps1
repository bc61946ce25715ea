# Unit tests of Remove-StormatrixVMwareFleetDisk (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Remove-StormatrixVMwareFleetDisk' {
    BeforeEach {
        New-TestLab; Connect-TestLab
        $script:fleet = New-TestFleet -Count 2
        $null = Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 10 -ControllerType ParaVirtual -BaseFilename $fleet.Base
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should stop each worker, delete its test disk permanently, free the space and remove the controller it added' {
        $out = @(Remove-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -BaseFilename $fleet.Base)
        @($out | ForEach-Object State) | Should -Be @('Removed', 'Removed')
        foreach ($call in Get-TestCall -Cmdlet 'Remove-HardDisk') { $call.DeletePermanently | Should -BeTrue }
        $lab = Read-TestLab
        @($lab.orphanFiles) | Should -BeNullOrEmpty
        (@($lab.datastores | Where-Object name -eq 'bb-iscsi'))[0].freeSpaceGB | Should -Be 400
        $vm = Get-TestVM -Name smx-w01
        @($vm.disks | ForEach-Object filename) | Should -Be @('[ds1] smx-w01/smx-w01.vmdk')
        @($vm.controllers).Count | Should -Be 1
        $vm.powerState | Should -Be 'PoweredOff'
    }
    It 'Should never remove the clone''s own disks, even on the datastore under test' {
        $null = Remove-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore ds1 -BaseFilename $fleet.Base
        Get-TestCall | Should -Not -Contain 'Remove-HardDisk'
    }
    It 'Should leave a VM without the fleet''s annotation untouched and say so' {
        $out = @(Remove-StormatrixVMwareFleetDisk -VMId 'VirtualMachine-vm-42' -RunId $script:RunId -Datastore ds1 -WarningAction SilentlyContinue)
        $out[0].State | Should -Be 'NotOurs'
        Get-TestCall | Should -Not -Contain 'Remove-HardDisk'
        (Get-TestVM -Name bench01).powerState | Should -Be 'PoweredOn'
    }
    It 'Should report a worker that no longer exists as gone' {
        $out = @(Remove-StormatrixVMwareFleetDisk -VMId 'VirtualMachine-vm-999' -RunId $script:RunId -Datastore bb-iscsi)
        $out[0].State | Should -Be 'VmGone'
    }
    It 'Should remove nothing under -WhatIf' {
        $null = Remove-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -BaseFilename $fleet.Base -WhatIf
        Get-TestCall | Should -Not -Contain 'Remove-HardDisk'
    }
}
