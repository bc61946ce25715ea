function ConvertTo-StormatrixWorkload {
    <#
    .SYNOPSIS
    The workload (rw, block size, queue depth, jobs, times, rate, mix) as one validated object.

    .NOTES
    Invoke-StormatrixFio and Invoke-StormatrixDiskSpd take the workload as one -Workload value (a
    hashtable or an object, as ConvertFrom-Json makes it) and check it here, in one place, with
    PowerShell's own validation. A key this function does not know is an error, not ignored: a
    misspelt IoDepth must not silently run at queue depth 1.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][object]$InputObject
    )
    $known = @('ReadWrite', 'BlockSize', 'IoDepth', 'NumJobs', 'RampSeconds', 'RuntimeSeconds', 'RateMiBps', 'RwMixRead')
    $values = @{}
    if ($InputObject -is [System.Collections.IDictionary]) {
        foreach ($key in $InputObject.Keys) { $values[[string]$key] = $InputObject[$key] }
    }
    else {
        foreach ($property in $InputObject.PSObject.Properties) { $values[$property.Name] = $property.Value }
    }
    $unknown = @($values.Keys | Where-Object { $known -notcontains $_ })
    if ($unknown.Count -gt 0) {
        throw (New-StormatrixError -ErrorId 'BadWorkload' -ExceptionType 'Argument' -Category 'InvalidArgument' `
                -Message "the workload has unknown keys: $($unknown -join ', '). Fix: use only $($known -join ', ')")
    }
    New-StormatrixWorkload @values
}
