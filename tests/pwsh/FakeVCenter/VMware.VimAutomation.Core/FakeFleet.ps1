# Fake fleet cmdlets: templates, datastores, cloning a VM from a template (New-VM -Template, synchronously or
# as a task with -RunAsync, then Wait-Task/Get-Task), Set-VM, New-HardDisk / Remove-HardDisk on a datastore,
# Remove-VM, and Get-VMGuest. What they follow (PowerCLI cmdlet reference, VMware.VimAutomation.Core):
# - New-VM -Template: the clone is powered off, keeps the template's hardware and disks (copied to -Datastore,
#   or the template's datastore), and carries -Notes as its annotation; a name already used in the inventory
#   fails the clone ("The name '<name>' already exists.", vSphere's DuplicateName fault). With -RunAsync the
#   cmdlet returns a Task at once; the VM exists only when the task has succeeded.
# - New-HardDisk -VM -CapacityGB -Datastore -StorageFormat: Thick and EagerZeroedThick take their capacity from
#   the datastore's free space at once and fail with vSphere's InsufficientDiskSpace fault when it is not there;
#   Thin takes nothing until the guest writes (UNSURE: vSphere reserves a little for the descriptor; the fake
#   takes nothing). A disk on a running VM is hot-added (SCSI and NVMe, as vSphere 6.7+ allow).
# - Remove-HardDisk [-DeletePermanently] and Remove-VM [-DeletePermanently]: without -DeletePermanently the
#   files stay on the datastore (the lab's "orphanFiles"); with it they are deleted and their space is freed.
#   Remove-VM refuses a powered-on VM (vSphere's InvalidPowerState).
# - Get-VMGuest: VMware Tools' view of the guest: IPAddress is empty until Tools run; a VM takes its address at
#   its first power-on from the lab's "guestIpPool" (a DHCP pool: each address once, in order; an empty pool
#   leaves the guest without an address).
# - Invoke-VMScript: see the function; a clone's guest (accounts, fio version) is its template's "guest".
# - A template's Notes are its "notes" (the vSphere API's VirtualMachine.Config.Annotation).
# Injected faults (lab "faults"): "CloneVM_Task" fails the next clone task, "CreateDisk" the next disk creation,
# "Destroy_Task" the next VM removal, each with the given message (or "<step>#N" for the N-th one).

function Get-FakeLabDatastore {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Name)
    @($Lab.datastores | Where-Object { $_.name -eq $Name })[0]
}

function New-FakeDatastoreObject {
    param([Parameter(Mandatory)][object]$Datastore)
    [pscustomobject]@{
        PSTypeName  = 'VMware.VimAutomation.ViCore.Impl.V1.DatastoreManagement.VmfsDatastoreImpl'
        Name        = [string]$Datastore.name
        Id          = [string]$Datastore.id
        Type        = [string]$Datastore.type
        CapacityGB  = [decimal]$Datastore.capacityGB
        FreeSpaceGB = [decimal]$Datastore.freeSpaceGB
        CapacityMB  = [decimal]$Datastore.capacityGB * 1024
        FreeSpaceMB = [decimal]$Datastore.freeSpaceGB * 1024
        Accessible  = [bool]$Datastore.accessible
        State       = $(if ($Datastore.accessible) { 'Available' } else { 'Unavailable' })
        ExtensionData = [pscustomobject]@{ PSTypeName = 'VMware.Vim.Datastore'; Name = [string]$Datastore.name
            Summary = [pscustomobject]@{ Capacity = [long]([decimal]$Datastore.capacityGB * 1GB); FreeSpace = [long]([decimal]$Datastore.freeSpaceGB * 1GB)
                Accessible = [bool]$Datastore.accessible; Type = [string]$Datastore.type } }
    }
}

function Get-Datastore {
    [CmdletBinding()]
    param([Parameter(Position = 0)][string[]]$Name)
    Assert-FakeConnected -Cmdlet 'Get-Datastore' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-Datastore' -Parameters @{ Name = ($Name -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if (-not $Name) { $Name = @('*') }
    foreach ($pattern in $Name) {
        $matched = @($lab.datastores | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern })
        if ($matched.Count -eq 0) {
            $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-Datastore' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $pattern `
                        -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetDatastore' `
                        -Message "Datastore with name '$pattern' was not found using the specified filter(s)."))
        }
        foreach ($ds in $matched) { New-FakeDatastoreObject -Datastore $ds }
    }
}

function New-FakeTemplateObject {
    param([Parameter(Mandatory)][object]$Template)
    [pscustomobject]@{
        PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.Inventory.TemplateImpl'
        Name       = [string]$Template.name
        Id         = [string]$Template.id
        ExtensionData = [pscustomobject]@{ PSTypeName = 'VMware.Vim.VirtualMachine'; Name = [string]$Template.name
            Config = [pscustomobject]@{ Template = $true; Annotation = [string]$Template.notes; Hardware = [pscustomobject]@{ NumCPU = [int]$Template.numCpu
                    Device = @(@(foreach ($c in @($Template.controllers)) { New-FakeControllerView -Vm $Template -Controller $c }) + @(foreach ($d in @($Template.disks)) { New-FakeDiskView -Disk $d })) } } }
    }
}

function Get-Template {
    [CmdletBinding()]
    param([Parameter(Position = 0)][string[]]$Name)
    Assert-FakeConnected -Cmdlet 'Get-Template' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-Template' -Parameters @{ Name = ($Name -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if (-not $Name) { $Name = @('*') }
    foreach ($pattern in $Name) {
        $matched = @($lab.templates | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern })
        if ($matched.Count -eq 0) {
            $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-Template' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $pattern `
                        -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetTemplate' `
                        -Message "Template with name '$pattern' was not found using the specified filter(s)."))
        }
        foreach ($t in $matched) { New-FakeTemplateObject -Template $t }
    }
}

function New-FakeTaskObject {
    param([Parameter(Mandatory)][object]$Task)
    [pscustomobject]@{
        PSTypeName      = 'VMware.VimAutomation.ViCore.Impl.V1.Task.TaskImpl'
        Id              = [string]$Task.id
        Name            = [string]$Task.name
        State           = [string]$Task.state
        PercentComplete = $(if ($Task.state -eq 'Running') { 0 } else { 100 })
        Description     = [string]$Task.description
        Result          = $null
        ExtensionData   = [pscustomobject]@{ Info = [pscustomobject]@{ Key = [string]$Task.id; State = ([string]$Task.state).ToLowerInvariant()
                Error = $(if ($Task.error) { [pscustomobject]@{ LocalizedMessage = [string]$Task.error } } else { $null }) } }
    }
}

function Add-FakeTask {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Name, [Parameter(Mandatory)][string]$Description, [Parameter(Mandatory)][object]$Spec)
    $n = @($Lab.tasks).Count + 1
    $task = [pscustomobject]@{ id = "Task-task-$n"; name = $Name; description = $Description; state = 'Running'; spec = $Spec; error = $null; result = $null }
    $Lab.tasks = @($Lab.tasks) + @($task)
    $task
}

function Test-FakeNameTaken {
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Name)
    @(@($Lab.vms) + @($Lab.templates) | Where-Object { $_ -and $_.name -eq $Name }).Count -gt 0
}

function Complete-FakeClone {
    # Runs a clone task to its end (the VM exists, or the task holds the error). Returns the task.
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Task)
    if ($Task.state -ne 'Running') { return $Task }
    $spec = $Task.spec
    $Lab.calls = @($Lab.calls) + @([pscustomobject]@{ cmdlet = 'CloneVM_Task'; parameters = @{ Name = [string]$spec.name; Template = [string]$spec.template } })
    $message = Get-FakeFault -Lab $Lab -Step 'CloneVM_Task' -LoggedAs 'CloneVM_Task'
    $template = @($Lab.templates | Where-Object { $_.name -eq $spec.template })[0]
    if ($null -eq $message -and (Test-FakeNameTaken -Lab $Lab -Name $spec.name)) { $message = "The name '$($spec.name)' already exists." }
    $ds = Get-FakeLabDatastore -Lab $Lab -Name $spec.datastore
    if ($null -eq $message -and (-not $ds -or -not $ds.accessible)) { $message = "The datastore '$($spec.datastore)' is not accessible." }
    if ($null -ne $message) {
        $Task.state = 'Error'
        $Task.error = $message
        return $Task
    }
    $Lab.nextVmNumber = [int]$Lab.nextVmNumber + 1
    $id = "VirtualMachine-vm-$($Lab.nextVmNumber)"
    $disks = @(foreach ($d in @($template.disks)) {
            $copy = $d | ConvertTo-Json -Depth 8 | ConvertFrom-Json
            $suffix = if ([int]$d.key -eq [int]@($template.disks)[0].key) { '' } else { "_$([int]$d.key - 2000)" }
            $copy.filename = "[$($spec.datastore)] $($spec.name)/$($spec.name)$suffix.vmdk"
            $copy.uuid = '6000C29' + ([guid]::NewGuid().ToString().Substring(7))
            Set-FakeProperty -Object $copy -Name 'datastore' -Value ([string]$spec.datastore)
            Set-FakeProperty -Object $copy -Name 'allocatedGB' -Value 0
            $copy })
    $vm = [pscustomobject]@{
        name = [string]$spec.name; id = $id; host = [string]$spec.vmhost; powerState = 'PoweredOff'; bootTime = $null
        tools = [string]$template.tools; numCpu = [int]$template.numCpu; memoryGB = [double]$template.memoryGB
        extraConfig = ($template.extraConfig | ConvertTo-Json -Depth 4 | ConvertFrom-Json); notes = [string]$spec.notes
        controllers = @($template.controllers | ConvertTo-Json -Depth 6 | ConvertFrom-Json); disks = $disks; template = [string]$template.name
        guest = $(if ($template.guest) { $template.guest | ConvertTo-Json -Depth 6 | ConvertFrom-Json } else { $null })  # the image's accounts and fio
    }
    $Lab.vms = @($Lab.vms) + @($vm)
    $Task.state = 'Success'
    $Task.result = $id
    $Task
}

function New-VM {
    [CmdletBinding(SupportsShouldProcess, DefaultParameterSetName = 'Template')]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Template')][string]$Name,
        [Parameter(Mandatory, ParameterSetName = 'Template')][object]$Template,
        [object]$VMHost,
        [object]$ResourcePool,
        [object]$Datastore,
        [ValidateSet('Thin', 'Thick', 'EagerZeroedThick')][string]$DiskStorageFormat,
        [string]$Notes,
        [switch]$RunAsync
    )
    Assert-FakeConnected -Cmdlet 'New-VM' -Caller $PSCmdlet
    $templateName = if ($Template -is [string]) { $Template } else { [string]$Template.Name }
    $hostName = if ($null -eq $VMHost) { '' } elseif ($VMHost -is [string]) { $VMHost } else { [string]$VMHost.Name }
    $dsName = if ($null -eq $Datastore) { '' } elseif ($Datastore -is [string]) { $Datastore } else { [string]$Datastore.Name }
    $lab = Open-FakeCall -Cmdlet 'New-VM' -Parameters @{ Name = $Name; Template = $templateName; VMHost = $hostName; Datastore = $dsName; Notes = $Notes; RunAsync = [bool]$RunAsync } -Caller $PSCmdlet
    $template = @($lab.templates | Where-Object { Test-FakeName -Name $_.name -Pattern $templateName })
    if ($template.Count -ne 1) {
        Save-FakeLab -Lab $lab
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-VM' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $templateName `
                    -ErrorId 'Core_ObnSelector_SelectObjectByNameCore_ObjectNotFound,VMware.VimAutomation.ViCore.Cmdlets.Commands.NewVM' `
                    -Message "Could not find Template with name '$templateName'."))
    }
    if (-not $hostName) {
        if ($ResourcePool) { $hostName = [string]$lab.hosts[0].name }  # UNSURE: DRS placement; the fake takes the first host
        else {
            Save-FakeLab -Lab $lab
            $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-VM' -Kind 'InvalidArgument' -Category InvalidArgument -Target $Name `
                        -ErrorId 'Core_NewVM_DoWork_NoHostOrPool,VMware.VimAutomation.ViCore.Cmdlets.Commands.NewVM' -Message 'Either VMHost or ResourcePool must be specified.'))
        }
    }
    if (-not (Get-FakeLabHost -Lab $lab -Name $hostName)) {
        Save-FakeLab -Lab $lab
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-VM' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $hostName `
                    -ErrorId 'Core_ObnSelector_SelectObjectByNameCore_ObjectNotFound,VMware.VimAutomation.ViCore.Cmdlets.Commands.NewVM' `
                    -Message "Could not find VMHost with name '$hostName'."))
    }
    if (-not $dsName) { $dsName = [string]$template[0].datastore }
    if (-not $PSCmdlet.ShouldProcess($Name, 'New-VM')) { Save-FakeLab -Lab $lab; return }
    $task = Add-FakeTask -Lab $lab -Name 'CloneVM_Task' -Description "Clone virtual machine $Name" -Spec ([pscustomobject]@{
            name = $Name; template = [string]$template[0].name; vmhost = $hostName; datastore = $dsName; notes = [string]$Notes })
    if ($RunAsync) {
        Save-FakeLab -Lab $lab
        return New-FakeTaskObject -Task $task
    }
    $task = Complete-FakeClone -Lab $lab -Task $task
    Save-FakeLab -Lab $lab
    if ($task.state -ne 'Success') {
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-VM' -Kind 'VimException' -Category InvalidOperation -Target $Name `
                    -ErrorId 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed,VMware.VimAutomation.ViCore.Cmdlets.Commands.NewVM' -Message $task.error))
    }
    New-FakeVmObject -Lab $lab -Vm (Get-FakeLabVm -Lab $lab -Id $task.result)
}

function Get-Task {
    [CmdletBinding()]
    param([string[]]$Id)
    Assert-FakeConnected -Cmdlet 'Get-Task' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-Task' -Parameters @{ Id = ($Id -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    foreach ($t in @($lab.tasks | Where-Object { -not $Id -or $Id -contains $_.id })) { New-FakeTaskObject -Task $t }
}

function Wait-Task {
    # Waits for each task; returns the task's result (the new VM of a clone); a failed task is a terminating
    # error with vSphere's message, as PowerCLI reports it.
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$Task)
    process {
        Assert-FakeConnected -Cmdlet 'Wait-Task' -Caller $PSCmdlet
        foreach ($one in $Task) {
            $lab = Open-FakeCall -Cmdlet 'Wait-Task' -Parameters @{ Task = [string]$one.Id } -Caller $PSCmdlet
            $entry = @($lab.tasks | Where-Object { $_.id -eq [string]$one.Id })[0]
            if (-not $entry) {
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Wait-Task' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $one.Id `
                            -ErrorId 'Core_WaitTask_TaskNotFound,VMware.VimAutomation.ViCore.Cmdlets.Commands.WaitTask' -Message "Task '$($one.Id)' was not found."))
            }
            $entry = Complete-FakeClone -Lab $lab -Task $entry
            Save-FakeLab -Lab $lab
            if ($entry.state -ne 'Success') {
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Wait-Task' -Kind 'VimException' -Category InvalidOperation -Target $one.Id `
                            -ErrorId 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed,VMware.VimAutomation.ViCore.Cmdlets.Commands.WaitTask' -Message $entry.error))
            }
            New-FakeVmObject -Lab $lab -Vm (Get-FakeLabVm -Lab $lab -Id $entry.result)
        }
    }
}

function Set-VM {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [int]$NumCpu, [decimal]$MemoryGB, [string]$Notes)
    process {
        Assert-FakeConnected -Cmdlet 'Set-VM' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Set-VM' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Name } }) -join ','); NumCpu = $NumCpu; MemoryGB = $MemoryGB } -Caller $PSCmdlet
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            if (($PSBoundParameters.ContainsKey('NumCpu') -or $PSBoundParameters.ContainsKey('MemoryGB')) -and [string]$labVm.powerState -ne 'PoweredOff') {
                # UNSURE: CPU/memory hot add, when the VM has it enabled, allows this on a running VM; the fake's VMs do not have it.
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeStateError -Cmdlet 'Set-VM' -Vm $labVm))
            }
            if ($PSCmdlet.ShouldProcess($labVm.name, 'Set-VM')) {
                if ($PSBoundParameters.ContainsKey('NumCpu')) { $labVm.numCpu = $NumCpu }
                if ($PSBoundParameters.ContainsKey('MemoryGB')) { $labVm.memoryGB = [double]$MemoryGB }
                if ($PSBoundParameters.ContainsKey('Notes')) { Set-FakeProperty -Object $labVm -Name 'notes' -Value $Notes }
            }
            Save-FakeLab -Lab $lab
            New-FakeVmObject -Lab $lab -Vm $labVm
        }
    }
}

function New-HardDisk {
    [CmdletBinding(SupportsShouldProcess)]
    param(
        [Parameter(Mandatory, ValueFromPipeline)][object]$VM,
        [Parameter(Mandatory)][decimal]$CapacityGB,
        [object]$Datastore,
        [ValidateSet('Thin', 'Thick', 'EagerZeroedThick')][string]$StorageFormat = 'Thick',
        [object]$Controller
    )
    process {
        Assert-FakeConnected -Cmdlet 'New-HardDisk' -Caller $PSCmdlet
        $dsName = if ($null -eq $Datastore) { '' } elseif ($Datastore -is [string]) { $Datastore } else { [string]$Datastore.Name }
        $lab = Open-FakeCall -Cmdlet 'New-HardDisk' -Parameters @{ VM = $(if ($VM -is [string]) { $VM } else { [string]$VM.Name }); CapacityGB = $CapacityGB
            Datastore = $dsName; StorageFormat = $StorageFormat; Controller = $(if ($Controller) { [int]$Controller.Key } else { $null }) } -Caller $PSCmdlet
        $labVm = @(Resolve-FakeVmArgument -Lab $lab -Value $VM)[0]
        if (-not $dsName) { $dsName = ([string]@($labVm.disks)[0].filename) -replace '^\[([^\]]+)\].*$', '$1' }
        $ds = Get-FakeLabDatastore -Lab $lab -Name $dsName
        $fail = {
            param($kind, $id, $category, $message)
            Save-FakeLab -Lab $lab
            $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-HardDisk' -Kind $kind -Category $category -Target $labVm.name `
                        -ErrorId "$id,VMware.VimAutomation.ViCore.Cmdlets.Commands.VirtualDevice.NewHardDisk" -Message $message))
        }
        if (-not $ds) { & $fail 'ObjectNotFound' 'Core_ObnSelector_SelectObjectByNameCore_ObjectNotFound' ObjectNotFound "Could not find Datastore with name '$dsName'." }
        $target = $null
        if ($Controller) {
            $target = @($labVm.controllers | Where-Object { [int]$_.key -eq [int]$Controller.Key })[0]
            if (-not $target) { & $fail 'ObjectNotFound' 'Client20_VmServiceImpl_ControllerNotFound' ObjectNotFound "The controller with key $($Controller.Key) does not exist on VM '$($labVm.name)'." }
        }
        else {
            # UNSURE: PowerCLI's choice without -Controller; the fake takes the first SCSI controller, as vSphere's default placement does.
            $target = @($labVm.controllers | Where-Object { $_.kind -eq 'scsi' } | Sort-Object -Property key)[0]
        }
        if (-not $PSCmdlet.ShouldProcess($labVm.name, 'New-HardDisk')) { Save-FakeLab -Lab $lab; return }
        $lab.calls = @($lab.calls) + @([pscustomobject]@{ cmdlet = 'CreateDisk'; parameters = @{ VM = [string]$labVm.name; Datastore = $dsName } })
        $message = Get-FakeFault -Lab $lab -Step 'CreateDisk' -LoggedAs 'CreateDisk'
        if ($null -ne $message) { & $fail 'VimException' 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed' InvalidOperation $message }
        if (-not $ds.accessible) { & $fail 'VimException' 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed' ResourceUnavailable "The datastore '$dsName' is not accessible." }
        $allocated = 0
        if ($StorageFormat -ne 'Thin') {
            if ([decimal]$ds.freeSpaceGB -lt $CapacityGB) {
                & $fail 'VimException' 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed' LimitsExceeded "Insufficient disk space on datastore '$dsName'."
            }
            $allocated = $CapacityGB
            $ds.freeSpaceGB = [decimal]$ds.freeSpaceGB - $CapacityGB
        }
        $number = @($labVm.disks).Count + 1
        $key = 2000
        $keys = @($labVm.disks | ForEach-Object { [int]$_.key })
        while ($keys -contains $key) { $key += 1 }
        $files = @($labVm.disks | ForEach-Object { [string]$_.filename }) + @($lab.orphanFiles)
        $n = 1
        while ($files -contains "[$dsName] $($labVm.name)/$($labVm.name)_$n.vmdk") { $n += 1 }
        $disk = [pscustomobject]@{ key = $key; name = "Hard disk $number"; controllerKey = [int]$target.key; unitNumber = 0; capacityKB = [long]($CapacityGB * 1048576)
            filename = "[$dsName] $($labVm.name)/$($labVm.name)_$n.vmdk"; uuid = '6000C29' + ([guid]::NewGuid().ToString().Substring(7))
            datastore = $dsName; allocatedGB = $allocated; storageFormat = $StorageFormat }
        $labVm.disks = @($labVm.disks) + @($disk)
        Move-FakeDisk -Vm $labVm -Disk $disk -Controller $target
        Save-FakeLab -Lab $lab
        New-FakeHardDiskObject -Lab $lab -Vm $labVm -Disk $disk
    }
}

function Remove-FakeDiskFile {
    # The disk's file deleted (its space back on the datastore), or, without -DeletePermanently, left behind.
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][object]$Disk, [bool]$Delete)
    if (-not $Delete) {
        $Lab.orphanFiles = @($Lab.orphanFiles) + @([string]$Disk.filename)
        return
    }
    $ds = Get-FakeLabDatastore -Lab $Lab -Name ([string]$Disk.datastore)
    if ($ds -and $Disk.allocatedGB) { $ds.freeSpaceGB = [decimal]$ds.freeSpaceGB + [decimal]$Disk.allocatedGB }
}

function Remove-HardDisk {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param([Parameter(Mandatory, ValueFromPipeline)][object[]]$HardDisk, [switch]$DeletePermanently)
    process {
        Assert-FakeConnected -Cmdlet 'Remove-HardDisk' -Caller $PSCmdlet
        foreach ($one in $HardDisk) {
            $lab = Open-FakeCall -Cmdlet 'Remove-HardDisk' -Parameters @{ HardDisk = [string]$one.Name; Filename = [string]$one.Filename; DeletePermanently = [bool]$DeletePermanently } -Caller $PSCmdlet
            $labVm, $disk = Get-FakeDiskEntry -Lab $lab -HardDisk $one
            if (-not $disk) {
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Remove-HardDisk' -Kind 'VimException' -Category ObjectNotFound -Target $one.Name `
                            -ErrorId 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed,VMware.VimAutomation.ViCore.Cmdlets.Commands.VirtualDevice.RemoveHardDisk' `
                            -Message "The object 'vim.vm.device.VirtualDisk:$($one.ExtensionData.Key)' has already been deleted or has not been completely created"))
            }
            if ($PSCmdlet.ShouldProcess($one.Name, 'Remove-HardDisk')) {
                $labVm.disks = @($labVm.disks | Where-Object { [int]$_.key -ne [int]$disk.key })
                Remove-FakeDiskFile -Lab $lab -Disk $disk -Delete ([bool]$DeletePermanently)
            }
            Save-FakeLab -Lab $lab
        }
    }
}

function Remove-VM {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM, [switch]$DeletePermanently, [switch]$RunAsync)
    process {
        Assert-FakeConnected -Cmdlet 'Remove-VM' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Remove-VM' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Id } }) -join ','); DeletePermanently = [bool]$DeletePermanently } -Caller $PSCmdlet
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            if (-not $labVm) { continue }
            if ([string]$labVm.powerState -ne 'PoweredOff') {
                Save-FakeLab -Lab $lab
                # UNSURE: PowerCLI's wording; vSphere's fault is InvalidPowerState.
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Remove-VM' -Kind 'InvalidVmState' -Category InvalidOperation -Target $labVm.name `
                            -ErrorId 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed,VMware.VimAutomation.ViCore.Cmdlets.Commands.RemoveVM' `
                            -Message 'The attempted operation cannot be performed in the current state (Powered on).'))
            }
            if (-not $PSCmdlet.ShouldProcess($labVm.name, 'Remove-VM')) { continue }
            $lab.calls = @($lab.calls) + @([pscustomobject]@{ cmdlet = 'Destroy_Task'; parameters = @{ VM = [string]$labVm.id } })
            $message = Get-FakeFault -Lab $lab -Step 'Destroy_Task' -LoggedAs 'Destroy_Task'
            if ($null -ne $message) {
                Save-FakeLab -Lab $lab
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Remove-VM' -Kind 'VimException' -Category InvalidOperation -Target $labVm.name `
                            -ErrorId 'Client20_TaskServiceImpl_CheckServerSideTaskUpdates_OperationFailed,VMware.VimAutomation.ViCore.Cmdlets.Commands.RemoveVM' -Message $message))
            }
            foreach ($disk in @($labVm.disks)) { Remove-FakeDiskFile -Lab $lab -Disk $disk -Delete ([bool]$DeletePermanently) }
            $lab.vms = @($lab.vms | Where-Object { $_.id -ne $labVm.id })
            Save-FakeLab -Lab $lab
        }
        Save-FakeLab -Lab $lab
    }
}

function Get-VMGuest {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$VM)
    process {
        Assert-FakeConnected -Cmdlet 'Get-VMGuest' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Get-VMGuest' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Name } }) -join ',') } -Caller $PSCmdlet
        Save-FakeLab -Lab $lab
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            $running = [string]$labVm.powerState -eq 'PoweredOn' -and [string]$labVm.tools -ne 'never'
            [pscustomobject]@{
                PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.VM.Guest.VMGuestImpl'
                VmName     = [string]$labVm.name
                VmId       = [string]$labVm.id
                State      = $(if ($running) { 'Running' } else { 'NotRunning' })
                IPAddress  = [string[]]@($(if ($running -and $labVm.guestIp) { [string]$labVm.guestIp }))
                OSFullName = 'Debian GNU/Linux 12 (64-bit)'
            }
        }
    }
}

function Invoke-VMScript {
    # VMware Tools guest operations (PowerCLI reference, Invoke-VMScript): the VM must be powered on with
    # VMware Tools running, and the guest must accept -GuestCredential (or -GuestUser/-GuestPassword); the
    # result is a VMScriptResult with ScriptOutput (for Bash, the script's standard output and error together)
    # and ExitCode. The fake guest is DATA: a VM's "guest" (copied from its template at the clone) holds its
    # "accounts" (user, password) and "fio" (what `fio --version` prints, null when fio is not installed).
    # The fake runs only the script 'fio --version' (anything else is refused, saying so: it is not a shell).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, ValueFromPipeline)][object[]]$VM,
        [Parameter(Mandatory)][string]$ScriptText,
        [ValidateSet('PowerShell', 'Bat', 'Bash')][string]$ScriptType,
        [pscredential]$GuestCredential,
        [string]$GuestUser,
        [object]$GuestPassword,
        [int]$ToolsWaitSecs = 20
    )
    process {
        Assert-FakeConnected -Cmdlet 'Invoke-VMScript' -Caller $PSCmdlet
        # the call log has the user and the script, never the password
        $user = if ($GuestCredential) { $GuestCredential.UserName } else { $GuestUser }
        $lab = Open-FakeCall -Cmdlet 'Invoke-VMScript' -Parameters @{ VM = (@($VM | ForEach-Object { if ($_ -is [string]) { $_ } else { $_.Name } }) -join ','); ScriptText = $ScriptText
            ScriptType = $ScriptType; GuestUser = $user } -Caller $PSCmdlet
        Save-FakeLab -Lab $lab
        $plain = if ($GuestCredential) { $GuestCredential.GetNetworkCredential().Password }
        elseif ($GuestPassword -is [securestring]) { [System.Net.NetworkCredential]::new('', $GuestPassword).Password }
        else { [string]$GuestPassword }
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) {
            $fail = {
                param($kind, $category, $message)
                # UNSURE: PowerCLI wraps the vSphere fault in 'Operation "Invoke-VMScript" failed for VM ...'; the exact wording varies by release.
                $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Invoke-VMScript' -Kind $kind -Category $category -Target $labVm.name `
                            -ErrorId 'Client20_VmGuestServiceImpl_RunScriptInGuest_Failed,VMware.VimAutomation.ViCore.Cmdlets.Commands.InvokeVmScript' `
                            -Message "Operation `"Invoke-VMScript`" failed for VM `"$($labVm.name)`" for the following reason: $message"))
            }
            if ([string]$labVm.powerState -ne 'PoweredOn') { & $fail 'InvalidVmState' InvalidOperation "The attempted operation cannot be performed in the current state ($($labVm.powerState))." }
            if ([string]$labVm.tools -eq 'never') { & $fail 'VimException' ResourceUnavailable 'The guest operations agent could not be contacted.' }
            $guest = $labVm.guest
            $ok = $guest -and @($guest.accounts | Where-Object { $_.user -ceq $user -and $_.password -ceq $plain }).Count -gt 0
            if (-not $ok) { & $fail 'InvalidGuestLogin' AuthenticationError 'Failed to authenticate with the guest operating system using the supplied credentials.' }
            if ($ScriptText.Trim() -ne 'fio --version') {
                throw "fake PowerCLI: the fake guest runs only 'fio --version' (asked: $ScriptText); describe what a test needs in the lab's guest data"
            }
            $output, $exit = if ($guest.fio) { "$($guest.fio)`n", 0 } else { "bash: line 1: fio: command not found`n", 127 }
            [pscustomobject]@{
                PSTypeName   = 'VMware.VimAutomation.ViCore.Impl.V1.VM.Guest.VMScriptResultImpl'
                VM           = New-FakeVmObject -Lab $lab -Vm $labVm
                ScriptOutput = $output
                ExitCode     = $exit
            }
        }
    }
}
