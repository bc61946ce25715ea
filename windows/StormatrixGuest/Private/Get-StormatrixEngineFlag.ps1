function Get-StormatrixEngineFlag {
    <#
    .SYNOPSIS
    The flags that decide how each engine does its I/O (cache, write-through, affinity, buffers).

    .NOTES
    One list per engine, used to build the command line and reported with every result, so each
    cell records what its engine did: fio --direct=1 --thread (no write-through, no pinning, random
    buffers by default); DiskSpd -Su -n -Z1M (the same, see ConvertTo-StormatrixDiskSpdArgument).
    #>
    [CmdletBinding()]
    [OutputType([string[]])]
    param(
        [Parameter(Mandatory)][ValidateSet('fio', 'diskspd')][string]$Engine,
        [int]$Direct = 1
    )
    if ($Engine -eq 'diskspd') {
        return [string[]]@('-Su', '-n', '-Z1M')
    }
    [string[]]@(('--direct=' + $Direct), '--thread')
}
