function ConvertTo-StormatrixVMwareHashtable {
    <#
    .SYNOPSIS
    Turns what ConvertFrom-Json returned (PSCustomObjects, arrays, scalars) into hashtables, recursively,
    so that a request's parameters can be splatted. Written out because ConvertFrom-Json -AsHashtable is
    not in Windows PowerShell 5.1, whose syntax every file under windows/ keeps to.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [AllowNull()][object]$InputObject
    )
    if ($null -eq $InputObject) {
        return $null
    }
    if ($InputObject -is [System.Management.Automation.PSCustomObject]) {
        $table = @{}
        foreach ($property in $InputObject.PSObject.Properties) {
            $table[$property.Name] = ConvertTo-StormatrixVMwareHashtable -InputObject $property.Value
        }
        return $table
    }
    if ($InputObject -is [System.Collections.IList]) {
        $items = New-Object System.Collections.Generic.List[object]
        foreach ($item in $InputObject) {
            $items.Add((ConvertTo-StormatrixVMwareHashtable -InputObject $item))
        }
        return , $items.ToArray()
    }
    $InputObject
}
