# Unit tests of Add-StormatrixVMwareFleetDisk (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Add-StormatrixVMwareFleetDisk' {
    BeforeEach { New-TestLab; Connect-TestLab; $script:fleet = New-TestFleet -Count 2 }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should create each disk on the datastore, return it at once, then put it on a controller of its own of the type' {
        $out = @(Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 10 -ControllerType LsiLogicSAS -BaseFilename $fleet.Base)
        @($out | ForEach-Object { "$($_.Stage) $($_.VMName)" }) | Should -Be @('Created smx-w01', 'Attached smx-w01', 'Created smx-w02', 'Attached smx-w02')
        $out[0].Filename | Should -BeLike '`[bb-iscsi`] smx-w01/*.vmdk'
        (Get-TestCall -Cmdlet 'New-HardDisk')[0].StorageFormat | Should -Be 'EagerZeroedThick'
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'VirtualLsiLogicSAS'
        $vm = Get-TestVM -Name smx-w01
        $disk = @($vm.disks | Where-Object { $_.filename -eq $out[0].Filename })[0]
        $controller = @($vm.controllers | Where-Object { $_.key -eq $disk.controllerKey })[0]
        $controller.type | Should -Be 'VirtualLsiLogicSAS'
        @($vm.disks | Where-Object { $_.controllerKey -eq $controller.key }).Count | Should -Be 1
        (@((Read-TestLab).datastores | Where-Object name -eq 'bb-iscsi'))[0].freeSpaceGB | Should -Be 380
    }
    It 'Should add an NVMe controller for an NVMe test disk' {
        $null = Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids[0] -RunId $script:RunId -Datastore bb-nvme -CapacityGB 1 -ControllerType NVMe -BaseFilename $fleet.Base
        @(Get-TestCall -Cmdlet 'New-NvmeController').Count | Should -Be 1
        @((Get-TestVM -Name smx-w01).controllers | Where-Object kind -eq 'nvme').Count | Should -Be 1
    }
    It 'Should refuse, creating nothing, when the datastore has no room for every thick disk' {
        { Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore small-ds -CapacityGB 15 -ControllerType ParaVirtual } |
            Should -Throw -ErrorId 'Stormatrix.VMware.InsufficientSpace' -ExpectedMessage '*30*'
        Get-TestCall | Should -Not -Contain 'New-HardDisk'
    }
    It 'Should report vSphere''s refusal when the space runs out during the attach, keeping the disks made so far' {
        New-TestLab -Change { param($lab) @($lab.datastores | Where-Object name -eq 'small-ds')[0].freeSpaceGB = 40 }
        Connect-TestLab
        $fleet = New-TestFleet -Count 2
        Set-TestFault -Step 'CreateDisk#2' -Message "Insufficient disk space on datastore 'small-ds'."
        $out = New-Object System.Collections.Generic.List[object]
        { Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore small-ds -CapacityGB 15 -ControllerType ParaVirtual -BaseFilename $fleet.Base | ForEach-Object { $out.Add($_) } } |
            Should -Throw -ErrorId 'Stormatrix.VMware.DiskCreateFailed' -ExpectedMessage '*Insufficient disk space*'
        @($out | Where-Object Stage -eq 'Attached').Count | Should -Be 1
    }
    It 'Should take a test disk an interrupted call made instead of creating a second one' {
        $null = Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids[0] -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 1 -ControllerType ParaVirtual -BaseFilename $fleet.Base
        $again = @(Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids[0] -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 1 -ControllerType ParaVirtual -BaseFilename $fleet.Base)
        $again[0].Stage | Should -Be 'Existing'
        @(Get-TestCall -Cmdlet 'New-HardDisk').Count | Should -Be 1
    }
    It 'Should refuse a VM that does not carry the fleet''s annotation before changing any' {
        { Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids[0], 'VirtualMachine-vm-42' -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 1 -ControllerType ParaVirtual } |
            Should -Throw -ErrorId 'Stormatrix.VMware.NotOurs'
        Get-TestCall | Should -Not -Contain 'New-HardDisk'
    }
    It 'Should refuse an inaccessible datastore' {
        { Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore offline-ds -CapacityGB 1 -ControllerType ParaVirtual } |
            Should -Throw -ErrorId 'Stormatrix.VMware.DatastoreUnavailable'
    }
    It 'Should create nothing under -WhatIf' {
        $null = Add-StormatrixVMwareFleetDisk -VMId $fleet.Ids -RunId $script:RunId -Datastore bb-iscsi -CapacityGB 1 -ControllerType ParaVirtual -WhatIf
        Get-TestCall | Should -Not -Contain 'New-HardDisk'
    }
}
