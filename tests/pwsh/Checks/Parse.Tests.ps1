# Every PowerShell file of the project parses with zero errors under the real PowerShell 7.6 parser.
# One test per file, so a failure names the file and the parser's line:column and message.
BeforeDiscovery {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:files = foreach ($path in (Get-StormatrixPowerShellFile -Folder 'windows', 'tests/pester', 'tests/pwsh')) {
        @{ Name = (Get-StormatrixRelativePath -Path $path); Path = $path }
    }
}

BeforeAll {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
}

Describe 'Parse' {
    It 'Should find the PowerShell files to check' {
        @(Get-StormatrixPowerShellFile -Folder 'windows').Count | Should -BeGreaterThan 30
    }

    It 'Should parse <Name> with zero errors' -ForEach $files {
        Format-StormatrixParseError -Parsed (Get-StormatrixParsedFile -Path $Path) | Should -BeNullOrEmpty
    }

    It 'Should report a parse error with file, line and column' {
        $parsed = Get-StormatrixParsedText -Text "`$x = 1`n`"at `$Filename: here`"" -Name 'sample.ps1'
        Format-StormatrixParseError -Parsed $parsed | Should -Match '^sample\.ps1:2:5: .*InvalidVariableReferenceWithDrive'
    }

    It 'Should report a using statement after other statements (an error in every version, 5.1 included)' {
        $parsed = Get-StormatrixParsedText -Text "`$x = 1`nusing namespace System.IO" -Name 'sample.ps1'
        Format-StormatrixParseError -Parsed $parsed | Should -Match '^sample\.ps1:2:1: .*UsingMustBeAtStartOfScript'
    }
}
