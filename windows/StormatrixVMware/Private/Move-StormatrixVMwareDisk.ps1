function Move-StormatrixVMwareDisk {
    <#
    .SYNOPSIS
    Moves the (powered-off) VM's disk to a controller of the given type: an existing empty one of that
    type, or the controller named by -ControllerKey, or a new one. The disk itself is never removed.

    .NOTES
    New-ScsiController -HardDisk creates the controller and moves the disk onto it in one reconfigure,
    which is how PowerCLI documents it. NVMe has no such form: New-NvmeController adds the controller,
    then Set-HardDisk -Controller moves the disk. A VM has at most 4 SCSI and 4 NVMe controllers; when
    none is free the move is refused before anything changes.
    #>
    [CmdletBinding()]
    [OutputType([void])]
    param(
        [Parameter(Mandatory)][object]$VM,
        [Parameter(Mandatory)][object]$HardDisk,
        [Parameter(Mandatory)][ValidateSet('ParaVirtual', 'LsiLogicSAS', 'LsiLogic', 'NVMe')][string]$Type,
        [object[]]$Controllers = @(),
        [int]$ControllerKey = -1
    )
    $powercliType = @{ 'ParaVirtual' = 'ParaVirtual'; 'LsiLogicSAS' = 'VirtualLsiLogicSAS'; 'LsiLogic' = 'VirtualLsiLogic' }
    $target = $null
    if ($ControllerKey -ge 0) {
        $target = @($Controllers | Where-Object { $_.Key -eq $ControllerKey }) | Select-Object -First 1
    }
    if (-not $target) {
        $target = @($Controllers | Where-Object { $_.Type -eq $Type -and @($_.Disks).Count -eq 0 } | Sort-Object -Property Key) | Select-Object -First 1
    }
    if (-not $target) {
        $family = @($Controllers | Where-Object { ($_.Type -eq 'NVMe') -eq ($Type -eq 'NVMe') })
        if ($family.Count -ge 4) {
            throw (New-StormatrixVMwareError -ErrorId 'ControllerLimit' -Category 'LimitsExceeded' -TargetObject $VM `
                    -Message "VM '$($VM.Name)' already has 4 $(if ($Type -eq 'NVMe') { 'NVMe' } else { 'SCSI' }) controllers and none of type $Type is free")
        }
        if ($Type -eq 'NVMe' -and -not (Get-Command -Name 'New-NvmeController' -ErrorAction SilentlyContinue)) {
            throw (New-StormatrixVMwareError -ErrorId 'NvmeNotSupported' -Category 'NotImplemented' -TargetObject $VM `
                    -Message 'the installed PowerCLI has no New-NvmeController: update VMware PowerCLI to use the NVMe controller')
        }
    }
    try {
        if ($target) {
            Set-HardDisk -HardDisk $HardDisk -Controller $target.Object -Confirm:$false -ErrorAction Stop | Out-Null
        }
        elseif ($Type -eq 'NVMe') {
            $new = New-NvmeController -VM $VM -ErrorAction Stop
            Set-HardDisk -HardDisk $HardDisk -Controller $new -Confirm:$false -ErrorAction Stop | Out-Null
        }
        else {
            New-ScsiController -HardDisk $HardDisk -Type $powercliType[$Type] -Confirm:$false -ErrorAction Stop | Out-Null
        }
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'DiskMoveFailed' -Cause $_ -TargetObject $HardDisk `
                -Message "moving '$($HardDisk.Name)' of VM '$($VM.Name)' to a $Type controller failed")
    }
}
