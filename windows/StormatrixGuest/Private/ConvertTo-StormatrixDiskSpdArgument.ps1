function ConvertTo-StormatrixDiskSpdArgument {
    <#
    .SYNOPSIS
    Builds DiskSpd's argument array for one workload; never a command string.

    .NOTES
    -Sh disables software caching and hardware write caching (fio's direct=1), -L records latency,
    -Rxml writes the XML result to stdout. -W is the warm-up DiskSpd does not count, -d the measured
    time. -g throttles each thread in bytes per millisecond, so the workload's rate is divided by
    the thread count. The target #N is a physical disk number.
    #>
    [CmdletBinding()]
    [OutputType([string[]])]
    param(
        [Parameter(Mandatory)][int]$DiskNumber,
        [Parameter(Mandatory)][string]$ReadWrite,
        [Parameter(Mandatory)][int]$BlockSize,
        [Parameter(Mandatory)][int]$IoDepth,
        [Parameter(Mandatory)][int]$NumJobs,
        [Parameter(Mandatory)][int]$RampSeconds,
        [Parameter(Mandatory)][int]$RuntimeSeconds,
        [double]$RateMiBps = 0,
        [int]$RwMixRead = 50
    )
    switch ($ReadWrite) {
        'read' { $pattern = '-s'; $writePct = 0 }
        'write' { $pattern = '-s'; $writePct = 100 }
        'randread' { $pattern = '-r'; $writePct = 0 }
        'randwrite' { $pattern = '-r'; $writePct = 100 }
        'randrw' { $pattern = '-r'; $writePct = 100 - $RwMixRead }
        default { $pattern = '-s'; $writePct = 100 - $RwMixRead }
    }
    $arguments = New-Object System.Collections.Generic.List[string]
    $arguments.Add('-b' + $BlockSize)
    $arguments.Add('-d' + $RuntimeSeconds)
    $arguments.Add('-W' + $RampSeconds)
    $arguments.Add('-o' + $IoDepth)
    $arguments.Add('-t' + $NumJobs)
    $arguments.Add($pattern)
    $arguments.Add('-w' + $writePct)
    if ($RateMiBps -gt 0) {
        $bytesPerMs = [int64][Math]::Max(1, [Math]::Round($RateMiBps * 1048576 / 1000 / $NumJobs))
        $arguments.Add('-g' + $bytesPerMs)
    }
    $arguments.Add('-Sh')
    $arguments.Add('-L')
    $arguments.Add('-Rxml')
    $arguments.Add('#' + $DiskNumber)
    [string[]]$arguments.ToArray()
}
