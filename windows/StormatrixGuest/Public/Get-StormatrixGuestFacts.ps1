function Get-StormatrixGuestFacts {
    <#
    .SYNOPSIS
    Reports what the results depend on: OS build, PowerShell version, storage controllers with their
    drivers, the virtio-win storage drivers installed, and disks with bus type, serial, offline state and
    partitions.

    .DESCRIPTION
    The controller journals these facts with every cell, so a result can always be traced to the
    driver that produced it. InstalledStorageDrivers lists the virtio-win storage drivers (viostor for
    virtio-blk, vioscsi for virtio-scsi) staged in the driver store, also those of controllers the VM
    does not have right now: the runner reads it at the first boot and skips the cells of a controller
    whose driver the guest lacks instead of booting them.

    .PARAMETER Serial
    Serial of the test disk; when given, TestDisk names the matching disk number (or is null).

    .EXAMPLE
    Get-StormatrixGuestFacts -Serial STORMATRIX01 | ConvertTo-Json -Depth 5

    .OUTPUTS
    PSCustomObject with ComputerName, OsCaption, OsVersion, OsBuild, LastBootUpTime, PSVersion,
    PSEdition, SanPolicy (new disks: OfflineShared leaves them offline and read-only), Controllers,
    InstalledStorageDrivers (names; $null when the driver store could not be read), StorageDriverPackages
    (their driver store folders), Disks, TestDisk.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial
    )
    $os = Get-CimInstance -ClassName Win32_OperatingSystem
    $disks = foreach ($disk in @(Get-Disk)) {
        $partitions = @()
        if ([string]$disk.PartitionStyle -ne 'RAW') {
            $partitions = @(Get-Partition -DiskNumber $disk.Number -ErrorAction SilentlyContinue | ForEach-Object {
                    [pscustomobject]@{ PartitionNumber = $_.PartitionNumber; DriveLetter = [string]$_.DriveLetter; Size = [int64]$_.Size; Type = [string]$_.Type }
                })
        }
        [pscustomobject]@{
            Number         = [int]$disk.Number
            FriendlyName   = [string]$disk.FriendlyName
            SerialNumber   = ([string]$disk.SerialNumber).Trim()
            BusType        = [string]$disk.BusType
            Size           = [int64]$disk.Size
            PartitionStyle = [string]$disk.PartitionStyle
            IsOffline      = [bool]$disk.IsOffline
            OfflineReason  = [string]$disk.OfflineReason
            IsReadOnly     = [bool]$disk.IsReadOnly
            IsBoot         = [bool]$disk.IsBoot
            IsSystem       = [bool]$disk.IsSystem
            Partitions     = $partitions
        }
    }
    $testDisk = $null
    if ($Serial) {
        $match = @($disks | Where-Object { $_.SerialNumber -eq $Serial })
        if ($match.Count -eq 1) {
            $testDisk = $match[0].Number
        }
    }
    $bootTime = $null
    if ($os.LastBootUpTime) {
        $bootTime = ([datetime]$os.LastBootUpTime).ToUniversalTime().ToString('o')
    }
    $store = @(Get-StormatrixInstalledStorageDriver)
    $installed = $null
    $packages = @()
    if ($store.Count -gt 0) {
        $installed = @($store | Where-Object { $_.Installed } | ForEach-Object { $_.Name })
        $packages = @($store | ForEach-Object { $_.Packages })
    }
    [pscustomobject]@{
        ComputerName   = [Environment]::MachineName
        OsCaption      = [string]$os.Caption
        OsVersion      = [string]$os.Version
        OsBuild        = [string]$os.BuildNumber
        LastBootUpTime = $bootTime
        PSVersion      = $PSVersionTable.PSVersion.ToString()
        PSEdition      = [string]$PSVersionTable.PSEdition
        SanPolicy      = [string](@(Get-StorageSetting -ErrorAction SilentlyContinue | ForEach-Object { $_.NewDiskPolicy }) -join '')
        Controllers    = @(Get-StormatrixStorageController)
        InstalledStorageDrivers = $installed
        StorageDriverPackages   = $packages
        Disks          = @($disks)
        TestDisk       = $testDisk
    }
}
