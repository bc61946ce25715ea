function Invoke-StormatrixGuestValidation {
    <#
    .SYNOPSIS
    Runs the Pester 5 validation suite in this guest and returns one result per check.

    .DESCRIPTION
    Runs Validation\Guest.Validation.Tests.ps1 with the given test-disk serial, controller and
    engine, and returns whether every check passed plus, per check, its name, result and failure
    message (each failure message says how to fix it).

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

    .EXAMPLE
    Invoke-StormatrixGuestValidation -Serial STORMATRIX01 -Controller virtio-scsi -Engine fio

    .OUTPUTS
    PSCustomObject: Passed (bool), PesterVersion, Total, FailedCount, Tests (Name, Block, Result,
    Message).

    .NOTES
    Windows Server 2022 ships Pester 3.4; Pester 5 must be installed (Initialize-StormatrixGuest
    -PesterSource).
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
        [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe'
    )
    $pester = @(Get-Module -ListAvailable -Name Pester | Where-Object { $_.Version.Major -ge 5 } | Sort-Object Version -Descending)
    if ($pester.Count -eq 0) {
        throw (New-StormatrixError -ErrorId 'PesterMissing' -ExceptionType 'ItemNotFound' -Category 'NotInstalled' `
                -Message 'Pester 5 is not installed in the guest (Windows ships 3.4). Fix: Initialize-StormatrixGuest -PesterSource <folder of Pester 5>')
    }
    Import-Module -Name $pester[0].Path -Force -ErrorAction Stop
    $suite = Join-Path (Join-Path (Split-Path -Parent $PSScriptRoot) 'Validation') 'Guest.Validation.Tests.ps1'
    $data = @{
        Serial      = $Serial
        Controller  = $Controller
        Engine      = $Engine
        FioPath     = $FioPath
        DiskSpdPath = $DiskSpdPath
        ModulePath  = (Join-Path (Split-Path -Parent $PSScriptRoot) 'StormatrixGuest.psd1')
    }
    $configuration = New-PesterConfiguration
    $configuration.Run.Container = New-PesterContainer -Path $suite -Data $data
    $configuration.Run.PassThru = $true
    $configuration.Output.Verbosity = 'None'
    $result = Invoke-Pester -Configuration $configuration
    $tests = foreach ($test in @($result.Tests)) {
        $message = ''
        if ($test.ErrorRecord -and @($test.ErrorRecord).Count -gt 0) {
            $message = @($test.ErrorRecord)[0].Exception.Message
        }
        [pscustomobject]@{
            Name    = [string]$test.ExpandedName
            Block   = [string]$test.Block.Name
            Result  = [string]$test.Result
            Message = [string]$message
        }
    }
    $tests = @($tests)
    $failed = @($tests | Where-Object { $_.Result -eq 'Failed' })
    [pscustomobject]@{
        Passed        = ($failed.Count -eq 0 -and $tests.Count -gt 0)
        PesterVersion = $pester[0].Version.ToString()
        Total         = $tests.Count
        FailedCount   = $failed.Count
        Tests         = $tests
    }
}
