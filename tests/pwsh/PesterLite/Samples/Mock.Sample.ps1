# Sample for PesterLite.Tests.ps1: Mock, Should -Invoke, InModuleScope. Every test here should pass.
BeforeAll {
    $module = New-Module -Name PesterLiteMockProbe -ScriptBlock {
        function Get-Thing { param([string] $Name) "real $Name" }
        function Use-Thing { param([string] $Name) Get-Thing -Name $Name }
        function Get-Secret { 'module private' }
        Export-ModuleMember -Function Get-Thing, Use-Thing
    } | Import-Module -PassThru
    function Get-Local { param([int] $N) "local $N" }
    function Get-Typed { param([System.IO.FileInfo] $File, [ValidateRange(1, 2)] [int] $Level) 'typed' }
}
AfterAll { Remove-Module PesterLiteMockProbe -ErrorAction SilentlyContinue }

Describe 'Mock' {
    It 'replaces a command for the test' {
        Mock Get-Local { 'mocked' }
        Get-Local -N 1 | Should -Be 'mocked'
        Should -Invoke Get-Local -Times 1 -Exactly
    }
    It 'is gone in the next test' { Get-Local -N 2 | Should -Be 'local 2' }
    It 'picks the behaviour whose -ParameterFilter matches, else the default' {
        Mock Get-Local { 'default' }
        Mock Get-Local { 'five' } -ParameterFilter { $N -eq 5 }
        Get-Local -N 5 | Should -Be 'five'
        Get-Local -N 6 | Should -Be 'default'
        Should -Invoke Get-Local -Times 2 -Exactly
        Should -Invoke Get-Local -Times 1 -Exactly -ParameterFilter { $N -eq 5 }
    }
    It 'calls the original when no behaviour matches' {
        Mock Get-Local { 'five' } -ParameterFilter { $N -eq 5 }
        Get-Local -N 7 | Should -Be 'local 7'
    }
    It 'gives the mock body the call''s parameters' {
        Mock Get-Local { "got $N" }
        Get-Local -N 3 | Should -Be 'got 3'
    }
    It 'mocks inside a module with -ModuleName' {
        Mock Get-Thing { 'module mock' } -ModuleName PesterLiteMockProbe
        Use-Thing -Name 'a' | Should -Be 'module mock'
        Should -Invoke Get-Thing -ModuleName PesterLiteMockProbe -Times 1 -Exactly -ParameterFilter { $Name -eq 'a' }
    }
    It 'leaves the module alone once the test is over' { Use-Thing -Name 'b' | Should -Be 'real b' }
    It 'counts zero calls with -Exactly -Times 0' {
        Mock Get-Local { }
        Should -Invoke Get-Local -Exactly -Times 0
    }
    It 'drops a parameter''s type and validation when asked' {
        Mock Get-Typed { "file=$File level=$Level" } -RemoveParameterType File -RemoveParameterValidation Level
        Get-Typed -File 'not a FileInfo' -Level 7 | Should -Be 'file=not a FileInfo level=7'
    }
    It 'mocks a cmdlet stand-in or cmdlet too' {
        Mock Test-Path { $true } -ParameterFilter { $LiteralPath -eq '/surely/not/there' }
        Test-Path -LiteralPath '/surely/not/there' | Should -BeTrue
        Test-Path -LiteralPath '/surely/not/there/either' | Should -BeFalse
    }
}

Describe 'Mock in BeforeAll' {
    BeforeAll { Mock Get-Local { 'block mock' } }
    It 'applies to the first test' { Get-Local | Should -Be 'block mock' }
    It 'applies to the second test, and counts per test' {
        Get-Local | Should -Be 'block mock'
        Should -Invoke Get-Local -Times 1 -Exactly -Scope It
        Should -Invoke Get-Local -Times 2 -Exactly -Scope Describe
    }
}

Describe 'InModuleScope' {
    It 'runs in the module and sees its private functions' {
        InModuleScope PesterLiteMockProbe { Get-Secret } | Should -Be 'module private'
    }
    It 'passes -Parameters' {
        InModuleScope PesterLiteMockProbe -Parameters @{ X = 4 } { param($X) $X * 2 } | Should -Be 8
    }
}
