function ConvertTo-StormatrixDiskSpdArgument {
    <#
    .SYNOPSIS
    Builds DiskSpd's argument array for one workload; never a command string.

    .NOTES
    The flags make DiskSpd do the I/O fio does with direct=1 (the two engines must be comparable):
    -Su   the software (OS) cache off, like fio's direct=1 (FILE_FLAG_NO_BUFFERING) - and nothing more.
          NOT -Sh: that is -Suw, which adds write-through (FUA) to every write; fio does not.
    -n    no thread affinity. DiskSpd pins its threads round-robin to CPUs by default; fio leaves
          them to the scheduler, and so do we, on a VM whose vCPUs are themselves scheduled.
    -Z1M  writes come from a 1 MiB buffer of random bytes, as fio fills its buffers with random data
          (DiskSpd's default is a repeating byte pattern, which compressing storage would shrink).
    -L records latency, -Rxml writes the XML result to stdout. -W is the warm-up DiskSpd does not count,
    -d the measured time. -g throttles each thread in bytes per millisecond, so the workload's rate is
    divided by the thread count. The target #N is a physical disk number.
    #>
    [CmdletBinding()]
    [OutputType([string[]])]
    param(
        [Parameter(Mandatory)][int]$DiskNumber,
        [Parameter(Mandatory)][pscustomobject]$Workload
    )
    $w = $Workload
    switch ($w.ReadWrite) {
        'read' { $pattern = '-s'; $writePct = 0 }
        'write' { $pattern = '-s'; $writePct = 100 }
        'randread' { $pattern = '-r'; $writePct = 0 }
        'randwrite' { $pattern = '-r'; $writePct = 100 }
        'randrw' { $pattern = '-r'; $writePct = 100 - $w.RwMixRead }
        default { $pattern = '-s'; $writePct = 100 - $w.RwMixRead }
    }
    $arguments = New-Object System.Collections.Generic.List[string]
    foreach ($a in @(('-b' + $w.BlockSize), ('-d' + $w.RuntimeSeconds), ('-W' + $w.RampSeconds), ('-o' + $w.IoDepth),
            ('-t' + $w.NumJobs), $pattern, ('-w' + $writePct))) {
        $arguments.Add($a)
    }
    if ($w.RateMiBps -gt 0) {
        $bytesPerMs = [int64][Math]::Max(1, [Math]::Round($w.RateMiBps * 1048576 / 1000 / $w.NumJobs))
        $arguments.Add('-g' + $bytesPerMs)
    }
    foreach ($a in (Get-StormatrixEngineFlag -Engine diskspd)) {
        $arguments.Add($a)
    }
    $arguments.Add('-L')
    $arguments.Add('-Rxml')
    $arguments.Add('#' + $DiskNumber)
    [string[]]$arguments.ToArray()
}
