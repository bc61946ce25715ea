# Sample for PesterLite.Tests.ps1: a container with data (New-PesterContainer -Data) binds it to param().
param([string] $Greeting, [int] $Count)
Describe 'Data' {
    It 'has the data' { "$Greeting x$Count" | Should -Be 'hello x3' }
    It 'fails on purpose' { $Count | Should -Be 4 }
}
