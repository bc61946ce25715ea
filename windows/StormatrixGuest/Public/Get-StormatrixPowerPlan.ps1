function Get-StormatrixPowerPlan {
    <#
    .SYNOPSIS
    Reports the active power plan and whether it is High performance.

    .DESCRIPTION
    Parses "powercfg.exe /getactivescheme", whose output is
    "Power Scheme GUID: 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c  (High performance)".
    The GUID is compared, not the name, which is localized.

    .EXAMPLE
    Get-StormatrixPowerPlan

    .OUTPUTS
    PSCustomObject with Guid, Name, IsHighPerformance.

    .NOTES
    Balanced lets the vCPUs park and clock down between I/Os, which moves latency and CPU per MiB.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param()
    $run = Invoke-StormatrixNative -FilePath 'powercfg.exe' -ArgumentList @('/getactivescheme')
    if ($run.ExitCode -ne 0) {
        throw (New-StormatrixError -ErrorId 'PowerCfgFailed' -Message "powercfg /getactivescheme exited with $($run.ExitCode): $($run.StdErr)")
    }
    $match = [regex]::Match($run.StdOut, '([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\s*(\((.*)\))?')
    if (-not $match.Success) {
        throw (New-StormatrixError -ErrorId 'PowerCfgUnreadable' -Category 'InvalidResult' -Message "cannot read the power plan from: $($run.StdOut)")
    }
    $guid = $match.Groups[1].Value.ToLowerInvariant()
    [pscustomobject]@{
        Guid              = $guid
        Name              = $match.Groups[3].Value
        IsHighPerformance = ($guid -eq '8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c')
    }
}
