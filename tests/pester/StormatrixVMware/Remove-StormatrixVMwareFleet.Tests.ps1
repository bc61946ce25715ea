# Unit tests of Remove-StormatrixVMwareFleet (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Remove-StormatrixVMwareFleet' {
    BeforeEach {
        New-TestLab; Connect-TestLab
        $script:fleet = New-TestFleet -Count 3
        $null = Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 10 -ControllerType ParaVirtual -BaseFilename $fleet.Base
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should stop and permanently remove exactly the VMs given by id and by exact name, freeing their disks' {
        $out = @(Remove-StormatrixVMwareFleet -VMId $fleet.Ids[0], $fleet.Ids[1] -VMName smx-w03 -RunId $script:RunId)
        @($out | ForEach-Object { "$($_.State) $($_.Name)" }) | Should -Be @('Removed smx-w01', 'Removed smx-w02', 'Removed smx-w03')
        foreach ($call in Get-TestCall -Cmdlet 'Remove-VM') { $call.DeletePermanently | Should -BeTrue }
        $lab = Read-TestLab
        @($lab.vms | ForEach-Object name) | Should -Be @('bench01', 'bench010', 'lab[1]')
        @($lab.orphanFiles) | Should -BeNullOrEmpty
        (@($lab.datastores | Where-Object name -eq 'bb-iscsi'))[0].freeSpaceGB | Should -Be 400
    }
    It 'Should leave a VM that shares a name but not the annotation untouched' {
        $out = @(Remove-StormatrixVMwareFleet -VMName bench01, 'smx-w0?' -RunId $script:RunId -WarningAction SilentlyContinue)
        @($out | ForEach-Object State) | Should -Be @('NotOurs', 'NotFound')
        Get-TestCall | Should -Not -Contain 'Remove-VM'
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        @((Read-TestLab).vms).Count | Should -Be 6
    }
    It 'Should report an id that is gone as NotFound and remove the rest' {
        $null = Remove-StormatrixVMwareFleet -VMId $fleet.Ids[0] -RunId $script:RunId
        $out = @(Remove-StormatrixVMwareFleet -VMId $fleet.Ids[0], $fleet.Ids[1] -RunId $script:RunId)
        @($out | ForEach-Object State) | Should -Be @('NotFound', 'Removed')
    }
    It 'Should throw RemoveFailed with vSphere''s message, after returning what it removed' {
        Set-TestFault -Step 'Destroy_Task#2' -Message 'The operation is not allowed in the current state.'
        $out = New-Object System.Collections.Generic.List[object]
        { Remove-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId | ForEach-Object { $out.Add($_) } } | Should -Throw -ErrorId 'Stormatrix.VMware.RemoveFailed' -ExpectedMessage '*smx-w02*not allowed*'
        @($out | ForEach-Object Name) | Should -Be @('smx-w01')
    }
    It 'Should remove nothing under -WhatIf' {
        $null = Remove-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId -WhatIf
        Get-TestCall | Should -Not -Contain 'Remove-VM'
    }
}
