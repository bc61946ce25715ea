function New-StormatrixVMwareFleet {
    <#
    .SYNOPSIS
    Clones the worker VMs of a benchmark fleet from a template (New-VM -Template), each annotated with the
    fleet's run id, and returns one object per VM as soon as it exists.

    .DESCRIPTION
    For each name of -Name that no VM has yet, New-VM -Template -VMHost [-Datastore] -Notes -RunAsync
    starts a clone task (at most -Parallel at a time); as each task ends, the new VM is returned at once
    (Stage 'Created', with its id and its disks' files), then its vCPUs and memory are set (Set-VM) and it
    is returned again (Stage 'Configured'). The clones stay powered off: the test disk is attached next
    (Add-StormatrixVMwareFleetDisk) and Restart-StormatrixVMwareFleet powers them on.

    A name whose VM already carries this fleet's annotation is an earlier, interrupted deploy of the same
    fleet: it is configured and returned, not cloned again. A name used by any other VM stops the call
    before anything is created.

    .PARAMETER Name
    The workers' names (the caller journals them before calling, so a crash leaves nothing unnamed).

    .PARAMETER Template
    The template's exact name.

    .PARAMETER VMHost
    The ESXi host the workers run on, by exact name.

    .PARAMETER Datastore
    The datastore for the workers' own disks (default: the template's). The datastore under test is
    Add-StormatrixVMwareFleetDisk's.

    .PARAMETER RunId
    The fleet's run id (hexadecimal), written into every worker's annotation.

    .PARAMETER NumCpu
    vCPUs per worker.

    .PARAMETER MemoryGB
    Memory per worker, in GB.

    .PARAMETER Parallel
    How many clone tasks run at once.

    .EXAMPLE
    New-StormatrixVMwareFleet -Name smx-w01, smx-w02 -Template smx-worker-tpl -VMHost esx01.lab -RunId 1a2b3c4d5e6f -NumCpu 4 -MemoryGB 4

    .OUTPUTS
    PSCustomObject per VM and stage: Kind 'vm', Stage ('Created', 'Configured'), Name, Id, PowerState,
    Disks (the files of the clone's own disks).

    .NOTES
    Clone tasks that were started before one of them failed still run to their end in vCenter; they are
    waited for and returned before the failure is reported, so that the caller journals every VM that
    exists. The annotation, not the name, is what marks a worker: the removal functions check it.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateCount(1, 256)][string[]]$Name,
        [Parameter(Mandatory)][string]$Template,
        [Parameter(Mandatory)][string]$VMHost,
        [string]$Datastore = '',
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId,
        [ValidateRange(1, 768)][int]$NumCpu = 4,
        [ValidateRange(0.25, 24576)][decimal]$MemoryGB = 4,
        [ValidateRange(1, 64)][int]$Parallel = 8
    )
    $source = Resolve-StormatrixVMwareInventoryItem -Kind Template -Name $Template
    $esx = Resolve-StormatrixVMwareHost -Name $VMHost
    $store = $null
    if ($Datastore) {
        $store = Resolve-StormatrixVMwareInventoryItem -Kind Datastore -Name $Datastore
    }
    try {
        $existing = @(Get-VM -ErrorAction Stop)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Cause $_ -Message 'cannot list the inventory''s VMs')
    }
    $resume = @{}
    foreach ($one in $Name) {
        $same = @($existing | Where-Object { $_.Name -eq $one })
        if ($same.Count -eq 0) { continue }
        if ($same.Count -gt 1 -or -not (Test-StormatrixVMwareFleetOwner -VM $same[0] -RunId $RunId)) {
            throw (New-StormatrixVMwareError -ErrorId 'NameTaken' -Category 'ResourceExists' -TargetObject $one `
                    -Message "a VM named '$one' exists and is not a worker of fleet $RunId; nothing was created: choose another name prefix or remove that VM")
        }
        $resume[$one] = $same[0]
    }
    $note = Get-StormatrixVMwareFleetNote -RunId $RunId
    $configure = {
        param($vm)
        [pscustomobject]@{ Kind = 'vm'; Stage = 'Created'; Name = [string]$vm.Name; Id = [string]$vm.Id; PowerState = [string]$vm.PowerState
            Disks = @(Get-HardDisk -VM $vm -ErrorAction Stop | ForEach-Object { [string]$_.Filename }) }
        try {
            if ([int]$vm.NumCpu -ne $NumCpu -or [decimal]$vm.MemoryGB -ne $MemoryGB) {
                $vm = Set-VM -VM $vm -NumCpu $NumCpu -MemoryGB $MemoryGB -Confirm:$false -ErrorAction Stop
            }
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'ConfigureFailed' -Cause $_ -TargetObject $vm.Name -Message "setting $NumCpu vCPUs and $MemoryGB GB on VM '$($vm.Name)' failed")
        }
        [pscustomobject]@{ Kind = 'vm'; Stage = 'Configured'; Name = [string]$vm.Name; Id = [string]$vm.Id; PowerState = [string]$vm.PowerState; Disks = @() }
    }
    foreach ($one in $Name) {
        if ($resume.ContainsKey($one) -and $PSCmdlet.ShouldProcess($one, "configure worker of fleet $RunId")) {
            & $configure $resume[$one]
        }
    }
    $queue = New-Object System.Collections.Generic.Queue[string]
    foreach ($one in $Name) {
        if (-not $resume.ContainsKey($one) -and $PSCmdlet.ShouldProcess($one, "clone template '$Template' on '$VMHost'")) { $queue.Enqueue($one) }
    }
    $running = New-Object System.Collections.Generic.List[object]
    $failure = $null
    while ($queue.Count -gt 0 -or $running.Count -gt 0) {
        while ($null -eq $failure -and $queue.Count -gt 0 -and $running.Count -lt $Parallel) {
            $one = $queue.Dequeue()
            $clone = @{ Name = $one; Template = $source; VMHost = $esx; Notes = $note; RunAsync = $true; Confirm = $false }
            if ($store) { $clone['Datastore'] = $store }
            try {
                $running.Add([pscustomobject]@{ Name = $one; Task = (New-VM @clone -ErrorAction Stop) })
            }
            catch {
                $failure = New-StormatrixVMwareError -ErrorId 'CloneFailed' -Cause $_ -TargetObject $one -Message "cloning template '$Template' as VM '$one' failed"
            }
        }
        if ($null -ne $failure) { $queue.Clear() }
        if ($running.Count -eq 0) { break }
        $next = $running[0]
        $running.RemoveAt(0)
        try {
            $vm = Wait-Task -Task $next.Task -ErrorAction Stop
        }
        catch {
            if ($null -eq $failure) {
                $failure = New-StormatrixVMwareError -ErrorId 'CloneFailed' -Cause $_ -TargetObject $next.Name -Message "cloning template '$Template' as VM '$($next.Name)' failed"
            }
            continue
        }
        if ($null -eq $failure) { & $configure $vm }
        else {
            [pscustomobject]@{ Kind = 'vm'; Stage = 'Created'; Name = [string]$vm.Name; Id = [string]$vm.Id; PowerState = [string]$vm.PowerState; Disks = @() }
        }
    }
    if ($null -ne $failure) { throw $failure }
}
