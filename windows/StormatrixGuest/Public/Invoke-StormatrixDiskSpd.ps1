function Invoke-StormatrixDiskSpd {
    <#
    .SYNOPSIS
    Runs DiskSpd against the raw test disk (found by serial) and returns its XML result.

    .DESCRIPTION
    The DiskSpd twin of Invoke-StormatrixFio: the same -Workload, the same checks of the test disk
    before a write, the same result shape (Engine 'diskspd', Raw is DiskSpd's -Rxml document, verbatim).

    .PARAMETER Serial
    Serial number of the raw test disk.

    .PARAMETER Workload
    The workload, as for Invoke-StormatrixFio: ReadWrite, BlockSize, IoDepth (-o, per thread),
    NumJobs (-t threads), RampSeconds (-W), RuntimeSeconds (-d), RateMiBps (-g, split per thread),
    RwMixRead (-w gets the rest).

    .PARAMETER DiskSpdPath
    Path of diskspd.exe.

    .PARAMETER AllowPartitioned
    Let a write workload run on a test disk that has a partition table (destroys it).

    .PARAMETER WriteMarkers
    Print engine-started/engine-ended marker lines to stdout, as Invoke-StormatrixFio does.

    .EXAMPLE
    Invoke-StormatrixDiskSpd -Serial STORMATRIX01 -Workload @{ ReadWrite = 'randread'; BlockSize = 65536; IoDepth = 8; RampSeconds = 5; RuntimeSeconds = 30 }

    .OUTPUTS
    PSCustomObject: Engine ('diskspd'), Target, DiskNumber, TestDisk, DiskSpdPath, Arguments, EngineFlags,
    ExitCode, StdErr, Started, Ended, Raw (the XML text).

    .NOTES
    DiskSpd has no total IOPS field; the controller computes it from the per-target counts and
    TestTimeSeconds. The flags (-Su -n -Z1M) make DiskSpd's I/O match fio's direct=1.
    -WhatIf says what would be done to the disk (clear its read-only flag, run DiskSpd on it) and changes
    nothing; -Confirm asks before each. The confirm impact is Medium, so the controller's
    non-interactive calls are not asked.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial,

        [Parameter(Mandatory)]
        [object]$Workload,

        [ValidateNotNullOrEmpty()]
        [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',

        [switch]$AllowPartitioned,

        [switch]$WriteMarkers
    )
    $w = ConvertTo-StormatrixWorkload -InputObject $Workload
    $testDisk = Get-StormatrixTestDiskForRun -Serial $Serial -Write $w.IsWrite -AllowPartitioned:$AllowPartitioned
    $diskNumber = $testDisk.Number
    $arguments = ConvertTo-StormatrixDiskSpdArgument -DiskNumber $diskNumber -Workload $w
    $action = "run DiskSpd $($w.ReadWrite) $($w.BlockSize)-byte blocks for $($w.RuntimeSeconds) s" + $(if ($w.IsWrite) { ' (writes: destroys the data there)' } else { '' })
    if (-not $PSCmdlet.ShouldProcess("disk $diskNumber (serial $Serial)", $action)) {
        return
    }
    $engine = Invoke-StormatrixEngineRun -FilePath $DiskSpdPath -ArgumentList $arguments -WriteMarkers:$WriteMarkers
    $run = $engine.Run
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
        TestDisk    = $testDisk
        DiskSpdPath = $DiskSpdPath
        Arguments   = $arguments
        EngineFlags = Get-StormatrixEngineFlag -Engine diskspd
        ExitCode    = $run.ExitCode
        StdErr      = $run.StdErr
        Started     = $engine.Started
        Ended       = $engine.Ended
        Raw         = $raw
    }
}
