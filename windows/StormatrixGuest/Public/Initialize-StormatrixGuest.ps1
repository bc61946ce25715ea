function Initialize-StormatrixGuest {
    <#
    .SYNOPSIS
    Prepares a guest for stormatrix: fio (and Pester 5) present, test disk raw and offline,
    High performance power plan, WinRM HTTPS listener. Idempotent; supports -WhatIf.

    .DESCRIPTION
    Each step looks first and changes only what is not already right, and reports what it did as
    one object per step (Status: Unchanged, Changed, WouldChange for -WhatIf, or Skipped when the
    step was not asked for). A test disk that holds partitions is only wiped with -ClearTestDisk.

    .PARAMETER Serial
    Serial number of the test disk.

    .PARAMETER FioSource
    fio.exe, or a folder (local or \\server\share) that holds fio.exe and its DLLs, to install at
    -FioPath when fio is missing there.

    .PARAMETER FioPath
    Where fio.exe is (to be) installed.

    .PARAMETER PesterSource
    A Pester 5 module folder (the one holding Pester.psd1) to install for Windows PowerShell; the
    in-box Pester 3.4 cannot run the validation suite.

    .PARAMETER ClearTestDisk
    Allow wiping the test disk (Clear-Disk -RemoveData) when it is not raw. Destroys its data.

    .PARAMETER SkipPowerPlan
    Leave the power plan as it is.

    .PARAMETER WinRmHttps
    Create a WinRM HTTPS listener on port 5986 with a self-signed certificate for the host name and
    its IP addresses (and its firewall rule) when there is none.

    .EXAMPLE
    Initialize-StormatrixGuest -Serial STORMATRIX01 -FioSource \\fileserver\tools\fio -WhatIf

    .EXAMPLE
    Initialize-StormatrixGuest -Serial STORMATRIX01 -FioSource C:\install\fio -ClearTestDisk -WinRmHttps -Confirm:$false

    .OUTPUTS
    PSCustomObject per step: Step, Status, Detail.

    .NOTES
    The disk must be offline and raw: Windows refuses raw writes to areas that hold a mounted
    volume, and a volume would also let the guest's file system cache and metadata I/O into the
    measurement.
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial,

        [string]$FioSource,

        [ValidateNotNullOrEmpty()]
        [string]$FioPath = 'C:\Program Files\fio\fio.exe',

        [string]$PesterSource,

        [switch]$ClearTestDisk,

        [switch]$SkipPowerPlan,

        [switch]$WinRmHttps
    )
    $previous = $ErrorActionPreference
    $ErrorActionPreference = 'Stop'
    try {
        # --- fio ---------------------------------------------------------------------------------
        if (Test-Path -LiteralPath $FioPath -PathType Leaf) {
            [pscustomobject]@{ Step = 'fio'; Status = 'Unchanged'; Detail = "present at $FioPath" }
        }
        elseif (-not $FioSource) {
            throw (New-StormatrixError -ErrorId 'FioMissing' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                    -Message "fio is not at '$FioPath'. Fix: pass -FioSource <folder or share holding fio.exe>")
        }
        else {
            if (-not (Test-Path -LiteralPath $FioSource)) {
                throw (New-StormatrixError -ErrorId 'FioSourceMissing' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                        -Message "-FioSource '$FioSource' does not exist or cannot be read from this guest")
            }
            $destination = Split-Path -Parent $FioPath
            if ($PSCmdlet.ShouldProcess($destination, "install fio from $FioSource")) {
                $null = New-Item -ItemType Directory -Path $destination -Force
                if (Test-Path -LiteralPath $FioSource -PathType Container) {
                    Copy-Item -Path (Join-Path $FioSource '*') -Destination $destination -Recurse -Force
                }
                else {
                    Copy-Item -LiteralPath $FioSource -Destination $FioPath -Force
                }
                if (-not (Test-Path -LiteralPath $FioPath -PathType Leaf)) {
                    throw (New-StormatrixError -ErrorId 'FioInstallFailed' -Message "copied $FioSource but '$FioPath' is still missing. Fix: -FioSource must hold fio.exe")
                }
                [pscustomobject]@{ Step = 'fio'; Status = 'Changed'; Detail = "installed from $FioSource to $destination" }
            }
            else {
                [pscustomobject]@{ Step = 'fio'; Status = 'WouldChange'; Detail = "would install from $FioSource to $destination" }
            }
        }

        # --- Pester 5 ----------------------------------------------------------------------------
        # (optional: the validation runs without it; -Runner Pester/Auto of the validation uses it)
        $pester = @(Get-Module -ListAvailable -Name Pester | Where-Object { $_.Version.Major -ge 5 })
        if ($pester.Count -gt 0) {
            [pscustomobject]@{ Step = 'pester'; Status = 'Unchanged'; Detail = "Pester $($pester[0].Version) available" }
        }
        elseif (-not $PesterSource) {
            [pscustomobject]@{ Step = 'pester'; Status = 'Skipped'; Detail = 'Pester 5 missing; pass -PesterSource to install it (the validation needs it)' }
        }
        else {
            $manifest = Join-Path $PesterSource 'Pester.psd1'
            if (-not (Test-Path -LiteralPath $manifest -PathType Leaf)) {
                throw (New-StormatrixError -ErrorId 'PesterSourceInvalid' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                        -Message "-PesterSource '$PesterSource' holds no Pester.psd1. Fix: point it at the folder of the Pester 5 module")
            }
            $version = (Import-PowerShellDataFile -LiteralPath $manifest).ModuleVersion
            $target = Join-Path (Join-Path $env:ProgramFiles 'WindowsPowerShell\Modules\Pester') $version
            if ($PSCmdlet.ShouldProcess($target, "install Pester $version")) {
                $null = New-Item -ItemType Directory -Path $target -Force
                Copy-Item -Path (Join-Path $PesterSource '*') -Destination $target -Recurse -Force
                [pscustomobject]@{ Step = 'pester'; Status = 'Changed'; Detail = "installed Pester $version to $target" }
            }
            else {
                [pscustomobject]@{ Step = 'pester'; Status = 'WouldChange'; Detail = "would install Pester $version to $target" }
            }
        }

        # --- test disk: raw and offline ----------------------------------------------------------
        $disk = Find-StormatrixTestDisk -Serial $Serial
        $number = [int]$disk.Number
        if ($disk.IsBoot -or $disk.IsSystem) {
            throw (New-StormatrixError -ErrorId 'TestDiskIsSystemDisk' -Category 'PermissionDenied' -TargetObject $Serial `
                    -Message "disk $number with serial '$Serial' is the boot or system disk; refusing to touch it. Fix: give the serial to a separate, empty test disk")
        }
        if ([string]$disk.PartitionStyle -ne 'RAW') {
            if (-not $ClearTestDisk) {
                throw (New-StormatrixError -ErrorId 'TestDiskNotRaw' -Category 'ResourceExists' -TargetObject $Serial `
                        -Message "disk $number (serial '$Serial') has a $($disk.PartitionStyle) partition table. Fix: pass -ClearTestDisk to wipe it (destroys its data)")
            }
            if ($PSCmdlet.ShouldProcess("disk $number (serial $Serial)", 'erase all data (Clear-Disk -RemoveData -RemoveOEM)')) {
                if ($disk.IsOffline) {
                    Set-Disk -Number $number -IsOffline $false
                }
                Set-Disk -Number $number -IsReadOnly $false
                Clear-Disk -Number $number -RemoveData -RemoveOEM -Confirm:$false
                [pscustomobject]@{ Step = 'disk-raw'; Status = 'Changed'; Detail = "cleared disk $number" }
                $disk = Find-StormatrixTestDisk -Serial $Serial
            }
            else {
                [pscustomobject]@{ Step = 'disk-raw'; Status = 'WouldChange'; Detail = "would clear disk $number" }
            }
        }
        else {
            [pscustomobject]@{ Step = 'disk-raw'; Status = 'Unchanged'; Detail = "disk $number is raw" }
        }
        if ($disk.IsOffline) {
            [pscustomobject]@{ Step = 'disk-offline'; Status = 'Unchanged'; Detail = "disk $number is offline" }
        }
        elseif ($PSCmdlet.ShouldProcess("disk $number (serial $Serial)", 'take offline')) {
            if ($disk.IsReadOnly) {
                Set-Disk -Number $number -IsReadOnly $false
            }
            Set-Disk -Number $number -IsOffline $true
            [pscustomobject]@{ Step = 'disk-offline'; Status = 'Changed'; Detail = "disk $number taken offline" }
        }
        else {
            [pscustomobject]@{ Step = 'disk-offline'; Status = 'WouldChange'; Detail = "would take disk $number offline" }
        }

        # --- power plan --------------------------------------------------------------------------
        if ($SkipPowerPlan) {
            [pscustomobject]@{ Step = 'power-plan'; Status = 'Skipped'; Detail = '-SkipPowerPlan' }
        }
        else {
            $plan = Get-StormatrixPowerPlan
            if ($plan.IsHighPerformance) {
                [pscustomobject]@{ Step = 'power-plan'; Status = 'Unchanged'; Detail = 'High performance is active' }
            }
            elseif ($PSCmdlet.ShouldProcess('power plan', "switch from '$($plan.Name)' to High performance")) {
                $run = Invoke-StormatrixNative -FilePath 'powercfg.exe' -ArgumentList @('/setactive', '8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c')
                if ($run.ExitCode -ne 0) {
                    throw (New-StormatrixError -ErrorId 'PowerCfgFailed' `
                            -Message "powercfg /setactive exited with $($run.ExitCode): $($run.StdErr) $($run.StdOut) Fix: check 'powercfg /list' shows High performance")
                }
                [pscustomobject]@{ Step = 'power-plan'; Status = 'Changed'; Detail = "was '$($plan.Name)'" }
            }
            else {
                [pscustomobject]@{ Step = 'power-plan'; Status = 'WouldChange'; Detail = "would switch from '$($plan.Name)'" }
            }
        }

        # --- WinRM HTTPS listener ----------------------------------------------------------------
        if (-not $WinRmHttps) {
            [pscustomobject]@{ Step = 'winrm-https'; Status = 'Skipped'; Detail = 'not asked (-WinRmHttps)' }
        }
        else {
            $https = @(Get-WSManInstance -ResourceURI 'winrm/config/Listener' -Enumerate | Where-Object { $_.Transport -eq 'HTTPS' })
            if ($https.Count -gt 0) {
                [pscustomobject]@{ Step = 'winrm-https'; Status = 'Unchanged'; Detail = 'an HTTPS listener exists' }
            }
            elseif ($PSCmdlet.ShouldProcess('WinRM', 'create an HTTPS listener on 5986 with a self-signed certificate')) {
                # The certificate names the host AND its IP addresses: the backends connect by the address they
                # discover, and TLS validation fails for an address the certificate does not name.
                $hostName = [Environment]::MachineName
                $addresses = @(Get-NetIPAddress -ErrorAction SilentlyContinue | Where-Object {
                        $_.PrefixOrigin -ne 'WellKnown' -and [string]$_.IPAddress -notlike 'fe80:*' } | ForEach-Object { [string]$_.IPAddress })
                $san = '2.5.29.17={text}DNS=' + $hostName + (@($addresses | ForEach-Object { '&IPAddress=' + $_ }) -join '')
                $certificate = New-SelfSignedCertificate -Subject ('CN=' + $hostName) -TextExtension @($san) -CertStoreLocation 'Cert:\LocalMachine\My'
                $null = New-WSManInstance -ResourceURI 'winrm/config/Listener' -SelectorSet @{ Address = '*'; Transport = 'HTTPS' } `
                    -ValueSet @{ Hostname = $hostName; CertificateThumbprint = $certificate.Thumbprint }
                if (-not (Get-NetFirewallRule -Name 'stormatrix-winrm-https' -ErrorAction SilentlyContinue)) {
                    $null = New-NetFirewallRule -Name 'stormatrix-winrm-https' -DisplayName 'WinRM HTTPS (stormatrix)' -Direction Inbound `
                        -Protocol TCP -LocalPort 5986 -Action Allow
                }
                [pscustomobject]@{ Step = 'winrm-https'; Status = 'Changed'; Detail = "listener with certificate $($certificate.Thumbprint) for $hostName $($addresses -join ' ')" }
            }
            else {
                [pscustomobject]@{ Step = 'winrm-https'; Status = 'WouldChange'; Detail = 'would create an HTTPS listener' }
            }
        }
    }
    finally {
        $ErrorActionPreference = $previous
    }
}
