function Resolve-StormatrixVMwareTarget {
    <#
    .SYNOPSIS
    Finds exactly one VM by name and exactly one of its hard disks by name ("Hard disk 2"); anything else
    (none, several, a PowerCLI failure) is a typed error.

    .NOTES
    PowerCLI reads Get-VM -Name as a wildcard pattern: "bench*" would match (and power-cycle) some VM, and
    "lab[1]" would match "lab1" but never the VM named "lab[1]". So the name is turned into a pattern in
    which every wildcard character matches only itself or any one character ('?'), which still finds the VM
    on the server side, and the answer is then filtered by exact (case-insensitive, as vSphere treats names)
    comparison. Disks are listed and compared by name the same way.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$VMName,
        [string]$DiskName
    )
    $pattern = ConvertTo-StormatrixVMwareNamePattern -Name $VMName
    try {
        $vms = @(Get-VM -Name $pattern -ErrorAction Stop | Where-Object { $_.Name -eq $VMName })
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $VMName `
                -Message "VM '$VMName' not found")
    }
    if ($vms.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Category 'ObjectNotFound' -TargetObject $VMName `
                -Message "VM name '$VMName' names $($vms.Count) VMs exactly; it must name exactly one (names are not patterns)")
    }
    $vm = $vms[0]
    $disk = $null
    if ($DiskName) {
        try {
            $disks = @(Get-HardDisk -VM $vm -ErrorAction Stop | Where-Object { $_.Name -eq $DiskName })
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'DiskNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $DiskName `
                    -Message "cannot list the hard disks of VM '$VMName'")
        }
        if ($disks.Count -ne 1) {
            throw (New-StormatrixVMwareError -ErrorId 'DiskNotFound' -Category 'ObjectNotFound' -TargetObject $DiskName `
                    -Message "VM '$VMName' has $($disks.Count) hard disks named '$DiskName' exactly; it must have exactly one (names are not patterns)")
        }
        $disk = $disks[0]
    }
    [pscustomobject]@{ VM = $vm; Disk = $disk }
}
