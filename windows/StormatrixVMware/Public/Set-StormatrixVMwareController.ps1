function Set-StormatrixVMwareController {
    <#
    .SYNOPSIS
    Moves the test disk to a controller of the given type (creating one if needed, never deleting the
    disk), power-cycles the VM so the guest sees the change, and waits for VMware Tools.

    .DESCRIPTION
    In order: find the VM and the disk; power the VM off (Stop-VM) if it runs; when the disk is not on
    a controller of -Type, move it to an empty controller of that type or to a new one
    (New-ScsiController -HardDisk, or New-NvmeController then Set-HardDisk -Controller); remove the
    controllers that are now empty and not listed in -KeepControllerKey (ones an earlier cell added);
    power on (Start-VM) and wait for VMware Tools (Wait-Tools). Then the layout is read again and
    checked: the disk must be on a -Type controller, with the same backing file as before, and the VM
    must have booted again.

    .PARAMETER VMName
    The VM's name (exactly one VM must have it).

    .PARAMETER DiskName
    The test disk's name as vSphere shows it, e.g. "Hard disk 2".

    .PARAMETER Type
    The controller type: ParaVirtual (pvscsi), LsiLogicSAS, LsiLogic, NVMe.

    .PARAMETER KeepControllerKey
    Keys of the controllers the VM had originally: these are never removed, even when empty.

    .PARAMETER ReadyTimeoutSeconds
    How long to wait for VMware Tools after the power-on.

    .EXAMPLE
    Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -KeepControllerKey 1000, 1001

    .OUTPUTS
    PSCustomObject with Before and After (layouts as Get-StormatrixVMwareLayout returns them), Moved
    (the disk changed controller) and PowerCycled.

    .NOTES
    A failure half-way leaves the VM powered off with the disk on either controller, never without it:
    Restore-StormatrixVMwareLayout brings it back from any of those states.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMName,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$DiskName,
        [Parameter(Mandatory)][ValidateSet('ParaVirtual', 'LsiLogicSAS', 'LsiLogic', 'NVMe')][string]$Type,
        [int[]]$KeepControllerKey = @(),
        [ValidateRange(5, 7200)][int]$ReadyTimeoutSeconds = 300
    )
    $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    $before = Get-StormatrixVMwareLayoutObject -VM $target.VM -HardDisk $target.Disk
    if (-not $PSCmdlet.ShouldProcess("$VMName / $DiskName", "move to a $Type controller and power-cycle")) {
        return
    }
    if ($before.PowerState -eq 'PoweredOn') {
        Set-StormatrixVMwarePower -VM $target.VM -State Off
    }
    $moved = $false
    $current = $target
    if (-not $before.Controller -or $before.Controller.Type -ne $Type) {
        $controllers = @(Get-StormatrixVMwareControllerList -VM $target.VM)
        Move-StormatrixVMwareDisk -VM $target.VM -HardDisk $target.Disk -Type $Type -Controllers $controllers
        $moved = $true
        $current = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    }
    $keep = @($KeepControllerKey) + @([int]$current.Disk.ExtensionData.ControllerKey)
    foreach ($controller in @(Get-StormatrixVMwareControllerList -VM $current.VM)) {
        if ($keep -notcontains $controller.Key -and @($controller.Disks).Count -eq 0) {
            Remove-StormatrixVMwareController -VM $current.VM -Controller $controller
        }
    }
    Set-StormatrixVMwarePower -VM $current.VM -State On -ReadyTimeoutSeconds $ReadyTimeoutSeconds
    $final = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    $after = Get-StormatrixVMwareLayoutObject -VM $final.VM -HardDisk $final.Disk
    if (-not $after.Controller -or $after.Controller.Type -ne $Type) {
        throw (New-StormatrixVMwareError -ErrorId 'ControllerNotApplied' -TargetObject $DiskName `
                -Message "after the move '$DiskName' of VM '$VMName' is on '$($after.Controller.Name)', not on a $Type controller")
    }
    if ($after.Disk.Filename -ne $before.Disk.Filename) {
        throw (New-StormatrixVMwareError -ErrorId 'DiskChanged' -TargetObject $DiskName `
                -Message "'$DiskName' of VM '$VMName' was backed by $($before.Disk.Filename) and is now backed by $($after.Disk.Filename)")
    }
    if ($after.PowerState -ne 'PoweredOn' -or ($before.BootTime -and $after.BootTime -eq $before.BootTime)) {
        throw (New-StormatrixVMwareError -ErrorId 'NotPowerCycled' -TargetObject $VMName `
                -Message "VM '$VMName' is $($after.PowerState) with boot time $($after.BootTime): it was not power-cycled, the guest may still see the old controller")
    }
    [pscustomobject]@{ Before = $before; After = $after; Moved = $moved; PowerCycled = $true }
}
