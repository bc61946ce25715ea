function Test-StormatrixVMwareFleetOwner {
    <#
    .SYNOPSIS
    True when the VM's annotation (Notes) names the fleet's run id, as New-StormatrixVMwareFleet wrote it.

    .NOTES
    The comparison is on the exact words "stormatrix fleet <run id>:", so a VM that merely shares a name
    with a worker, or a worker of another run, is never taken for this fleet's.
    #>
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory)][AllowNull()][object]$VM,
        [Parameter(Mandatory)][string]$RunId
    )
    if ($null -eq $VM) {
        return $false
    }
    ([string]$VM.Notes).Contains("stormatrix fleet $($RunId):")
}
