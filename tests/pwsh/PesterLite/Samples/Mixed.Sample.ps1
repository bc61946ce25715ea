# A sample for PesterLite's own tests (tests/pwsh/PesterLite.Tests.ps1): one test passes, one fails,
# one is skipped by -Skip and one by Set-ItResult. Not named *.Tests.ps1, so the suite does not run it.
Describe 'Sample' {
    BeforeAll { $script:value = 2 }
    It 'passes' { $value | Should -Be 2 }
    It 'fails' { $value | Should -Be 3 }
    It 'is skipped' -Skip { throw 'not run' }
    It 'skips itself' { Set-ItResult -Skipped -Because 'it says so' }
}
