# Static checks of the project's PowerShell, run on the real PowerShell engine: parse errors, syntax and
# .NET APIs that Windows PowerShell 5.1 lacks, static parameter binding of calls to module functions, and
# the inventory of commands the code calls.
#
# Why a module of its own: the same checks run over the files under windows/ (tests in this folder) and
# over the script texts the Python side sends (tests/test_pwsh_sent_scripts.py asks the engine through
# tests/pwsh/pwsh). It uses only what the hosted engine has (the parser and its AST, StaticParameterBinder,
# Microsoft.PowerShell.Core cmdlets, System.IO), never the Utility/Management stand-ins, so a defect in a
# stand-in cannot hide a defect here. Every file is parsed once per session (cached by path and time).
Set-StrictMode -Version 3.0

$script:RepoRoot = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..', '..'))
$script:ParseCache = @{}
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

function Get-StormatrixPs51Rules {
    <# .SYNOPSIS The table of what 5.1 lacks (Ps51Rules.psd1), read with the parser. #>
    [CmdletBinding()] [OutputType([hashtable])] param()
    if ($null -eq $script:Rules) {
        $parsed = Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'Ps51Rules.psd1'))
        if (@($parsed.Errors).Count) { throw "Ps51Rules.psd1 does not parse: $(Format-StormatrixParseError -Parsed $parsed)" }
        $table = $parsed.Ast.Find({ param($n) $n -is [System.Management.Automation.Language.HashtableAst] }, $false)
        $script:Rules = $table.SafeGetValue()
    }
    $script:Rules
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

function Get-StormatrixTypeNames {
    # every type name inside an ITypeName (generic arguments and array elements included)
    param($TypeName)
    if ($TypeName -is [System.Management.Automation.Language.GenericTypeName]) {
        $TypeName.TypeName.FullName
        foreach ($g in $TypeName.GenericArguments) { Get-StormatrixTypeNames $g }
    }
    elseif ($TypeName -is [System.Management.Automation.Language.ArrayTypeName]) { Get-StormatrixTypeNames $TypeName.ElementType }
    else { $TypeName.FullName }
}

function Test-StormatrixTypeMatch {
    # does the written type name (System. optional, as PowerShell allows) match a table pattern?
    param([string]$Written, [string]$Pattern)
    $w = $Written -replace '`\d+$', ''
    if ($w -notlike 'System.*') { $w = 'System.' + $w }
    $w -like $Pattern
}

function Test-StormatrixVersionGuard {
    # is the AST under a condition that tests the PowerShell version or edition (if / -and)?
    param([System.Management.Automation.Language.Ast]$Ast)
    $guard = 'PSVersionTable|PSEdition|variable:Is(Windows|Linux|MacOS|CoreCLR)'
    for ($p = $Ast.Parent; $null -ne $p; $p = $p.Parent) {
        if ($p -is [System.Management.Automation.Language.IfStatementAst]) {
            foreach ($clause in $p.Clauses) { if ($clause.Item1.Extent.Text -match $guard) { return $true } }
        }
        if ($p -is [System.Management.Automation.Language.BinaryExpressionAst] -and $p.Operator -eq 'And' -and
            $p.Left.Extent.Text -match $guard) { return $true }
    }
    $false
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

function Find-StormatrixPs51Problem {
    <#
    .SYNOPSIS
    Syntax, commands, parameters, variables and .NET APIs in a parsed file that Windows PowerShell 5.1 on
    .NET Framework 4.8 does not have. Each finding: Rule, Line, Column, Text, Message (name:line:col: ...).
    #>
    [CmdletBinding()] [OutputType([pscustomobject])]
    param([Parameter(Mandatory)]$Parsed)
    $rules = Get-StormatrixPs51Rules
    $found = [System.Collections.Generic.List[object]]::new()
    $add = {
        param($Rule, $Ast, $What)
        $text = $Ast.Extent.Text
        if ($text.Length -gt 60) { $text = $text.Substring(0, 57) + '...' }
        $found.Add([pscustomobject]@{
                Rule = $Rule; Line = $Ast.Extent.StartLineNumber; Column = $Ast.Extent.StartColumnNumber; Text = $text
                Message = ('{0}:{1}:{2}: {3}: {4} ({5})' -f $Parsed.Name, $Ast.Extent.StartLineNumber, $Ast.Extent.StartColumnNumber, $Rule, $What, $text)
            })
    }
    $L = 'System.Management.Automation.Language'
    foreach ($n in $Parsed.Ast.FindAll({ $true }, $true)) {
        switch ($n.GetType().Name) {
            'TernaryExpressionAst' { & $add 'Ternary' $n 'the ternary operator a ? b : c is PowerShell 7.0' }
            'PipelineChainAst' { & $add 'PipelineChain' $n 'the pipeline chain operators && and || are PowerShell 7.0' }
            'BinaryExpressionAst' { if ($n.Operator -eq 'QuestionQuestion') { & $add 'NullCoalescing' $n 'the ?? operator is PowerShell 7.0' } }
            'AssignmentStatementAst' { if ($n.Operator -eq 'QuestionQuestionEquals') { & $add 'NullCoalescingAssignment' $n 'the ??= operator is PowerShell 7.0' } }
            'PipelineAst' { if ($n.Background) { & $add 'BackgroundOperator' $n 'a trailing & (background job) is PowerShell 6.0' } }
            'ScriptBlockAst' { if ($null -ne $n.CleanBlock) { & $add 'CleanBlock' $n.CleanBlock 'the clean {} block is PowerShell 7.3' } }
            'TypeDefinitionAst' {
                if ($n.IsEnum -and $n.BaseTypes.Count -gt 0) { & $add 'EnumUnderlyingType' $n 'an enum with an underlying type (enum E : long) is PowerShell 6.2' }
            }
            'AttributeAst' {
                if ($n.TypeName.Name -match '^NoRunspaceAffinity(Attribute)?$') { & $add 'NoRunspaceAffinity' $n 'the NoRunspaceAffinity attribute is PowerShell 7.4' }
            }
            { $_ -in 'MemberExpressionAst', 'InvokeMemberExpressionAst', 'IndexExpressionAst' } {
                if ($n.NullConditional) { & $add 'NullConditional' $n 'the null-conditional operators ?. and ?[] are PowerShell 7.1' }
            }
            { $_ -in 'MemberExpressionAst', 'InvokeMemberExpressionAst' } {
                $member = if ($n.Member -is [System.Management.Automation.Language.StringConstantExpressionAst]) { $n.Member.Value } else { $null }
                $arguments = @(if ($n -is [System.Management.Automation.Language.InvokeMemberExpressionAst]) { $n.Arguments | Where-Object { $null -ne $_ } })
                if ($n.Static -and $n.Expression -is [System.Management.Automation.Language.TypeExpressionAst] -and $member) {
                    $type = $n.Expression.TypeName.FullName
                    foreach ($r in $rules.StaticMembers) {
                        $min = if ($r.ContainsKey('MinArguments')) { $r.MinArguments } else { 0 }
                        if ((Test-StormatrixTypeMatch $type $r.Type) -and $member -like $r.Member -and $arguments.Count -ge $min) {
                            & $add 'DotNetMember' $n "[$($r.Type)]::$member is not in .NET Framework 4.8 ($($r.Since); $($r.Source))"
                        }
                    }
                }
                elseif (-not $n.Static -and $member -eq 'Split' -and $arguments.Count -in 1, 2 -and
                    $arguments[0] -is [System.Management.Automation.Language.StringConstantExpressionAst] -and $arguments[0].Value.Length -gt 1) {
                    & $add 'StringSplitString' $n ".Split('$($arguments[0].Value)') splits on the whole string on 7 but on each of its characters on 5.1 (String.Split(String) is .NET Core 2.0): use -split or [string[]]"
                }
                elseif (-not $n.Static -and (($member -eq 'Contains' -and $arguments.Count -eq 2) -or ($member -eq 'Replace' -and $arguments.Count -eq 3)) -and
                    $arguments[-1].Extent.Text -match 'StringComparison|Ordinal|IgnoreCase|Culture') {
                    & $add 'StringComparisonOverload' $n "String.$member with a StringComparison is .NET Core 2.x; .NET Framework 4.8 has no such overload"
                }
            }
            { $_ -in 'TypeExpressionAst', 'TypeConstraintAst' } {
                foreach ($t in (Get-StormatrixTypeNames $n.TypeName)) {
                    foreach ($r in $rules.Types) {
                        if (Test-StormatrixTypeMatch $t $r.Type) { & $add 'DotNetType' $n "[$t] is not in .NET Framework 4.8 ($($r.Since); $($r.Source))" }
                    }
                }
            }
            'VariableExpressionAst' {
                $name = $n.VariablePath.UserPath -replace '^(global|script|local|private|using|variable):', ''
                foreach ($r in $rules.Variables) {
                    if ($name -eq $r.Name) { & $add 'Variable' $n "`$$name does not exist in 5.1 (PowerShell $($r.Since); $($r.Source))" }
                }
                if ($rules.PlatformVariables -contains $name -and -not (Test-StormatrixVersionGuard $n)) {
                    & $add 'UnguardedPlatformVariable' $n "`$$name is PowerShell 6.0+ (`$null on 5.1): test `$PSVersionTable.PSEdition first"
                }
            }
            'CommandAst' { Find-StormatrixPs51CommandProblem -Command $n -Rules $rules -Add $add }
        }
    }
    foreach ($t in $Parsed.Tokens) {
        $kind = [string]$t.Kind
        if ($kind -in 'StringExpandable', 'HereStringExpandable' -and $t.Text -match '(?<!`)`u\{') {
            & $add 'UnicodeEscape' $t 'the `u{...} escape is PowerShell 6.0'
        }
        elseif ($kind -eq 'Number' -and $t.Text -match '^(0b[01]+|(0x[0-9a-f]+|[0-9][0-9.e+-]*)(u|ul|uy|y|s|us|n)(kb|mb|gb|tb|pb)?)$') {
            & $add 'NumberLiteral' $t "the number literal $($t.Text) (binary or with a type suffix) is PowerShell 6.2/7.0"
        }
    }
    $found
}

function Find-StormatrixPs51CommandProblem {
    # the command-level rules of Find-StormatrixPs51Problem: newer commands, parameters, values, Join-Path parts
    param($Command, $Rules, $Add)
    $name = Get-StormatrixCommandName -Command $Command
    if (-not $name) { return }
    foreach ($r in $Rules.Commands) {
        if ($name -eq $r.Name) { & $Add 'Command' $Command "$name does not exist in 5.1 (PowerShell $($r.Since); $($r.Source))" }
    }
    $named = @(Get-StormatrixNamedArgument -Command $Command -Switch @('Resolve', 'Verbose', 'Debug', 'AsHashtable', 'AsByteStream', 'Parallel', 'Raw', 'Stable', 'AllStats', 'NoEnumerate', 'AsArray', 'EnumsAsStrings', 'Compress', 'SkipHeaderValidation', 'SkipCertificateCheck', 'LeafBase', 'Extension', 'FollowSymlink', 'Shuffle', 'AsJob', 'Force', 'Recurse', 'NoNewline', 'PassThru', 'WhatIf', 'Confirm'))
    foreach ($p in $named) {
        foreach ($r in $Rules.Parameters) {
            if ($name -eq $r.Command -and $r.Parameter.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase)) {
                & $Add 'Parameter' $p.Ast "$name -$($r.Parameter) does not exist in 5.1 (PowerShell $($r.Since); $($r.Source))"
            }
        }
        foreach ($r in $Rules.ParameterValues) {
            if (($r.Command -eq '*' -or $r.Command -eq $name) -and $p.Parameter.Length -ge 3 -and
                $r.Parameter.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase) -and
                $p.Argument -is [System.Management.Automation.Language.StringConstantExpressionAst] -and $r.Values -contains $p.Argument.Value) {
                & $Add 'ParameterValue' $p.Ast "-$($r.Parameter) $($p.Argument.Value) is PowerShell $($r.Since) ($($r.Source))"
            }
        }
    }
    if ($name -eq 'New-Object') {
        $typeArg = @($Command.CommandElements)[1..1] | Where-Object { $null -ne $_ }
        $typeArg = @($typeArg)
        foreach ($p in $named) { if ('TypeName'.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase)) { $typeArg = @($p.Argument) } }
        if ($typeArg.Count -and $typeArg[0] -is [System.Management.Automation.Language.StringConstantExpressionAst]) {
            foreach ($r in $Rules.Types) {
                if (Test-StormatrixTypeMatch $typeArg[0].Value $r.Type) { & $Add 'DotNetType' $Command "New-Object $($typeArg[0].Value): not in .NET Framework 4.8 ($($r.Since); $($r.Source))" }
            }
        }
    }
    if ($name -eq 'Join-Path') {
        # 5.1 has -Path and -ChildPath only: a third part binds -AdditionalChildPath (PowerShell 6.0)
        $parts = 0
        $used = [System.Collections.Generic.HashSet[object]]::new()
        foreach ($p in $named) {
            if ($null -ne $p.Argument) { [void]$used.Add($p.Argument) }
            if ('Path'.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase) -or
                'ChildPath'.StartsWith($p.Parameter, [System.StringComparison]::OrdinalIgnoreCase)) { $parts++ }
        }
        for ($i = 1; $i -lt $Command.CommandElements.Count; $i++) {
            $e = $Command.CommandElements[$i]
            if ($e -isnot [System.Management.Automation.Language.CommandParameterAst] -and -not $used.Contains($e)) { $parts++ }
        }
        if ($parts -gt 2) { & $Add 'JoinPathParts' $Command "Join-Path with $parts parts binds -AdditionalChildPath, which 5.1 lacks: nest Join-Path calls" }
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
        $L = 'System.Management.Automation.Language'
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
    Where each command the code may call comes from, read from the source of each provider: the engine's
    own cmdlets and functions (Get-Command, excluding stand-ins), the cmdlet stand-ins (tests/pwsh/StandIns),
    the two modules (windows/), the fake Windows guest (tests/pwsh/FakeWindows), the fake PowerCLI
    (tests/pwsh/FakeVCenter), PesterLite (tests/pwsh/PesterLite, for the Pester commands of the guest's
    validation suite) and the native executables listed in Inventory.psd1.
    .OUTPUTS
    Sources (name -> list of provider labels), StandIns (name -> file), Problems (missing folders).
    #>
    [CmdletBinding()] [OutputType([pscustomobject])] param()
    $sources = @{}
    $problems = [System.Collections.Generic.List[string]]::new()
    $note = { param($Name, $Label) if (-not $sources.ContainsKey($Name)) { $sources[$Name] = [System.Collections.Generic.List[string]]::new() }; if (-not $sources[$Name].Contains($Label)) { $sources[$Name].Add($Label) } }
    $standIns = @{}
    $providers = [ordered]@{
        'StandIn'     = @('tests/pwsh/StandIns', 'the cmdlet stand-ins (engine helper)')
        'Module'      = @('windows', 'the StormatrixGuest and StormatrixVMware modules')
        'FakeWindows' = @('tests/pwsh/FakeWindows', 'the fake Windows guest (guest helper)')
        'FakeVCenter' = @('tests/pwsh/FakeVCenter', 'the fake PowerCLI / vCenter (vmware helper)')
        'PesterLite'  = @('tests/pwsh/PesterLite', 'the Pester 5 runner on the engine (engine helper)')
    }
    $defined = @{}
    foreach ($label in $providers.Keys) {
        $folder, $what = $providers[$label]
        try { $files = @(Get-StormatrixPowerShellFile -Folder $folder -Extension '.ps1', '.psm1') }
        catch { $problems.Add("$folder not found: $([System.IO.Path]::Combine($script:RepoRoot, $folder)) ($what)"); continue }
        foreach ($d in @(Get-StormatrixFunctionDefinition -Path $files)) {
            # helpers (no Verb-Noun name, e.g. __StandInCallerPreference) are not commands the code calls
            if ($d.Name -notmatch '^[A-Za-z]+-[A-Za-z0-9]+$') { continue }
            & $note $d.Name $label
            if (-not $defined.ContainsKey($d.Name)) { $defined[$d.Name] = $d.File }
            if ($label -eq 'StandIn') { $standIns[$d.Name] = $d.File }
        }
    }
    foreach ($c in (Get-Command -CommandType Cmdlet, Function, Alias -ErrorAction SilentlyContinue)) {
        # a function that comes from a file (a stand-in loaded by the host, a test's helper) is not the engine's
        if ($c.CommandType -eq 'Function' -and $c.ScriptBlock.File) { continue }
        if ($c.CommandType -eq 'Function' -and $c.Module) { continue }
        if ($c.CommandType -eq 'Cmdlet' -or -not $standIns.ContainsKey($c.Name)) { & $note $c.Name 'Engine' }
    }
    $table = (Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'Inventory.psd1'))).Ast.Find({ param($n) $n -is [System.Management.Automation.Language.HashtableAst] }, $false).SafeGetValue()
    foreach ($n in $table.NativeExecutables.Keys) { & $note $n 'Native' }
    [pscustomobject]@{ Sources = $sources; StandIns = $standIns; Problems = $problems.ToArray(); Natives = $table.NativeExecutables }
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
        "$($u.Site): $($u.Written) is not an engine cmdlet, a stand-in, a module function, a fake Windows/PowerCLI command, a PesterLite command or a listed native executable"
    }
}

Export-ModuleMember -Function *-Stormatrix*
