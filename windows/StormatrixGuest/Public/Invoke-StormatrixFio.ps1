function Invoke-StormatrixFio {
    <#
    .SYNOPSIS
    Runs fio against the raw test disk (found by serial) or a file, and returns fio's JSON.

    .DESCRIPTION
    Validates the workload, makes the test disk safe for it (RAW before any write, read-only flag
    cleared), builds fio's arguments as an array, runs fio with --output to a file of its own, checks
    the exit code, reads and validates the JSON, removes the file and returns one object whose Raw
    property is fio's JSON text, verbatim.

    .PARAMETER Serial
    Serial number of the raw test disk; fio gets \\.\PhysicalDriveN for the disk that has it now.

    .PARAMETER FileName
    A file to test instead of a disk (used to exercise the runner with Linux fio).

    .PARAMETER FileSizeMiB
    Size of the file fio lays out when -FileName is used.

    .PARAMETER Workload
    The workload as a hashtable or object: ReadWrite (read, write, randread, randwrite, rw, readwrite,
    randrw), BlockSize (bytes, a multiple of 512), IoDepth, NumJobs, RampSeconds, RuntimeSeconds,
    RateMiBps (whole workload; 0 unthrottled), RwMixRead (percent reads of mixed workloads).

    .PARAMETER IoEngine
    fio's ioengine: windowsaio in Windows guests; psync, libaio, io_uring or sync let the same
    runner be tested with Linux fio.

    .PARAMETER Direct
    1 (default) bypasses the guest's cache; 0 for file systems without O_DIRECT (tmpfs in tests).

    .PARAMETER FioPath
    Path of fio.exe.

    .PARAMETER OutputDirectory
    Where fio writes its JSON file; the system temp folder by default.

    .PARAMETER AllowPartitioned
    Let a write workload run on a test disk that has a partition table (destroys it).

    .PARAMETER WriteMarkers
    Print "##stormatrix:engine-started <time>" and "##stormatrix:engine-ended <time>" to stdout, so
    a remote controller can time the measurement window from the moment fio starts.

    .EXAMPLE
    Invoke-StormatrixFio -Serial STORMATRIX01 -Workload @{ ReadWrite = 'randread'; BlockSize = 65536; IoDepth = 8; RampSeconds = 5; RuntimeSeconds = 30 }

    .EXAMPLE
    Invoke-StormatrixFio -FileName /tmp/f -FileSizeMiB 16 -IoEngine psync -Direct 0 -FioPath /usr/bin/fio -Workload @{ ReadWrite = 'randread'; BlockSize = 4096; RuntimeSeconds = 1 }

    .OUTPUTS
    PSCustomObject: Engine ('fio'), Target, DiskNumber, TestDisk (what was found and done to the disk),
    FioPath, FioVersion, Arguments, EngineFlags, ExitCode, StdErr, Started, Ended, Raw (fio's JSON text).

    .NOTES
    In a file path fio needs ':' escaped as '\:'; \\.\PhysicalDriveN has none.
    -WhatIf says what would be done to the disk (clear its read-only flag, run fio on it) and changes
    nothing: no flag is cleared, fio does not start, nothing is returned. -Confirm asks before each. The
    confirm impact is Medium, so the controller's non-interactive calls are not asked.
    #>
    [CmdletBinding(DefaultParameterSetName = 'Disk', SupportsShouldProcess)]
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
        [object]$Workload,

        [ValidateSet('windowsaio', 'psync', 'sync', 'libaio', 'io_uring')]
        [string]$IoEngine = 'windowsaio',

        [ValidateRange(0, 1)]
        [int]$Direct = 1,

        [ValidateNotNullOrEmpty()]
        [string]$FioPath = 'C:\Program Files\fio\fio.exe',

        [string]$OutputDirectory = [System.IO.Path]::GetTempPath(),

        [switch]$AllowPartitioned,

        [switch]$WriteMarkers
    )
    $w = ConvertTo-StormatrixWorkload -InputObject $Workload
    $diskNumber = $null
    $testDisk = $null
    $fileSize = 0
    if ($PSCmdlet.ParameterSetName -eq 'Disk') {
        $testDisk = Get-StormatrixTestDiskForRun -Serial $Serial -Write $w.IsWrite -AllowPartitioned:$AllowPartitioned
        $diskNumber = $testDisk.Number
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
    $action = "run fio $($w.ReadWrite) $($w.BlockSize)-byte blocks for $($w.RuntimeSeconds) s" + $(if ($w.IsWrite) { ' (writes: destroys the data there)' } else { '' })
    if (-not $PSCmdlet.ShouldProcess($(if ($testDisk) { "disk $diskNumber (serial $Serial, $target)" } else { $target }), $action)) {
        return
    }
    $outputFile = Join-Path $OutputDirectory ('stormatrix-fio-' + [guid]::NewGuid().ToString('N') + '.json')
    $fioArguments = ConvertTo-StormatrixFioArgument -Target $target -OutputFile $outputFile -Workload $w -IoEngine $IoEngine `
        -Direct $Direct -FileSizeMiB $fileSize
    try {
        $engine = Invoke-StormatrixEngineRun -FilePath $FioPath -ArgumentList $fioArguments -WriteMarkers:$WriteMarkers
        $run = $engine.Run
        $raw = ''
        if (Test-Path -LiteralPath $outputFile -PathType Leaf) {
            $raw = [System.IO.File]::ReadAllText($outputFile)
        }
        if ($run.ExitCode -ne 0) {
            throw (New-StormatrixError -ErrorId 'FioFailed' -TargetObject $target `
                    -Message ("fio exited with $($run.ExitCode) on $target. stderr: $($run.StdErr.Trim()) stdout: $($run.StdOut.Trim()) " +
                        'Fix: run Invoke-StormatrixGuestValidation in the guest'))
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
            Engine      = 'fio'
            Target      = $target
            DiskNumber  = $diskNumber
            TestDisk    = $testDisk
            FioPath     = $FioPath
            FioVersion  = [string]$document.'fio version'
            Arguments   = $fioArguments
            EngineFlags = Get-StormatrixEngineFlag -Engine fio -Direct $Direct
            ExitCode    = $run.ExitCode
            StdErr      = $run.StdErr
            Started     = $engine.Started
            Ended       = $engine.Ended
            Raw         = $raw
        }
    }
    finally {
        Remove-Item -LiteralPath $outputFile -Force -ErrorAction SilentlyContinue
    }
}
