# The modules' own rules for their PowerShell, one suite for both modules: every file defines one
# advanced function named after it, with comment-based help (public ones: synopsis, description, an
# example, outputs and exactly their parameters; private ones: a synopsis) read by PowerShell's parser,
# and every public function has its own test file (tests/pester/<Module>/<Function>.Tests.ps1) with a
# Describe named after it; every public function that changes state (writes a disk, clears read-only,
# changes power, a controller or host tuning, installs something), directly or through the module's own
# functions, supports -WhatIf/-Confirm and asks ShouldProcess; the manifest passes Test-ModuleManifest with the module's
# PowerShell version and editions, the module imports, and it exports exactly the functions of Public/
# (no private one); PSScriptAnalyzer is clean where it is installed (a PowerShell Gallery package that
# NuGet does not serve, so make test cannot install it: the test says so and is skipped).
# Parse errors, Windows PowerShell 5.1 compatibility, static binding and the command inventory are
# checked by tests/pwsh/Checks; the parameters the Python side sends by tests/windows/test_pwsh_sent_scripts.py.
# Runs under Pester 5.7.1 on pwsh 7.6.9 (scripts/install-pwsh.sh).
BeforeDiscovery {
    $script:repo = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..'))
    $script:modules = @('StormatrixGuest', 'StormatrixVMware')
    $script:functionFiles = foreach ($m in $modules) {
        foreach ($kind in 'Public', 'Private') {
            $folder = [System.IO.Path]::Combine($repo, 'windows', $m, $kind)
            foreach ($path in [System.IO.Directory]::GetFiles($folder, '*.ps1')) {
                $name = [System.IO.Path]::GetFileNameWithoutExtension($path)
                @{ Module = $m; Kind = $kind; Name = $name; Path = $path; TestFile = [System.IO.Path]::Combine($PSScriptRoot, $m, "$name.Tests.ps1") }
            }
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

Describe '<Kind> function <Name> of <Module>' -ForEach $functionFiles {
    BeforeAll {
        $script:functions = Get-TopLevelFunction -Path $Path
        $script:function = $script:functions | Where-Object { $_.Name -eq $Name }
        $script:help = if ($script:function) { $script:function.GetHelpContent() }
    }

    It 'Should be defined once, by a file named after it' {
        @($script:functions | ForEach-Object { $_.Name }) | Should -Be @($Name)
    }

    It 'Should be an advanced function' {
        $attributes = @($script:function.Body.ParamBlock.Attributes | ForEach-Object { $_.TypeName.Name })
        $attributes | Should -Contain 'CmdletBinding'
        if ($Kind -eq 'Public') { $attributes | Should -Contain 'OutputType' }
    }

    It 'Should have comment-based help' {
        $script:help | Should -Not -BeNullOrEmpty -Because 'help goes in a <# #> block inside the function, before param()'
        $script:help.Synopsis | Should -Not -BeNullOrEmpty
        if ($Kind -eq 'Public') {
            $script:help.Description | Should -Not -BeNullOrEmpty
            @($script:help.Examples).Count | Should -BeGreaterThan 0
            $script:help.Outputs | Should -Not -BeNullOrEmpty -Because 'a public function says what it returns (.OUTPUTS)'
            [string[]]$declared = @($script:function.Body.ParamBlock.Parameters | ForEach-Object { $_.Name.VariablePath.UserPath.ToUpperInvariant() })
            [string[]]$documented = @($script:help.Parameters.Keys | ForEach-Object { $_.ToUpperInvariant() })
            [System.Array]::Sort($declared); [System.Array]::Sort($documented)
            ($documented -join ', ') | Should -Be ($declared -join ', ') -Because 'every parameter, and only those, has a .PARAMETER entry'
        }
    }
}

Describe 'Unit test of <Name>' -ForEach @($functionFiles | Where-Object { $_.Kind -eq 'Public' }) {
    # private functions are tested through the public ones
    It 'Should have its own test file, tests/pester/<Module>/<Name>.Tests.ps1, with a Describe named after it' {
        [System.IO.File]::Exists($TestFile) | Should -BeTrue -Because 'one test file per public function'
        [System.IO.File]::ReadAllText($TestFile) | Should -Match ("(?m)^Describe '" + [regex]::Escape($Name) + "'")
    }
}

Describe 'ShouldProcess in <Module>' -ForEach @(
    # the public functions that change state, and what they change (the computed list below must equal it,
    # so a function that starts changing state fails here until it supports -WhatIf/-Confirm and is named)
    @{ Module = 'StormatrixGuest'; Expected = @('Initialize-StormatrixGuest', 'Invoke-StormatrixDiskSpd', 'Invoke-StormatrixFio') }
    @{ Module = 'StormatrixVMware'; Expected = @('Add-StormatrixVMwareFleetDisk', 'Invoke-StormatrixVMwareRequest', 'New-StormatrixVMwareFleet', 'Remove-StormatrixVMwareFleet',
            'Remove-StormatrixVMwareFleetDisk', 'Restart-StormatrixVMwareFleet', 'Restore-StormatrixVMwareLayout', 'Set-StormatrixVMwareController', 'Set-StormatrixVMwareHostTuning') }
) {
    BeforeAll {
        # what changes state, where the module calls it: commands, an esxcli 'set' namespace, powercfg
        # /setactive, the vSphere API's ReconfigVM, and running the I/O engine (it writes the test disk)
        $changing = @{
            'Set-Disk' = 'disk flags'; 'Clear-Disk' = 'erases a disk'; 'Set-HardDisk' = 'moves a virtual disk'
            'New-ScsiController' = 'adds a controller'; 'New-NvmeController' = 'adds a controller'
            'Start-VM' = 'power'; 'Stop-VM' = 'power'; 'Restart-Computer' = 'power'
            'New-VM' = 'clones a VM'; 'Set-VM' = 'VM hardware'; 'Remove-VM' = 'deletes a VM'; 'New-HardDisk' = 'creates a virtual disk'; 'Remove-HardDisk' = 'deletes a virtual disk'
            'New-Item' = 'installs files'; 'Copy-Item' = 'installs files'
            'New-WSManInstance' = 'WinRM listener'; 'New-SelfSignedCertificate' = 'certificate store'; 'New-NetFirewallRule' = 'firewall'
            'Invoke-StormatrixEngineRun' = 'runs fio/DiskSpd on the target'
        }
        $defs = @{}
        foreach ($kind in 'Public', 'Private') {
            foreach ($path in [System.IO.Directory]::GetFiles([System.IO.Path]::Combine((Get-ModuleFolder $Module), $kind), '*.ps1')) {
                foreach ($f in Get-TopLevelFunction -Path $path) { $defs[$f.Name] = $f }
            }
        }
        $direct = @{}; $calls = @{}; $asks = @{}
        foreach ($name in $defs.Keys) {
            $ast = $defs[$name]
            $found = [System.Collections.Generic.List[string]]::new()
            $called = [System.Collections.Generic.HashSet[string]]::new()
            foreach ($c in $ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.CommandAst] }, $true)) {
                $n = $c.GetCommandName()
                if (-not $n) { continue }
                if ($defs.ContainsKey($n)) { $null = $called.Add($n) }
                if ($changing.ContainsKey($n)) { $found.Add("$n ($($changing[$n]))") }
                if ($n -eq 'Invoke-StormatrixEsxCli' -and $c.Extent.Text -match "-Namespace\s+'[^']*\.set'") { $found.Add('esxcli set (host tuning)') }
                if ($n -eq 'Invoke-StormatrixNative' -and $c.Extent.Text -match '/setactive') { $found.Add('powercfg /setactive (power plan)') }
            }
            foreach ($m in $ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.InvokeMemberExpressionAst] }, $true)) {
                if ($m.Member.Extent.Text -like 'ReconfigVM*') { $found.Add('ReconfigVM (controllers)') }
                if ($m.Member.Extent.Text -eq 'ShouldProcess') { $asks[$name] = $true }
            }
            # a function named in a string constant is one the code dispatches to (the request allow-list)
            foreach ($k in $ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.StringConstantExpressionAst] }, $true)) {
                if ($k.Value -ne $name -and $defs.ContainsKey($k.Value)) { $null = $called.Add($k.Value) }
            }
            $direct[$name] = $found; $calls[$name] = $called
        }
        function Get-Reach([string]$Name) {
            $seen = [System.Collections.Generic.HashSet[string]]::new([string[]]@($Name))
            $queue = [System.Collections.Generic.Queue[string]]::new([string[]]@($Name))
            while ($queue.Count) { foreach ($c in $calls[$queue.Dequeue()]) { if ($seen.Add($c)) { $queue.Enqueue($c) } } }
            , $seen
        }
        $script:stateChanging = @(foreach ($name in (Get-PublicName -Module $Module)) {
                if (@((Get-Reach $name) | ForEach-Object { $direct[$_] }).Count) { $name }
            })
        $script:defs = $defs; $script:asks = $asks
        $script:reach = @{}; foreach ($name in $script:stateChanging) { $script:reach[$name] = Get-Reach $name }
    }

    It 'Should find exactly the expected state-changing public functions' {
        ($script:stateChanging | Sort-Object) -join ', ' | Should -Be (($Expected | Sort-Object) -join ', ')
    }

    It 'Should declare SupportsShouldProcess, have -WhatIf and -Confirm, and ask ShouldProcess: <Expected>' {
        $module = Import-UnderTest -Module $Module
        foreach ($name in $script:stateChanging) {
            $binding = @($script:defs[$name].Body.ParamBlock.Attributes | Where-Object { $_.TypeName.Name -eq 'CmdletBinding' })[0]
            @($binding.NamedArguments | ForEach-Object { $_.ArgumentName }) | Should -Contain 'SupportsShouldProcess' -Because "$name changes state"
            $command = $module.ExportedFunctions[$name]
            $command.Parameters.Keys | Should -Contain 'WhatIf' -Because "$name changes state"
            $command.Parameters.Keys | Should -Contain 'Confirm' -Because "$name changes state"
            @($script:reach[$name] | Where-Object { $script:asks.ContainsKey($_) }) | Should -Not -BeNullOrEmpty -Because "$name (or a function it calls) must call `$PSCmdlet.ShouldProcess"
        }
    }
}

Describe 'Module manifest of <Module>' -ForEach @(
    # the guest module runs on Windows PowerShell 5.1 and PowerShell 7; the VMware one on the workstation's
    # PowerShell 7.2+ with PowerCLI, imported by Connect-StormatrixVMware (no RequiredModules, so tests can stub it)
    @{ Module = 'StormatrixGuest'; PowerShellVersion = '5.1'; Editions = 'Core, Desktop' }
    @{ Module = 'StormatrixVMware'; PowerShellVersion = '7.2'; Editions = 'Core' }
) {
    BeforeAll {
        $script:manifest = [System.IO.Path]::Combine((Get-ModuleFolder $Module), "$Module.psd1")
        $script:public = Get-PublicName -Module $Module
    }

    It 'Should pass Test-ModuleManifest' {
        { $null = Test-ModuleManifest -Path $script:manifest -ErrorAction Stop } | Should -Not -Throw
    }

    It 'Should declare PowerShell <PowerShellVersion>, the editions <Editions> and no required module' {
        $info = Test-ModuleManifest -Path $script:manifest -ErrorAction Stop
        $info.PowerShellVersion.ToString() | Should -Be $PowerShellVersion
        [string[]]$declared = @($info.CompatiblePSEditions)
        [System.Array]::Sort($declared)
        ($declared -join ', ') | Should -Be $Editions
        @($info.RequiredModules) | Should -BeNullOrEmpty
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
            Set-ItResult -Skipped -Because 'PSScriptAnalyzer is not installed (PowerShell Gallery only, not on NuGet: Install-Module PSScriptAnalyzer runs this test; tests/pwsh/Checks stand in for it)'
            return
        }
        $settings = Import-PowerShellDataFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'PSScriptAnalyzerSettings.psd1'))
        if ($Module -eq 'StormatrixVMware') { $settings.Rules.PSUseCompatibleSyntax.TargetVersions = @('7.0') }
        $findings = @(Invoke-ScriptAnalyzer -Path (Get-ModuleFolder $Module) -Recurse -Settings $settings)
        ($findings | ForEach-Object { "$($_.ScriptName):$($_.Line): $($_.RuleName): $($_.Message)" }) | Should -BeNullOrEmpty
    }
}
