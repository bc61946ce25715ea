function Invoke-StormatrixGuestValidation {
    <#
    .SYNOPSIS
    Runs the guest validation checks in this guest and returns one result per check.

    .DESCRIPTION
    Checks the test disk (found by serial, not the system disk, raw, offline), the driver of the
    controller under test, the benchmark engine, the power plan and pending reboots. Returns whether
    every check passed plus, per check, its block, name, result (Passed, Failed, Skipped) and failure
    message (each failure message says how to fix it). Runs without Pester by default; -Runner Pester
    runs the same checks as the Pester 5 suite Validation\Guest.Validation.Tests.ps1, and -Runner Auto
    uses Pester where Pester 5 is installed and the built-in runner elsewhere. Runner in the result
    says which ran ('Pester 5.7.1' or 'built-in runner').

    .PARAMETER Serial
    Serial number of the test disk.

    .PARAMETER Controller
    The controller under test (its driver must be bound); leave out to skip that check.

    .PARAMETER Engine
    fio or diskspd: which engine must be present and supported.

    .PARAMETER FioPath
    Path of fio.exe.

    .PARAMETER DiskSpdPath
    Path of diskspd.exe.

    .PARAMETER Runner
    Builtin (default: no Pester needed), Pester (Pester 5 must be installed; Windows ships 3.4), or
    Auto (Pester when Pester 5 is installed, else Builtin).

    .EXAMPLE
    Invoke-StormatrixGuestValidation -Serial STORMATRIX01 -Controller virtio-scsi -Engine fio

    .OUTPUTS
    PSCustomObject: Passed (bool), Runner, Total, FailedCount, Tests (Name, Block, Result, Message).
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial,

        [ValidateSet('', 'ide', 'sata', 'virtio-blk', 'virtio-scsi', 'virtio-scsi-pci', 'virtio-scsi-single', 'pvscsi',
            'megasas', 'lsi', 'lsi53c810', 'lsilogic', 'lsilogic-sas', 'nvme')]
        [string]$Controller = '',

        [ValidateSet('fio', 'diskspd')]
        [string]$Engine = 'fio',

        [ValidateNotNullOrEmpty()]
        [string]$FioPath = 'C:\Program Files\fio\fio.exe',

        [ValidateNotNullOrEmpty()]
        [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',

        [ValidateSet('Builtin', 'Pester', 'Auto')]
        [string]$Runner = 'Builtin'
    )
    $settings = @{ Serial = $Serial; Controller = $Controller; Engine = $Engine; FioPath = $FioPath; DiskSpdPath = $DiskSpdPath }
    if ($Runner -eq 'Auto') {
        $Runner = if (@(Get-Module -ListAvailable -Name Pester | Where-Object { $_.Version.Major -ge 5 }).Count) { 'Pester' } else { 'Builtin' }
    }
    if ($Runner -eq 'Pester') {
        $tests = @(Invoke-StormatrixGuestValidationPester -Settings $settings)
        $runnerName = 'Pester ' + (Get-Module -Name Pester).Version
    }
    else {
        $context = New-StormatrixCheckContext @settings
        $tests = @(foreach ($check in (Get-StormatrixGuestCheck -Controller $Controller -Engine $Engine)) {
                $result = 'Passed'
                $message = ''
                if ($check.Skip) {
                    $result = 'Skipped'
                }
                else {
                    try {
                        $null = & $check.Test $context
                    }
                    catch {
                        $result = 'Failed'
                        $message = $_.Exception.Message
                    }
                }
                [pscustomobject]@{ Name = $check.Name; Block = $check.Block; Result = $result; Message = $message }
            })
        $runnerName = 'built-in runner'
    }
    $failed = @($tests | Where-Object { $_.Result -eq 'Failed' })
    [pscustomobject]@{
        Passed      = ($failed.Count -eq 0 -and $tests.Count -gt 0)
        Runner      = $runnerName
        Total       = $tests.Count
        FailedCount = $failed.Count
        Tests       = $tests
    }
}
