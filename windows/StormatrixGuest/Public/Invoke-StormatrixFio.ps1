function Invoke-StormatrixFio {
    <#
    .SYNOPSIS
    Runs fio against the raw test disk (found by serial) or a file, and returns fio's JSON.

    .DESCRIPTION
    Builds fio's arguments as an array, runs fio with --output to a file of its own, checks the exit
    code, reads and validates the JSON, removes the file and returns one object whose Raw property
    is fio's JSON text, verbatim.

    .PARAMETER Serial
    Serial number of the raw test disk; fio gets \\.\PhysicalDriveN for the disk that has it now.

    .PARAMETER FileName
    A file to test instead of a disk (used to exercise the runner with Linux fio).

    .PARAMETER FileSizeMiB
    Size of the file fio lays out when -FileName is used.

    .PARAMETER ReadWrite
    fio's rw: read, write, randread, randwrite, rw, readwrite, randrw.

    .PARAMETER BlockSize
    Block size in bytes (a multiple of 512).

    .PARAMETER IoDepth
    Queue depth per job.

    .PARAMETER NumJobs
    Number of jobs (threads).

    .PARAMETER RampSeconds
    Warm-up before fio starts counting (fio's ramp_time).

    .PARAMETER RuntimeSeconds
    The measured time (fio's runtime, time_based).

    .PARAMETER RateMiBps
    Fixed rate for the whole workload in MiB/s; 0 is unthrottled.

    .PARAMETER RwMixRead
    Read percentage of mixed workloads.

    .PARAMETER IoEngine
    fio's ioengine: windowsaio in Windows guests; psync, libaio, io_uring or sync let the same
    runner be tested with Linux fio.

    .PARAMETER Direct
    1 (default) bypasses the guest's cache; 0 for file systems without O_DIRECT (tmpfs in tests).

    .PARAMETER FioPath
    Path of fio.exe.

    .PARAMETER OutputDirectory
    Where fio writes its JSON file; the system temp folder by default.

    .PARAMETER WriteMarkers
    Print "##stormatrix:engine-started <time>" and "##stormatrix:engine-ended <time>" to stdout, so
    a remote controller can time the measurement window from the moment fio starts.

    .EXAMPLE
    Invoke-StormatrixFio -Serial STORMATRIX01 -ReadWrite randread -BlockSize 65536 -IoDepth 8 -NumJobs 1 -RampSeconds 5 -RuntimeSeconds 30

    .EXAMPLE
    Invoke-StormatrixFio -FileName /tmp/f -FileSizeMiB 16 -IoEngine psync -Direct 0 -FioPath /usr/bin/fio -ReadWrite randread -BlockSize 4096 -IoDepth 1 -NumJobs 1 -RampSeconds 0 -RuntimeSeconds 1

    .OUTPUTS
    PSCustomObject: Engine ('fio'), Target, DiskNumber, FioPath, Arguments, ExitCode, StdErr,
    Started, Ended, Raw (fio's JSON text).

    .NOTES
    Windows refuses writes to disk areas that hold mounted data: the test disk must be raw and
    offline. In a file path fio needs ':' escaped as '\:'; \\.\PhysicalDriveN has none.
    #>
    [CmdletBinding(DefaultParameterSetName = 'Disk')]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Disk')]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial,

        [Parameter(Mandatory, ParameterSetName = 'File')]
        [ValidateNotNullOrEmpty()]
        [string]$FileName,

        [Parameter(ParameterSetName = 'File')]
        [ValidateRange(1, 1048576)]
        [int64]$FileSizeMiB = 64,

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

        [ValidateSet('windowsaio', 'psync', 'sync', 'libaio', 'io_uring')]
        [string]$IoEngine = 'windowsaio',

        [ValidateRange(0, 1)]
        [int]$Direct = 1,

        [ValidateNotNullOrEmpty()]
        [string]$FioPath = 'C:\Program Files\fio\fio.exe',

        [string]$OutputDirectory = [System.IO.Path]::GetTempPath(),

        [switch]$WriteMarkers
    )
    if ($BlockSize % 512 -ne 0) {
        throw (New-StormatrixError -ErrorId 'BadBlockSize' -ExceptionType 'Argument' -Category 'InvalidArgument' `
                -Message "BlockSize $BlockSize is not a multiple of 512. Fix: direct I/O needs whole sectors (512, 4096, 65536, ...)")
    }
    $diskNumber = $null
    $fileSize = 0
    if ($PSCmdlet.ParameterSetName -eq 'Disk') {
        $disk = Find-StormatrixTestDisk -Serial $Serial
        if ($disk.IsBoot -or $disk.IsSystem) {
            throw (New-StormatrixError -ErrorId 'TestDiskIsSystemDisk' -Category 'PermissionDenied' -TargetObject $Serial `
                    -Message "disk $($disk.Number) with serial '$Serial' is the boot or system disk. Fix: give the serial to a separate, empty test disk")
        }
        $diskNumber = [int]$disk.Number
        $target = ConvertTo-StormatrixFioTarget -DiskNumber $diskNumber
    }
    else {
        $target = ConvertTo-StormatrixFioTarget -Path $FileName
        $fileSize = $FileSizeMiB
    }
    if (-not (Test-Path -LiteralPath $OutputDirectory -PathType Container)) {
        throw (New-StormatrixError -ErrorId 'OutputDirectoryMissing' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                -Message "output directory '$OutputDirectory' does not exist. Fix: create it or leave -OutputDirectory out")
    }
    $outputFile = Join-Path $OutputDirectory ('stormatrix-fio-' + [guid]::NewGuid().ToString('N') + '.json')
    $fioArguments = ConvertTo-StormatrixFioArgument -Target $target -OutputFile $outputFile -ReadWrite $ReadWrite `
        -BlockSize $BlockSize -IoDepth $IoDepth -NumJobs $NumJobs -RampSeconds $RampSeconds -RuntimeSeconds $RuntimeSeconds `
        -RateMiBps $RateMiBps -RwMixRead $RwMixRead -IoEngine $IoEngine -Direct $Direct -FileSizeMiB $fileSize

    try {
        $started = [DateTime]::UtcNow.ToString('o')
        if ($WriteMarkers) {
            Write-StormatrixMarker -Name 'engine-started'
        }
        $run = Invoke-StormatrixNative -FilePath $FioPath -ArgumentList $fioArguments
        if ($WriteMarkers) {
            Write-StormatrixMarker -Name 'engine-ended'
        }
        $ended = [DateTime]::UtcNow.ToString('o')
        $raw = ''
        if (Test-Path -LiteralPath $outputFile -PathType Leaf) {
            $raw = [System.IO.File]::ReadAllText($outputFile)
        }
        if ($run.ExitCode -ne 0) {
            throw (New-StormatrixError -ErrorId 'FioFailed' -TargetObject $target `
                    -Message ("fio exited with $($run.ExitCode) on $target. stderr: $($run.StdErr.Trim()) stdout: $($run.StdOut.Trim()) " +
                        'Fix: run Invoke-StormatrixGuestValidation in the guest; a disk that is online or has partitions refuses writes'))
        }
        # fio prints a banner or warnings around the document in some versions: take from the first '{'.
        $start = $raw.IndexOf('{')
        if ($start -lt 0) {
            throw (New-StormatrixError -ErrorId 'FioNoJson' -Category 'InvalidResult' -TargetObject $target `
                    -Message "fio exited 0 but wrote no JSON to $outputFile (stderr: $($run.StdErr.Trim()))")
        }
        try {
            $document = $raw.Substring($start) | ConvertFrom-Json
        }
        catch {
            throw (New-StormatrixError -ErrorId 'FioBadJson' -Category 'InvalidResult' -TargetObject $target `
                    -Message "fio's output is not valid JSON: $($_.Exception.Message)")
        }
        $failed = @($document.jobs | Where-Object { $_.error -ne 0 })
        if ($failed.Count -gt 0) {
            throw (New-StormatrixError -ErrorId 'FioJobError' -TargetObject $target `
                    -Message "fio job '$($failed[0].jobname)' reported error $($failed[0].error) on $target")
        }
        [pscustomobject]@{
            Engine     = 'fio'
            Target     = $target
            DiskNumber = $diskNumber
            FioPath    = $FioPath
            FioVersion = [string]$document.'fio version'
            Arguments  = $fioArguments
            ExitCode   = $run.ExitCode
            StdErr     = $run.StdErr
            Started    = $started
            Ended      = $ended
            Raw        = $raw
        }
    }
    finally {
        Remove-Item -LiteralPath $outputFile -Force -ErrorAction SilentlyContinue
    }
}
