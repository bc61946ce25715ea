function Resolve-StormatrixVMwareHost {
    <#
    .SYNOPSIS
    Finds exactly one ESXi host by its name in vCenter (or the host itself), matched exactly: Get-VMHost
    -Name reads the name as a wildcard pattern, and Get-EsxCli -VMHost with a name would too.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][string]$Name
    )
    $pattern = ConvertTo-StormatrixVMwareNamePattern -Name $Name
    try {
        $found = @(Get-VMHost -Name $pattern -ErrorAction Stop | Where-Object { $_.Name -eq $Name })
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $Name `
                -Message "ESXi host '$Name' not found")
    }
    if ($found.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -TargetObject $Name `
                -Message "ESXi host name '$Name' names $($found.Count) hosts exactly; it must name exactly one (names are not patterns)")
    }
    $found[0]
}
