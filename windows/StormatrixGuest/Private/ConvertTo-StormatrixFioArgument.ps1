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
    #>
    [CmdletBinding()]
    [OutputType([string[]])]
    param(
        [Parameter(Mandatory)][string]$Target,
        [Parameter(Mandatory)][string]$OutputFile,
        [Parameter(Mandatory)][string]$ReadWrite,
        [Parameter(Mandatory)][int]$BlockSize,
        [Parameter(Mandatory)][int]$IoDepth,
        [Parameter(Mandatory)][int]$NumJobs,
        [Parameter(Mandatory)][int]$RampSeconds,
        [Parameter(Mandatory)][int]$RuntimeSeconds,
        [double]$RateMiBps = 0,
        [int]$RwMixRead = 50,
        [Parameter(Mandatory)][string]$IoEngine,
        [int]$Direct = 1,
        [int64]$FileSizeMiB = 0,
        [string]$JobName = 'stormatrix'
    )
    $arguments = New-Object System.Collections.Generic.List[string]
    $arguments.Add('--name=' + $JobName)
    $arguments.Add('--filename=' + $Target)
    $arguments.Add('--ioengine=' + $IoEngine)
    $arguments.Add('--direct=' + $Direct)
    $arguments.Add('--rw=' + $ReadWrite)
    $arguments.Add('--bs=' + $BlockSize)
    $arguments.Add('--iodepth=' + $IoDepth)
    $arguments.Add('--numjobs=' + $NumJobs)
    $arguments.Add('--group_reporting')
    $arguments.Add('--thread')
    $arguments.Add('--time_based')
    $arguments.Add('--ramp_time=' + $RampSeconds + 's')
    $arguments.Add('--runtime=' + $RuntimeSeconds + 's')
    $mixed = @('rw', 'readwrite', 'randrw') -contains $ReadWrite
    if ($mixed) {
        $arguments.Add('--rwmixread=' + $RwMixRead)
    }
    if ($RateMiBps -gt 0) {
        $perJob = $RateMiBps * 1048576 / $NumJobs
        if ($mixed) {
            $read = [int64][Math]::Round($perJob * $RwMixRead / 100)
            $write = [int64][Math]::Round($perJob * (100 - $RwMixRead) / 100)
            $arguments.Add('--rate=' + $read + ',' + $write)
        }
        else {
            $arguments.Add('--rate=' + [int64][Math]::Round($perJob))
        }
    }
    if ($FileSizeMiB -gt 0) {
        $arguments.Add('--size=' + $FileSizeMiB + 'm')
    }
    $arguments.Add('--output-format=json')
    $arguments.Add('--output=' + $OutputFile)
    [string[]]$arguments.ToArray()
}
