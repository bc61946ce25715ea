# Sample for PesterLite.Tests.ps1: every Should operator once passing ("passed: ...") and once failing
# ("failed: ..."), so the runner's verdicts can be checked one by one.
BeforeAll {
    $file = Join-Path $TestDrive 'content.txt'
    Set-Content -LiteralPath $file -Value 'alpha', 'Beta'
    function Get-Probe { param([Parameter(Mandatory)] [string] $Name, [int] $Count = 3) }
}
Describe 'Should' {
    It 'passed: Be' { @(1, 2) | Should -Be @(1, 2); 'A' | Should -Be 'a'; $null | Should -Be @() }
    It 'failed: Be' { @(1, 2) | Should -Be @(2, 1) }
    It 'passed: BeExactly' { 'A' | Should -BeExactly 'A' }
    It 'failed: BeExactly' { 'A' | Should -BeExactly 'a' }
    It 'passed: BeTrue BeFalse' { 1 | Should -BeTrue; 0 | Should -BeFalse }
    It 'failed: BeTrue' { '' | Should -BeTrue }
    It 'passed: BeNullOrEmpty' { $null | Should -BeNullOrEmpty; @() | Should -BeNullOrEmpty; '' | Should -BeNullOrEmpty; 'x' | Should -Not -BeNullOrEmpty }
    It 'failed: BeNullOrEmpty' { 'x' | Should -BeNullOrEmpty }
    It 'passed: Throw' {
        { throw 'boom here' } | Should -Throw
        { throw 'boom here' } | Should -Throw -ExpectedMessage 'boom*'
        { throw 'boom here' } | Should -Throw 'boom here'
        { throw [System.IO.IOException]::new('io') } | Should -Throw -ExceptionType ([System.IO.IOException])
        $e = { throw [System.Management.Automation.ErrorRecord]::new([Exception]::new('m'), 'My.Id', 'NotSpecified', $null) } | Should -Throw -ErrorId 'My.Id' -PassThru
        $e.Exception.Message | Should -Be 'm'
        { 'fine' } | Should -Not -Throw
    }
    It 'failed: Throw message' { { throw 'boom' } | Should -Throw -ExpectedMessage 'other*' }
    It 'failed: Not Throw' { { throw 'boom' } | Should -Not -Throw }
    It 'passed: Match' { 'abc' | Should -Match 'B'; 'abc' | Should -MatchExactly 'b'; 'abc' | Should -Not -Match 'z' }
    It 'failed: MatchExactly' { 'abc' | Should -MatchExactly 'B' }
    It 'passed: BeLike' { 'abc' | Should -BeLike 'A*'; 'abc' | Should -BeLikeExactly 'a*' }
    It 'failed: BeLike' { 'abc' | Should -BeLike 'b*' }
    It 'passed: Contain BeIn' { @(1, 2, 3) | Should -Contain 2; 2 | Should -BeIn @(1, 2) }
    It 'failed: Contain' { @(1, 2, 3) | Should -Contain 4 }
    It 'passed: HaveCount' { @(1, 2, 3) | Should -HaveCount 3; @() | Should -HaveCount 0 }
    It 'failed: HaveCount' { @(1, 2) | Should -HaveCount 3 }
    It 'passed: BeOfType' { 'x' | Should -BeOfType [string]; 1 | Should -BeOfType ([int]); 1 | Should -BeOfType System.ValueType }
    It 'failed: BeOfType' { 'x' | Should -BeOfType [int] }
    It 'passed: comparisons' { 2 | Should -BeGreaterThan 1; 1 | Should -BeLessThan 2; 2 | Should -BeGreaterOrEqual 2; 2 | Should -BeLessOrEqual 2 }
    It 'failed: BeGreaterThan' { 1 | Should -BeGreaterThan 1 }
    It 'passed: Exist' { $file | Should -Exist; (Join-Path $TestDrive 'none') | Should -Not -Exist }
    It 'failed: Exist' { (Join-Path $TestDrive 'none') | Should -Exist }
    It 'passed: FileContentMatch' { $file | Should -FileContentMatch 'beta'; $file | Should -FileContentMatchExactly 'Beta' }
    It 'failed: FileContentMatchExactly' { $file | Should -FileContentMatchExactly 'beta' }
    It 'passed: HaveParameter' {
        Get-Command Get-Probe | Should -HaveParameter Name -Mandatory -Type [string]
        Get-Command Get-Probe | Should -HaveParameter Count -Type int -DefaultValue 3
        Get-Command Get-Probe | Should -Not -HaveParameter Other
    }
    It 'failed: HaveParameter' { Get-Command Get-Probe | Should -HaveParameter Count -Mandatory }
    It 'passed: Because' { $true | Should -BeTrue -Because 'it is' }
    It 'failed: Because in the message' { $false | Should -BeTrue -Because 'the reason is shown' }
}
