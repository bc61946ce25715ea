# Sort-Object and Add-Member stand-ins (Microsoft.PowerShell.Utility).

function __StandInCompare {
    # Sort-Object's ObjectCommandComparer: $null first, then LanguagePrimitives.Compare (numbers as
    # numbers, strings culture-aware and case-insensitive unless -CaseSensitive); objects that cannot be
    # compared are compared by their string forms.
    param($A, $B, [bool] $CaseSensitive, [System.Globalization.CultureInfo] $Culture)
    if ($null -eq $A) { if ($null -eq $B) { return 0 } else { return -1 } }
    if ($null -eq $B) { return 1 }
    try { return [System.Management.Automation.LanguagePrimitives]::Compare($A, $B, -not $CaseSensitive, $Culture) }
    catch { return [string]::Compare([string]$A, [string]$B, $Culture, $(if ($CaseSensitive) { 'None' } else { 'IgnoreCase' })) }
}

function Sort-Object {
    # Real: collects the input, sorts by the properties (names, script blocks or @{Expression;
    # Descending}) with ObjectCommandComparer; -Unique drops objects whose keys compare equal. This sort
    # is stable. Partial: -Top/-Bottom take the first/last N after sorting.
    [CmdletBinding(DefaultParameterSetName = 'Default')]
    param(
        [switch] $Stable,
        [switch] $Descending,
        [switch] $Unique,
        [Parameter(ParameterSetName = 'Top', Mandatory)] [int] $Top,
        [Parameter(ParameterSetName = 'Bottom', Mandatory)] [int] $Bottom,
        [Parameter(ValueFromPipeline)] [psobject] $InputObject,
        [Parameter(Position = 0)] [object[]] $Property,
        [string] $Culture,
        [switch] $CaseSensitive
    )
    begin {
        foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) }
        $items = [System.Collections.Generic.List[object]]::new()
        $specs = @(foreach ($entry in $Property) { __StandInCalculated $entry })
        $cultureInfo = if ($Culture) { [System.Globalization.CultureInfo]::GetCultureInfo($Culture) } else { [System.Globalization.CultureInfo]::CurrentCulture }
    }
    process {
        if (-not $PSBoundParameters.ContainsKey('InputObject') -and $MyInvocation.ExpectingInput -eq $false) { return }
        if ($null -eq $InputObject -and -not $MyInvocation.ExpectingInput) { return }
        if ($specs.Count) { $keys = @(foreach ($s in $specs) { , (__StandInPropertyValue $InputObject $s.Expression) }) } else { $keys = @(, $InputObject) }
        $items.Add([pscustomobject]@{ Object = $InputObject; Keys = $keys; Index = $items.Count })
    }
    end {
        $desc = @(if ($specs.Count) { foreach ($s in $specs) { if ($null -ne $s.Descending) { $s.Descending } else { $Descending.IsPresent } } } else { $Descending.IsPresent })
        $compare = {
            param($x, $y)
            for ($k = 0; $k -lt $desc.Count; $k++) {
                $c = __StandInCompare $x.Keys[$k] $y.Keys[$k] $CaseSensitive.IsPresent $cultureInfo
                if ($c -ne 0) { if ($desc[$k]) { return -$c } else { return $c } }
            }
            return 0
        }
        # merge sort: stable, and it calls the comparer O(n log n) times
        $sort = {
            param([object[]] $a)
            if ($a.Count -le 1) { return , $a }
            $mid = [int][Math]::Floor($a.Count / 2)
            $left = & $sort $a[0..($mid - 1)]
            $right = & $sort $a[$mid..($a.Count - 1)]
            $merged = [System.Collections.Generic.List[object]]::new($a.Count)
            $i = 0; $j = 0
            while ($i -lt $left.Count -and $j -lt $right.Count) {
                if ((& $compare $right[$j] $left[$i]) -lt 0) { $merged.Add($right[$j]); $j++ } else { $merged.Add($left[$i]); $i++ }
            }
            while ($i -lt $left.Count) { $merged.Add($left[$i]); $i++ }
            while ($j -lt $right.Count) { $merged.Add($right[$j]); $j++ }
            return , $merged.ToArray()
        }
        $sorted = & $sort $items.ToArray()
        if ($Unique) {
            $kept = [System.Collections.Generic.List[object]]::new()
            foreach ($s in $sorted) { if ($kept.Count -eq 0 -or (& $compare $kept[$kept.Count - 1] $s) -ne 0) { $kept.Add($s) } }
            $sorted = $kept.ToArray()
        }
        if ($PSCmdlet.ParameterSetName -eq 'Top') { $sorted = @($sorted | Select-Object -First $Top) }
        if ($PSCmdlet.ParameterSetName -eq 'Bottom') { $sorted = @($sorted | Select-Object -Last $Bottom) }
        foreach ($s in $sorted) { $PSCmdlet.WriteObject($s.Object) }
    }
}

function Add-Member {
    # Real: adds a member to the object's PSObject (instance members), -Force replaces one, -PassThru
    # writes the object. Partial: CodeProperty/CodeMethod/MemberSet/PropertySet members are not supported.
    [CmdletBinding(DefaultParameterSetName = 'TypeNameSet')]
    param(
        [Parameter(ParameterSetName = 'MemberSet', Mandatory, Position = 0)] [Alias('Type')] [System.Management.Automation.PSMemberTypes] $MemberType,
        [Parameter(ParameterSetName = 'MemberSet', Mandatory, Position = 1)] [string] $Name,
        [Parameter(ParameterSetName = 'MemberSet', Position = 2)] [object] $Value,
        [Parameter(ParameterSetName = 'MemberSet', Position = 3)] [object] $SecondValue,
        [Parameter(ParameterSetName = 'NotePropertySingleMemberSet', Mandatory, Position = 0)] [ValidateNotNullOrEmpty()] [string] $NotePropertyName,
        [Parameter(ParameterSetName = 'NotePropertySingleMemberSet', Mandatory, Position = 1)] [AllowNull()] [object] $NotePropertyValue,
        [Parameter(ParameterSetName = 'NotePropertyMultiMemberSet', Mandatory, Position = 0)] [ValidateNotNullOrEmpty()] [System.Collections.IDictionary] $NotePropertyMembers,
        [Parameter(Mandatory, ValueFromPipeline)] [psobject] $InputObject,
        [Parameter(ParameterSetName = 'TypeNameSet', Mandatory)]
        [Parameter(ParameterSetName = 'MemberSet')] [Parameter(ParameterSetName = 'NotePropertySingleMemberSet')]
        [Parameter(ParameterSetName = 'NotePropertyMultiMemberSet')] [ValidateNotNullOrEmpty()] [string] $TypeName,
        [Parameter(ParameterSetName = 'MemberSet')] [Parameter(ParameterSetName = 'NotePropertySingleMemberSet')]
        [Parameter(ParameterSetName = 'NotePropertyMultiMemberSet')] [switch] $Force,
        [switch] $PassThru
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $members = [System.Collections.Generic.List[System.Management.Automation.PSMemberInfo]]::new()
        switch ($PSCmdlet.ParameterSetName) {
            'MemberSet' {
                $m = switch ($MemberType) {
                    'NoteProperty' { [System.Management.Automation.PSNoteProperty]::new($Name, $Value) }
                    'AliasProperty' {
                        if ($null -ne $SecondValue) { [System.Management.Automation.PSAliasProperty]::new($Name, [string]$Value, [type]$SecondValue) }
                        else { [System.Management.Automation.PSAliasProperty]::new($Name, [string]$Value) }
                    }
                    'ScriptProperty' { [System.Management.Automation.PSScriptProperty]::new($Name, [scriptblock]$Value, [scriptblock]$SecondValue) }
                    'ScriptMethod' { [System.Management.Automation.PSScriptMethod]::new($Name, [scriptblock]$Value) }
                    default {
                        $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new(
                                [System.NotSupportedException]::new("Add-Member stand-in: member type $MemberType is not supported"),
                                'CannotAddMemberType', 'NotImplemented', $MemberType))
                    }
                }
                $members.Add($m)
            }
            'NotePropertySingleMemberSet' { $members.Add([System.Management.Automation.PSNoteProperty]::new($NotePropertyName, $NotePropertyValue)) }
            'NotePropertyMultiMemberSet' {
                foreach ($k in $NotePropertyMembers.Keys) { $members.Add([System.Management.Automation.PSNoteProperty]::new([string]$k, $NotePropertyMembers[$k])) }
            }
        }
        foreach ($m in $members) {
            $existing = $InputObject.PSObject.Members[$m.Name]
            if ($null -ne $existing) {
                if (-not $Force) {
                    $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                            [System.InvalidOperationException]::new("Cannot add a member with the name `"$($m.Name)`" because a member with that name already exists. To overwrite the member anyway, add the Force parameter to your command."),
                            'MemberAlreadyExists', 'InvalidOperation', $InputObject))
                    return
                }
                $InputObject.PSObject.Members.Remove($m.Name)
            }
            $InputObject.PSObject.Members.Add($m)
        }
        if ($TypeName) { $InputObject.PSObject.TypeNames.Insert(0, $TypeName) }
        if ($PassThru) { $PSCmdlet.WriteObject($InputObject) }
    }
}
