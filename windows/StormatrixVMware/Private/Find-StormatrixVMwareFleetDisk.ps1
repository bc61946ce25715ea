function Find-StormatrixVMwareFleetDisk {
    <#
    .SYNOPSIS
    The test disks of one worker on one datastore: its hard disks stored on that datastore that are not
    among the clone's own disks (the -BaseFilename list New-StormatrixVMwareFleet reported).

    .NOTES
    vSphere names a new disk's file itself, so after a crash between New-HardDisk and the caller's journal
    the disk is found by what it is: on the datastore under test, on a VM of this fleet, and not one of the
    disks the VM had when it was cloned.
    #>
    [CmdletBinding()]
    [OutputType([object[]])]
    param(
        [Parameter(Mandatory)][object]$VM,
        [Parameter(Mandatory)][string]$Datastore,
        [AllowEmptyCollection()][string[]]$BaseFilename = @()
    )
    try {
        $disks = @(Get-HardDisk -VM $VM -ErrorAction Stop)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'DiskNotFound' -Cause $_ -TargetObject $VM -Message "cannot list the hard disks of VM '$($VM.Name)'")
    }
    $prefix = "[$Datastore] "
    @($disks | Where-Object { ([string]$_.Filename).StartsWith($prefix, [System.StringComparison]::Ordinal) -and $BaseFilename -notcontains [string]$_.Filename })
}
