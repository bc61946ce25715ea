function Invoke-StormatrixDiskSpd {
    <#
    .SYNOPSIS
    Runs DiskSpd against the raw test disk (found by serial) and returns its XML result.

    .DESCRIPTION
    The DiskSpd twin of Invoke-StormatrixFio: the same workload parameters, the same result shape
    (Engine 'diskspd', Raw is DiskSpd's -Rxml document, verbatim).

    .PARAMETER Serial
    Serial number of the raw test disk.

    .PARAMETER ReadWrite
    read, write, randread, randwrite, rw, readwrite or randrw (fio's names).

    .PARAMETER BlockSize
    Block size in bytes (a multiple of 512).

    .PARAMETER IoDepth
    Outstanding I/Os per thread (-o).

    .PARAMETER NumJobs
    Threads (-t).

    .PARAMETER RampSeconds
    Warm-up (-W), not counted.

    .PARAMETER RuntimeSeconds
    Measured duration (-d).

    .PARAMETER RateMiBps
    Fixed rate for the whole workload in MiB/s (-g per thread); 0 is unthrottled.

    .PARAMETER RwMixRead
    Read percentage of mixed workloads (-w gets the rest).

    .PARAMETER DiskSpdPath
    Path of diskspd.exe.

    .PARAMETER WriteMarkers
    Print engine-started/engine-ended marker lines to stdout, as Invoke-StormatrixFio does.

    .EXAMPLE
    Invoke-StormatrixDiskSpd -Serial STORMATRIX01 -ReadWrite randread -BlockSize 65536 -IoDepth 8 -NumJobs 1 -RampSeconds 5 -RuntimeSeconds 30

    .OUTPUTS
    PSCustomObject: Engine ('diskspd'), Target, DiskNumber, DiskSpdPath, Arguments, ExitCode, StdErr,
    Started, Ended, Raw (the XML text).

    .NOTES
    DiskSpd has no total IOPS field; the controller computes it from the per-target counts and
    TestTimeSeconds.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial,

        [Parameter(Mandatory)]
        [ValidateSet('read', 'write', 'randread', 'randwrite', 'rw', 'readwrite', 'randrw')]
        [string]$ReadWrite,

        [Parameter(Mandatory)]
        [ValidateRange(512, 67108864)]
        [int]$BlockSize,

        [ValidateRange(1, 65536)]
        [int]$IoDepth = 1,

        [ValidateRange(1, 256)]
        [int]$NumJobs = 1,

        [ValidateRange(0, 86400)]
        [int]$RampSeconds = 0,

        [ValidateRange(1, 86400)]
        [int]$RuntimeSeconds = 10,

        [ValidateRange(0, 1000000)]
        [double]$RateMiBps = 0,

        [ValidateRange(0, 100)]
        [int]$RwMixRead = 50,

        [ValidateNotNullOrEmpty()]
        [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',

        [switch]$WriteMarkers
    )
    if ($BlockSize % 512 -ne 0) {
        throw (New-StormatrixError -ErrorId 'BadBlockSize' -ExceptionType 'Argument' -Category 'InvalidArgument' `
                -Message "BlockSize $BlockSize is not a multiple of 512. Fix: direct I/O needs whole sectors (512, 4096, 65536, ...)")
    }
    $disk = Find-StormatrixTestDisk -Serial $Serial
    if ($disk.IsBoot -or $disk.IsSystem) {
        throw (New-StormatrixError -ErrorId 'TestDiskIsSystemDisk' -Category 'PermissionDenied' -TargetObject $Serial `
                -Message "disk $($disk.Number) with serial '$Serial' is the boot or system disk. Fix: give the serial to a separate, empty test disk")
    }
    $diskNumber = [int]$disk.Number
    $arguments = ConvertTo-StormatrixDiskSpdArgument -DiskNumber $diskNumber -ReadWrite $ReadWrite -BlockSize $BlockSize `
        -IoDepth $IoDepth -NumJobs $NumJobs -RampSeconds $RampSeconds -RuntimeSeconds $RuntimeSeconds `
        -RateMiBps $RateMiBps -RwMixRead $RwMixRead
    $started = [DateTime]::UtcNow.ToString('o')
    if ($WriteMarkers) {
        Write-StormatrixMarker -Name 'engine-started'
    }
    $run = Invoke-StormatrixNative -FilePath $DiskSpdPath -ArgumentList $arguments
    if ($WriteMarkers) {
        Write-StormatrixMarker -Name 'engine-ended'
    }
    $ended = [DateTime]::UtcNow.ToString('o')
    if ($run.ExitCode -ne 0) {
        throw (New-StormatrixError -ErrorId 'DiskSpdFailed' -TargetObject "#$diskNumber" `
                -Message ("diskspd exited with $($run.ExitCode) on disk #$diskNumber. stderr: $($run.StdErr.Trim()) stdout: $($run.StdOut.Trim()) " +
                    'Fix: run Invoke-StormatrixGuestValidation in the guest'))
    }
    $start = $run.StdOut.IndexOf('<Results')
    if ($start -lt 0) {
        throw (New-StormatrixError -ErrorId 'DiskSpdNoXml' -Category 'InvalidResult' -TargetObject "#$diskNumber" `
                -Message "diskspd exited 0 but printed no <Results> XML (stdout starts: $($run.StdOut.Substring(0, [Math]::Min(200, $run.StdOut.Length))))")
    }
    $raw = $run.StdOut.Substring($start)
    try {
        $null = [xml]$raw
    }
    catch {
        throw (New-StormatrixError -ErrorId 'DiskSpdBadXml' -Category 'InvalidResult' -TargetObject "#$diskNumber" `
                -Message "diskspd's output is not valid XML: $($_.Exception.Message)")
    }
    [pscustomobject]@{
        Engine      = 'diskspd'
        Target      = "#$diskNumber"
        DiskNumber  = $diskNumber
        DiskSpdPath = $DiskSpdPath
        Arguments   = $arguments
        ExitCode    = $run.ExitCode
        StdErr      = $run.StdErr
        Started     = $started
        Ended       = $ended
        Raw         = $raw
    }
}
