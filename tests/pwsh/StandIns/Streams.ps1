# Stand-ins for the Write-* cmdlets (Microsoft.PowerShell.Utility). Each writes through the same
# Cmdlet.Write* call the real cmdlet makes, under the caller's preference variables
# (__StandInCallerPreference in StandIns.ps1).

function Write-Output {
    # Real: WriteObject(InputObject, !NoEnumerate).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline, ValueFromRemainingArguments)]
        [AllowNull()] [AllowEmptyCollection()]
        [psobject[]] $InputObject,
        [switch] $NoEnumerate
    )
    process {
        if ($null -eq $InputObject) { $PSCmdlet.WriteObject($null); return }
        $PSCmdlet.WriteObject($InputObject, -not $NoEnumerate)
    }
}

function Write-Verbose {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)] [AllowEmptyString()] [Alias('Msg')] [string] $Message)
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process { $PSCmdlet.WriteVerbose($Message) }
}

function Write-Warning {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)] [AllowEmptyString()] [Alias('Msg')] [string] $Message)
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process { $PSCmdlet.WriteWarning($Message) }
}

function Write-Host {
    # Real: joins the objects (enumerating collections) with -Separator and writes a
    # HostInformationMessage tagged PSHOST to the information stream, which the host displays.
    # Partial: colours are carried but this host prints plain text.
    [CmdletBinding()]
    param(
        [Parameter(Position = 0, ValueFromPipeline, ValueFromRemainingArguments)] [Alias('Msg', 'Message')] [object] $Object,
        [switch] $NoNewline,
        [object] $Separator = ' ',
        [System.ConsoleColor] $ForegroundColor,
        [System.ConsoleColor] $BackgroundColor
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $parts = [System.Collections.Generic.List[string]]::new()
        $flatten = {
            param($o)
            if ($null -eq $o) { return }
            if ($o -is [string] -or $o -isnot [System.Collections.IEnumerable]) { $parts.Add([string]$o); return }
            foreach ($e in $o) { & $flatten $e }
        }
        & $flatten $Object
        $message = [System.Management.Automation.HostInformationMessage]::new()
        $message.Message = $parts -join [string]$Separator
        $message.NoNewLine = $NoNewline.IsPresent
        if ($PSBoundParameters.ContainsKey('ForegroundColor')) { $message.ForegroundColor = $ForegroundColor }
        if ($PSBoundParameters.ContainsKey('BackgroundColor')) { $message.BackgroundColor = $BackgroundColor }
        $PSCmdlet.WriteInformation($message, [string[]]@('PSHOST'))
    }
}

function Write-Error {
    # Real (WriteErrorCommand): builds an ErrorRecord (WriteErrorException for -Message; the error id
    # defaults to the exception's type name) with the category details, and writes it as a
    # non-terminating error with the caller's invocation info.
    [CmdletBinding(DefaultParameterSetName = 'NoException')]
    param(
        [Parameter(ParameterSetName = 'WithException', Mandatory)] [System.Exception] $Exception,
        [Parameter(ParameterSetName = 'NoException', Mandatory, Position = 0, ValueFromPipeline)]
        [Parameter(ParameterSetName = 'WithException')]
        [AllowNull()] [AllowEmptyString()] [Alias('Msg')] [string] $Message,
        [Parameter(ParameterSetName = 'ErrorRecord', Mandatory)] [System.Management.Automation.ErrorRecord] $ErrorRecord,
        [Parameter(ParameterSetName = 'NoException')] [Parameter(ParameterSetName = 'WithException')]
        [System.Management.Automation.ErrorCategory] $Category = 'NotSpecified',
        [Parameter(ParameterSetName = 'NoException')] [Parameter(ParameterSetName = 'WithException')] [string] $ErrorId,
        [Parameter(ParameterSetName = 'NoException')] [Parameter(ParameterSetName = 'WithException')] [object] $TargetObject,
        [string] $RecommendedAction,
        [Alias('Activity')] [string] $CategoryActivity,
        [Alias('Reason')] [string] $CategoryReason,
        [Alias('TargetName')] [string] $CategoryTargetName,
        [Alias('TargetType')] [string] $CategoryTargetType
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        if ($PSCmdlet.ParameterSetName -eq 'ErrorRecord') {
            $record = [System.Management.Automation.ErrorRecord]::new($ErrorRecord, $ErrorRecord.Exception)
        } else {
            $e = $Exception
            if ($PSCmdlet.ParameterSetName -eq 'NoException') {
                $e = [Microsoft.PowerShell.Commands.WriteErrorException]::new($Message)
            }
            $id = if ([string]::IsNullOrEmpty($ErrorId)) { $e.GetType().FullName } else { $ErrorId }
            $record = [System.Management.Automation.ErrorRecord]::new($e, $id, $Category, $TargetObject)
            if ($PSCmdlet.ParameterSetName -eq 'WithException' -and -not [string]::IsNullOrEmpty($Message)) {
                $record.ErrorDetails = [System.Management.Automation.ErrorDetails]::new($Message)
            }
        }
        if ($CategoryActivity) { $record.CategoryInfo.Activity = $CategoryActivity }
        if ($CategoryReason) { $record.CategoryInfo.Reason = $CategoryReason }
        if ($CategoryTargetName) { $record.CategoryInfo.TargetName = $CategoryTargetName }
        if ($CategoryTargetType) { $record.CategoryInfo.TargetType = $CategoryTargetType }
        if ($RecommendedAction) {
            if ($null -eq $record.ErrorDetails) { $record.ErrorDetails = [System.Management.Automation.ErrorDetails]::new('') }
            $record.ErrorDetails.RecommendedAction = $RecommendedAction
        }
        # the caller's invocation, as the real cmdlet sets it (PreserveInvocationInfoOnce)
        $caller = @([runspace]::DefaultRunspace.Debugger.GetCallStack())
        $invocation = if ($caller.Count -gt 1) { $caller[1].InvocationInfo } else { $null }
        [Stormatrix.PwshHost.StandInSupport]::WriteErrorAsCaller($PSCmdlet, $record, $invocation)
    }
}
