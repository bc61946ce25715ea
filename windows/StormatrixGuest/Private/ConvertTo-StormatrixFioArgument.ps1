function ConvertTo-StormatrixFioArgument {
    <#
    .SYNOPSIS
    Builds fio's argument array for one workload; never a command string.

    .NOTES
    --thread: on Windows fio's processes are emulated and thread mode is what works.
    --output: warnings (and on Windows, messages about the raw disk) go to the console; the JSON
    goes to its own file, so nothing can corrupt it.
    --ramp_time/--runtime/--time_based: fio's own clock matches the controller's measurement window.
    --rate is per job in fio, the workload's rate is for the whole workload: divide by numjobs, and
    split by rwmixread for mixed workloads (fio takes "read,write").
    --lat_percentiles=1: fio then writes the total latency's percentiles (lat_ns) besides the completion
    latency's (clat_ns, its default), so the record's total-latency p99 is measured, not blank.
    #>
    [CmdletBinding()]
    [OutputType([string[]])]
    param(
        [Parameter(Mandatory)][string]$Target,
        [Parameter(Mandatory)][string]$OutputFile,
        [Parameter(Mandatory)][pscustomobject]$Workload,
        [Parameter(Mandatory)][string]$IoEngine,
        [int]$Direct = 1,
        [int64]$FileSizeMiB = 0,
        [string]$JobName = 'stormatrix'
    )
    $w = $Workload
    $arguments = New-Object System.Collections.Generic.List[string]
    foreach ($a in @(('--name=' + $JobName), ('--filename=' + $Target), ('--ioengine=' + $IoEngine))) {
        $arguments.Add($a)
    }
    foreach ($a in (Get-StormatrixEngineFlag -Engine fio -Direct $Direct)) {
        $arguments.Add($a)
    }
    foreach ($a in @(('--rw=' + $w.ReadWrite), ('--bs=' + $w.BlockSize), ('--iodepth=' + $w.IoDepth), ('--numjobs=' + $w.NumJobs),
            '--group_reporting', '--time_based', ('--ramp_time=' + $w.RampSeconds + 's'), ('--runtime=' + $w.RuntimeSeconds + 's'))) {
        $arguments.Add($a)
    }
    $mixed = @('rw', 'readwrite', 'randrw') -contains $w.ReadWrite
    if ($mixed) {
        $arguments.Add('--rwmixread=' + $w.RwMixRead)
    }
    if ($w.RateMiBps -gt 0) {
        $perJob = $w.RateMiBps * 1048576 / $w.NumJobs
        if ($mixed) {
            $read = [int64][Math]::Round($perJob * $w.RwMixRead / 100)
            $write = [int64][Math]::Round($perJob * (100 - $w.RwMixRead) / 100)
            $arguments.Add('--rate=' + $read + ',' + $write)
        }
        else {
            $arguments.Add('--rate=' + [int64][Math]::Round($perJob))
        }
    }
    if ($FileSizeMiB -gt 0) {
        $arguments.Add('--size=' + $FileSizeMiB + 'm')
    }
    $arguments.Add('--lat_percentiles=1')
    $arguments.Add('--output-format=json')
    $arguments.Add('--output=' + $OutputFile)
    [string[]]$arguments.ToArray()
}
