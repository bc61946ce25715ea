# Sample for PesterLite.Tests.ps1: Pester 5 scoping. Every test here should pass.
BeforeDiscovery {
    $cases = @(@{ Name = 'one'; Value = 1 }, @{ Name = 'two'; Value = 2 })
}
BeforeAll { $fileLevel = 'file' }

Describe 'Scoping' {
    $discoveryOnly = 'set while discovering'
    BeforeAll { $describeLevel = 'describe' }
    BeforeEach { $each = 'each' }
    It 'sees BeforeAll variables of the file and the block' {
        $fileLevel | Should -Be 'file'
        $describeLevel | Should -Be 'describe'
    }
    It 'shares a scope between BeforeEach and It' { $each | Should -Be 'each' }
    It 'does not see variables set by the Describe body at discovery' { $discoveryOnly | Should -BeNullOrEmpty }
    It 'does not see a variable another test set' {
        $leak | Should -BeNullOrEmpty
        $leak = 'set by a test'
    }
    It 'still does not see it' { $leak | Should -BeNullOrEmpty }
    Context 'nested' {
        BeforeAll { $contextLevel = "context of $describeLevel" }
        It 'sees the outer BeforeAll from the inner one' { $contextLevel | Should -Be 'context of describe' }
    }
    It 'runs <Name> with its data' -ForEach $cases {
        $Value | Should -BeIn 1, 2
        $_.Name | Should -Be $Name
    }
    It 'accepts -TestCases too: <Name>' -TestCases @(@{ Name = 'x' }) { $Name | Should -Be 'x' }
}

Describe 'Block <Name> from data' -ForEach @(@{ Name = 'alpha' }) {
    It 'sees the block data: <Name>' { $Name | Should -Be 'alpha' }
}

Describe 'TestDrive' {
    It 'has a TestDrive folder' {
        $TestDrive | Should -Exist
        Set-Content -LiteralPath (Join-Path $TestDrive 'f.txt') -Value 'x'
        'TestDrive:\f.txt' | Should -Exist
    }
    Context 'inner' {
        It 'adds a file' { Set-Content -LiteralPath (Join-Path $TestDrive 'inner.txt') -Value 'y' }
    }
    It 'keeps the block''s file and drops the inner block''s one' {
        Join-Path $TestDrive 'f.txt' | Should -Exist
        Join-Path $TestDrive 'inner.txt' | Should -Not -Exist
    }
}
