function Write-StormatrixMarker {
    <#
    .SYNOPSIS
    Writes one marker line straight to the console's standard output, flushed at once.

    .NOTES
    The controller times the measurement window from the moment the engine starts. Function output
    only reaches stdout when the pipeline ends, so the marker bypasses the pipeline.
    #>
    [CmdletBinding()]
    param(
        [Parameter(Mandatory)][ValidateSet('engine-started', 'engine-ended')][string]$Name
    )
    [Console]::Out.WriteLine('##stormatrix:' + $Name + ' ' + [DateTime]::UtcNow.ToString('o'))
    [Console]::Out.Flush()
}
