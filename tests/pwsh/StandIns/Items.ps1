# Stand-ins for the item cmdlets (Microsoft.PowerShell.Management) over the engine's ProviderIntrinsics
# ($ExecutionContext.SessionState.InvokeProvider), the same provider calls the real cmdlets make, so
# the FileSystem provider's own objects, wildcards and errors come back.

function __StandInMatchName {
    # -Filter/-Include/-Exclude on the item's name. Partial: the real cmdlets pass -Filter to the
    # provider (case-sensitive on Linux, as here); -Include/-Exclude are case-insensitive wildcards.
    param($Item, [string] $Filter, [string[]] $Include, [string[]] $Exclude)
    $name = if ($Item -is [string]) { [System.IO.Path]::GetFileName($Item) } else { [string]$Item.PSChildName }
    if ($Filter -and -not [System.Management.Automation.WildcardPattern]::new($Filter, 'None').IsMatch($name)) { return $false }
    if ($Include) {
        $any = $false
        foreach ($i in $Include) { if ([System.Management.Automation.WildcardPattern]::new($i, 'IgnoreCase').IsMatch($name)) { $any = $true } }
        if (-not $any) { return $false }
    }
    foreach ($e in $Exclude) { if ([System.Management.Automation.WildcardPattern]::new($e, 'IgnoreCase').IsMatch($name)) { return $false } }
    return $true
}

function Get-ChildItem {
    # Real: InvokeProvider.ChildItem.Get(path, recurse, depth, force, literal) / GetNames.
    # Partial: -Attributes, -Hidden/-ReadOnly/-System and -FollowSymlink are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Items')]
    param(
        [Parameter(ParameterSetName = 'Items', Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralItems', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Parameter(Position = 1)] [string] $Filter,
        [string[]] $Include,
        [string[]] $Exclude,
        [Alias('s', 'r')] [switch] $Recurse,
        [uint32] $Depth = [uint32]::MaxValue,
        [switch] $Force,
        [switch] $Name,
        [Alias('ad', 'd')] [switch] $Directory,
        [Alias('af')] [switch] $File
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralItems'
        $paths = if ($literal) { $LiteralPath } elseif ($Path) { $Path } else { @('.') }
        $recurseAny = $Recurse -or $PSBoundParameters.ContainsKey('Depth')
        foreach ($one in $paths) {
            try {
                # an -Include without -Recurse applies to the children of path\* in the real cmdlet
                $items = $ExecutionContext.SessionState.InvokeProvider.ChildItem.Get([string[]]@($one), [bool]$recurseAny, $Depth, $Force.IsPresent, $literal)
                foreach ($item in $items) {
                    if (-not (__StandInMatchName $item $Filter $Include $Exclude)) { continue }
                    $isContainer = [bool]$item.PSIsContainer
                    if ($Directory -and -not $isContainer) { continue }
                    if ($File -and $isContainer) { continue }
                    if ($Name) {
                        $base = $ExecutionContext.SessionState.Path.GetResolvedProviderPathFromPSPath(
                            $(if ($literal) { [System.Management.Automation.WildcardPattern]::Escape($one) } else { $one }), [ref]$null) | Select-Object -First 1
                        $full = [string]$item.PSObject.Properties['FullName'].Value
                        if ($full -and $base -and $full.StartsWith($base)) {
                            $PSCmdlet.WriteObject($full.Substring($base.Length).TrimStart([char[]]@('/', '\')))
                        } else { $PSCmdlet.WriteObject([string]$item.PSChildName) }
                    } else {
                        $PSCmdlet.WriteObject($item)
                    }
                }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function Get-Item {
    # Real: InvokeProvider.Item.Get(path, force, literal). Partial: -Stream/-Credential are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [string] $Filter, [string[]] $Include, [string[]] $Exclude,
        [switch] $Force
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        foreach ($one in $(if ($literal) { $LiteralPath } else { $Path })) {
            try {
                foreach ($item in $ExecutionContext.SessionState.InvokeProvider.Item.Get([string[]]@($one), $Force.IsPresent, $literal)) {
                    if (__StandInMatchName $item $Filter $Include $Exclude) { $PSCmdlet.WriteObject($item) }
                }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function Get-ItemProperty {
    # Real: InvokeProvider.Property.Get(path, names, literal).
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Parameter(Position = 1)] [Alias('PSProperty')] [string[]] $Name
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        $names = [System.Collections.ObjectModel.Collection[string]]::new()
        foreach ($n in $Name) { $names.Add($n) }
        foreach ($one in $(if ($literal) { $LiteralPath } else { $Path })) {
            try {
                foreach ($o in $ExecutionContext.SessionState.InvokeProvider.Property.Get([string[]]@($one), $names, $literal)) { $PSCmdlet.WriteObject($o) }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException], [System.NotSupportedException], [System.Management.Automation.PSNotSupportedException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function New-Item {
    # Real: InvokeProvider.Item.New(path, name, type, value, force); with -Force an existing
    # directory is returned, an existing file is overwritten. Partial: -Credential is not supported.
    [CmdletBinding(DefaultParameterSetName = 'pathSet', SupportsShouldProcess)]
    param(
        [Parameter(ParameterSetName = 'pathSet', Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'nameSet', Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'nameSet', Mandatory, ValueFromPipelineByPropertyName)] [AllowNull()] [AllowEmptyString()] [string] $Name,
        [Parameter(ValueFromPipelineByPropertyName)] [Alias('Type')] [string] $ItemType,
        [Parameter(ValueFromPipeline, ValueFromPipelineByPropertyName)] [Alias('Target')] [object] $Value,
        [switch] $Force
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $paths = if ($Path) { $Path } else { @('.') }
        try {
            if (-not $PSCmdlet.ShouldProcess(($paths -join ', '), 'Create')) { return }
            foreach ($item in $ExecutionContext.SessionState.InvokeProvider.Item.New([string[]]$paths, $Name, $ItemType, $Value, $Force.IsPresent)) {
                $PSCmdlet.WriteObject($item)
            }
        } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException], [System.IO.IOException] {
            $PSCmdlet.WriteError($_)
        }
    }
}

function Remove-Item {
    # Real: InvokeProvider.Item.Remove(path, recurse, force, literal). Partial: -Filter/-Include/
    # -Exclude select among the matches of -Path only; -Stream/-Credential are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path', SupportsShouldProcess)]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [string] $Filter, [string[]] $Include, [string[]] $Exclude,
        [switch] $Recurse,
        [switch] $Force
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        foreach ($one in $(if ($literal) { $LiteralPath } else { $Path })) {
            try {
                $targets = @($one)
                if ($Filter -or $Include -or $Exclude) {
                    $targets = @($ExecutionContext.SessionState.InvokeProvider.Item.Get([string[]]@($one), $Force.IsPresent, $literal) |
                            Where-Object { __StandInMatchName $_ $Filter $Include $Exclude } | ForEach-Object { $_.PSPath })
                    $literalTargets = $true
                } else { $literalTargets = $literal }
                foreach ($t in $targets) {
                    if (-not $PSCmdlet.ShouldProcess($t, 'Remove Item')) { continue }
                    $ExecutionContext.SessionState.InvokeProvider.Item.Remove([string[]]@($t), $Recurse.IsPresent, $Force.IsPresent, $literalTargets)
                }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException], [System.IO.IOException], [System.UnauthorizedAccessException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function Copy-Item {
    # Real: InvokeProvider.Item.Copy(path, destination, recurse, CopyContainers, force, literal).
    # Partial: -Filter/-Include/-Exclude, -FromSession/-ToSession and -Credential are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path', SupportsShouldProcess)]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Parameter(Position = 1, ValueFromPipelineByPropertyName)] [string] $Destination,
        [switch] $Container,
        [switch] $Recurse,
        [switch] $Force,
        [switch] $PassThru
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        $dest = if ($Destination) { $Destination } else { $ExecutionContext.SessionState.Path.CurrentLocation.Path }
        $containers = if ($Container -or -not $PSBoundParameters.ContainsKey('Container')) { 'CopyTargetContainer' } else { 'CopyChildrenOfTargetContainer' }
        foreach ($one in $(if ($literal) { $LiteralPath } else { $Path })) {
            try {
                if (-not $PSCmdlet.ShouldProcess("Item: $one Destination: $dest", 'Copy Item')) { continue }
                $copied = $ExecutionContext.SessionState.InvokeProvider.Item.Copy([string[]]@($one), $dest, $Recurse.IsPresent, $containers, $Force.IsPresent, $literal)
                if ($PassThru) { foreach ($c in $copied) { $PSCmdlet.WriteObject($c) } }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException], [System.IO.IOException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}
