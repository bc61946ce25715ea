# Unit tests of Get-StormatrixVMwareFleetFioVersion (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
# The fake guests are data: each worker's "guest" (accounts, the fio it runs) is its template's in lab.json.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
    $env:SMX_TEST_GUEST_USER = 'root'
    $env:SMX_TEST_GUEST_PASSWORD = 'gu3st-Pa55'
    $script:Guest = @{ GuestUserVariable = 'SMX_TEST_GUEST_USER'; GuestPasswordVariable = 'SMX_TEST_GUEST_PASSWORD' }
}

AfterAll {
    Remove-Item -Path Env:SMX_TEST_GUEST_USER, Env:SMX_TEST_GUEST_PASSWORD -ErrorAction SilentlyContinue
    Remove-VMwareTestSetup
}

Describe 'Get-StormatrixVMwareFleetFioVersion' {
    BeforeEach {
        New-TestLab
        Connect-TestLab
        $script:fleet = New-TestFleet -Count 2
        $null = Restart-StormatrixVMwareFleet -VMId $fleet.Ids -RunId $script:RunId -ReadyTimeoutSeconds 30
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should run fio --version in every guest through Invoke-VMScript and return each one''s version' {
        $out = @(Get-StormatrixVMwareFleetFioVersion -VMId $fleet.Ids -RunId $script:RunId @Guest)
        @($out | ForEach-Object Name) | Should -Be @('smx-w01', 'smx-w02')
        @($out | ForEach-Object Version) | Should -Be @('fio-3.33', 'fio-3.33')
        @($out | Where-Object Problem).Count | Should -Be 0
        $calls = @(Get-TestCall -Cmdlet 'Invoke-VMScript')
        $calls.Count | Should -Be 2
        $calls[0].ScriptText | Should -Be 'fio --version'
        $calls[0].ScriptType | Should -Be 'Bash'
        $calls[0].GuestUser | Should -Be 'root'
        (ConvertTo-Json -InputObject @((Read-TestLab).calls) -Depth 8) | Should -Not -Match 'gu3st-Pa55' -Because 'the guest password never reaches a log'
    }
    It 'Should name each worker whose guest cannot answer (no fio, powered off), and still ask the others' {
        $lab = Read-TestLab
        (@($lab.vms | Where-Object name -eq 'smx-w01')[0]).guest.fio = $null
        [System.IO.File]::WriteAllText($env:STORMATRIX_FAKE_VCENTER_LAB, (ConvertTo-Json -InputObject $lab -Depth 32))
        $null = Stop-VM -VM (Get-VM -Id $fleet.Ids[1]) -Confirm:$false
        $out = @(Get-StormatrixVMwareFleetFioVersion -VMId $fleet.Ids -RunId $script:RunId @Guest)
        $out[0].Version | Should -BeNullOrEmpty
        $out[0].ExitCode | Should -Be 127
        $out[0].Problem | Should -BeLike '*exited with 127*fio: command not found*'
        $out[1].Problem | Should -BeLike '*Invoke-VMScript failed*current state (PoweredOff)*'
        @(Get-TestCall -Cmdlet 'Invoke-VMScript').Count | Should -Be 2
    }
    It 'Should report refused guest credentials per worker, without the password' {
        $env:SMX_TEST_GUEST_PASSWORD = 'wrong-guess'
        try {
            $out = @(Get-StormatrixVMwareFleetFioVersion -VMId $fleet.Ids -RunId $script:RunId @Guest)
        }
        finally {
            $env:SMX_TEST_GUEST_PASSWORD = 'gu3st-Pa55'
        }
        @($out | ForEach-Object Problem) | Should -BeLike '*Failed to authenticate with the guest*'
        ($out | ConvertTo-Json) | Should -Not -Match 'wrong-guess'
    }
    It 'Should fail with CredentialMissing, naming the variable, before asking any guest' {
        { Get-StormatrixVMwareFleetFioVersion -VMId $fleet.Ids -RunId $script:RunId -GuestUserVariable SMX_TEST_GUEST_USER -GuestPasswordVariable SMX_NOT_SET } |
            Should -Throw -ErrorId 'Stormatrix.VMware.CredentialMissing' -ExpectedMessage '*SMX_NOT_SET*'
        Get-TestCall | Should -Not -Contain 'Invoke-VMScript'
    }
    It 'Should refuse a VM that is not the fleet''s before asking any guest' {
        { Get-StormatrixVMwareFleetFioVersion -VMId $fleet.Ids[0], 'VirtualMachine-vm-43' -RunId $script:RunId @Guest } |
            Should -Throw -ErrorId 'Stormatrix.VMware.NotOurs' -ExpectedMessage '*bench010*'
        Get-TestCall | Should -Not -Contain 'Invoke-VMScript'
    }
}
