function Get-StormatrixVMwareFleetMember {
    <#
    .SYNOPSIS
    The fleet's VMs by id (Get-VM -Id), each checked for the fleet's annotation; a VM that is gone, or that
    does not carry the run id, is a typed error before anything is changed.

    .DESCRIPTION
    The functions that power, attach to or detach from workers act on a whole fleet at once; checking
    every VM first means that a VM which is not this fleet's stops the call before the first change
    rather than half-way through.

    .PARAMETER VMId
    The VMs' ids as New-StormatrixVMwareFleet returned them (VirtualMachine-vm-NN).

    .PARAMETER RunId
    The fleet's run id.
    #>
    [CmdletBinding()]
    [OutputType([object[]])]
    param(
        [Parameter(Mandatory)][string[]]$VMId,
        [Parameter(Mandatory)][string]$RunId
    )
    $members = foreach ($id in $VMId) {
        try {
            $vm = Get-VM -Id $id -ErrorAction Stop
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $id -Message "fleet VM $id not found")
        }
        if (-not (Test-StormatrixVMwareFleetOwner -VM $vm -RunId $RunId)) {
            throw (New-StormatrixVMwareError -ErrorId 'NotOurs' -Category 'PermissionDenied' -TargetObject $id `
                    -Message "VM '$($vm.Name)' ($id) does not carry the annotation of fleet $RunId; nothing was changed on any VM")
        }
        $vm
    }
    , @($members)
}
