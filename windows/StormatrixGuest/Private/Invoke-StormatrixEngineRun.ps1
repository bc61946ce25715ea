function Invoke-StormatrixEngineRun {
    <#
    .SYNOPSIS
    Runs fio or DiskSpd once, between the engine-started and engine-ended markers, and times it.

    .NOTES
    The marker lines let the controller open its measurement window when the engine really starts;
    they are written around the native call and nothing else, by both engines alike.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$FilePath,
        [Parameter(Mandatory)][string[]]$ArgumentList,
        [switch]$WriteMarkers
    )
    $started = [DateTime]::UtcNow.ToString('o')
    if ($WriteMarkers) {
        Write-StormatrixMarker -Name 'engine-started'
    }
    $run = Invoke-StormatrixNative -FilePath $FilePath -ArgumentList $ArgumentList
    if ($WriteMarkers) {
        Write-StormatrixMarker -Name 'engine-ended'
    }
    [pscustomobject]@{
        Run     = $run
        Started = $started
        Ended   = [DateTime]::UtcNow.ToString('o')
    }
}
