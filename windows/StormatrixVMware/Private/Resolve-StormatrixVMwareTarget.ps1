function Resolve-StormatrixVMwareTarget {
    <#
    .SYNOPSIS
    Finds exactly one VM by name and exactly one of its hard disks by name ("Hard disk 2"); anything else
    (none, several, a PowerCLI failure) is a typed error, so a wildcard in a name never selects a wrong VM.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$VMName,
        [string]$DiskName
    )
    try {
        $vms = @(Get-VM -Name $VMName -ErrorAction Stop)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $VMName `
                -Message "VM '$VMName' not found")
    }
    if ($vms.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Category 'ObjectNotFound' -TargetObject $VMName `
                -Message "VM name '$VMName' matches $($vms.Count) VMs; it must match exactly one")
    }
    $vm = $vms[0]
    $disk = $null
    if ($DiskName) {
        try {
            $disks = @(Get-HardDisk -VM $vm -Name $DiskName -ErrorAction Stop)
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'DiskNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $DiskName `
                    -Message "VM '$VMName' has no hard disk '$DiskName'")
        }
        if ($disks.Count -ne 1) {
            throw (New-StormatrixVMwareError -ErrorId 'DiskNotFound' -Category 'ObjectNotFound' -TargetObject $DiskName `
                    -Message "disk name '$DiskName' matches $($disks.Count) disks of VM '$VMName'; it must match exactly one")
        }
        $disk = $disks[0]
    }
    [pscustomobject]@{ VM = $vm; Disk = $disk }
}
