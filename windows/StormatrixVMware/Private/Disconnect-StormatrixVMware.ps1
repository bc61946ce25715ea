function Disconnect-StormatrixVMware {
    <#
    .SYNOPSIS
    Closes the session Connect-StormatrixVMware opened. Never throws: it runs in finally blocks, where
    an error of its own would hide the one that matters.
    #>
    [CmdletBinding()]
    [OutputType([void])]
    param()
    if ($script:StormatrixVIServer) {
        try {
            Disconnect-VIServer -Server $script:StormatrixVIServer -Force -Confirm:$false -ErrorAction Stop | Out-Null
        }
        catch {
            Write-Verbose "disconnecting from $($script:StormatrixVIServer.Name): $($_.Exception.Message)"
        }
        $script:StormatrixVIServer = $null
    }
}
