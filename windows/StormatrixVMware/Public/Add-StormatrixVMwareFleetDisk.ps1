function Add-StormatrixVMwareFleetDisk {
    <#
    .SYNOPSIS
    Gives each worker of a fleet its test disk on the datastore under test (New-HardDisk -Datastore) on a
    controller of the wanted type, and returns one object per disk as soon as it exists.

    .DESCRIPTION
    Every VM is checked first (it exists and carries the fleet's annotation), then the datastore (it
    exists, is accessible and, unless the disks are thin, has room for all of them), so a refusal changes
    nothing. Then, per VM: a running VM is powered off (a new controller needs it off; the fleet is
    power-cycled after the attach anyway), New-HardDisk -VM -CapacityGB -Datastore -StorageFormat creates
    the disk and it is returned at once (Stage 'Created'), then it is moved onto an empty controller of
    -ControllerType or a new one (New-ScsiController -HardDisk, or New-NvmeController + Set-HardDisk) and
    returned again (Stage 'Attached').

    A disk of an interrupted earlier call (on the datastore, not one of the clone's own disks) is taken
    as it is, not created twice.

    .PARAMETER VMId
    The workers' ids (from New-StormatrixVMwareFleet).

    .PARAMETER RunId
    The fleet's run id; a VM without it in its annotation is refused.

    .PARAMETER Datastore
    The datastore under test, by exact name.

    .PARAMETER CapacityGB
    Each test disk's size.

    .PARAMETER ControllerType
    ParaVirtual, LsiLogicSAS, LsiLogic or NVMe.

    .PARAMETER StorageFormat
    EagerZeroedThick (the default: the blocks are allocated and zeroed before the run, so the first
    writes are not measured as allocations), Thick or Thin.

    .PARAMETER BaseFilename
    The files of the clones' own disks (New-StormatrixVMwareFleet's Disks): never taken for a test disk.

    .EXAMPLE
    Add-StormatrixVMwareFleetDisk -VMId VirtualMachine-vm-201 -RunId 1a2b3c4d5e6f -Datastore bb-iscsi -CapacityGB 10 -ControllerType ParaVirtual -BaseFilename '[ds1] smx-w01/smx-w01.vmdk'

    .OUTPUTS
    PSCustomObject per disk and stage: Kind 'disk', Stage ('Created', 'Existing', 'Attached'), VMId, VMName,
    Datastore, Filename, Name, ControllerType.

    .NOTES
    vSphere takes a thick disk's capacity from the datastore when it is created and refuses it when the
    space is not there ("Insufficient disk space"); the space check before the first disk turns that into
    one refusal instead of a fleet half attached.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string[]]$VMId,
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId,
        [Parameter(Mandatory)][string]$Datastore,
        [Parameter(Mandatory)][ValidateRange(0.001, 62000)][decimal]$CapacityGB,
        [Parameter(Mandatory)][ValidateSet('ParaVirtual', 'LsiLogicSAS', 'LsiLogic', 'NVMe')][string]$ControllerType,
        [ValidateSet('EagerZeroedThick', 'Thick', 'Thin')][string]$StorageFormat = 'EagerZeroedThick',
        [AllowEmptyCollection()][string[]]$BaseFilename = @()
    )
    $members = Get-StormatrixVMwareFleetMember -VMId $VMId -RunId $RunId
    $store = Resolve-StormatrixVMwareInventoryItem -Kind Datastore -Name $Datastore
    if (-not $store.ExtensionData.Summary.Accessible) {
        throw (New-StormatrixVMwareError -ErrorId 'DatastoreUnavailable' -Category 'ResourceUnavailable' -TargetObject $Datastore `
                -Message "datastore '$Datastore' is not accessible; nothing was created")
    }
    $todo = New-Object System.Collections.Generic.List[object]
    foreach ($vm in $members) {
        $found = Find-StormatrixVMwareFleetDisk -VM $vm -Datastore $Datastore -BaseFilename $BaseFilename
        $todo.Add([pscustomobject]@{ VM = $vm; Disk = @($found)[0] })
    }
    $missing = @($todo | Where-Object { $null -eq $_.Disk }).Count
    $needed = [decimal]$missing * $CapacityGB
    if ($StorageFormat -ne 'Thin' -and [decimal]$store.FreeSpaceGB -lt $needed) {
        throw (New-StormatrixVMwareError -ErrorId 'InsufficientSpace' -Category 'LimitsExceeded' -TargetObject $Datastore `
                -Message "datastore '$Datastore' has $([decimal]$store.FreeSpaceGB) GB free; $missing $StorageFormat disks of $CapacityGB GB need $needed GB; nothing was created")
    }
    foreach ($item in $todo) {
        $vm = $item.VM
        if (-not $PSCmdlet.ShouldProcess([string]$vm.Name, "add a $CapacityGB GB $StorageFormat disk on '$Datastore' on a $ControllerType controller")) { continue }
        if ([string]$vm.PowerState -ne 'PoweredOff') {
            Set-StormatrixVMwarePower -VM $vm -State Off
        }
        $disk = $item.Disk
        $stage = 'Existing'
        if ($null -eq $disk) {
            try {
                $disk = New-HardDisk -VM $vm -CapacityGB $CapacityGB -Datastore $store -StorageFormat $StorageFormat -Confirm:$false -ErrorAction Stop
            }
            catch {
                throw (New-StormatrixVMwareError -ErrorId 'DiskCreateFailed' -Cause $_ -TargetObject $vm.Name -Message "creating the test disk of VM '$($vm.Name)' on datastore '$Datastore' failed")
            }
            $stage = 'Created'
        }
        $record = [ordered]@{ Kind = 'disk'; Stage = $stage; VMId = [string]$vm.Id; VMName = [string]$vm.Name; Datastore = $Datastore
            Filename = [string]$disk.Filename; Name = [string]$disk.Name; ControllerType = $null }
        [pscustomobject]$record
        $controllers = @(Get-StormatrixVMwareControllerList -VM $vm)
        $current = @($controllers | Where-Object { @($_.Disks) -contains [int]$disk.ExtensionData.Key })[0]
        if (-not $current -or $current.Type -ne $ControllerType -or @($current.Disks).Count -ne 1) {
            Move-StormatrixVMwareDisk -VM $vm -HardDisk $disk -Type $ControllerType -Controllers $controllers
        }
        $record.Stage = 'Attached'
        $record.ControllerType = $ControllerType
        [pscustomobject]$record
    }
}
