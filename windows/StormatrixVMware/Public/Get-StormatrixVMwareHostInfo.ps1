function Get-StormatrixVMwareHostInfo {
    <#
    .SYNOPSIS
    Describes the ESXi host that runs the VM: its name, ESXi version and build, CPU model and counts.

    .DESCRIPTION
    The vmware backend journals this as the measured host in the run's environment (the Environment
    sheet), so that a run on ESXi never shows the workstation's CPU as the host's. Read from the host's
    VMHost object (Get-VMHost -VM, or -VMHost by name): Version, Build, and the HostSystem summary's
    hardware (CpuModel, NumCpuPkgs, NumCpuCores, NumCpuThreads, CpuMhz).

    .PARAMETER VMName
    The VM's name (exactly one VM must have it).

    .PARAMETER VMHost
    The ESXi host's name in vCenter; empty: the host the VM runs on.

    .EXAMPLE
    Get-StormatrixVMwareHostInfo -VMName bench01

    .OUTPUTS
    PSCustomObject with Name, Version, Build, CpuModel, CpuPackages, CpuCores, CpuThreads, CpuMhz.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMName,
        [AllowEmptyString()][string]$VMHost = ''
    )
    try {
        if ($VMHost) {
            $esx = Resolve-StormatrixVMwareHost -Name $VMHost
        }
        else {
            $vm = (Resolve-StormatrixVMwareTarget -VMName $VMName).VM
            $esx = @(Get-VMHost -VM $vm -ErrorAction Stop)
            if ($esx.Count -ne 1) {
                throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -TargetObject $VMName `
                        -Message "Get-VMHost -VM '$VMName' gave $($esx.Count) hosts, not one")
            }
            $esx = $esx[0]
        }
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $VMName `
                -Message "the ESXi host of VM '$VMName' not found")
    }
    $hardware = $esx.ExtensionData.Summary.Hardware
    $model = [string]$hardware.CpuModel
    if (-not $model) { $model = [string]$esx.ProcessorType }
    [pscustomobject]@{
        Name        = [string]$esx.Name
        Version     = [string]$esx.Version
        Build       = [string]$esx.Build
        CpuModel    = $model
        CpuPackages = $hardware.NumCpuPkgs
        CpuCores    = $hardware.NumCpuCores
        CpuThreads  = $hardware.NumCpuThreads
        CpuMhz      = $hardware.CpuMhz
    }
}
