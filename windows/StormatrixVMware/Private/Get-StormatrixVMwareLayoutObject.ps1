function Get-StormatrixVMwareLayoutObject {
    <#
    .SYNOPSIS
    The VM's layout as the backend journals it: power state, boot time, the test disk (file, key,
    controller key, unit number) and every SCSI/NVMe controller with the disks on it.

    .NOTES
    The disk's Filename is what proves that a move kept the disk: it is compared before and after.
    BootTime is what proves the VM was power-cycled (a new boot applies the new controller).
    DiskEnableUUID is the VM's disk.EnableUUID configuration parameter: only when it is TRUE does ESXi give
    the guest the disks' UUIDs as serial numbers (Uuid without dashes), which the WinRM executor finds the
    test disk by.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][object]$VM,
        [Parameter(Mandatory)][object]$HardDisk
    )
    $controllers = @(Get-StormatrixVMwareControllerList -VM $VM)
    $controllerKey = [int]$HardDisk.ExtensionData.ControllerKey
    $own = @($controllers | Where-Object { $_.Key -eq $controllerKey })
    $controller = $null
    if ($own.Count -eq 1) {
        $controller = [pscustomobject]@{ Key = $own[0].Key; Name = $own[0].Name; Type = $own[0].Type; Bus = $own[0].Bus }
    }
    $bootTime = $null
    if ($VM.ExtensionData.Runtime.BootTime) {
        $bootTime = ([datetime]$VM.ExtensionData.Runtime.BootTime).ToUniversalTime().ToString('o')
    }
    $enableUuid = @($VM.ExtensionData.Config.ExtraConfig | Where-Object { $_.Key -eq 'disk.EnableUUID' })
    $uuidOn = ($enableUuid.Count -gt 0 -and [string]$enableUuid[-1].Value -eq 'TRUE')
    [pscustomobject]@{
        VMName      = [string]$VM.Name
        VMId        = [string]$VM.Id
        PowerState  = [string]$VM.PowerState
        BootTime    = $bootTime
        Disk        = [pscustomobject]@{
            Name          = [string]$HardDisk.Name
            Filename      = [string]$HardDisk.Filename
            Key           = [int]$HardDisk.ExtensionData.Key
            ControllerKey = $controllerKey
            UnitNumber    = [int]$HardDisk.ExtensionData.UnitNumber
            CapacityGB    = [double]$HardDisk.CapacityGB
            Uuid          = [string]$HardDisk.ExtensionData.Backing.Uuid
        }
        DiskEnableUUID = $uuidOn
        Controller  = $controller
        Controllers = @($controllers | ForEach-Object { [pscustomobject]@{ Key = $_.Key; Name = $_.Name; Type = $_.Type; Bus = $_.Bus; Disks = @($_.Disks) } })
    }
}
