function Remove-StormatrixVMwareFleetDisk {
    <#
    .SYNOPSIS
    Removes the test disks a fleet's workers have on one datastore (Remove-HardDisk -DeletePermanently), and
    the controllers that held them, and returns one object per disk removed.

    .DESCRIPTION
    Only VMs that carry the fleet's annotation are touched, and on them only disks on -Datastore that are
    not among the clone's own disks (-BaseFilename): the disks Add-StormatrixVMwareFleetDisk made, found
    even when a crash kept the caller from writing down their file names. A worker that no longer exists is
    reported (State 'VmGone') and skipped; a VM without the annotation is reported (State 'NotOurs') and
    left untouched. A running worker is powered off first.

    .PARAMETER VMId
    The workers' ids.

    .PARAMETER RunId
    The fleet's run id.

    .PARAMETER Datastore
    The datastore under test whose disks go.

    .PARAMETER BaseFilename
    The files of the clones' own disks, which are never removed.

    .EXAMPLE
    Remove-StormatrixVMwareFleetDisk -VMId VirtualMachine-vm-201 -RunId 1a2b3c4d5e6f -Datastore bb-iscsi -BaseFilename '[ds1] smx-w01/smx-w01.vmdk'

    .OUTPUTS
    PSCustomObject per disk or skipped VM: Kind 'disk', State ('Removed', 'VmGone', 'NotOurs'), VMId,
    VMName, Datastore, Filename.

    .NOTES
    -DeletePermanently deletes the .vmdk from the datastore; without it the file would stay behind,
    holding the datastore's space, after the disk left the VM.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string[]]$VMId,
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId,
        [Parameter(Mandatory)][string]$Datastore,
        [AllowEmptyCollection()][string[]]$BaseFilename = @()
    )
    foreach ($id in $VMId) {
        $vm = Get-VM -Id $id -ErrorAction SilentlyContinue
        if (-not $vm) {
            [pscustomobject]@{ Kind = 'disk'; State = 'VmGone'; VMId = $id; VMName = $null; Datastore = $Datastore; Filename = $null }
            continue
        }
        if (-not (Test-StormatrixVMwareFleetOwner -VM $vm -RunId $RunId)) {
            Write-Warning "VM '$($vm.Name)' ($id) does not carry the annotation of fleet $($RunId): left untouched"
            [pscustomobject]@{ Kind = 'disk'; State = 'NotOurs'; VMId = $id; VMName = [string]$vm.Name; Datastore = $Datastore; Filename = $null }
            continue
        }
        $disks = @(Find-StormatrixVMwareFleetDisk -VM $vm -Datastore $Datastore -BaseFilename $BaseFilename)
        if ($disks.Count -eq 0 -or -not $PSCmdlet.ShouldProcess([string]$vm.Name, "remove its disks on '$Datastore' permanently")) { continue }
        if ([string]$vm.PowerState -ne 'PoweredOff') {
            Set-StormatrixVMwarePower -VM $vm -State Off
        }
        $before = @(Get-StormatrixVMwareControllerList -VM $vm)
        foreach ($disk in $disks) {
            try {
                Remove-HardDisk -HardDisk $disk -DeletePermanently -Confirm:$false -ErrorAction Stop
            }
            catch {
                throw (New-StormatrixVMwareError -ErrorId 'DiskRemoveFailed' -Cause $_ -TargetObject $disk.Filename -Message "removing disk '$($disk.Filename)' of VM '$($vm.Name)' failed")
            }
            [pscustomobject]@{ Kind = 'disk'; State = 'Removed'; VMId = $id; VMName = [string]$vm.Name; Datastore = $Datastore; Filename = [string]$disk.Filename }
        }
        $keys = @($disks | ForEach-Object { [int]$_.ExtensionData.Key })
        foreach ($controller in @(Get-StormatrixVMwareControllerList -VM $vm)) {
            $held = @($before | Where-Object { $_.Key -eq $controller.Key })[0]
            $heldOurs = $held -and @($held.Disks | Where-Object { $keys -contains $_ }).Count -gt 0
            if ($heldOurs -and @($controller.Disks).Count -eq 0) {
                Remove-StormatrixVMwareController -VM $vm -Controller $controller
            }
        }
    }
}
