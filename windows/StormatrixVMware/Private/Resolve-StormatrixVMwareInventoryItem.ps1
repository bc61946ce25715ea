function Resolve-StormatrixVMwareInventoryItem {
    <#
    .SYNOPSIS
    Finds exactly one template or datastore by exact name (Get-Template / Get-Datastore -Name read a
    wildcard pattern; see Select-StormatrixVMwareByName), as a typed error (TemplateNotFound,
    DatastoreNotFound) when there is none or several.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][ValidateSet('Template', 'Datastore')][string]$Kind,
        [Parameter(Mandatory)][string]$Name
    )
    $pattern = ConvertTo-StormatrixVMwareNamePattern -Name $Name
    $what = $Kind.ToLowerInvariant()
    $list = { Get-Template -Name $pattern -ErrorAction Stop }
    if ($Kind -eq 'Datastore') { $list = { Get-Datastore -Name $pattern -ErrorAction Stop } }
    Select-StormatrixVMwareByName -Name $Name -ErrorId "$($Kind)NotFound" -FailedMessage "$what '$Name' not found" -List $list `
        -CountMessage { param($count) "$what name '$Name' names $count $($what)s exactly; it must name exactly one (names are not patterns)" }
}
