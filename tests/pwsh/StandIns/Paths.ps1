# Stand-ins for the path cmdlets (Microsoft.PowerShell.Management), over the engine's PathIntrinsics
# and ProviderIntrinsics: the same calls the real cmdlets make, so joining, splitting, wildcard and
# provider behaviour are the engine's own.

function Join-Path {
    # Real: SessionState.Path.Combine(path, child) for the child and each additional child.
    # Partial: -Credential and -Extension are not supported.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Alias('PSPath')] [string[]] $Path,
        [Parameter(Position = 1, ValueFromPipelineByPropertyName)]
        [AllowNull()] [AllowEmptyString()] [string] $ChildPath,
        [Parameter(Position = 2, ValueFromRemainingArguments, ValueFromPipelineByPropertyName)]
        [AllowNull()] [AllowEmptyString()] [AllowEmptyCollection()] [string[]] $AdditionalChildPath = @(),
        [switch] $Resolve
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        foreach ($parent in $Path) {
            try {
                $joined = $ExecutionContext.SessionState.Path.Combine($parent, $ChildPath)
                foreach ($child in $AdditionalChildPath) { $joined = $ExecutionContext.SessionState.Path.Combine($joined, $child) }
                if ($Resolve) {
                    foreach ($r in $ExecutionContext.SessionState.Path.GetResolvedPSPathFromPSPath($joined)) { $PSCmdlet.WriteObject($r.Path) }
                } else {
                    $PSCmdlet.WriteObject($joined)
                }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function Split-Path {
    # Real: SessionState.Path.ParseParent / ParseChildName / IsPSAbsolute.
    # Partial: -Credential is not supported; -Qualifier/-NoQualifier handle drive-qualified paths only.
    [CmdletBinding(DefaultParameterSetName = 'ParentSet')]
    param(
        [Parameter(ParameterSetName = 'ParentSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'LeafSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'LeafBaseSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'ExtensionSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'NoQualifierSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'QualifierSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [Parameter(ParameterSetName = 'IsAbsoluteSet', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPathSet', Mandatory, ValueFromPipelineByPropertyName)]
        [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Parameter(ParameterSetName = 'ParentSet')] [switch] $Parent,
        [Parameter(ParameterSetName = 'LeafSet', Mandatory)] [switch] $Leaf,
        [Parameter(ParameterSetName = 'LeafBaseSet', Mandatory)] [switch] $LeafBase,
        [Parameter(ParameterSetName = 'ExtensionSet', Mandatory)] [switch] $Extension,
        [Parameter(ParameterSetName = 'QualifierSet', Mandatory)] [switch] $Qualifier,
        [Parameter(ParameterSetName = 'NoQualifierSet', Mandatory)] [switch] $NoQualifier,
        [Parameter(ParameterSetName = 'IsAbsoluteSet', Mandatory)] [switch] $IsAbsolute,
        [switch] $Resolve
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $paths = if ($PSCmdlet.ParameterSetName -eq 'LiteralPathSet') { $LiteralPath } else { $Path }
        foreach ($one in $paths) {
            try {
                $targets = @($one)
                if ($Resolve) {
                    $targets = @(if ($PSCmdlet.ParameterSetName -eq 'LiteralPathSet') {
                            $ExecutionContext.SessionState.Path.GetResolvedPSPathFromPSPath(
                                [System.Management.Automation.WildcardPattern]::Escape($one)) | ForEach-Object Path
                        } else {
                            $ExecutionContext.SessionState.Path.GetResolvedPSPathFromPSPath($one) | ForEach-Object Path
                        })
                }
                foreach ($t in $targets) {
                    switch ($PSCmdlet.ParameterSetName) {
                        'IsAbsoluteSet' {
                            $drive = $null
                            $PSCmdlet.WriteObject($ExecutionContext.SessionState.Path.IsPSAbsolute($t, [ref]$drive))
                        }
                        'LeafSet' { $PSCmdlet.WriteObject($ExecutionContext.SessionState.Path.ParseChildName($t)) }
                        'LeafBaseSet' {
                            $PSCmdlet.WriteObject([System.IO.Path]::GetFileNameWithoutExtension($ExecutionContext.SessionState.Path.ParseChildName($t)))
                        }
                        'ExtensionSet' {
                            $PSCmdlet.WriteObject([System.IO.Path]::GetExtension($ExecutionContext.SessionState.Path.ParseChildName($t)))
                        }
                        'QualifierSet' {
                            $i = $t.IndexOf(':')
                            if ($i -lt 0) {
                                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                                        [System.Management.Automation.ParameterBindingException]::new("Cannot parse path because path '$t' does not have a qualifier specified."),
                                        'ParsePathQualifierNotFound', 'InvalidArgument', $t))
                            } else { $PSCmdlet.WriteObject($t.Substring(0, $i + 1)) }
                        }
                        'NoQualifierSet' {
                            $i = $t.IndexOf(':')
                            $PSCmdlet.WriteObject($(if ($i -ge 0) { $t.Substring($i + 1) } else { $t }))
                        }
                        default {
                            # ParentSet and LiteralPathSet
                            $PSCmdlet.WriteObject($ExecutionContext.SessionState.Path.ParseParent($t, ''))
                        }
                    }
                }
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}

function Test-Path {
    # Real: InvokeProvider.Item.Exists / IsContainer; an empty or $null path is $false.
    # Partial: -Filter/-Include/-Exclude/-Credential/-OlderThan/-NewerThan are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    [OutputType([bool])]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [AllowNull()] [AllowEmptyCollection()] [AllowEmptyString()] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)]
        [AllowNull()] [AllowEmptyCollection()] [AllowEmptyString()] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Alias('Type')] [ValidateSet('Any', 'Container', 'Leaf')] [string] $PathType = 'Any',
        [switch] $IsValid
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        $paths = if ($literal) { $LiteralPath } else { $Path }
        if ($null -eq $paths) { $paths = @($null) }
        foreach ($one in $paths) {
            if ([string]::IsNullOrWhiteSpace($one)) { $PSCmdlet.WriteObject($false); continue }
            try {
                if ($IsValid) { $PSCmdlet.WriteObject($ExecutionContext.SessionState.Path.IsValid($one)); continue }
                $exists = $ExecutionContext.SessionState.InvokeProvider.Item.Exists($one, $false, $literal)
                if ($exists -and $PathType -ne 'Any') {
                    $container = $ExecutionContext.SessionState.InvokeProvider.Item.IsContainer(
                        $(if ($literal) { [System.Management.Automation.WildcardPattern]::Escape($one) } else { $one }))
                    $exists = if ($PathType -eq 'Container') { $container } else { -not $container }
                }
                $PSCmdlet.WriteObject($exists)
            } catch [System.Management.Automation.DriveNotFoundException], [System.Management.Automation.ItemNotFoundException] {
                $PSCmdlet.WriteObject($false)
            } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
                $PSCmdlet.WriteError($_)
            }
        }
    }
}
