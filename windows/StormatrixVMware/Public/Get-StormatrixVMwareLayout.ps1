function Get-StormatrixVMwareLayout {
    <#
    .SYNOPSIS
    Reads the VM's power state and storage controller layout, and where the test disk sits in it.

    .DESCRIPTION
    The vmware backend calls this before it changes anything and journals the result as the original
    layout, which Restore-StormatrixVMwareLayout puts back at the end, on error and after a crash.

    .PARAMETER VMName
    The VM's name (exactly one VM must have it).

    .PARAMETER DiskName
    The test disk's name as vSphere shows it, e.g. "Hard disk 2".

    .EXAMPLE
    Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2'

    .OUTPUTS
    PSCustomObject with VMName, VMId, PowerState, BootTime, Disk (Name, Filename, Key, ControllerKey,
    UnitNumber, CapacityGB), Controller (the disk's: Key, Name, Type, Bus) and Controllers (all).
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMName,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$DiskName
    )
    $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    Get-StormatrixVMwareLayoutObject -VM $target.VM -HardDisk $target.Disk
}
