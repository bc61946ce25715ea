function Resolve-StormatrixVMwareTemplate {
    <#
    .SYNOPSIS
    Finds exactly one template by exact name (Get-Template -Name reads a wildcard pattern), as a typed
    error (TemplateNotFound) when there is none or several.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][string]$Name
    )
    $pattern = ConvertTo-StormatrixVMwareNamePattern -Name $Name
    Select-StormatrixVMwareByName -Name $Name -ErrorId 'TemplateNotFound' -FailedMessage "template '$Name' not found" `
        -List { Get-Template -Name $pattern -ErrorAction Stop } `
        -CountMessage { param($count) "template name '$Name' names $count templates exactly; it must name exactly one (names are not patterns)" }
}
