# Fake inventory cmdlets: VMs, power, hard disks, SCSI and NVMe controllers. Reconfigurations need the VM
# powered off (moving a disk between controllers, adding or retyping a controller); a new controller takes
# the lowest free bus (at most 4 SCSI and 4 NVMe controllers per VM) and a moved disk the lowest free unit
# number (SCSI skips unit 7, the controller's own). The guest sees the controllers of a boot: Start-VM writes
# "bootedWith" (disk name -> controller type) so a test can tell a change that a power cycle applied.

function Get-VM {
    [CmdletBinding(DefaultParameterSetName = 'Default')]
    param(
        [Parameter(Position = 0, ParameterSetName = 'Default')][string[]]$Name,
        [Parameter(ParameterSetName = 'ById')][string[]]$Id
    )
    Assert-FakeConnected -Cmdlet 'Get-VM' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-VM' -Parameters @{ Name = ($Name -join ','); Id = ($Id -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if ($Id) {
        foreach ($one in $Id) {
            $labVm = Get-FakeLabVm -Lab $lab -Id $one
            if ($labVm) { New-FakeVmObject -Lab $lab -Vm $labVm }
            else {
                $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-VM' -Kind 'VMNotFound' -Category ObjectNotFound -Target $one `
                            -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetVM' `
                            -Message "VM with Id '$one' was not found using the specified filter(s)."))
            }
        }
        return
    }
    if (-not $Name) { $Name = @('*') }
    foreach ($pattern in $Name) {
        $matched = @($lab.vms | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern })
        if ($matched.Count -eq 0) {
            $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-VM' -Kind 'VMNotFound' -Category ObjectNotFound -Target $pattern `
                        -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetVM' `
                        -Message "VM with name '$pattern' was not found using the specified filter(s)."))
        }
        foreach ($labVm in $matched) { New-FakeVmObject -Lab $lab -Vm $labVm }
    }
}

function Stop-VM {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [switch]$Kill, [switch]$RunAsync)
    process {
        Assert-FakeConnected -Cmdlet 'Stop-VM' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Stop-VM' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Name } }) -join ',') } -Caller $PSCmdlet
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            if ([string]$labVm.powerState -ne 'PoweredOn') {
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeStateError -Cmdlet 'Stop-VM' -Vm $labVm -Needed 'PoweredOn'))
            }
            if ($PSCmdlet.ShouldProcess($labVm.name, 'Stop-VM')) {
                $labVm.powerState = 'PoweredOff'
                $labVm.bootTime = $null
            }
            Save-FakeLab -Lab $lab
            New-FakeVmObject -Lab $lab -Vm $labVm
        }
    }
}

function Start-VM {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [switch]$RunAsync)
    process {
        Assert-FakeConnected -Cmdlet 'Start-VM' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Start-VM' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Name } }) -join ',') } -Caller $PSCmdlet
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            if ([string]$labVm.powerState -ne 'PoweredOff') {
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeStateError -Cmdlet 'Start-VM' -Vm $labVm -Needed 'PoweredOff'))
            }
            if ($PSCmdlet.ShouldProcess($labVm.name, 'Start-VM')) {
                $now = [datetime]::UtcNow
                $labVm.powerState = 'PoweredOn'
                $labVm.bootTime = ConvertTo-FakeLabTime -Utc $now
                $seen = [ordered]@{}
                foreach ($disk in @($labVm.disks)) {
                    $controller = @($labVm.controllers | Where-Object { [int]$_.key -eq [int]$disk.controllerKey })[0]
                    $seen[[string]$disk.name] = [string]$controller.type
                }
                Set-FakeProperty -Object $labVm -Name 'bootedWith' -Value ([pscustomobject]$seen)
                Set-FakeProperty -Object $labVm -Name 'boots' -Value ([int]$labVm.boots + 1)
                if (-not $labVm.guestIp -and @($lab.guestIpPool).Count -gt 0 -and [string]$labVm.tools -ne 'never') {
                    # the guest's first boot takes an address from the DHCP pool (FakeFleet.ps1)
                    Set-FakeProperty -Object $labVm -Name 'guestIp' -Value ([string]@($lab.guestIpPool)[0])
                    $lab.guestIpPool = @(@($lab.guestIpPool) | Select-Object -Skip 1)
                }
            }
            Save-FakeLab -Lab $lab
            New-FakeVmObject -Lab $lab -Vm $labVm
        }
    }
}

function Wait-Tools {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [int]$TimeoutSeconds = 0)
    process {
        Assert-FakeConnected -Cmdlet 'Wait-Tools' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Wait-Tools' -Parameters @{ TimeoutSeconds = $TimeoutSeconds } -Caller $PSCmdlet
        Save-FakeLab -Lab $lab
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            # "tools": "starts" (VMware Tools answer after a power-on) or "never" (the wait times out at once,
            # instead of after TimeoutSeconds). UNSURE: the exact timeout message.
            if ([string]$labVm.powerState -ne 'PoweredOn' -or [string]$labVm.tools -eq 'never') {
                $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Wait-Tools' -Kind 'Timeout' -Category OperationTimeout -Target $labVm.name `
                            -ErrorId 'Client20_VmGuestServiceImpl_WaitTools_Timeout,VMware.VimAutomation.ViCore.Cmdlets.Commands.WaitTools' `
                            -Message "Operation timed out while waiting for VMware Tools to start in VM '$($labVm.name)'."))
                continue
            }
            New-FakeVmObject -Lab $lab -Vm $labVm
        }
    }
}

function Get-HardDisk {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [string[]]$Name)
    process {
        Assert-FakeConnected -Cmdlet 'Get-HardDisk' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Get-HardDisk' -Parameters @{ Name = ($Name -join ',') } -Caller $PSCmdlet
        Save-FakeLab -Lab $lab
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            $patterns = $Name
            if (-not $patterns) { $patterns = @('*') }
            foreach ($pattern in $patterns) {
                $matched = @($labVm.disks | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern } | Sort-Object -Property key)
                if ($matched.Count -eq 0 -and $pattern -ne '*') {
                    # UNSURE: the message for a disk name that matches nothing.
                    $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-HardDisk' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $pattern `
                                -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.VirtualDevice.GetHardDisk' `
                                -Message "HardDisk with name '$pattern' was not found using the specified filter(s)."))
                }
                foreach ($disk in $matched) { New-FakeHardDiskObject -Lab $lab -Vm $labVm -Disk $disk }
            }
        }
    }
}

function Get-FakeControllers {
    param([Parameter(Mandatory)][string]$Cmdlet, [Parameter(Mandatory)][string]$Kind, [Parameter(Mandatory)][object]$Caller, [object[]]$VM, [object[]]$HardDisk)
    Assert-FakeConnected -Cmdlet $Cmdlet -Caller $Caller
    $lab = Open-FakeCall -Cmdlet $Cmdlet -Parameters @{} -Caller $Caller
    Save-FakeLab -Lab $lab
    if ($HardDisk) {
        foreach ($disk in $HardDisk) {
            $labVm = Get-FakeLabVm -Lab $lab -Id ([string]$disk.ParentId)
            $own = @($labVm.disks | Where-Object { [int]$_.key -eq [int]$disk.ExtensionData.Key })[0]
            foreach ($c in @($labVm.controllers | Where-Object { [int]$_.key -eq [int]$own.controllerKey -and $_.kind -eq $Kind })) { New-FakeControllerObject -Lab $lab -Vm $labVm -Controller $c }
        }
        return
    }
    foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
        foreach ($c in @($labVm.controllers | Where-Object { $_.kind -eq $Kind } | Sort-Object -Property key)) { New-FakeControllerObject -Lab $lab -Vm $labVm -Controller $c }
    }
}

function Get-ScsiController {
    [CmdletBinding()]
    param([Parameter(Position = 0)][object[]]$VM, [Parameter(ValueFromPipeline)][object[]]$HardDisk)
    process { Get-FakeControllers -Cmdlet 'Get-ScsiController' -Kind 'scsi' -Caller $PSCmdlet -VM $VM -HardDisk $HardDisk }
}

function Get-NvmeController {
    [CmdletBinding()]
    param([Parameter(Position = 0)][object[]]$VM, [Parameter(ValueFromPipeline)][object[]]$HardDisk)
    process { Get-FakeControllers -Cmdlet 'Get-NvmeController' -Kind 'nvme' -Caller $PSCmdlet -VM $VM -HardDisk $HardDisk }
}

function Add-FakeController {
    # A new controller of the kind on the VM (powered off), on the lowest free bus; returns the lab entry.
    param([Parameter(Mandatory)][string]$Cmdlet, [Parameter(Mandatory)][object]$Vm, [Parameter(Mandatory)][string]$Kind,
        [Parameter(Mandatory)][string]$Type, [Parameter(Mandatory)][object]$Caller, [Parameter(Mandatory)][object]$Lab)
    if ([string]$Vm.powerState -ne 'PoweredOff') {
        Save-FakeLab -Lab $Lab
        $Caller.ThrowTerminatingError((New-FakeStateError -Cmdlet $Cmdlet -Vm $Vm))
    }
    $used = @($Vm.controllers | Where-Object { $_.kind -eq $Kind } | ForEach-Object { [int]$_.bus })
    $bus = @(0, 1, 2, 3 | Where-Object { $used -notcontains $_ })
    if ($bus.Count -eq 0) {
        Save-FakeLab -Lab $Lab
        $Caller.ThrowTerminatingError((New-FakeError -Cmdlet $Cmdlet -Kind 'InvalidArgument' -Category LimitsExceeded -Target $Vm.name `
                    -ErrorId "Client20_VmServiceImpl_MaxControllers,VMware.VimAutomation.ViCore.Cmdlets.Commands.$($Cmdlet.Replace('-', ''))" `
                    -Message "The maximum number of $Kind controllers (4) for VM '$($Vm.name)' is reached."))
    }
    $base = 1000
    if ($Kind -eq 'nvme') { $base = 31000 }
    $keys = @($Vm.controllers | ForEach-Object { [int]$_.key })
    $key = $base + $bus[0]
    while ($keys -contains $key) { $key += 1 }
    $entry = [pscustomobject]@{ key = $key; kind = $Kind; type = $Type; bus = $bus[0] }
    $Vm.controllers = @($Vm.controllers) + @($entry)
    $entry
}

function Move-FakeDisk {
    # The disk onto the controller at the lowest free unit number.
    param([Parameter(Mandatory)][object]$Vm, [Parameter(Mandatory)][object]$Disk, [Parameter(Mandatory)][object]$Controller)
    $used = @($Vm.disks | Where-Object { [int]$_.controllerKey -eq [int]$Controller.key -and [int]$_.key -ne [int]$Disk.key } | ForEach-Object { [int]$_.unitNumber })
    $unit = 0
    while ($used -contains $unit -or ($Controller.kind -eq 'scsi' -and $unit -eq 7)) { $unit += 1 }
    $Disk.controllerKey = [int]$Controller.key
    $Disk.unitNumber = $unit
}

function Get-FakeDiskEntry {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$HardDisk)
    $labVm = Get-FakeLabVm -Lab $Lab -Id ([string]$HardDisk.ParentId)
    $disk = @($labVm.disks | Where-Object { [int]$_.key -eq [int]$HardDisk.ExtensionData.Key })[0]
    @($labVm, $disk)
}

function New-ScsiController {
    [CmdletBinding(SupportsShouldProcess)]
    param(
        [Parameter(Mandatory, ValueFromPipeline)][object]$HardDisk,
        [Parameter(Position = 1)][ValidateSet('Default', 'ParaVirtual', 'VirtualBusLogic', 'VirtualLsiLogic', 'VirtualLsiLogicSAS')][string]$Type = 'Default',
        [Parameter(Position = 2)][ValidateSet('NoSharing', 'Physical', 'Virtual')][string]$BusSharingMode = 'NoSharing'
    )
    process {
        Assert-FakeConnected -Cmdlet 'New-ScsiController' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'New-ScsiController' -Parameters @{ HardDisk = [string]$HardDisk.Name; Type = $Type } -Caller $PSCmdlet
        $labVm, $disk = Get-FakeDiskEntry -Lab $lab -HardDisk $HardDisk
        if ($Type -eq 'Default') { $Type = 'VirtualLsiLogicSAS' }  # UNSURE: PowerCLI picks the guest OS's recommended type
        if (-not $PSCmdlet.ShouldProcess($labVm.name, 'New-ScsiController')) { Save-FakeLab -Lab $lab; return }
        $controller = Add-FakeController -Cmdlet 'New-ScsiController' -Vm $labVm -Kind 'scsi' -Type $Type -Caller $PSCmdlet -Lab $lab
        Move-FakeDisk -Vm $labVm -Disk $disk -Controller $controller
        Save-FakeLab -Lab $lab
        New-FakeControllerObject -Lab $lab -Vm $labVm -Controller $controller
    }
}

function New-NvmeController {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object]$VM)
    process {
        Assert-FakeConnected -Cmdlet 'New-NvmeController' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'New-NvmeController' -Parameters @{ VM = $(if ($VM -is [string]) { $VM } else { [string]$VM.Name }) } -Caller $PSCmdlet
        $labVm = @(Resolve-FakeVmArgument -Lab $lab -Value $VM)[0]
        if (-not $PSCmdlet.ShouldProcess($labVm.name, 'New-NvmeController')) { Save-FakeLab -Lab $lab; return }
        # UNSURE: whether vSphere allows adding an NVMe controller to a running VM; the fake wants it off.
        $controller = Add-FakeController -Cmdlet 'New-NvmeController' -Vm $labVm -Kind 'nvme' -Type 'NVMe' -Caller $PSCmdlet -Lab $lab
        Save-FakeLab -Lab $lab
        New-FakeControllerObject -Lab $lab -Vm $labVm -Controller $controller
    }
}

function Set-HardDisk {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory, ValueFromPipeline)][object[]]$HardDisk, [object]$Controller, [decimal]$CapacityGB)
    process {
        Assert-FakeConnected -Cmdlet 'Set-HardDisk' -Caller $PSCmdlet
        foreach ($one in $HardDisk) {
            $lab = Open-FakeCall -Cmdlet 'Set-HardDisk' -Parameters @{ HardDisk = [string]$one.Name; Controller = $(if ($Controller) { [int]$Controller.Key } else { $null }) } -Caller $PSCmdlet
            $labVm, $disk = Get-FakeDiskEntry -Lab $lab -HardDisk $one
            if ($Controller) {
                if ([string]$labVm.powerState -ne 'PoweredOff') {
                    Save-FakeLab -Lab $lab
                    $PSCmdlet.ThrowTerminatingError((New-FakeStateError -Cmdlet 'Set-HardDisk' -Vm $labVm))
                }
                $target = @($labVm.controllers | Where-Object { [int]$_.key -eq [int]$Controller.Key })[0]
                if (-not $target) {
                    Save-FakeLab -Lab $lab
                    $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Set-HardDisk' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $Controller.Key `
                                -ErrorId 'Client20_VmServiceImpl_ControllerNotFound,VMware.VimAutomation.ViCore.Cmdlets.Commands.VirtualDevice.SetHardDisk' `
                                -Message "The controller with key $($Controller.Key) does not exist on VM '$($labVm.name)'."))
                }
                if ($PSCmdlet.ShouldProcess($one.Name, 'Set-HardDisk')) { Move-FakeDisk -Vm $labVm -Disk $disk -Controller $target }
            }
            Save-FakeLab -Lab $lab
            New-FakeHardDiskObject -Lab $lab -Vm $labVm -Disk $disk
        }
    }
}

function Set-ScsiController {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory, ValueFromPipeline)][object[]]$ScsiController,
        [ValidateSet('ParaVirtual', 'VirtualBusLogic', 'VirtualLsiLogic', 'VirtualLsiLogicSAS')][string]$Type,
        [ValidateSet('NoSharing', 'Physical', 'Virtual')][string]$BusSharingMode)
    process {
        Assert-FakeConnected -Cmdlet 'Set-ScsiController' -Caller $PSCmdlet
        foreach ($one in $ScsiController) {
            $lab = Open-FakeCall -Cmdlet 'Set-ScsiController' -Parameters @{ ScsiController = [int]$one.Key; Type = $Type } -Caller $PSCmdlet
            $labVm = Get-FakeLabVm -Lab $lab -Id ([string]$one.ParentId)
            $entry = @($labVm.controllers | Where-Object { [int]$_.key -eq [int]$one.Key })[0]
            if ($Type) {
                if ([string]$labVm.powerState -ne 'PoweredOff') {
                    Save-FakeLab -Lab $lab
                    $PSCmdlet.ThrowTerminatingError((New-FakeStateError -Cmdlet 'Set-ScsiController' -Vm $labVm))
                }
                # UNSURE: PowerCLI may replace the device (and its key) to change the type; the fake keeps the key.
                if ($PSCmdlet.ShouldProcess($one.Name, 'Set-ScsiController')) { $entry.type = $Type }
            }
            Save-FakeLab -Lab $lab
            New-FakeControllerObject -Lab $lab -Vm $labVm -Controller $entry
        }
    }
}
