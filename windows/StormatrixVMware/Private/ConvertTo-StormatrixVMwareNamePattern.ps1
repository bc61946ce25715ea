function ConvertTo-StormatrixVMwareNamePattern {
    <#
    .SYNOPSIS
    A PowerCLI -Name pattern that matches at least the exact name: each wildcard character (* ? [ ] and the
    escape character `) becomes '?', which matches any one character, itself included.

    .NOTES
    The callers filter the answer by exact name, so the pattern only has to be a superset that the server
    can still narrow down (a bare '*' would list the whole inventory).
    #>
    [CmdletBinding()]
    [OutputType([string])]
    param(
        [Parameter(Mandatory)][string]$Name
    )
    $Name -replace '[\*\?\[\]`]', '?'
}
