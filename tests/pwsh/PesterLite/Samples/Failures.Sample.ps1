# Sample for PesterLite.Tests.ps1: failures the runner must report, each test named after its outcome.
Describe 'Setup failure' {
    BeforeAll { throw 'setup broke' }
    It 'failed by BeforeAll 1' { $true | Should -BeTrue }
    It 'failed by BeforeAll 2' { $true | Should -BeTrue }
}
Describe 'Test failures' {
    It 'failed by throw' { throw 'plain throw' }
    It 'failed by Should -Be' { 1 | Should -Be 2 }
    It 'failed by Should -Not -Be' { 1 | Should -Not -Be 1 }
    It 'failed by Should -Throw' { { 'no throw' } | Should -Throw }
    It 'failed by Should -Throw -ErrorId' { { throw [System.Management.Automation.ErrorRecord]::new([Exception]::new('m'), 'Other.Id', 'NotSpecified', $null) } | Should -Throw -ErrorId 'Wanted.Id' }
    It 'failed by Should -Invoke' {
        function Probe { }
        Mock Probe { }
        Should -Invoke Probe -Times 1
    }
    It 'failed by a non-terminating error under Stop' { Write-Error 'soft' -ErrorAction Stop }
}
Describe 'Teardown failure' {
    AfterEach { throw 'teardown broke' }
    It 'failed by AfterEach' { $true | Should -BeTrue }
}
Describe 'Skips' {
    It 'skipped by -Skip' -Skip { throw 'must not run' }
    It 'skipped by Set-ItResult -Inconclusive' { Set-ItResult -Inconclusive -Because 'unsure' }
    Context 'skipped context' -Skip {
        It 'skipped with its context' { throw 'must not run' }
    }
    It 'passed' { $true | Should -BeTrue }
}
