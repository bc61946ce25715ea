# Static checks of the project's PowerShell, run on pwsh 7.6.9: parse errors, syntax and .NET APIs that
# Windows PowerShell 5.1 lacks, static parameter binding of calls to module functions, and the inventory
# of commands the code calls. The 5.1 rules are in Ps51Check.ps1 (dot-sourced below). They stand where
# PSScriptAnalyzer would (a PowerShell Gallery package, not served by NuGet).
#
# Why a module of its own: the same checks run over the files under windows/ (tests in this folder) and
# over the script texts the Python side sends (tests/windows/test_pwsh_sent_scripts.py runs Test-SentScript.ps1
# through tests/pwshengine.py). It uses the parser and its AST, StaticParameterBinder and System.IO.
# Every file is parsed once per session (cached by path and time).
$script:RepoRoot = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..', '..'))
# kept across re-imports (each test file imports the module with -Force): a file is parsed once per
# session; entries are keyed by full path and checked against the file's write time
if ($null -eq $global:StormatrixChecksParseCache) { $global:StormatrixChecksParseCache = @{} }
$script:ParseCache = $global:StormatrixChecksParseCache
Set-StrictMode -Version 3.0
$script:Rules = $null
$script:Aliases = $null

function Get-StormatrixRepoRoot {
    <# .SYNOPSIS The repository root (three levels above this module). #>
    [CmdletBinding()] [OutputType([string])] param()
    $script:RepoRoot
}

function Get-StormatrixRelativePath {
    <# .SYNOPSIS A path relative to the repository root, with forward slashes, for messages. #>
    [CmdletBinding()] [OutputType([string])] param([Parameter(Mandatory)][string]$Path)
    [System.IO.Path]::GetRelativePath($script:RepoRoot, $Path).Replace('\', '/')
}

function Get-StormatrixPowerShellFile {
    <#
    .SYNOPSIS
    Every .ps1/.psm1/.psd1 file under the given folders (relative to the repository root), sorted.
    A missing folder is an error that names it: a check must not pass on nothing.
    #>
    [CmdletBinding()] [OutputType([string[]])]
    param([Parameter(Mandatory)][string[]]$Folder, [string[]]$Extension = @('.ps1', '.psm1', '.psd1'))
    $found = [System.Collections.Generic.List[string]]::new()
    foreach ($f in $Folder) {
        $full = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($script:RepoRoot, $f))
        if (-not [System.IO.Directory]::Exists($full)) {
            throw "$f not found: $full (expected a folder of PowerShell files)"
        }
        foreach ($p in [System.IO.Directory]::EnumerateFiles($full, '*', [System.IO.SearchOption]::AllDirectories)) {
            if ($Extension -contains [System.IO.Path]::GetExtension($p).ToLowerInvariant()) { $found.Add($p) }
        }
    }
    $found.Sort([System.StringComparer]::Ordinal)
    $found.ToArray()
}

function Get-StormatrixParsedFile {
    <#
    .SYNOPSIS
    A file parsed by the engine's parser: Path, Name (relative), Ast, Tokens, Errors. Cached, so that the
    parse, 5.1, binding and inventory checks read each file once.
    #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param([Parameter(Mandatory)][string]$Path)
    $full = [System.IO.Path]::GetFullPath($Path)
    $stamp = [System.IO.File]::GetLastWriteTimeUtc($full)
    $hit = $script:ParseCache[$full]
    if ($null -ne $hit -and $hit.Stamp -eq $stamp) { return $hit }
    $tokens = $null
    $errors = $null
    $ast = [System.Management.Automation.Language.Parser]::ParseFile($full, [ref]$tokens, [ref]$errors)
    $parsed = [pscustomobject]@{
        Path = $full; Name = (Get-StormatrixRelativePath -Path $full); Stamp = $stamp
        Ast = $ast; Tokens = $tokens; Errors = $errors
    }
    $script:ParseCache[$full] = $parsed
    $parsed
}

function Get-StormatrixParsedText {
    <# .SYNOPSIS A script text parsed by the engine's parser, named for messages (e.g. what it is for). #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param([Parameter(Mandatory)][AllowEmptyString()][string]$Text, [Parameter(Mandatory)][string]$Name)
    $tokens = $null
    $errors = $null
    $ast = [System.Management.Automation.Language.Parser]::ParseInput($Text, [ref]$tokens, [ref]$errors)
    [pscustomobject]@{ Path = $null; Name = $Name; Stamp = $null; Ast = $ast; Tokens = $tokens; Errors = $errors }
}

function Format-StormatrixParseError {
    <# .SYNOPSIS One line per parse error: name:line:column: message [ErrorId]. Empty when the text parses. #>
    [CmdletBinding()] [OutputType([string[]])]
    param([Parameter(Mandatory)]$Parsed)
    foreach ($e in @($Parsed.Errors)) {
        '{0}:{1}:{2}: {3} [{4}]' -f $Parsed.Name, $e.Extent.StartLineNumber, $e.Extent.StartColumnNumber, $e.Message, $e.ErrorId
    }
}

function Get-StormatrixAliasMap {
    <# .SYNOPSIS The engine's built-in aliases (gc -> Get-Content ...), so rules and the inventory see through them. #>
    [CmdletBinding()] [OutputType([hashtable])] param()
    if ($null -eq $script:Aliases) {
        $map = @{}
        foreach ($a in (Get-Command -CommandType Alias -ErrorAction SilentlyContinue)) { $map[$a.Name] = $a.Definition }
        $script:Aliases = $map
    }
    $script:Aliases
}

function Get-StormatrixCommandName {
    <# .SYNOPSIS The name a CommandAst calls, through aliases; $null for a dynamic call (& $x). #>
    [CmdletBinding()] [OutputType([string])]
    param([Parameter(Mandatory)][System.Management.Automation.Language.CommandAst]$Command)
    $name = $Command.GetCommandName()
    if (-not $name) { return $null }
    $alias = (Get-StormatrixAliasMap)[$name]
    if ($alias) { return $alias }
    $name
}

function Get-StormatrixNamedArgument {
    # (parameter as written, its argument AST or $null) for each -Name of a command, in order
    param([System.Management.Automation.Language.CommandAst]$Command, [string[]]$Switch = @())
    $elements = $Command.CommandElements
    for ($i = 1; $i -lt $elements.Count; $i++) {
        $e = $elements[$i]
        if ($e -isnot [System.Management.Automation.Language.CommandParameterAst]) { continue }
        $arg = $e.Argument
        $isSwitch = @($Switch | Where-Object { $_.StartsWith($e.ParameterName, [System.StringComparison]::OrdinalIgnoreCase) }).Count -gt 0
        if ($null -eq $arg -and -not $isSwitch -and $i + 1 -lt $elements.Count -and
            $elements[$i + 1] -isnot [System.Management.Automation.Language.CommandParameterAst]) {
            $arg = $elements[$i + 1]
        }
        [pscustomobject]@{ Parameter = $e.ParameterName; Argument = $arg; Ast = $e }
    }
}

function Get-StormatrixFunctionDefinition {
    <#
    .SYNOPSIS
    The functions a set of files defines (FunctionDefinitionAst, scope prefixes such as global: removed),
    each with Name, File and Ast. This is how the inventory learns what the stand-ins and fakes provide:
    from their source, not from a hand-kept list.
    #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param([Parameter(Mandatory)][AllowEmptyCollection()][string[]]$Path)
    foreach ($p in $Path) {
        $parsed = Get-StormatrixParsedFile -Path $p
        $defs = $parsed.Ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.FunctionDefinitionAst] }, $true)
        foreach ($d in $defs) {
            # a function nested in another function is that function's helper, not something the file provides
            $outer = $false
            for ($a = $d.Parent; $null -ne $a; $a = $a.Parent) {
                if ($a -is [System.Management.Automation.Language.FunctionDefinitionAst]) { $outer = $true; break }
            }
            if ($outer) { continue }
            [pscustomobject]@{ Name = ($d.Name -replace '^(global|script|local|private):', ''); File = $parsed.Name; Ast = $d }
        }
    }
}

function Get-StormatrixCommandUse {
    <#
    .SYNOPSIS
    The commands a parsed file calls: Name (aliases resolved), Written, Line, Site (name:line), Ast. A
    constant -FilePath given to Invoke-StormatrixNative is reported too, as Kind 'Native'. Dynamic calls
    (& $variable) have no name and are left out.
    #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param([Parameter(Mandatory)]$Parsed)
    foreach ($c in $Parsed.Ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.CommandAst] }, $true)) {
        $name = Get-StormatrixCommandName -Command $c
        if (-not $name) { continue }
        $site = '{0}:{1}' -f $Parsed.Name, $c.Extent.StartLineNumber
        [pscustomobject]@{ Name = $name; Written = $c.GetCommandName(); Kind = 'Command'; Line = $c.Extent.StartLineNumber; Site = $site; Ast = $c }
        if ($name -eq 'Invoke-StormatrixNative') {
            foreach ($p in (Get-StormatrixNamedArgument -Command $c)) {
                if ('FilePath'.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase) -and
                    $p.Argument -is [System.Management.Automation.Language.StringConstantExpressionAst]) {
                    [pscustomobject]@{ Name = $p.Argument.Value; Written = $p.Argument.Value; Kind = 'Native'; Line = $c.Extent.StartLineNumber; Site = $site; Ast = $c }
                }
            }
        }
    }
}

function New-StormatrixFunctionModule {
    <#
    .SYNOPSIS
    A dynamic module holding every function defined in the given files (not running their .psm1), so calls
    to public and private functions can be bound the way they resolve inside the real module, without the
    Utility cmdlets its loader needs. Files that do not parse are left out (the parse test reports them), so
    a call to a function of such a file fails to bind.
    #>
    [CmdletBinding()] [OutputType([System.Management.Automation.PSModuleInfo])]
    param([Parameter(Mandatory)][string]$Name, [Parameter(Mandatory)][string[]]$Path)
    $text = [System.Text.StringBuilder]::new()
    foreach ($p in $Path) {
        if (@((Get-StormatrixParsedFile -Path $p).Errors).Count) { continue }
        foreach ($d in @(Get-StormatrixFunctionDefinition -Path $p)) { [void]$text.AppendLine($d.Ast.Extent.Text) }
    }
    New-Module -Name $Name -ScriptBlock ([scriptblock]::Create($text.ToString()))
}

function Get-StormatrixBindingProblem {
    <#
    .SYNOPSIS
    Binds each call statically (StaticParameterBinder, as the engine would at run time, without running
    anything) inside a module's scope, so private functions resolve as they do in the module. Returns, per
    call: Site, Command, Problems (unknown, ambiguous or repeated parameters, stray positional arguments, and
    mandatory parameters no parameter set gets). Splatted arguments (@x) cannot be known statically: the
    names written out are still checked; the mandatory check is then skipped and Splatted is $true.
    #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][System.Management.Automation.PSModuleInfo]$Module,
        [Parameter(Mandatory)][AllowEmptyCollection()][object[]]$Call
    )
    & $Module {
        param($calls)
        foreach ($call in $calls) {
            $c = $call.Ast
            $name = $c.GetCommandName()
            $problems = [System.Collections.Generic.List[string]]::new()
            $info = Get-Command -Name $name -CommandType Function, Cmdlet -ErrorAction SilentlyContinue | Where-Object { $_.Name -eq $name }
            $splatted = @($c.CommandElements | Where-Object { $_ -is [System.Management.Automation.Language.VariableExpressionAst] -and $_.Splatted }).Count -gt 0
            if (-not $info) {
                $problems.Add("$name is not defined where this call runs")
            }
            else {
                $bound = [System.Management.Automation.Language.StaticParameterBinder]::BindCommand($c, $true)
                foreach ($k in $bound.BindingExceptions.Keys) {
                    $problems.Add("$($bound.BindingExceptions[$k].BindingException.ErrorId): $($bound.BindingExceptions[$k].BindingException.Message)")
                }
                if (-not $splatted) {
                    $names = @($bound.BoundParameters.Keys)
                    $pipeline = $c.Parent
                    $piped = $pipeline -is [System.Management.Automation.Language.PipelineAst] -and $pipeline.PipelineElements.IndexOf($c) -gt 0
                    $satisfied = $false
                    $missingBySet = [System.Collections.Generic.List[string]]::new()
                    foreach ($set in $info.ParameterSets) {
                        $inSet = @($set.Parameters | ForEach-Object { $_.Name })
                        if (@($names | Where-Object { $inSet -notcontains $_ }).Count) { continue }
                        $missing = @($set.Parameters | Where-Object {
                                $_.IsMandatory -and $names -notcontains $_.Name -and
                                -not ($piped -and ($_.ValueFromPipeline -or $_.ValueFromPipelineByPropertyName)) } | ForEach-Object { $_.Name })
                        if ($missing.Count -eq 0) { $satisfied = $true; break }
                        $missingBySet.Add("set $($set.Name): -$($missing -join ', -')")
                    }
                    if (-not $satisfied) {
                        if ($missingBySet.Count) { $problems.Add("missing mandatory parameter ($($missingBySet -join '; '))") }
                        else { $problems.Add("no parameter set of $name takes -$($names -join ', -') together") }
                    }
                }
            }
            [pscustomobject]@{ Site = $call.Site; Command = $name; Splatted = $splatted; Problems = $problems.ToArray() }
        }
    } $Call
}

function Get-StormatrixCommandSource {
    <#
    .SYNOPSIS
    Where each command the code may call comes from, read from the source of each provider: pwsh's own
    cmdlets and functions (Get-Command: the commands of pwsh's modules, not functions defined by a file),
    the two modules (windows/), the fake Windows guest (tests/pwsh/FakeWindows), the fake PowerCLI
    (tests/pwsh/FakeVCenter), Pester 5 (the guest's validation suite is a Pester file; read from the
    Pester the tests run on: the loaded module, else $env:STORMATRIX_PESTER_PSD1, else the one
    scripts/install-pwsh.sh restores into .tools/nuget), and the native executables and field-only
    commands listed in Inventory.psd1.
    .OUTPUTS
    Sources (name -> list of provider labels), Problems (missing folders).
    #>
    [CmdletBinding()] [OutputType([pscustomobject])] param()
    $sources = @{}
    $problems = [System.Collections.Generic.List[string]]::new()
    $note = { param($Name, $Label) if (-not $sources.ContainsKey($Name)) { $sources[$Name] = [System.Collections.Generic.List[string]]::new() }; if (-not $sources[$Name].Contains($Label)) { $sources[$Name].Add($Label) } }
    $providers = [ordered]@{
        'Module'      = @('windows', 'the StormatrixGuest and StormatrixVMware modules')
        'FakeWindows' = @('tests/pwsh/FakeWindows', 'the fake Windows guest (guest helper)')
        'FakeVCenter' = @('tests/pwsh/FakeVCenter', 'the fake PowerCLI / vCenter (vmware helper)')
    }
    $defined = @{}
    foreach ($label in $providers.Keys) {
        $folder, $what = $providers[$label]
        try { $files = @(Get-StormatrixPowerShellFile -Folder $folder -Extension '.ps1', '.psm1') }
        catch { $problems.Add("$folder not found: $([System.IO.Path]::Combine($script:RepoRoot, $folder)) ($what)"); continue }
        foreach ($d in @(Get-StormatrixFunctionDefinition -Path $files)) {
            # helpers (named _...) are not commands the code calls
            if ($d.Name.StartsWith('_')) { continue }
            & $note $d.Name $label
            if (-not $defined.ContainsKey($d.Name)) { $defined[$d.Name] = $d.File }
        }
    }
    # pwsh's own: the cmdlets of its modules (listed without loading them) and its built-in functions and
    # aliases; not a function a file defined (a test's helper) nor one of a module imported by a test
    foreach ($m in (Get-Module -ListAvailable -Name Microsoft.PowerShell.* -ErrorAction SilentlyContinue)) {
        foreach ($n in $m.ExportedCmdlets.Keys) { & $note $n 'Engine' }
    }
    foreach ($c in (Get-Command -CommandType Cmdlet, Function, Alias -ErrorAction SilentlyContinue)) {
        if ($c.CommandType -eq 'Function' -and $c.ScriptBlock.File) { continue }
        if ($c.CommandType -ne 'Alias' -and $c.Module -and $c.Module.Name -notlike 'Microsoft.PowerShell.*') { continue }
        & $note $c.Name 'Engine'
    }
    $pester = Get-Module -Name Pester | Where-Object { $_.Version.Major -ge 5 } | Select-Object -First 1
    if ($pester) {
        foreach ($n in @($pester.ExportedFunctions.Keys) + @($pester.ExportedAliases.Keys)) { & $note $n 'Pester' }
    }
    else {
        $manifest = $env:STORMATRIX_PESTER_PSD1
        if (-not $manifest) {
            $manifest = @(Get-ChildItem -Path ([System.IO.Path]::Combine($script:RepoRoot, '.tools', 'nuget', 'pester', '5.*', 'tools', 'Pester.psd1')) -ErrorAction SilentlyContinue |
                    Sort-Object -Property { [version]$_.Directory.Parent.Name } | Select-Object -Last 1 | ForEach-Object FullName)[0]
        }
        if ($manifest -and [System.IO.File]::Exists($manifest)) {
            $data = Import-PowerShellDataFile -Path $manifest
            foreach ($n in @($data.FunctionsToExport) + @($data.AliasesToExport)) { if ($n) { & $note $n 'Pester' } }
        }
        else { $problems.Add("Pester 5 not found (no loaded Pester, STORMATRIX_PESTER_PSD1, or .tools/nuget/pester): run bash scripts/install-pwsh.sh") }
    }
    $table = (Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'Inventory.psd1'))).Ast.Find({ param($n) $n -is [System.Management.Automation.Language.HashtableAst] }, $false).SafeGetValue()
    foreach ($n in $table.NativeExecutables.Keys) { & $note $n 'Native' }
    foreach ($n in $table.ExternalCommands.Keys) { & $note $n 'External' }
    [pscustomobject]@{ Sources = $sources; Problems = $problems.ToArray(); Natives = $table.NativeExecutables }
}

function Get-StormatrixUnknownCommand {
    <#
    .SYNOPSIS
    The command uses (from Get-StormatrixCommandUse) that no provider of Get-StormatrixCommandSource
    supplies, each as 'site: name'. Functions the same text defines for itself count as supplied.
    #>
    [CmdletBinding()] [OutputType([string[]])]
    param([Parameter(Mandatory)]$Parsed, [Parameter(Mandatory)]$Source)
    $local = @{}
    foreach ($d in $Parsed.Ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.FunctionDefinitionAst] }, $true)) { $local[($d.Name -replace '^\w+:', '')] = $true }
    foreach ($u in @(Get-StormatrixCommandUse -Parsed $Parsed)) {
        if ($Source.Sources.ContainsKey($u.Name) -or $local.ContainsKey($u.Name)) { continue }
        if ($u.Kind -eq 'Native') { "$($u.Site): native executable $($u.Name) is not in tests/pwsh/Checks/Inventory.psd1 NativeExecutables"; continue }
        "$($u.Site): $($u.Written) is not a pwsh cmdlet, a module function, a fake Windows/PowerCLI command, a Pester command or listed in tests/pwsh/Checks/Inventory.psd1"
    }
}

. ([System.IO.Path]::Combine($PSScriptRoot, 'Ps51Check.ps1'))

Export-ModuleMember -Function *-Stormatrix*
