function Get-StormatrixVMwareFleetTarget {
    <#
    .SYNOPSIS
    Reads, without changing anything, what a worker fleet would be deployed from and onto: the template,
    the ESXi host, each datastore under test and whether any of the workers' names is taken.

    .DESCRIPTION
    The plan step of the ESXi fleet (stormatrix suite plan / fleet deploy) decides from this answer whether
    the deploy can work, before anything is created: the template exists and is a template (not a VM),
    the host exists, each datastore exists, is accessible and has the free space the test disks need,
    and no worker name is used by a VM that is not this fleet's. The template's Notes (the vSphere API's
    Config.Annotation) are returned as they are: a line 'stormatrix-fio: fio-3.33' there declares the fio its
    image runs, which the plan compares with the controller's.

    .PARAMETER Template
    The template's exact name.

    .PARAMETER VMHost
    The ESXi host the workers are placed on, by exact name.

    .PARAMETER Datastore
    The datastores under test, by exact name.

    .PARAMETER Name
    The workers' names.

    .PARAMETER RunId
    The fleet's run id: a taken name whose VM carries it is this fleet's (an interrupted deploy), not a clash.

    .EXAMPLE
    Get-StormatrixVMwareFleetTarget -Template smx-worker-tpl -VMHost esx01.lab -Datastore bb-iscsi, bb-nvme -Name smx-w01, smx-w02 -RunId 1a2b3c4d5e6f

    .OUTPUTS
    PSCustomObject: Template (Name, Found, IsTemplate, Id, DiskCount, Notes, Problem), Host (Name, Found, Version,
    Problem), Datastores (Name, Found, Type, Accessible, CapacityGB, FreeSpaceGB, Problem), Taken (Name, Id,
    Ours, PowerState).

    .NOTES
    Names are compared exactly (PowerCLI reads -Name as a wildcard pattern). The VM listing is one call, so
    a fleet of 64 names costs one round trip, not 64.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$Template,
        [Parameter(Mandatory)][string]$VMHost,
        [AllowEmptyCollection()][string[]]$Datastore = @(),
        [AllowEmptyCollection()][string[]]$Name = @(),
        [Parameter(Mandatory)][string]$RunId
    )
    try {
        $vms = @(Get-VM -ErrorAction Stop)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Cause $_ -Message 'cannot list the inventory''s VMs')
    }
    $templateInfo = [ordered]@{ Name = $Template; Found = $false; IsTemplate = $false; Id = $null; DiskCount = 0; Notes = $null; Problem = $null }
    try {
        $found = Resolve-StormatrixVMwareInventoryItem -Kind Template -Name $Template
        $templateInfo.Found = $true
        $templateInfo.IsTemplate = $true
        $templateInfo.Id = [string]$found.Id
        $templateInfo.DiskCount = @($found.ExtensionData.Config.Hardware.Device | Where-Object { $_.PSObject.Properties['CapacityInKB'] }).Count
        $templateInfo.Notes = [string]$found.ExtensionData.Config.Annotation
    }
    catch {
        $asVm = @($vms | Where-Object { $_.Name -eq $Template })
        if ($asVm.Count -gt 0) {
            $templateInfo.Found = $true
            $templateInfo.Id = [string]$asVm[0].Id
            $templateInfo.Problem = "'$Template' is a VM, not a template: convert it (Set-VM -VM '$Template' -ToTemplate) or name a template"
        }
        else {
            $templateInfo.Problem = $_.Exception.Message
        }
    }
    $hostInfo = [ordered]@{ Name = $VMHost; Found = $false; Version = $null; Problem = $null }
    try {
        $esx = Resolve-StormatrixVMwareHost -Name $VMHost
        $hostInfo.Found = $true
        $hostInfo.Version = [string]$esx.Version
    }
    catch {
        $hostInfo.Problem = $_.Exception.Message
    }
    $stores = foreach ($ds in $Datastore) {
        $info = [ordered]@{ Name = $ds; Found = $false; Type = $null; Accessible = $false; CapacityGB = 0; FreeSpaceGB = 0; Problem = $null }
        try {
            $store = Resolve-StormatrixVMwareInventoryItem -Kind Datastore -Name $ds
            $info.Found = $true
            $info.Type = [string]$store.Type
            $info.Accessible = [bool]$store.ExtensionData.Summary.Accessible
            $info.CapacityGB = [double]$store.CapacityGB
            $info.FreeSpaceGB = [double]$store.FreeSpaceGB
        }
        catch {
            $info.Problem = $_.Exception.Message
        }
        [pscustomobject]$info
    }
    $taken = foreach ($vm in $vms) {
        if ($Name -contains [string]$vm.Name) {
            [pscustomobject]@{ Name = [string]$vm.Name; Id = [string]$vm.Id; Ours = (Test-StormatrixVMwareFleetOwner -VM $vm -RunId $RunId); PowerState = [string]$vm.PowerState }
        }
    }
    [pscustomobject]@{ Template = [pscustomobject]$templateInfo; Host = [pscustomobject]$hostInfo; Datastores = @($stores); Taken = @($taken) }
}
