# Stand-ins for the object cmdlets (Microsoft.PowerShell.Utility): New-Object, Select-Object,
# Sort-Object, Add-Member. They use the engine's own conversion, comparison and member APIs
# (LanguagePrimitives, PSObject members, method binding), as the real cmdlets do.

function New-Object {
    # Real: resolves the type name, binds the constructor with PowerShell's method binder, then sets
    # -Property values (adding note properties to a PSObject). Partial: -ComObject and -Strict are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Net')]
    param(
        [Parameter(ParameterSetName = 'Net', Mandatory, Position = 0)] [string] $TypeName,
        [Parameter(ParameterSetName = 'Net', Position = 1)] [Alias('Args')] [object[]] $ArgumentList,
        [System.Collections.IDictionary] $Property
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    end {
        $type = $TypeName -as [type]
        if ($null -eq $type) {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new(
                    [System.Management.Automation.PSArgumentException]::new("Cannot find type [$TypeName]: verify that the assembly containing this type is loaded."),
                    'TypeNotFound', 'InvalidType', $TypeName))
        }
        [object[]] $arguments = @()
        if ($null -ne $ArgumentList) { $arguments = $ArgumentList }
        try {
            if ($type.IsArray) {
                $obj = [System.Array]::CreateInstance($type.GetElementType(), [int[]]@($arguments | ForEach-Object { [int]$_ }))
            } elseif ($arguments.Count -eq 0 -and $type.IsValueType) {
                $obj = [System.Activator]::CreateInstance($type)
            } elseif ($arguments.Count -eq 0) {
                $obj = $type::new()
            } else {
                $obj = $type::new.Invoke($arguments)
            }
        } catch [System.Management.Automation.MethodException] {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new($_.Exception.InnerException ?? $_.Exception,
                    'ConstructorInvokedThrowException', 'InvalidOperation', $null))
        }
        if ($Property) {
            $pso = [psobject]::AsPSObject($obj)
            foreach ($key in $Property.Keys) {
                $member = $pso.PSObject.Properties[[string]$key]
                if ($null -ne $member) { $member.Value = $Property[$key]; continue }
                if ($pso.PSObject.BaseObject -is [System.Management.Automation.PSCustomObject]) {
                    $pso.PSObject.Properties.Add([System.Management.Automation.PSNoteProperty]::new([string]$key, $Property[$key]))
                    continue
                }
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                        [System.InvalidOperationException]::new("The member `"$key`" was not found for the specified .NET object."),
                        'InvalidOperationException', 'InvalidOperation', $obj))
            }
            $PSCmdlet.WriteObject($pso)
            return
        }
        $PSCmdlet.WriteObject($obj)
    }
}

function __StandInPropertyValue {
    # the value of a property name or a calculated expression for one input object
    param($InputObject, $Spec)
    if ($Spec -is [scriptblock]) {
        return , (@($Spec.InvokeWithContext($null, [System.Collections.Generic.List[psvariable]]@([psvariable]::new('_', $InputObject)), @())) | ForEach-Object { $_ })
    }
    if ($null -eq $InputObject) { return $null }
    $prop = $InputObject.PSObject.Properties[[string]$Spec]
    if ($null -eq $prop) { return $null }
    try { return , $prop.Value } catch { return $null }
}

function __StandInCalculated {
    # a -Property entry as name + expression: 'Name', {script} or @{Name/Label/n/l=...; Expression/e=...}
    param($Entry)
    if ($Entry -is [System.Collections.IDictionary]) {
        $name = $null; $expr = $null; $descending = $null; $ascending = $null
        foreach ($k in $Entry.Keys) {
            $key = [string]$k
            if ('name'.StartsWith($key, 'OrdinalIgnoreCase') -or 'label'.StartsWith($key, 'OrdinalIgnoreCase')) { $name = [string]$Entry[$k] }
            elseif ('expression'.StartsWith($key, 'OrdinalIgnoreCase')) { $expr = $Entry[$k] }
            elseif ('descending'.StartsWith($key, 'OrdinalIgnoreCase')) { $descending = [bool]$Entry[$k] }
            elseif ('ascending'.StartsWith($key, 'OrdinalIgnoreCase')) { $ascending = [bool]$Entry[$k] }
            else { throw [System.Management.Automation.PSArgumentException]::new("The $key key is not valid.") }
        }
        if ($null -eq $expr) { throw [System.Management.Automation.PSArgumentException]::new('The Expression key is missing.') }
        if ($null -eq $name) { $name = if ($expr -is [scriptblock]) { $expr.ToString().Trim() } else { [string]$expr } }
        if ($null -eq $descending -and $null -ne $ascending) { $descending = -not $ascending }
        return [pscustomobject]@{ Name = $name; Expression = $expr; Descending = $descending }
    }
    if ($Entry -is [scriptblock]) { return [pscustomobject]@{ Name = $Entry.ToString().Trim(); Expression = $Entry; Descending = $null } }
    return [pscustomobject]@{ Name = [string]$Entry; Expression = [string]$Entry; Descending = $null }
}

function Select-Object {
    # Real: picks (wildcard) properties or calculated ones into a new PSCustomObject named
    # Selected.<type>; -ExpandProperty enumerates the property's value; -First/-Last/-Skip/-SkipLast/
    # -Index/-Unique. Partial: -First does not stop the upstream commands early; -Wait is not supported.
    [CmdletBinding(DefaultParameterSetName = 'DefaultParameter')]
    param(
        [Parameter(ValueFromPipeline)] [psobject] $InputObject,
        [Parameter(ParameterSetName = 'DefaultParameter', Position = 0)]
        [Parameter(ParameterSetName = 'SkipLastParameter', Position = 0)] [object[]] $Property,
        [Parameter(ParameterSetName = 'DefaultParameter')] [Parameter(ParameterSetName = 'SkipLastParameter')] [string[]] $ExcludeProperty,
        [Parameter(ParameterSetName = 'DefaultParameter')] [Parameter(ParameterSetName = 'SkipLastParameter')] [string] $ExpandProperty,
        [switch] $Unique,
        [switch] $CaseInsensitive,
        [Parameter(ParameterSetName = 'DefaultParameter')] [ValidateRange(0, [int]::MaxValue)] [int] $Last,
        [Parameter(ParameterSetName = 'DefaultParameter')] [ValidateRange(0, [int]::MaxValue)] [int] $First,
        [Parameter(ParameterSetName = 'DefaultParameter')] [ValidateRange(0, [int]::MaxValue)] [int] $Skip,
        [Parameter(ParameterSetName = 'SkipLastParameter')] [ValidateRange(0, [int]::MaxValue)] [int] $SkipLast,
        [Parameter(ParameterSetName = 'IndexParameter')] [Parameter(ParameterSetName = 'SkipIndexParameter')] [ValidateRange(0, [int]::MaxValue)] [int[]] $Index,
        [Parameter(ParameterSetName = 'SkipIndexParameter')] [ValidateRange(0, [int]::MaxValue)] [int[]] $SkipIndex
    )
    begin {
        foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) }
        $all = [System.Collections.Generic.List[object]]::new()
        $specs = @(foreach ($entry in $Property) { __StandInCalculated $entry })
        $seen = [System.Collections.Generic.List[object]]::new()
        $comparer = [System.StringComparer]::Ordinal
        $position = 0
        $emitted = 0
        $select = {
            param($obj)
            $results = [System.Collections.Generic.List[object]]::new()
            if ($null -eq $Property -and -not $ExpandProperty) { $results.Add($obj); return , $results }
            $out = $null
            if ($null -ne $Property) {
                $out = [pscustomobject]@{}
                $pso = if ($null -eq $obj) { $null } else { $obj.PSObject }
                foreach ($s in $specs) {
                    if ($s.Expression -is [string] -and [System.Management.Automation.WildcardPattern]::ContainsWildcardCharacters($s.Expression)) {
                        $pattern = [System.Management.Automation.WildcardPattern]::new($s.Expression, 'IgnoreCase')
                        foreach ($prop in $(if ($pso) { $pso.Properties })) {
                            if (-not $pattern.IsMatch($prop.Name)) { continue }
                            if ($ExcludeProperty -and @($ExcludeProperty | Where-Object { $prop.Name -like $_ }).Count) { continue }
                            if ($null -ne $out.PSObject.Properties[$prop.Name]) { continue }
                            $value = try { $prop.Value } catch { $null }
                            $out.PSObject.Properties.Add([System.Management.Automation.PSNoteProperty]::new($prop.Name, $value))
                        }
                    } else {
                        if ($ExcludeProperty -and @($ExcludeProperty | Where-Object { $s.Name -like $_ }).Count) { continue }
                        $value = __StandInPropertyValue $obj $s.Expression
                        if ($null -ne $out.PSObject.Properties[$s.Name]) {
                            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                                    [System.Management.Automation.PSArgumentException]::new("The property cannot be processed because the property `"$($s.Name)`" already exists."),
                                    'AlreadyExistingUserSpecifiedPropertyNoExpand', 'InvalidOperation', $obj))
                            continue
                        }
                        $out.PSObject.Properties.Add([System.Management.Automation.PSNoteProperty]::new($s.Name, $value))
                    }
                }
                $typeName = if ($null -eq $obj) { 'System.Object' } else { $pso.TypeNames[0] }
                $out.PSObject.TypeNames.Insert(0, "Selected.$typeName")
            }
            if ($ExpandProperty) {
                $prop = if ($null -eq $obj) { $null } else { $obj.PSObject.Properties[$ExpandProperty] }
                if ($null -eq $prop) {
                    $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                            [System.Management.Automation.PSArgumentException]::new("Property `"$ExpandProperty`" cannot be found."),
                            'ExpandPropertyNotFound', 'InvalidArgument', $obj))
                    return , $results
                }
                $value = $prop.Value
                $items = if ($value -is [System.Collections.IEnumerable] -and $value -isnot [string] -and $value -isnot [System.Collections.IDictionary]) { @($value) } else { @(, $value) }
                foreach ($item in $items) {
                    if ($null -ne $out) {
                        $target = [psobject]::AsPSObject($item)
                        foreach ($np in $out.PSObject.Properties) {
                            if ($null -eq $target.PSObject.Properties[$np.Name]) { $target.PSObject.Properties.Add([System.Management.Automation.PSNoteProperty]::new($np.Name, $np.Value)) }
                        }
                        $results.Add($target)
                    } else { $results.Add($item) }
                }
                return , $results
            }
            $results.Add($out)
            return , $results
        }
        $isUnique = {
            param($o)
            foreach ($s in $seen) {
                if ($null -eq $o -and $null -eq $s) { return $false }
                if ($null -eq $o -or $null -eq $s) { continue }
                if ($o -is [psobject] -and $o.BaseObject -is [System.Management.Automation.PSCustomObject]) {
                    if (($o | __StandInKey) -eq ($s | __StandInKey)) { return $false } else { continue }
                }
                if ([System.Management.Automation.LanguagePrimitives]::Equals($o, $s, $CaseInsensitive.IsPresent)) { return $false }
            }
            $seen.Add($o)
            return $true
        }
        $bufferAll = $PSBoundParameters.ContainsKey('Last') -or $PSBoundParameters.ContainsKey('SkipLast') -or $PSBoundParameters.ContainsKey('Index') -or $PSBoundParameters.ContainsKey('SkipIndex')
    }
    process {
        if (-not $PSBoundParameters.ContainsKey('InputObject') -and $MyInvocation.ExpectingInput -eq $false) { return }
        if ($bufferAll) { $all.Add($InputObject); return }
        if ($PSBoundParameters.ContainsKey('Skip') -and $position -lt $Skip) { $position++; return }
        $position++
        if ($PSBoundParameters.ContainsKey('First') -and $emitted -ge $First) { return }
        foreach ($r in (& $select $InputObject)) {
            if ($Unique -and -not (& $isUnique $r)) { continue }
            if ($PSBoundParameters.ContainsKey('First') -and $emitted -ge $First) { break }
            $emitted++
            $PSCmdlet.WriteObject($r)
        }
    }
    end {
        if (-not $bufferAll) { return }
        $picked = [System.Collections.Generic.List[object]]::new()
        if ($PSBoundParameters.ContainsKey('Index')) {
            foreach ($i in ($Index | Sort-Object -Unique)) { if ($i -lt $all.Count) { $picked.Add($all[$i]) } }
        } elseif ($PSBoundParameters.ContainsKey('SkipIndex')) {
            for ($i = 0; $i -lt $all.Count; $i++) { if ($i -notin $SkipIndex) { $picked.Add($all[$i]) } }
        } elseif ($PSBoundParameters.ContainsKey('SkipLast')) {
            for ($i = 0; $i -lt $all.Count - $SkipLast; $i++) { $picked.Add($all[$i]) }
        } else {
            $start = [Math]::Max(0, $all.Count - $Last)
            $from = if ($PSBoundParameters.ContainsKey('Skip')) { [Math]::Max(0, $start - $Skip) } else { $start }
            $to = if ($PSBoundParameters.ContainsKey('Skip')) { [Math]::Max(0, $all.Count - $Skip) } else { $all.Count }
            for ($i = $from; $i -lt $to; $i++) { $picked.Add($all[$i]) }
            if ($PSBoundParameters.ContainsKey('First')) {
                $firsts = [System.Collections.Generic.List[object]]::new()
                for ($i = 0; $i -lt [Math]::Min($First, $all.Count); $i++) { $firsts.Add($all[$i]) }
                foreach ($x in $picked) { if (-not $firsts.Contains($x)) { $firsts.Add($x) } }
                $picked = $firsts
            }
        }
        foreach ($o in $picked) {
            foreach ($r in (& $select $o)) {
                if ($Unique -and -not (& $isUnique $r)) { continue }
                $PSCmdlet.WriteObject($r)
            }
        }
    }
}

function __StandInKey {
    # the property values of a PSCustomObject as one string (Select-Object -Unique compares those)
    param([Parameter(ValueFromPipeline)] $InputObject)
    process { (@($InputObject.PSObject.Properties | ForEach-Object { "$($_.Name)=$($_.Value)" }) -join "`u{1F}") }
}
