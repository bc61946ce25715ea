function New-StormatrixWorkload {
    <#
    .SYNOPSIS
    One workload, validated by PowerShell's parameter binder (called by ConvertTo-StormatrixWorkload).
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateSet('read', 'write', 'randread', 'randwrite', 'rw', 'readwrite', 'randrw')][string]$ReadWrite,
        [Parameter(Mandatory)][ValidateRange(512, 67108864)][int]$BlockSize,
        [ValidateRange(1, 65536)][int]$IoDepth = 1,
        [ValidateRange(1, 256)][int]$NumJobs = 1,
        [ValidateRange(0, 86400)][int]$RampSeconds = 0,
        [ValidateRange(1, 86400)][int]$RuntimeSeconds = 10,
        [ValidateRange(0, 1000000)][double]$RateMiBps = 0,
        [ValidateRange(0, 100)][int]$RwMixRead = 50
    )
    if ($BlockSize % 512 -ne 0) {
        throw (New-StormatrixError -ErrorId 'BadBlockSize' -ExceptionType 'Argument' -Category 'InvalidArgument' `
                -Message "BlockSize $BlockSize is not a multiple of 512. Fix: direct I/O needs whole sectors (512, 4096, 65536, ...)")
    }
    [pscustomobject]@{
        ReadWrite      = $ReadWrite
        BlockSize      = $BlockSize
        IoDepth        = $IoDepth
        NumJobs        = $NumJobs
        RampSeconds    = $RampSeconds
        RuntimeSeconds = $RuntimeSeconds
        RateMiBps      = $RateMiBps
        RwMixRead      = $RwMixRead
        IsWrite        = ($ReadWrite -ne 'read' -and $ReadWrite -ne 'randread')
    }
}
