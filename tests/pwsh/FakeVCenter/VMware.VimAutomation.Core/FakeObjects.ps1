# The objects the fake cmdlets return, built from the lab with the property names of PowerCLI's output types
# (UniversalVirtualMachineImpl, FlatHardDiskImpl, ScsiControllerImpl, NvmeControllerImpl, VMHostImpl) and,
# under ExtensionData, of the vSphere API data objects (VirtualMachine, VirtualDisk, VirtualSCSIController,
# VirtualNVMEController, HostSystem). Like PowerCLI's, they are snapshots: a VM object read before Stop-VM
# still says PoweredOn; read the VM again to see the change.

$script:ScsiLabel = @{ 'ParaVirtual' = 'ParaVirtual'; 'VirtualLsiLogicSAS' = 'VirtualLsiLogicSAS'; 'VirtualLsiLogic' = 'VirtualLsiLogic'; 'VirtualBusLogic' = 'VirtualBusLogic' }

function Get-FakeLabVm {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Id)
    @($Lab.vms | Where-Object { $_.id -eq $Id })[0]
}

function Resolve-FakeVmArgument {
    # A -VM argument: a VM object (by its Id) or, as PowerCLI's name-to-object transformation does, a name
    # (a wildcard pattern). Returns the lab entries.
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Value)
    foreach ($item in @($Value)) {
        if ($item -is [string]) {
            @($Lab.vms | Where-Object { Test-FakeName -Name $_.name -Pattern $item })
        }
        elseif ($item.Id) {
            Get-FakeLabVm -Lab $Lab -Id ([string]$item.Id)
        }
    }
}

function Get-FakeLabHost {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Name)
    @($Lab.hosts | Where-Object { $_.name -eq $Name })[0]
}

function New-FakeVmObject {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Vm)
    $extra = @(foreach ($p in @($Vm.extraConfig.PSObject.Properties)) { $o = [System.Activator]::CreateInstance(('VMware.Vim.OptionValue' -as [type])); $o.Key = $p.Name; $o.Value = [string]$p.Value; $o })
    $devices = @(foreach ($c in @($Vm.controllers)) { New-FakeControllerView -Vm $Vm -Controller $c }) + @(foreach ($d in @($Vm.disks)) { New-FakeDiskView -Disk $d })
    $boot = ConvertFrom-FakeLabTime -Value $Vm.bootTime
    $view = [pscustomobject]@{
        PSTypeName = 'VMware.Vim.VirtualMachine'
        MoRef      = [pscustomobject]@{ Type = 'VirtualMachine'; Value = ([string]$Vm.id).Replace('VirtualMachine-', '') }
        Name       = [string]$Vm.name
        Config     = [pscustomobject]@{ Name = [string]$Vm.name; ExtraConfig = $extra; Hardware = [pscustomobject]@{ NumCPU = [int]$Vm.numCpu; Device = $devices } }
        # UNSURE: the Kind PowerCLI gives Runtime.BootTime (the API sends xsd:dateTime in UTC); the fake gives UTC.
        Runtime    = [pscustomobject]@{ PowerState = ([string]$Vm.powerState).Substring(0, 1).ToLowerInvariant() + ([string]$Vm.powerState).Substring(1); BootTime = $boot
            Host = [pscustomobject]@{ Type = 'HostSystem'; Value = ([string](Get-FakeLabHost -Lab $Lab -Name $Vm.host).id).Replace('HostSystem-', '') } }
    }
    $view.PSObject.Methods.Add([psscriptmethod]::new('ReconfigVM', { param($Spec) Invoke-FakeReconfigVM -VmId ('VirtualMachine-' + $this.MoRef.Value) -Spec $Spec }))
    [pscustomobject]@{
        PSTypeName    = 'VMware.VimAutomation.ViCore.Impl.V1.VM.UniversalVirtualMachineImpl'
        Name          = [string]$Vm.name
        Id            = [string]$Vm.id
        PowerState    = [string]$Vm.powerState
        NumCpu        = [int]$Vm.numCpu
        MemoryGB      = [double]$Vm.memoryGB
        Notes         = [string]$Vm.notes
        VMHost        = [string]$Vm.host
        VMHostId      = [string](Get-FakeLabHost -Lab $Lab -Name $Vm.host).id
        ExtensionData = $view
    }
}

function New-FakeControllerView {
    param([Parameter(Mandatory)][object]$Vm, [Parameter(Mandatory)][object]$Controller)
    $disks = @($Vm.disks | Where-Object { [int]$_.controllerKey -eq [int]$Controller.key } | ForEach-Object { [int]$_.key })
    if ($Controller.kind -eq 'nvme') {
        return [pscustomobject]@{ PSTypeName = 'VMware.Vim.VirtualNVMEController'; Key = [int]$Controller.key; BusNumber = [int]$Controller.bus; Device = $disks
            DeviceInfo = [pscustomobject]@{ Label = "NVME controller $($Controller.bus)"; Summary = "NVME controller $($Controller.bus)" } }
    }
    $apiType = @{ 'ParaVirtual' = 'ParaVirtualSCSIController'; 'VirtualLsiLogicSAS' = 'VirtualLsiLogicSASController'; 'VirtualLsiLogic' = 'VirtualLsiLogicController'; 'VirtualBusLogic' = 'VirtualBusLogicController' }[[string]$Controller.type]
    [pscustomobject]@{ PSTypeName = "VMware.Vim.$apiType"; Key = [int]$Controller.key; BusNumber = [int]$Controller.bus; Device = $disks
        SharedBus = 'noSharing'; ScsiCtlrUnitNumber = 7; HotAddRemove = $true
        DeviceInfo = [pscustomobject]@{ Label = "SCSI controller $($Controller.bus)"; Summary = [string]$Controller.type } }
}

function New-FakeDiskView {
    param([Parameter(Mandatory)][object]$Disk)
    [pscustomobject]@{
        PSTypeName      = 'VMware.Vim.VirtualDisk'
        Key             = [int]$Disk.key
        ControllerKey   = [int]$Disk.controllerKey
        UnitNumber      = [int]$Disk.unitNumber
        CapacityInKB    = [long]$Disk.capacityKB
        CapacityInBytes = [long]$Disk.capacityKB * 1024
        DeviceInfo      = [pscustomobject]@{ Label = [string]$Disk.name; Summary = "$([long]$Disk.capacityKB) KB" }
        Backing         = [pscustomobject]@{ PSTypeName = 'VMware.Vim.VirtualDiskFlatVer2BackingInfo'; FileName = [string]$Disk.filename; Uuid = [string]$Disk.uuid
            DiskMode = 'persistent'; ThinProvisioned = $true }
    }
}

function New-FakeHardDiskObject {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Vm, [Parameter(Mandatory)][object]$Disk)
    [pscustomobject]@{
        PSTypeName     = 'VMware.VimAutomation.ViCore.Impl.V1.VirtualDevice.FlatHardDiskImpl'
        Name           = [string]$Disk.name
        Id             = "$($Vm.id)/$($Disk.key)"
        Filename       = [string]$Disk.filename
        CapacityKB     = [long]$Disk.capacityKB
        CapacityGB     = [double]$Disk.capacityKB / 1048576
        StorageFormat  = 'Thin'
        Persistence    = 'Persistent'
        DiskType       = 'Flat'
        ParentId       = [string]$Vm.id
        Parent         = New-FakeVmObject -Lab $Lab -Vm $Vm
        ExtensionData  = New-FakeDiskView -Disk $Disk
    }
}

function New-FakeControllerObject {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Vm, [Parameter(Mandatory)][object]$Controller)
    $view = New-FakeControllerView -Vm $Vm -Controller $Controller
    if ($Controller.kind -eq 'nvme') {
        # UNSURE: NvmeControllerImpl's property list is not in the cmdlet reference; Key and ExtensionData are.
        return [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.VirtualDevice.NvmeControllerImpl'
            Name = $view.DeviceInfo.Label; Id = "$($Vm.id)/$($Controller.key)"; Key = [int]$Controller.key; ParentId = [string]$Vm.id; ExtensionData = $view }
    }
    [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.VirtualDevice.ScsiControllerImpl'
        Name = $view.DeviceInfo.Label; Id = "$($Vm.id)/$($Controller.key)"; Key = [int]$Controller.key; Type = [string]$Controller.type
        BusSharingMode = 'NoSharing'; UnitNumber = 7; ParentId = [string]$Vm.id; ExtensionData = $view }
}

function New-FakeVMHostObject {
    param([Parameter(Mandatory)][object]$EsxHost)
    $cpu = $EsxHost.cpu
    [pscustomobject]@{
        PSTypeName      = 'VMware.VimAutomation.ViCore.Impl.V1.Inventory.VMHostImpl'
        Name            = [string]$EsxHost.name
        Id              = [string]$EsxHost.id
        ConnectionState = 'Connected'
        PowerState      = 'PoweredOn'
        Version         = [string]$EsxHost.version
        Build           = [string]$EsxHost.build
        ProcessorType   = [string]$cpu.model
        NumCpu          = [int]$cpu.cores
        CpuTotalMhz     = [int]$cpu.cores * [int]$cpu.mhz
        ExtensionData   = [pscustomobject]@{
            PSTypeName = 'VMware.Vim.HostSystem'
            Name       = [string]$EsxHost.name
            Summary    = [pscustomobject]@{ Hardware = [pscustomobject]@{ CpuModel = [string]$cpu.model; NumCpuPkgs = [int]$cpu.sockets
                    NumCpuCores = [int]$cpu.cores; NumCpuThreads = [int]$cpu.threads; CpuMhz = [int]$cpu.mhz } }
            Config     = [pscustomobject]@{ Product = [pscustomobject]@{ Version = [string]$EsxHost.version; Build = [string]$EsxHost.build } }
        }
    }
}

function Invoke-FakeReconfigVM {
    # VirtualMachine.ReconfigVM(spec): the device removals a script sends (the only change the module makes
    # through the API). UNSURE: vSphere's fault text for removing a controller that still holds disks.
    param([Parameter(Mandatory)][string]$VmId, [Parameter(Mandatory)][object]$Spec)
    $lab = Read-FakeLab
    $vm = Get-FakeLabVm -Lab $lab -Id $VmId
    $changes = @($Spec.DeviceChange)
    $lab.calls = @($lab.calls) + @([pscustomobject]@{ cmdlet = 'ReconfigVM'; parameters = @{ VM = [string]$vm.name
                Operations = (@($changes | ForEach-Object { "$($_.Operation):$($_.Device.Key)" }) -join ',') } })
    $message = Get-FakeFault -Lab $lab -Step 'ReconfigVM' -LoggedAs 'ReconfigVM'
    if ($null -ne $message) {
        Save-FakeLab -Lab $lab
        throw $message
    }
    foreach ($change in $changes) {
        $key = [int]$change.Device.Key
        if ([string]$change.Operation -ne 'remove') {
            Save-FakeLab -Lab $lab
            throw "fake vSphere: ReconfigVM operation '$($change.Operation)' is not modelled by this fake"
        }
        if ([string]$vm.powerState -ne 'PoweredOff') {
            Save-FakeLab -Lab $lab
            throw "The attempted operation cannot be performed in the current state (Powered on)."
        }
        if (@($vm.disks | Where-Object { [int]$_.controllerKey -eq $key }).Count -gt 0) {
            Save-FakeLab -Lab $lab
            throw "Invalid configuration for device '0'. (controller $key still has disks attached)"
        }
        if (@($vm.controllers | Where-Object { [int]$_.key -eq $key }).Count -eq 0) {
            Save-FakeLab -Lab $lab
            throw "The object 'vim.vm.device.VirtualDevice:$key' has already been deleted or has not been completely created"
        }
        $vm.controllers = @($vm.controllers | Where-Object { [int]$_.key -ne $key })
    }
    Save-FakeLab -Lab $lab
}
