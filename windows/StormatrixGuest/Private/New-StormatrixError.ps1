function New-StormatrixError {
    <#
    .SYNOPSIS
    Builds an ErrorRecord with a stable error id, so callers (and the Python side, which reads the
    FullyQualifiedErrorId) can tell a missing disk from a failed fio run without parsing prose.
    #>
    [CmdletBinding()]
    [OutputType([System.Management.Automation.ErrorRecord])]
    param(
        [Parameter(Mandatory)][string]$Message,
        [Parameter(Mandatory)][string]$ErrorId,
        [System.Management.Automation.ErrorCategory]$Category = 'InvalidOperation',
        [ValidateSet('InvalidOperation', 'ItemNotFound', 'Argument', 'NotSupported')]
        [string]$ExceptionType = 'InvalidOperation',
        [object]$TargetObject = $null
    )
    switch ($ExceptionType) {
        'ItemNotFound' { $exception = New-Object System.Management.Automation.ItemNotFoundException $Message }
        'Argument' { $exception = New-Object System.ArgumentException $Message }
        'NotSupported' { $exception = New-Object System.NotSupportedException $Message }
        default { $exception = New-Object System.InvalidOperationException $Message }
    }
    New-Object System.Management.Automation.ErrorRecord $exception, ('Stormatrix.' + $ErrorId), $Category, $TargetObject
}
