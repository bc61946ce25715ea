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
    $vm = Select-StormatrixVMwareByName -Name $VMName -ErrorId 'VmNotFound' -FailedMessage "VM '$VMName' not found" `
        -List { Get-VM -Name $pattern -ErrorAction Stop } `
        -CountMessage { param($count) "VM name '$VMName' names $count VMs exactly; it must name exactly one (names are not patterns)" }
    $disk = $null
    if ($DiskName) {
        $disk = Select-StormatrixVMwareByName -Name $DiskName -ErrorId 'DiskNotFound' -FailedMessage "cannot list the hard disks of VM '$VMName'" `
            -List { Get-HardDisk -VM $vm -ErrorAction Stop } `
            -CountMessage { param($count) "VM '$VMName' has $count hard disks named '$DiskName' exactly; it must have exactly one (names are not patterns)" }
    }
    [pscustomobject]@{ VM = $vm; Disk = $disk }
}
