function Restore-StormatrixVMwareLayout {
    <#
    .SYNOPSIS
    Puts the test disk back on its original controller, removes the controllers stormatrix added, and
    returns the VM to its original power state. Safe to run again, from any half-done state.

    .DESCRIPTION
    Reads the layout; when the disk is on another controller than -ControllerKey, or the VM has
    controllers whose keys are not in -KeepControllerKey, powers the VM off, moves the disk back
    (Set-HardDisk -Controller to the original controller, or a new controller of -ControllerType if
    that one is gone), and removes the added controllers once they are empty. Then powers the VM on or
    off as -PowerState says (waiting for VMware Tools after a power-on) and checks the result.

    .PARAMETER VMName
    The VM's name (exactly one VM must have it).

    .PARAMETER DiskName
    The test disk's name as vSphere shows it, e.g. "Hard disk 2".

    .PARAMETER ControllerKey
    Key of the controller the disk was on originally.

    .PARAMETER ControllerType
    Type of that controller, used only if it no longer exists.

    .PARAMETER KeepControllerKey
    Keys of every controller the VM had originally (all others are removed when empty).

    .PARAMETER Filename
    The disk's original backing file; the restore fails if the disk is now backed by another file.

    .PARAMETER PowerState
    The VM's original power state: PoweredOn or PoweredOff.

    .PARAMETER UnitNumber
    The disk's original unit number, only to report whether it came back on the same one.

    .PARAMETER ReadyTimeoutSeconds
    How long to wait for VMware Tools after a power-on.

    .EXAMPLE
    Restore-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2' -ControllerKey 1001 -ControllerType LsiLogicSAS -KeepControllerKey 1000, 1001 -Filename '[ds1] bench01/bench01_1.vmdk' -PowerState PoweredOn

    .OUTPUTS
    PSCustomObject with Layout (as Get-StormatrixVMwareLayout), Changed (something had to be done),
    RemovedControllerKeys, ControllerReplaced (the original controller was gone and a controller of its
    type took its place) and UnitNumberChanged (Set-HardDisk picks the unit number on the controller).
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMName,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$DiskName,
        [Parameter(Mandatory)][int]$ControllerKey,
        [Parameter(Mandatory)][ValidateSet('ParaVirtual', 'LsiLogicSAS', 'LsiLogic', 'NVMe')][string]$ControllerType,
        [Parameter(Mandatory)][int[]]$KeepControllerKey,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$Filename,
        [Parameter(Mandatory)][ValidateSet('PoweredOn', 'PoweredOff')][string]$PowerState,
        [int]$UnitNumber = -1,
        [ValidateRange(5, 7200)][int]$ReadyTimeoutSeconds = 300
    )
    $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    $now = Get-StormatrixVMwareLayoutObject -VM $target.VM -HardDisk $target.Disk
    if ($now.Disk.Filename -ne $Filename) {
        throw (New-StormatrixVMwareError -ErrorId 'DiskChanged' -TargetObject $DiskName `
                -Message "'$DiskName' of VM '$VMName' is backed by $($now.Disk.Filename), not by the original $($Filename): not restoring another disk")
    }
    # The original controller may be gone (removed by hand, or lost with a failed reconfiguration): then the
    # disk goes to a controller of the original type that is not one of the VM's other original controllers
    # (an empty one, or a new one), and that controller is kept in place of the original.
    $present = @($now.Controllers | ForEach-Object { $_.Key })
    $originalGone = $present -notcontains $ControllerKey
    $keep = @($KeepControllerKey | Where-Object { $present -contains $_ })
    if ($originalGone) {
        $needsMove = -not ($now.Controller -and $now.Controller.Type -eq $ControllerType -and $KeepControllerKey -notcontains $now.Disk.ControllerKey)
    }
    else {
        $needsMove = $now.Disk.ControllerKey -ne $ControllerKey
    }
    $extra = @($now.Controllers | Where-Object { $keep -notcontains $_.Key -and ($needsMove -or $_.Key -ne $now.Disk.ControllerKey) })
    $changed = $false
    $removed = New-Object System.Collections.Generic.List[int]
    if (-not $PSCmdlet.ShouldProcess("$VMName / $DiskName", 'restore the original controller layout and power state')) {
        return
    }
    if ($needsMove -or $extra.Count -gt 0) {
        $changed = $true
        if ($now.PowerState -eq 'PoweredOn') {
            Set-StormatrixVMwarePower -VM $target.VM -State Off
        }
        if ($needsMove) {
            $controllers = @(Get-StormatrixVMwareControllerList -VM $target.VM)
            Move-StormatrixVMwareDisk -VM $target.VM -HardDisk $target.Disk -Type $ControllerType -Controllers $controllers -ControllerKey $ControllerKey
            $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
        }
        $diskController = [int]$target.Disk.ExtensionData.ControllerKey
        foreach ($controller in @(Get-StormatrixVMwareControllerList -VM $target.VM)) {
            if ($keep -notcontains $controller.Key -and $controller.Key -ne $diskController) {
                Remove-StormatrixVMwareController -VM $target.VM -Controller $controller
                $removed.Add($controller.Key)
            }
        }
        $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    }
    $state = [string]$target.VM.PowerState
    if ($PowerState -eq 'PoweredOn' -and $state -ne 'PoweredOn') {
        $changed = $true
        Set-StormatrixVMwarePower -VM $target.VM -State On -ReadyTimeoutSeconds $ReadyTimeoutSeconds
        $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    }
    elseif ($PowerState -eq 'PoweredOff' -and $state -ne 'PoweredOff') {
        $changed = $true
        Set-StormatrixVMwarePower -VM $target.VM -State Off
        $target = Resolve-StormatrixVMwareTarget -VMName $VMName -DiskName $DiskName
    }
    $final = Get-StormatrixVMwareLayoutObject -VM $target.VM -HardDisk $target.Disk
    $problems = @()
    $wanted = @($keep)
    if ($originalGone) {
        if (-not $final.Controller -or $final.Controller.Type -ne $ControllerType -or $keep -contains $final.Disk.ControllerKey) {
            $problems += "the original controller $ControllerKey is gone and the disk is on controller $($final.Disk.ControllerKey) ($($final.Controller.Type)), not on a controller of its own of type $ControllerType"
        }
        $wanted += $final.Disk.ControllerKey
    }
    elseif ($final.Disk.ControllerKey -ne $ControllerKey) {
        $problems += "the disk is on controller $($final.Disk.ControllerKey), not $ControllerKey"
    }
    if ($final.Disk.Filename -ne $Filename) { $problems += "the disk is backed by $($final.Disk.Filename)" }
    $keys = @($final.Controllers | ForEach-Object { $_.Key } | Sort-Object)
    $wanted = @($wanted | Sort-Object -Unique)
    if (($keys -join ',') -ne ($wanted -join ',')) { $problems += "controllers are $($keys -join ', '), expected $($wanted -join ', ')" }
    if ($final.PowerState -ne $PowerState) { $problems += "the VM is $($final.PowerState), originally $PowerState" }
    if ($problems.Count -gt 0) {
        throw (New-StormatrixVMwareError -ErrorId 'RestoreIncomplete' -TargetObject $VMName `
                -Message "VM '$VMName' after restoring: $($problems -join '; ')")
    }
    [pscustomobject]@{
        Layout                = $final
        Changed               = $changed
        RemovedControllerKeys = $removed.ToArray()
        ControllerReplaced    = $originalGone
        UnitNumberChanged     = ($UnitNumber -ge 0 -and $final.Disk.UnitNumber -ne $UnitNumber)
    }
}
