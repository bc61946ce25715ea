# Unit tests of Get-StormatrixVMwareFleetTarget (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Get-StormatrixVMwareFleetTarget' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should describe the template, host and datastores, and change nothing' {
        $t = Get-StormatrixVMwareFleetTarget -Template smx-worker-tpl -VMHost esx01.lab -Datastore bb-iscsi, small-ds -Name smx-w01 -RunId $script:RunId
        $t.Template.IsTemplate | Should -BeTrue
        $t.Template.DiskCount | Should -Be 1
        $t.Template.Notes | Should -Match '(?m)^stormatrix-fio: fio-3\.33$' -Because 'the Notes (Config.Annotation) come back whole, declaration included'
        $t.Host.Found | Should -BeTrue
        $t.Datastores[0].FreeSpaceGB | Should -Be 400
        $t.Datastores[1].FreeSpaceGB | Should -Be 20
        $t.Datastores[0].Accessible | Should -BeTrue
        @($t.Taken) | Should -BeNullOrEmpty
        Get-TestCall | Should -Not -Contain 'New-VM'
    }
    It 'Should say that a VM named as the template is not a template' {
        $t = Get-StormatrixVMwareFleetTarget -Template bench01 -VMHost esx01.lab -RunId $script:RunId
        $t.Template.IsTemplate | Should -BeFalse
        $t.Template.Problem | Should -BeLike '*is a VM, not a template*'
    }
    It 'Should report a missing or inaccessible datastore and a missing host' {
        $t = Get-StormatrixVMwareFleetTarget -Template smx-worker-tpl -VMHost esx99.lab -Datastore 'bb-*', offline-ds -RunId $script:RunId
        $t.Host.Found | Should -BeFalse
        $t.Datastores[0].Found | Should -BeFalse
        $t.Datastores[1].Accessible | Should -BeFalse
    }
    It 'Should list a taken worker name, saying whether the VM is this fleet''s' {
        $null = New-TestFleet -Count 1
        $t = Get-StormatrixVMwareFleetTarget -Template smx-worker-tpl -VMHost esx01.lab -Name smx-w01, bench01 -RunId $script:RunId
        @($t.Taken | ForEach-Object { "$($_.Name)=$($_.Ours)" }) | Sort-Object | Should -Be @('bench01=False', 'smx-w01=True')
    }
}
