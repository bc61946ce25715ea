# PesterLite's Should: Pester 5's operators with Pester 5's comparison rules (ArraysAreEqual for -Be,
# wildcard -ExpectedMessage and "*id*" -ErrorId for -Throw, ...). A failed assertion throws with the
# file:line of the Should call, which the runner reports.

function __plArrayOrSingleNull {
    param($Array)
    return $null -eq $Array -or $Array.Count -eq 0 -or ($Array.Count -eq 1 -and $null -eq $Array[0])
}

function __plIsCollection {
    param($Value)
    return $Value -is [System.Collections.IEnumerable] -and $Value -isnot [string] -and $Value -isnot [System.Collections.IDictionary]
}

function __plArraysAreEqual {
    # Pester 5 ArraysAreEqual: $null and empty collections are equal; otherwise same count and each item
    # equal by -eq (or the comparator), recursing into nested collections.
    param([object[]] $First, [object[]] $Second, [scriptblock] $Comparator)
    $firstEmpty = __plArrayOrSingleNull @($First)
    $secondEmpty = __plArrayOrSingleNull @($Second)
    if ($firstEmpty -or $secondEmpty) { return $firstEmpty -and $secondEmpty }
    if ($First.Count -ne $Second.Count) { return $false }
    for ($i = 0; $i -lt $First.Count; $i++) {
        if ((__plIsCollection $First[$i]) -or (__plIsCollection $Second[$i])) {
            if (-not (__plArraysAreEqual @($First[$i]) @($Second[$i]) $Comparator)) { return $false }
        } elseif ($null -eq $Comparator) {
            if ($First[$i] -ne $Second[$i]) { return $false }
        } elseif (-not (& $Comparator $First[$i] $Second[$i])) { return $false }
    }
    return $true
}

function __plFormat {
    param($Value)
    if ($null -eq $Value) { return '$null' }
    if ($Value -is [string]) { return "'$Value'" }
    if ($Value -is [bool]) { return "`$$Value".ToLowerInvariant() }
    if ($Value -is [scriptblock]) { return "{$Value}" }
    if (__plIsCollection $Value) { return '@(' + ((@($Value) | ForEach-Object { __plFormat $_ }) -join ', ') + ')' }
    if ($Value -is [datetime]) { return $Value.ToString('o') }
    return [string]$Value
}

function __plToType {
    param($Value)
    if ($null -eq $Value -or $Value -is [type]) { return $Value }
    $name = ([string]$Value) -replace '^\[(.*)\]$', '$1'
    $type = $name -as [type]
    if ($null -eq $type) { throw [System.ArgumentException]::new("Should: cannot find type [$name]") }
    return $type
}

function Should {
    [CmdletBinding()]
    param(
        [Parameter(ValueFromPipeline)] [AllowNull()] [AllowEmptyCollection()] [object] $ActualValue,
        [Parameter(Position = 0)] [AllowNull()] [object] $ExpectedValue,
        [Parameter(Position = 1)] [AllowNull()] [object] $Second,
        [switch] $Not,
        [switch] $Be, [switch] $BeExactly, [switch] $BeTrue, [switch] $BeFalse, [switch] $BeNullOrEmpty,
        [switch] $Throw, [switch] $Match, [switch] $MatchExactly, [switch] $BeLike, [switch] $BeLikeExactly,
        [switch] $Contain, [switch] $BeIn, [switch] $HaveCount, [switch] $BeOfType,
        [Alias('GT')] [switch] $BeGreaterThan, [Alias('LT')] [switch] $BeLessThan,
        [Alias('GE')] [switch] $BeGreaterOrEqual, [Alias('LE')] [switch] $BeLessOrEqual,
        [switch] $Exist, [switch] $FileContentMatch, [switch] $FileContentMatchExactly, [switch] $FileContentMatchMultiline,
        [switch] $HaveParameter, [switch] $Invoke,
        [string] $Because,
        [string] $ExpectedMessage, [string] $ErrorId, [type] $ExceptionType, [switch] $PassThru,
        [string] $CommandName, [int] $Times = 1, [switch] $Exactly, [scriptblock] $ParameterFilter,
        [string] $ModuleName, [ValidateSet('It', 'Context', 'Describe')] [string] $Scope,
        [object] $ExpectedType, [string] $RegularExpression, [string] $ExpectedContent,
        [string] $ParameterName, [object] $Type, [switch] $Mandatory, [object] $DefaultValue, [string[]] $Alias,
        [switch] $HasArgumentCompleter
    )
    begin {
        $inputs = [System.Collections.Generic.List[object]]::new()
        $fromPipeline = -not $PSBoundParameters.ContainsKey('ActualValue')
    }
    process { if ($fromPipeline) { $inputs.Add($ActualValue) } }
    end {
        $where = "$($MyInvocation.ScriptName):$($MyInvocation.ScriptLineNumber)"
        if ($fromPipeline) {
            if ($inputs.Count -eq 0) { $actual = $null }
            elseif ($inputs.Count -eq 1) { $actual = $inputs[0] }
            else { $actual = $inputs.ToArray() }
        } else { $actual = $ActualValue }
        $because = if ($Because) { " because $Because" } else { '' }
        $ok = $true
        $message = ''
        $negate = $Not.IsPresent
        $result = $null
        if ($Be -or $BeExactly) {
            $cmp = if ($BeExactly) { { param($a, $b) $a -ceq $b } } else { $null }
            $ok = __plArraysAreEqual @($actual) @($ExpectedValue) $cmp
            $message = if ($negate) { "Expected $(__plFormat $ExpectedValue) to be different from the actual value$because, but got the same value." }
            else { "Expected $(__plFormat $ExpectedValue)$because, but got $(__plFormat $actual)." }
        } elseif ($BeTrue) {
            $ok = [bool]$actual
            $message = if ($negate) { "Expected `$false or a falsy value$because, but got $(__plFormat $actual)." } else { "Expected `$true$because, but got $(__plFormat $actual)." }
        } elseif ($BeFalse) {
            $ok = -not $actual
            $message = if ($negate) { "Expected `$true or a truthy value$because, but got $(__plFormat $actual)." } else { "Expected `$false$because, but got $(__plFormat $actual)." }
        } elseif ($BeNullOrEmpty) {
            if ($null -eq $actual -or ((__plIsCollection $actual) -and @($actual).Count -eq 0)) { $ok = $true }
            elseif ((__plIsCollection $actual) -and @($actual).Count -eq 1) {
                $one = @($actual)[0]
                $ok = if ($one -is [hashtable]) { $one.Count -eq 0 } else { [string]::IsNullOrEmpty($one) }
            } elseif ($actual -is [hashtable]) { $ok = $actual.Count -eq 0 }
            elseif (__plIsCollection $actual) { $ok = $false }
            else { $ok = [string]::IsNullOrEmpty([string]$actual) }
            $message = if ($negate) { "Expected a value$because, but got `$null or empty." } else { "Expected `$null or empty$because, but got $(__plFormat $actual)." }
        } elseif ($Throw) {
            $wanted = if ($PSBoundParameters.ContainsKey('ExpectedMessage')) { $ExpectedMessage } elseif ($null -ne $ExpectedValue) { [string]$ExpectedValue } else { '' }
            if ($actual -isnot [scriptblock]) { throw [System.ArgumentException]::new('Should -Throw needs a script block as the actual value') }
            $thrown = $null
            try { $null = & $actual } catch { $thrown = $_ }
            if ($negate) {
                $ok = $null -eq $thrown
                $message = "Expected no exception to be thrown$because, but an exception `"$($thrown.Exception.Message)`" was thrown from $($thrown.InvocationInfo.ScriptName):$($thrown.InvocationInfo.ScriptLineNumber)."
            } elseif ($null -eq $thrown) {
                $ok = $false
                $message = "Expected an exception to be thrown$because, but no exception was thrown."
            } else {
                $problems = [System.Collections.Generic.List[string]]::new()
                $actualMessage = ($thrown.Exception.Message -replace '\s+$') -replace '^\s+'
                if ($wanted -and -not ($actualMessage -like $wanted)) { $problems.Add("message like '$wanted', but got '$actualMessage'") }
                if ($ErrorId -and -not ($thrown.FullyQualifiedErrorId -like "*$ErrorId*")) { $problems.Add("error id like '$ErrorId', but got '$($thrown.FullyQualifiedErrorId)'") }
                if ($ExceptionType -and -not ($thrown.Exception -is $ExceptionType)) { $problems.Add("exception type [$($ExceptionType.FullName)], but got [$($thrown.Exception.GetType().FullName)]") }
                $ok = $problems.Count -eq 0
                $message = "Expected an exception with $($problems -join ' and ')$because (from $($thrown.InvocationInfo.ScriptName):$($thrown.InvocationInfo.ScriptLineNumber))."
                if ($ok -and $PassThru) { $result = $thrown }
            }
            if ($negate) { $negate = $false }   # already applied
        } elseif ($Match -or $MatchExactly) {
            $rx = if ($RegularExpression) { $RegularExpression } else { [string]$ExpectedValue }
            $ok = if ($MatchExactly) { [string]$actual -cmatch $rx } else { [string]$actual -match $rx }
            $message = if ($negate) { "Expected regular expression '$rx' to not match $(__plFormat $actual)$because, but it did match." }
            else { "Expected regular expression '$rx' to match $(__plFormat $actual)$because, but it did not match." }
        } elseif ($BeLike -or $BeLikeExactly) {
            $ok = if ($BeLikeExactly) { [string]$actual -clike [string]$ExpectedValue } else { [string]$actual -like [string]$ExpectedValue }
            $message = if ($negate) { "Expected like wildcard '$ExpectedValue' to not match $(__plFormat $actual)$because, but it did match." }
            else { "Expected like wildcard '$ExpectedValue' to match $(__plFormat $actual)$because, but it did not match." }
        } elseif ($Contain) {
            $ok = @($actual) -contains $ExpectedValue
            $message = if ($negate) { "Expected $(__plFormat $ExpectedValue) to not be found in collection $(__plFormat $actual)$because, but it was found." }
            else { "Expected $(__plFormat $ExpectedValue) to be found in collection $(__plFormat $actual)$because, but it was not found." }
        } elseif ($BeIn) {
            $ok = @($ExpectedValue) -contains $actual
            $message = if ($negate) { "Expected collection $(__plFormat $ExpectedValue) to not contain $(__plFormat $actual)$because, but it was found." }
            else { "Expected collection $(__plFormat $ExpectedValue) to contain $(__plFormat $actual)$because, but it was not found." }
        } elseif ($HaveCount) {
            $count = if ($null -eq $actual) { 0 } else { @($actual).Count }
            $ok = $count -eq [int]$ExpectedValue
            $message = if ($negate) { "Expected a collection with size different from $ExpectedValue$because, but got collection with that size $(__plFormat $actual)." }
            else { "Expected a collection with size $ExpectedValue$because, but got collection with size $count $(__plFormat $actual)." }
        } elseif ($BeOfType) {
            $t = __plToType $(if ($null -ne $ExpectedType) { $ExpectedType } else { $ExpectedValue })
            $ok = $actual -is $t
            $actualType = if ($null -eq $actual) { '$null' } else { "[$($actual.GetType().FullName)]" }
            $message = if ($negate) { "Expected the value to not have type [$($t.FullName)] or any of its subtypes$because, but got $(__plFormat $actual) with type $actualType." }
            else { "Expected the value to have type [$($t.FullName)] or any of its subtypes$because, but got $(__plFormat $actual) with type $actualType." }
        } elseif ($BeGreaterThan -or $BeLessThan -or $BeGreaterOrEqual -or $BeLessOrEqual) {
            if ($BeGreaterThan) { $ok = $actual -gt $ExpectedValue; $rel = 'greater than' }
            elseif ($BeLessThan) { $ok = $actual -lt $ExpectedValue; $rel = 'less than' }
            elseif ($BeGreaterOrEqual) { $ok = $actual -ge $ExpectedValue; $rel = 'greater than or equal to' }
            else { $ok = $actual -le $ExpectedValue; $rel = 'less than or equal to' }
            $message = if ($negate) { "Expected the actual value to not be $rel $(__plFormat $ExpectedValue)$because, but got $(__plFormat $actual)." }
            else { "Expected the actual value to be $rel $(__plFormat $ExpectedValue)$because, but got $(__plFormat $actual)." }
        } elseif ($Exist) {
            $ok = Test-Path -Path $actual
            $message = if ($negate) { "Expected path '$actual' to not exist$because, but it did exist." } else { "Expected path '$actual' to exist$because, but it did not exist." }
        } elseif ($FileContentMatch -or $FileContentMatchExactly -or $FileContentMatchMultiline) {
            $pattern = if ($ExpectedContent) { $ExpectedContent } else { [string]$ExpectedValue }
            if ($FileContentMatchMultiline) { $ok = [string](Get-Content -Raw -Path $actual) -match $pattern }
            elseif ($FileContentMatchExactly) { $ok = @(@(Get-Content -Path $actual) -cmatch $pattern).Count -gt 0 }
            else { $ok = @(@(Get-Content -Path $actual) -match $pattern).Count -gt 0 }
            $message = if ($negate) { "Expected '$pattern' to not be found in file '$actual'$because, but it was found." } else { "Expected '$pattern' to be found in file '$actual'$because, but it was not found." }
        } elseif ($HaveParameter) {
            $name = if ($ParameterName) { $ParameterName } else { [string]$ExpectedValue }
            $cmd = if ($actual -is [System.Management.Automation.CommandInfo]) { $actual } else { Get-Command -Name ([string]$actual) -ErrorAction Stop }
            $param = $cmd.Parameters[$name]
            $problems = [System.Collections.Generic.List[string]]::new()
            if ($null -eq $param) { $problems.Add("parameter $name, but it is missing") }
            else {
                if ($PSBoundParameters.ContainsKey('Type')) {
                    $t = __plToType $Type
                    if ($param.ParameterType -ne $t) { $problems.Add("type [$($t.FullName)], but it is [$($param.ParameterType.FullName)]") }
                }
                if ($Mandatory -and -not @($param.Attributes | Where-Object { $_ -is [System.Management.Automation.ParameterAttribute] -and $_.Mandatory }).Count) {
                    $problems.Add('mandatory, but it is not')
                }
                foreach ($a in $Alias) { if ($param.Aliases -notcontains $a) { $problems.Add("alias $a, but it has $($param.Aliases -join ',')") } }
                if ($PSBoundParameters.ContainsKey('DefaultValue')) {
                    $ast = $cmd.ScriptBlock.Ast.Find({ param($n) $n -is [System.Management.Automation.Language.ParameterAst] -and $n.Name.VariablePath.UserPath -eq $name }, $true)
                    $actualDefault = if ($ast -and $ast.DefaultValue) { $ast.DefaultValue.Extent.Text -replace "^['`"]|['`"]$" } else { $null }
                    if ([string]$actualDefault -ne [string]$DefaultValue) { $problems.Add("default value '$DefaultValue', but it is '$actualDefault'") }
                }
            }
            $ok = $problems.Count -eq 0
            if ($negate) { $ok = $null -eq $param; $message = "Expected command $($cmd.Name) to not have a parameter $name$because, but it has." }
            else { $message = "Expected command $($cmd.Name) to have $($problems -join '; ')$because." }
            $negate = $false
        } elseif ($Invoke) {
            $name = if ($CommandName) { $CommandName } else { [string]$ExpectedValue }
            $want = if ($PSBoundParameters.ContainsKey('Times')) { $Times } elseif ($null -ne $Second) { [int]$Second } else { 1 }
            $count = __plCountCalls -CommandName $name -ModuleName $ModuleName -ParameterFilter $ParameterFilter -Scope $Scope
            if ($negate) {
                $ok = if ($Exactly) { $count -ne $want } else { $count -lt $want }
                $message = "Expected $name not to be called$(if ($Exactly) { ' exactly' } else { ' at least' }) $want times$because, but was called $count times."
                $negate = $false
            } else {
                $ok = if ($Exactly) { $count -eq $want } else { $count -ge $want }
                $message = "Expected $name to be called$(if ($Exactly) { ' exactly' } else { ' at least' }) $want times$because, but was called $count times."
            }
        } else {
            throw [System.ArgumentException]::new('Should: no known operator given (PesterLite supports -Be, -BeExactly, -BeTrue, -BeFalse, -BeNullOrEmpty, -Throw, -Match, -MatchExactly, -BeLike, -BeLikeExactly, -Contain, -BeIn, -HaveCount, -BeOfType, -BeGreaterThan, -BeLessThan, -BeGreaterOrEqual, -BeLessOrEqual, -Exist, -FileContentMatch*, -HaveParameter, -Invoke)')
        }
        if ($negate) { $ok = -not $ok }
        if (-not $ok) {
            $ex = [System.Exception]::new($message)
            $ex.Data['PesterLiteLine'] = $where
            throw [System.Management.Automation.ErrorRecord]::new($ex, 'PesterAssertionFailed', 'InvalidResult', $actual)
        }
        if ($null -ne $result) { $PSCmdlet.WriteObject($result) }
    }
}
