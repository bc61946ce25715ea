function Restart-StormatrixVMwareFleet {
    <#
    .SYNOPSIS
    Power-cycles a fleet's workers (Stop-VM, then Start-VM: new virtual hardware only reaches the guest this
    way), waits for VMware Tools and each guest's IPv4 address, and returns one object per worker.

    .DESCRIPTION
    Every VM is checked first (it exists and carries the fleet's annotation). Then every running worker is
    powered off, every worker is powered on, and only then does the wait begin, so the guests boot side by
    side instead of one after the other. A worker is ready when VMware Tools run and report an IPv4
    address: that address is where the controller reaches its fio server.

    .PARAMETER VMId
    The workers' ids.

    .PARAMETER RunId
    The fleet's run id; a VM without it in its annotation is refused before any power change.

    .PARAMETER ReadyTimeoutSeconds
    How long the whole fleet may take to have Tools and an address after the power-on.

    .EXAMPLE
    Restart-StormatrixVMwareFleet -VMId VirtualMachine-vm-201, VirtualMachine-vm-202 -RunId 1a2b3c4d5e6f

    .OUTPUTS
    PSCustomObject per worker: Kind 'vm', Stage 'Ready', Id, Name, IPAddress, PowerState.

    .NOTES
    A hard power-off (Stop-VM), as the Proxmox fleet's stop: the workers hold nothing but the benchmark's
    scratch disk, and a guest shutdown of 64 workers would take minutes.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string[]]$VMId,
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId,
        [ValidateRange(5, 7200)][int]$ReadyTimeoutSeconds = 600
    )
    $members = Get-StormatrixVMwareFleetMember -VMId $VMId -RunId $RunId
    if (-not $PSCmdlet.ShouldProcess("$(@($members).Count) workers of fleet $RunId", 'power-cycle')) { return }
    foreach ($vm in $members) {
        if ([string]$vm.PowerState -ne 'PoweredOff') {
            Set-StormatrixVMwarePower -VM $vm -State Off
        }
    }
    foreach ($vm in $members) {
        try {
            Start-VM -VM $vm -Confirm:$false -ErrorAction Stop | Out-Null
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'PowerOnFailed' -Cause $_ -TargetObject $vm.Name -Message "powering on VM '$($vm.Name)' failed")
        }
    }
    $deadline = [datetime]::UtcNow.AddSeconds($ReadyTimeoutSeconds)
    foreach ($vm in $members) {
        $left = [int][math]::Max(5, ($deadline - [datetime]::UtcNow).TotalSeconds)
        try {
            $null = Wait-Tools -VM $vm -TimeoutSeconds $left -ErrorAction Stop
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'GuestNotReady' -Category 'OperationTimeout' -Cause $_ -TargetObject $vm.Name `
                    -Message "VMware Tools in VM '$($vm.Name)' did not start within $ReadyTimeoutSeconds s of the power-on")
        }
        $address = $null
        while ($true) {
            try {
                $guest = Get-VMGuest -VM $vm -ErrorAction Stop
            }
            catch {
                throw (New-StormatrixVMwareError -ErrorId 'GuestNotReady' -Cause $_ -TargetObject $vm.Name -Message "cannot read the guest of VM '$($vm.Name)'")
            }
            $address = @($guest.IPAddress | Where-Object { ([string]$_) -match '^\d{1,3}(\.\d{1,3}){3}$' -and -not ([string]$_).StartsWith('169.254.') })[0]
            if ($address -or [datetime]::UtcNow -ge $deadline) { break }
            Start-Sleep -Seconds 2
        }
        if (-not $address) {
            throw (New-StormatrixVMwareError -ErrorId 'GuestNotReady' -Category 'OperationTimeout' -TargetObject $vm.Name `
                    -Message "VM '$($vm.Name)' reported no IPv4 address within $ReadyTimeoutSeconds s (VMware Tools run; does the guest get an address on its network?)")
        }
        [pscustomobject]@{ Kind = 'vm'; Stage = 'Ready'; Id = [string]$vm.Id; Name = [string]$vm.Name; IPAddress = [string]$address; PowerState = 'PoweredOn' }
    }
}
