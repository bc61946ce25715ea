function Remove-StormatrixVMwareFleet {
    <#
    .SYNOPSIS
    Removes exactly the fleet's VMs it is given, by id or by exact name from the caller's journal
    (Stop-VM, then Remove-VM -DeletePermanently), and returns one object per VM.

    .DESCRIPTION
    Never a name pattern: -VMId are looked up by id, -VMName by exact name (the names a deploy journaled
    before its clone tasks ran, for a VM whose id it never learnt). A VM is removed only when its
    annotation carries the fleet's run id; any other VM, even one with a worker's name, is reported
    (State 'NotOurs') and left untouched. A VM that does not exist is reported as 'NotFound' (already gone).
    Each VM is returned as soon as it is gone, so the caller journals it at once.

    .PARAMETER VMId
    The workers' ids.

    .PARAMETER VMName
    Workers known only by name.

    .PARAMETER RunId
    The fleet's run id.

    .EXAMPLE
    Remove-StormatrixVMwareFleet -VMId VirtualMachine-vm-201 -VMName smx-w02 -RunId 1a2b3c4d5e6f

    .OUTPUTS
    PSCustomObject per VM: Kind 'vm', State ('Removed', 'NotFound', 'NotOurs'), Id, Name.

    .NOTES
    -DeletePermanently deletes the VM's files (its disks included) from the datastores; Remove-VM without it
    only takes the VM out of the inventory and leaves its files, and their space, behind.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [AllowEmptyCollection()][string[]]$VMId = @(),
        [AllowEmptyCollection()][string[]]$VMName = @(),
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId
    )
    $targets = New-Object System.Collections.Generic.List[object]
    foreach ($id in $VMId) {
        $vm = Get-VM -Id $id -ErrorAction SilentlyContinue
        $targets.Add([pscustomobject]@{ Key = $id; VM = $vm; ById = $true })
    }
    if (@($VMName).Count -gt 0) {
        try {
            $all = @(Get-VM -ErrorAction Stop)
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Cause $_ -Message 'cannot list the inventory''s VMs')
        }
        foreach ($name in $VMName) {
            $same = @($all | Where-Object { $_.Name -eq $name })
            $ours = @($same | Where-Object { Test-StormatrixVMwareFleetOwner -VM $_ -RunId $RunId })
            if ($ours.Count -gt 0) { foreach ($vm in $ours) { $targets.Add([pscustomobject]@{ Key = $name; VM = $vm; ById = $false }) } }
            else { $targets.Add([pscustomobject]@{ Key = $name; VM = @($same)[0]; ById = $false }) }
        }
    }
    $done = @{}
    foreach ($target in $targets) {
        $vm = $target.VM
        if (-not $vm) {
            [pscustomobject]@{ Kind = 'vm'; State = 'NotFound'; Id = $(if ($target.ById) { $target.Key } else { $null }); Name = $(if ($target.ById) { $null } else { $target.Key }) }
            continue
        }
        if ($done.ContainsKey([string]$vm.Id)) { continue }
        if (-not (Test-StormatrixVMwareFleetOwner -VM $vm -RunId $RunId)) {
            Write-Warning "VM '$($vm.Name)' ($($vm.Id)) does not carry the annotation of fleet $($RunId): left untouched"
            [pscustomobject]@{ Kind = 'vm'; State = 'NotOurs'; Id = [string]$vm.Id; Name = [string]$vm.Name }
            continue
        }
        if (-not $PSCmdlet.ShouldProcess([string]$vm.Name, 'stop and remove permanently')) { continue }
        if ([string]$vm.PowerState -ne 'PoweredOff') {
            Set-StormatrixVMwarePower -VM $vm -State Off
        }
        try {
            Remove-VM -VM $vm -DeletePermanently -Confirm:$false -ErrorAction Stop
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'RemoveFailed' -Cause $_ -TargetObject $vm.Name -Message "removing VM '$($vm.Name)' ($($vm.Id)) failed")
        }
        $done[[string]$vm.Id] = $true
        [pscustomobject]@{ Kind = 'vm'; State = 'Removed'; Id = [string]$vm.Id; Name = [string]$vm.Name }
    }
}
