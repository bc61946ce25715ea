# Unit tests of New-StormatrixVMwareFleet (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'New-StormatrixVMwareFleet' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should clone each name from the template as a task, annotated with the run id, and return each VM when it exists, then configured' {
        $out = @(New-StormatrixVMwareFleet -Name smx-w01, smx-w02, smx-w03 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId -NumCpu 4 -MemoryGB 8 -Parallel 2)
        @($out | ForEach-Object { "$($_.Stage) $($_.Name)" }) | Should -Be @('Created smx-w01', 'Configured smx-w01', 'Created smx-w02', 'Configured smx-w02', 'Created smx-w03', 'Configured smx-w03')
        $out[0].Disks | Should -Be @('[ds1] smx-w01/smx-w01.vmdk')
        foreach ($call in Get-TestCall -Cmdlet 'New-VM') { $call.RunAsync | Should -BeTrue; $call.Template | Should -Be 'smx-worker-tpl' }
        $vm = Get-TestVM -Name smx-w02
        $vm.notes | Should -BeLike "stormatrix fleet $($script:RunId):*"
        $vm.powerState | Should -Be 'PoweredOff'
        $vm.numCpu | Should -Be 4
        $vm.memoryGB | Should -Be 8
        $vm.id | Should -Be $out[2].Id
    }
    It 'Should keep at most -Parallel clone tasks running' {
        $null = New-StormatrixVMwareFleet -Name smx-w01, smx-w02, smx-w03 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId -Parallel 2
        $order = @(Get-TestCall | Where-Object { $_ -in 'New-VM', 'Wait-Task' })
        ($order -join ',') | Should -Be 'New-VM,New-VM,Wait-Task,New-VM,Wait-Task,Wait-Task'
    }
    It 'Should refuse, creating nothing, when a worker name belongs to a VM of someone else' {
        { New-StormatrixVMwareFleet -Name smx-w01, bench01 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId } |
            Should -Throw -ErrorId 'Stormatrix.VMware.NameTaken' -ExpectedMessage "*bench01*"
        Get-TestCall | Should -Not -Contain 'New-VM'
    }
    It 'Should take a worker of an interrupted deploy of the same fleet as it is, not clone it again' {
        $null = New-StormatrixVMwareFleet -Name smx-w01 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId
        $again = @(New-StormatrixVMwareFleet -Name smx-w01, smx-w02 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId)
        @(Get-TestCall -Cmdlet 'New-VM').Count | Should -Be 2
        @($again | Where-Object Stage -eq 'Configured' | ForEach-Object Name) | Should -Be @('smx-w01', 'smx-w02')
    }
    It 'Should refuse a worker of another fleet with the same name' {
        $null = New-StormatrixVMwareFleet -Name smx-w01 -Template smx-worker-tpl -VMHost esx01.lab -RunId 'ffff00001111'
        { New-StormatrixVMwareFleet -Name smx-w01 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId } | Should -Throw -ErrorId 'Stormatrix.VMware.NameTaken'
    }
    It 'Should return the VMs whose clone tasks ended before reporting a failed clone task' {
        Set-TestFault -Step 'CloneVM_Task#2' -Message 'A general system error occurred: clone failed'
        $out = New-Object System.Collections.Generic.List[object]
        { New-StormatrixVMwareFleet -Name smx-w01, smx-w02, smx-w03 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId -Parallel 3 | ForEach-Object { $out.Add($_) } } |
            Should -Throw -ErrorId 'Stormatrix.VMware.CloneFailed' -ExpectedMessage '*smx-w02*clone failed*'
        @($out | Where-Object Stage -eq 'Created' | ForEach-Object Name) | Should -Be @('smx-w01', 'smx-w03')
        @((Read-TestLab).vms | ForEach-Object name) | Should -Contain 'smx-w03'
    }
    It 'Should refuse a template name that is a VM, and a template name that matches as a pattern only' {
        { New-StormatrixVMwareFleet -Name smx-w01 -Template bench01 -VMHost esx01.lab -RunId $script:RunId } | Should -Throw -ErrorId 'Stormatrix.VMware.TemplateNotFound'
        { New-StormatrixVMwareFleet -Name smx-w01 -Template 'smx-*' -VMHost esx01.lab -RunId $script:RunId } | Should -Throw -ErrorId 'Stormatrix.VMware.TemplateNotFound'
        Get-TestCall | Should -Not -Contain 'New-VM'
    }
    It 'Should clone nothing under -WhatIf' {
        $null = New-StormatrixVMwareFleet -Name smx-w01 -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId -WhatIf
        Get-TestCall | Should -Not -Contain 'New-VM'
    }
}
