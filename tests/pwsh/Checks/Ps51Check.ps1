# The Windows PowerShell 5.1 rules of StormatrixChecks (dot-sourced by StormatrixChecks.psm1): an AST and
# token walk over a parsed file, driven by the table in Ps51Rules.psd1 (what 5.1 on .NET Framework 4.8
# lacks, each with the version that added it and where that is documented).

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
