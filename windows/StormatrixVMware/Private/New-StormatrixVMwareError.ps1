function New-StormatrixVMwareError {
    <#
    .SYNOPSIS
    Builds an ErrorRecord with a stable id (Stormatrix.VMware.<Id>) that keeps PowerCLI's own error as the
    inner exception, so the Python backend can map the id to a typed error and still show PowerCLI's words.
    #>
    [CmdletBinding()]
    [OutputType([System.Management.Automation.ErrorRecord])]
    param(
        [Parameter(Mandatory)][string]$Message,
        [Parameter(Mandatory)][string]$ErrorId,
        [System.Management.Automation.ErrorCategory]$Category = 'InvalidOperation',
        [System.Management.Automation.ErrorRecord]$Cause = $null,
        [object]$TargetObject = $null
    )
    if ($Cause) {
        $exception = [System.InvalidOperationException]::new($Message + ': ' + $Cause.Exception.Message, $Cause.Exception)
    }
    else {
        $exception = [System.InvalidOperationException]::new($Message)
    }
    [System.Management.Automation.ErrorRecord]::new($exception, ('Stormatrix.VMware.' + $ErrorId), $Category, $TargetObject)
}
