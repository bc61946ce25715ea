function Get-StormatrixStorageController {
    <#
    .SYNOPSIS
    Lists the guest's storage controllers, the stormatrix name of each and the driver bound to it.

    .DESCRIPTION
    Reads the present PnP devices of the SCSIAdapter and HDC (IDE/SATA) classes, and every present
    device whose PCI id is a known virtual controller: a controller whose driver is not installed has
    no class yet (Device Manager lists it under "Other devices", problem code 28), and that is the one
    that matters. Per device, the bound driver service and INF come from Get-PnpDeviceProperty. A
    controller whose Status is not OK or that has no driver service has no working driver.

    .PARAMETER Controller
    Only return controllers with this stormatrix name (virtio-scsi-pci and virtio-scsi-single are
    both the virtio-scsi device).

    .EXAMPLE
    Get-StormatrixStorageController | Format-Table Name, FriendlyName, DriverBound, Service

    .EXAMPLE
    Get-StormatrixStorageController -Controller pvscsi

    .OUTPUTS
    PSCustomObject with Name, FriendlyName, InstanceId, HardwareId, Status, ProblemCode, Service,
    ConfigManagerErrorCode, InfPath, DriverVersion, DriverBound.

    .NOTES
    Windows Server 2022 has in-box drivers for IDE, AHCI and NVMe; virtio needs the virtio-win drivers
    (viostor, vioscsi). Whether the LSI 53C895A (lsi) and MegaRAID SAS (megasas) controllers have
    in-box drivers in Server 2022 is unverified: the DriverBound column says what this guest has.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [ValidateSet('ide', 'sata', 'virtio-blk', 'virtio-scsi', 'virtio-scsi-pci', 'virtio-scsi-single', 'pvscsi',
            'megasas', 'lsi', 'lsi53c810', 'lsilogic', 'lsilogic-sas', 'nvme')]
        [string]$Controller
    )
    $map = Get-StormatrixControllerMap
    $wanted = $Controller
    if ($wanted -eq 'virtio-scsi-pci' -or $wanted -eq 'virtio-scsi-single') {
        $wanted = 'virtio-scsi'
    }
    $devices = @(Get-PnpDevice -PresentOnly -ErrorAction SilentlyContinue | Where-Object {
            $device = $_
            (@('SCSIAdapter', 'HDC') -contains [string]$device.Class) -or @($map.Keys | Where-Object { $device.InstanceId -like ('*' + $_ + '*') }).Count -gt 0
        })
    foreach ($device in $devices) {
        $name = 'unknown'
        foreach ($id in $map.Keys) {
            if ($device.InstanceId -like ('*' + $id + '*')) {
                $name = $map[$id]
                break
            }
        }
        if ($wanted -and $name -ne $wanted) {
            continue
        }
        $properties = @{}
        foreach ($p in @(Get-PnpDeviceProperty -InstanceId $device.InstanceId -KeyName 'DEVPKEY_Device_Service', 'DEVPKEY_Device_DriverInfPath', 'DEVPKEY_Device_DriverVersion' -ErrorAction SilentlyContinue)) {
            $properties[$p.KeyName] = $p.Data
        }
        $service = [string]$properties['DEVPKEY_Device_Service']
        [pscustomobject]@{
            Name          = $name
            FriendlyName  = $device.FriendlyName
            InstanceId    = $device.InstanceId
            Class         = $device.Class
            Status        = [string]$device.Status
            ProblemCode   = [string]$device.ConfigManagerErrorCode
            Service       = $service
            InfPath       = [string]$properties['DEVPKEY_Device_DriverInfPath']
            DriverVersion = [string]$properties['DEVPKEY_Device_DriverVersion']
            DriverBound   = ([string]$device.Status -eq 'OK' -and $service -ne '')
        }
    }
}
