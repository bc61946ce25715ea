function Set-StormatrixVMwarePower {
    <#
    .SYNOPSIS
    Powers the VM off (Stop-VM: a hard power-off, like the Proxmox backend's stop) or on (Start-VM, then
    waits for VMware Tools), with a typed error that keeps PowerCLI's message.

    .NOTES
    A controller change only reaches the guest through a power cycle; a guest reboot keeps the old
    virtual hardware. The test disk holds no file system the benchmark needs, so a hard power-off
    loses nothing that matters and takes seconds instead of a guest shutdown's minutes.
    #>
    [CmdletBinding()]
    [OutputType([void])]
    param(
        [Parameter(Mandatory)][object]$VM,
        [Parameter(Mandatory)][ValidateSet('On', 'Off')][string]$State,
        [ValidateRange(5, 7200)][int]$ReadyTimeoutSeconds = 300
    )
    if ($State -eq 'Off') {
        try {
            Stop-VM -VM $VM -Confirm:$false -ErrorAction Stop | Out-Null
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'PowerOffFailed' -Cause $_ -TargetObject $VM -Message "powering off VM '$($VM.Name)' failed")
        }
        return
    }
    try {
        Start-VM -VM $VM -Confirm:$false -ErrorAction Stop | Out-Null
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'PowerOnFailed' -Cause $_ -TargetObject $VM -Message "powering on VM '$($VM.Name)' failed")
    }
    try {
        $ready = Wait-Tools -VM $VM -TimeoutSeconds $ReadyTimeoutSeconds -ErrorAction Stop
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'GuestNotReady' -Category 'OperationTimeout' -Cause $_ -TargetObject $VM `
                -Message "VMware Tools in VM '$($VM.Name)' did not start within $ReadyTimeoutSeconds s")
    }
    if (-not $ready) {
        throw (New-StormatrixVMwareError -ErrorId 'GuestNotReady' -Category 'OperationTimeout' -TargetObject $VM `
                -Message "VMware Tools in VM '$($VM.Name)' did not start within $ReadyTimeoutSeconds s")
    }
}
