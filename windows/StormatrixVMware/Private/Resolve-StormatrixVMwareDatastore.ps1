function Resolve-StormatrixVMwareDatastore {
    <#
    .SYNOPSIS
    Finds exactly one datastore by exact name (Get-DataStore -Name reads a wildcard pattern; see
    Select-StormatrixVMwareByName), as a typed error when there is none or several.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][string]$Name
    )
    $pattern = ConvertTo-StormatrixVMwareNamePattern -Name $Name
    Select-StormatrixVMwareByName -Name $Name -ErrorId 'DatastoreNotFound' -FailedMessage "datastore '$Name' not found" `
        -List { Get-Datastore -Name $pattern -ErrorAction Stop } `
        -CountMessage { param($count) "datastore name '$Name' names $count datastores exactly; it must name exactly one (names are not patterns)" }
}
