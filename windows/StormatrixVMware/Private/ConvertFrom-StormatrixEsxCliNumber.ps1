function ConvertFrom-StormatrixEsxCliNumber {
    <#
    .SYNOPSIS
    The whole number at the start of an esxcli value as esxcli prints it: "32", "0 milliseconds",
    "10 milliseconds". Anything else is a typed error naming the field, not a cast exception.
    #>
    [CmdletBinding()]
    [OutputType([int])]
    param(
        [AllowNull()][object]$Value,
        [Parameter(Mandatory)][string]$Field,
        [Parameter(Mandatory)][string]$Device
    )
    $text = [string]$Value
    if ($text -match '^\s*(-?\d+)(\s+[A-Za-z]+)?\s*$') {
        return [int]$Matches[1]
    }
    throw (New-StormatrixVMwareError -ErrorId 'EsxCliUnexpectedValue' -Category 'InvalidData' -TargetObject $Device `
            -Message "esxcli reports '$Field' of $Device as '$text', not a number")
}
