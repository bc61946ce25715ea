# The modules' own rules (STYLE.md, PowerShell), one suite for both modules: every public function is
# defined once by a file named after it, has complete comment-based help and a unit test; the manifest
# passes Test-ModuleManifest, the module imports, and it exports exactly the functions of Public/ (no
# private one); PSScriptAnalyzer is clean where it is installed.
# Parse errors, Windows PowerShell 5.1 compatibility, static binding and the command inventory are
# checked by tests/pwsh/Checks; the parameters the Python side sends by tests/test_pwsh_sent_scripts.py.
# Runs under real Pester 5 and under PesterLite on the hosted engine.
BeforeDiscovery {
    $repo = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..'))
    # Tests: the Pester files that hold the module's unit tests (a Describe named after each function)
    $modules = @(
        @{ Module = 'StormatrixGuest'; Tests = @('StormatrixGuest.Tests.ps1', 'Invoke-StormatrixFio.Linux.Tests.ps1') }
        @{ Module = 'StormatrixVMware'; Tests = @('StormatrixVMware.Tests.ps1') }
    )
    $publicFunctions = foreach ($m in $modules) {
        $folder = [System.IO.Path]::Combine($repo, 'windows', $m.Module, 'Public')
        foreach ($path in [System.IO.Directory]::GetFiles($folder, '*.ps1')) {
            @{ Module = $m.Module; Name = [System.IO.Path]::GetFileNameWithoutExtension($path); Path = $path; Tests = $m.Tests }
        }
    }
}

BeforeAll {
    $script:repo = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..'))
    $script:haveAnalyzer = [bool]((Get-Module -Name PSScriptAnalyzer) -or (Get-Module -ListAvailable -Name PSScriptAnalyzer))
    $script:imported = @{}
    function Get-ModuleFolder([string]$Module) { [System.IO.Path]::Combine($script:repo, 'windows', $Module) }
    function Get-PublicName([string]$Module) {
        $names = foreach ($p in [System.IO.Directory]::GetFiles([System.IO.Path]::Combine((Get-ModuleFolder $Module), 'Public'), '*.ps1')) {
            [System.IO.Path]::GetFileNameWithoutExtension($p)
        }
        [string[]]$sorted = @($names)
        [System.Array]::Sort($sorted, [System.StringComparer]::OrdinalIgnoreCase)
        , $sorted
    }
    function Get-TopLevelFunction([string]$Path) {
        $ast = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref]$null, [ref]$null)
        # top level: in the file's own script block (FunctionDefinitionAst -> NamedBlockAst -> the file)
        @($ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.FunctionDefinitionAst] -and $n.Parent.Parent -eq $ast }, $false))
    }
    function Import-UnderTest([string]$Module) {
        # imported once per module for the help tests; the manifest tests import again with -Force
        if (-not $script:imported.ContainsKey($Module)) {
            $script:imported[$Module] = Import-Module -Name ([System.IO.Path]::Combine((Get-ModuleFolder $Module), "$Module.psd1")) -Force -PassThru -ErrorAction Stop
        }
        $script:imported[$Module]
    }
}

Describe 'Public function <Name> of <Module>' -ForEach $publicFunctions {
    It 'Should be defined once, by a file named after it' {
        $functions = Get-TopLevelFunction -Path $Path
        $functions.Count | Should -Be 1
        $functions[0].Name | Should -BeExactly $Name
    }

    It 'Should have help with synopsis, description, an example and every parameter' {
        $null = Import-UnderTest -Module $Module
        $help = Get-Help -Name $Name -Full
        $help.Synopsis | Should -Not -BeNullOrEmpty
        $help.Synopsis.Trim() | Should -Not -BeLike "$Name *" -Because 'an auto-generated synopsis means no comment-based help'
        $help.Description | Should -Not -BeNullOrEmpty
        @($help.Examples.Example).Count | Should -BeGreaterThan 0
        $common = [System.Management.Automation.Cmdlet]::CommonParameters + [System.Management.Automation.Cmdlet]::OptionalCommonParameters
        foreach ($parameter in (Get-Command -Name "$Module\$Name").Parameters.Keys | Where-Object { $common -notcontains $_ }) {
            $entry = @($help.Parameters.Parameter | Where-Object { $_.Name -eq $parameter })
            ($entry.Description.Text -join '') | Should -Not -BeNullOrEmpty -Because "parameter $parameter needs a .PARAMETER entry"
        }
    }

    It 'Should have a unit test' {
        $text = foreach ($file in $Tests) { [System.IO.File]::ReadAllText([System.IO.Path]::Combine($PSScriptRoot, $file)) }
        ($text -join "`n") | Should -Match ("Describe '" + [regex]::Escape($Name) + "'")
    }
}

Describe 'Module manifest of <Module>' -ForEach @(
    @{ Module = 'StormatrixGuest' }
    @{ Module = 'StormatrixVMware' }
) {
    BeforeAll {
        $script:manifest = [System.IO.Path]::Combine((Get-ModuleFolder $Module), "$Module.psd1")
        $script:public = Get-PublicName -Module $Module
    }

    It 'Should pass Test-ModuleManifest' {
        { $null = Test-ModuleManifest -Path $script:manifest -ErrorAction Stop } | Should -Not -Throw
    }

    It 'Should list exactly the Public functions in FunctionsToExport' {
        $info = Test-ModuleManifest -Path $script:manifest -ErrorAction Stop
        [string[]]$listed = @($info.ExportedFunctions.Keys)
        [System.Array]::Sort($listed, [System.StringComparer]::OrdinalIgnoreCase)
        ($listed -join ', ') | Should -Be ($script:public -join ', ')
    }

    It 'Should import with -Force and export exactly the Public functions' {
        $module = Import-Module -Name $script:manifest -Force -PassThru -ErrorAction Stop
        $script:imported[$Module] = $module
        [string[]]$exported = @($module.ExportedFunctions.Keys)
        [System.Array]::Sort($exported, [System.StringComparer]::OrdinalIgnoreCase)
        ($exported -join ', ') | Should -Be ($script:public -join ', ')
        @($module.ExportedCmdlets.Keys) + @($module.ExportedAliases.Keys) + @($module.ExportedVariables.Keys) | Should -BeNullOrEmpty
    }

    It 'Should keep every Private function private' {
        $module = Import-UnderTest -Module $Module
        $folder = [System.IO.Path]::Combine((Get-ModuleFolder $Module), 'Private')
        foreach ($path in [System.IO.Directory]::GetFiles($folder, '*.ps1')) {
            foreach ($f in Get-TopLevelFunction -Path $path) {
                $module.ExportedFunctions.ContainsKey($f.Name) | Should -BeFalse -Because "$($f.Name) is private"
                & $module { param($n) [bool](Get-Command -Name $n -CommandType Function -ErrorAction SilentlyContinue) } $f.Name |
                    Should -BeTrue -Because "$($f.Name) must exist inside the module"
            }
        }
    }
}

Describe 'PSScriptAnalyzer on <Module>' -ForEach @(
    @{ Module = 'StormatrixGuest' }
    @{ Module = 'StormatrixVMware' }
) {
    It 'Should find nothing in any file of the module' {
        if (-not $script:haveAnalyzer) {
            Set-ItResult -Skipped -Because 'PSScriptAnalyzer is not installed (the hosted engine has none; this runs under a real pwsh that has it)'
            return
        }
        $settings = Import-PowerShellDataFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'PSScriptAnalyzerSettings.psd1'))
        if ($Module -eq 'StormatrixVMware') { $settings.Rules.PSUseCompatibleSyntax.TargetVersions = @('7.0') }
        $findings = @(Invoke-ScriptAnalyzer -Path (Get-ModuleFolder $Module) -Recurse -Settings $settings)
        ($findings | ForEach-Object { "$($_.ScriptName):$($_.Line): $($_.RuleName): $($_.Message)" }) | Should -BeNullOrEmpty
    }
}
