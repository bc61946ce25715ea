function Get-StormatrixVMwareControllerList {
    <#
    .SYNOPSIS
    Lists the VM's SCSI and NVMe controllers in one shape: Key, Name, Type (ParaVirtual, LsiLogicSAS,
    LsiLogic, BusLogic, NVMe), Bus, the keys of the disks on it, and the PowerCLI object.

    .NOTES
    The type comes from the cmdlet that returned the controller (Get-ScsiController's Type, or
    Get-NvmeController), not from guessing at key ranges. Get-NvmeController is only called where the
    installed PowerCLI has it; without it the VM is reported with its SCSI controllers only.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][object]$VM
    )
    $names = @{ 'ParaVirtual' = 'ParaVirtual'; 'VirtualLsiLogicSAS' = 'LsiLogicSAS'; 'VirtualLsiLogic' = 'LsiLogic'; 'VirtualBusLogic' = 'BusLogic' }
    $list = New-Object System.Collections.Generic.List[object]
    try {
        $scsi = @(Get-ScsiController -VM $VM -ErrorAction Stop)
        $nvme = @()
        if (Get-Command -Name 'Get-NvmeController' -ErrorAction SilentlyContinue) {
            $nvme = @(Get-NvmeController -VM $VM -ErrorAction Stop)
        }
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'ControllerListFailed' -Cause $_ -TargetObject $VM -Message "cannot list the controllers of VM '$($VM.Name)'")
    }
    foreach ($controller in $scsi) {
        $type = [string]$controller.Type
        if ($names.ContainsKey($type)) {
            $type = $names[$type]
        }
        $list.Add([pscustomobject]@{ Key = [int]$controller.Key; Name = [string]$controller.Name; Type = $type
                Bus = [int]$controller.ExtensionData.BusNumber; Disks = @($controller.ExtensionData.Device | ForEach-Object { [int]$_ })
                Object = $controller })
    }
    foreach ($controller in $nvme) {
        $list.Add([pscustomobject]@{ Key = [int]$controller.Key; Name = [string]$controller.Name; Type = 'NVMe'
                Bus = [int]$controller.ExtensionData.BusNumber; Disks = @($controller.ExtensionData.Device | ForEach-Object { [int]$_ })
                Object = $controller })
    }
    $list.ToArray() | Sort-Object -Property Key
}
