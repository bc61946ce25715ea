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
    Select-StormatrixVMwareByName -Name $Name -ErrorId 'HostNotFound' -FailedMessage "ESXi host '$Name' not found" `
        -List { Get-VMHost -Name $pattern -ErrorAction Stop } `
        -CountMessage { param($count) "ESXi host name '$Name' names $count hosts exactly; it must name exactly one (names are not patterns)" }
}
