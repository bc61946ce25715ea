# Unit tests of Restart-StormatrixVMwareFleet (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Restart-StormatrixVMwareFleet' {
    BeforeEach { New-TestLab; Connect-TestLab; $script:fleet = New-TestFleet -Count 2 }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should power every worker on before waiting for any, and return each one''s address' {
        $out = @(Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId -ReadyTimeoutSeconds 30)
        @($out | ForEach-Object IPAddress) | Should -Be @('10.20.0.11', '10.20.0.12')
        $calls = @(Get-TestCall | Where-Object { $_ -in 'Start-VM', 'Wait-Tools' })
        ($calls -join ',') | Should -Be 'Start-VM,Start-VM,Wait-Tools,Wait-Tools'
        (Get-TestVM -Name smx-w02).powerState | Should -Be 'PoweredOn'
    }
    It 'Should stop running workers first, so a second cycle boots them again' {
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId
        @(Get-TestCall -Cmdlet 'Stop-VM').Count | Should -Be 2
        (Get-TestVM -Name smx-w01).boots | Should -Be 2
    }
    It 'Should fail with GuestNotReady when a worker gets no address' {
        New-TestLab -Change { param($lab) $lab.guestIpPool = @('10.20.0.11') }
        Connect-TestLab
        $fleet = New-TestFleet -Count 2
        { Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId -ReadyTimeoutSeconds 5 } | Should -Throw -ErrorId 'Stormatrix.VMware.GuestNotReady' -ExpectedMessage '*smx-w02*IPv4*'
    }
    It 'Should refuse a VM that is not the fleet''s before any power change' {
        { Restart-StormatrixVMwareFleet -VMId $fleet.Ids[0], 'VirtualMachine-vm-43' -RunId $script:RunId } | Should -Throw -ErrorId 'Stormatrix.VMware.NotOurs' -ExpectedMessage '*bench010*'
        Get-TestCall | Should -Not -Contain 'Start-VM'
        Get-TestCall | Should -Not -Contain 'Stop-VM'
    }
    It 'Should change nothing under -WhatIf' {
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId -WhatIf
        Get-TestCall | Should -Not -Contain 'Start-VM'
    }
}
