# StormatrixGuest runs on Windows Server 2022's Windows PowerShell 5.1 (.NET Framework 4.8): no file of it
# may use syntax, commands, parameters, variables or .NET APIs that 5.1 lacks (Ps51Rules.psd1 lists them
# with where each is documented). Each rule is proved on a bad sample (samples/ps51/<Rule>.<case>.ps1), and
# each table entry on a generated one-liner, so a rule that stops firing fails here.
BeforeDiscovery {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:rules = Get-StormatrixPs51Rules
    $script:guestFiles = foreach ($path in (Get-StormatrixPowerShellFile -Folder 'windows/StormatrixGuest')) {
        @{ Name = (Get-StormatrixRelativePath -Path $path); Path = $path }
    }
    $script:samples = foreach ($path in (Get-StormatrixPowerShellFile -Folder 'tests/pwsh/Checks/samples/ps51')) {
        $file = [System.IO.Path]::GetFileName($path)
        if ($file -ne 'good.ps1') { @{ Name = $file; Path = $path; Rule = $file.Split([char]'.')[0] } }
    }
    $script:syntaxRules = foreach ($r in $rules.Syntax) { @{ Rule = $r.Rule; Since = $r.Since } }
    # one generated line per table entry (wildcards made concrete)
    $script:entries = @(
        foreach ($r in $rules.Commands) { @{ Rule = 'Command'; Code = "$($r.Name) -Name x" } }
        foreach ($r in $rules.Parameters) { @{ Rule = 'Parameter'; Code = "$($r.Command) -$($r.Parameter) x" } }
        foreach ($r in $rules.ParameterValues) { foreach ($v in $r.Values) { @{ Rule = 'ParameterValue'; Code = "Set-Content -Path x -$($r.Parameter) $v" } } }
        foreach ($r in $rules.Variables) { @{ Rule = 'Variable'; Code = "`$x = `$$($r.Name)" } }
        foreach ($v in $rules.PlatformVariables) { @{ Rule = 'UnguardedPlatformVariable'; Code = "if (`$$v) { 1 }" } }
        foreach ($r in $rules.Types) { @{ Rule = 'DotNetType'; Code = '$x = [' + $r.Type.Replace('.*', '.Anything').Replace('*', '') + ']' } }
        foreach ($r in $rules.StaticMembers) {
            $member = $r.Member.Replace('*Async', 'ReadAllTextAsync').Replace('Is*', 'IsWindows')
            @{ Rule = 'DotNetMember'; Code = "`$x = [$($r.Type)]::$member('a', 'b')" }
        }
    )
}

BeforeAll {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    function Get-Rule([string]$Code) { @(Find-StormatrixPs51Problem -Parsed (Get-StormatrixParsedText -Text $Code -Name 'generated.ps1') | ForEach-Object { $_.Rule }) }
}

Describe 'Windows PowerShell 5.1 compatibility of StormatrixGuest' {
    It 'Should use nothing 5.1 lacks in <Name>' -ForEach $guestFiles {
        (Find-StormatrixPs51Problem -Parsed (Get-StormatrixParsedFile -Path $Path)).Message | Should -BeNullOrEmpty
    }
}

Describe 'The 5.1 rules' {
    It 'Should flag the bad sample <Name> under rule <Rule>' -ForEach $samples {
        $parsed = Get-StormatrixParsedFile -Path $Path
        Format-StormatrixParseError -Parsed $parsed | Should -BeNullOrEmpty -Because 'a sample must be valid PowerShell 7'
        @(Find-StormatrixPs51Problem -Parsed $parsed | ForEach-Object { $_.Rule }) | Should -Contain $Rule
    }

    It 'Should have a bad sample for the syntax rule <Rule>' -ForEach $syntaxRules {
        $names = @([System.IO.Directory]::GetFiles([System.IO.Path]::Combine($PSScriptRoot, 'samples', 'ps51'), "$Rule.*.ps1"))
        $names.Count | Should -BeGreaterThan 0 -Because "rule $Rule ($Since) must be proved on a sample"
    }

    It 'Should find nothing in the good sample, which holds a 5.1 look-alike of every rule' {
        $parsed = Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'samples', 'ps51', 'good.ps1'))
        (Find-StormatrixPs51Problem -Parsed $parsed).Message | Should -BeNullOrEmpty
    }

    It 'Should flag the table entry <Code> under rule <Rule>' -ForEach $entries {
        Get-Rule $Code | Should -Contain $Rule
    }

    It 'Should name file, line, column, rule and the documented version in the message' {
        $finding = @(Find-StormatrixPs51Problem -Parsed (Get-StormatrixParsedText -Text "`n  `$a = `$b ?? 1" -Name 'x.ps1'))
        $finding.Count | Should -Be 1
        $finding[0].Message | Should -Match '^x\.ps1:2:8: NullCoalescing: .*PowerShell 7\.0'
    }

    It 'Should accept $IsWindows behind a version or edition test' {
        Get-Rule 'if ($PSVersionTable.PSVersion.Major -ge 6 -and $IsWindows) { 1 }' | Should -BeNullOrEmpty
        Get-Rule 'if ($PSVersionTable.PSEdition -eq "Core") { if ($IsLinux) { 1 } }' | Should -BeNullOrEmpty
    }

    It 'Should see through aliases and parameter prefixes' {
        Get-Rule '$x | % -Parallel { $_ }' | Should -Contain 'Parameter'
        Get-Rule 'ConvertFrom-Json -InputObject $t -AsHash' | Should -Contain 'Parameter'
    }

    It 'Should count Join-Path parts given by name and by position' {
        Get-Rule 'Join-Path -Path a -ChildPath b' | Should -BeNullOrEmpty
        Get-Rule 'Join-Path a b -Resolve' | Should -BeNullOrEmpty
        Get-Rule 'Join-Path -Path a b c' | Should -Contain 'JoinPathParts'
        Get-Rule 'Join-Path (Join-Path a b) c' | Should -BeNullOrEmpty
    }
}
