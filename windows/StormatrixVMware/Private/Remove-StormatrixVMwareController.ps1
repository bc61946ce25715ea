function Remove-StormatrixVMwareController {
    <#
    .SYNOPSIS
    Removes one empty SCSI or NVMe controller from the VM through the vSphere API (ReconfigVM with a
    'remove' device change), because PowerCLI has no cmdlet that removes a controller.

    .NOTES
    Refuses a controller that still holds a disk: removing it would detach that disk.
    #>
    [CmdletBinding()]
    [OutputType([void])]
    param(
        [Parameter(Mandatory)][object]$VM,
        [Parameter(Mandatory)][object]$Controller
    )
    if (@($Controller.Disks).Count -gt 0) {
        throw (New-StormatrixVMwareError -ErrorId 'ControllerNotEmpty' -TargetObject $Controller `
                -Message "controller '$($Controller.Name)' (key $($Controller.Key)) still holds disks $(@($Controller.Disks) -join ', '): not removed")
    }
    try {
        $change = New-Object -TypeName 'VMware.Vim.VirtualDeviceConfigSpec'
        $change.Operation = 'remove'
        $change.Device = $Controller.Object.ExtensionData
        $spec = New-Object -TypeName 'VMware.Vim.VirtualMachineConfigSpec'
        $spec.DeviceChange = @($change)
        $VM.ExtensionData.ReconfigVM($spec)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'ControllerRemoveFailed' -Cause $_ -TargetObject $Controller `
                -Message "removing controller '$($Controller.Name)' (key $($Controller.Key)) from VM '$($VM.Name)' failed")
    }
}
