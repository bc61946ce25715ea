function Get-StormatrixVMwareHostTuning {
    <#
    .SYNOPSIS
    Reads the two ESXi storage settings the Proxmox-vs-ESXi technote tunes, for one device: the
    outstanding-request limit with competing worlds and the latency-sensitive threshold.

    .DESCRIPTION
    Through Get-EsxCli -V2: "esxcli storage core device list" (the device's "No of outstanding IOs
    with competing worlds", set by --sched-num-req-outstanding) and "esxcli storage core device
    latencythreshold list" (its "Latency Sensitive Threshold", in milliseconds). esxcli prints
    values with their unit ("0 milliseconds"); the number in front is what is returned.

    .PARAMETER VMHost
    The ESXi host (its name in vCenter, or the host itself).

    .PARAMETER Device
    The storage device as esxcli names it (naa..., eui..., t10...).

    .EXAMPLE
    Get-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.6589cfc000000a1b2c3d4e5f60718293

    .OUTPUTS
    PSCustomObject with VMHost, Device, SchedNumReqOutstanding, LatencySensitiveThreshold.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMHost,
        [Parameter(Mandatory)][ValidatePattern('^[A-Za-z0-9._:-]+$')][string]$Device
    )
    $esx = Resolve-StormatrixVMwareHost -Name $VMHost
    try {
        $esxcli = Get-EsxCli -VMHost $esx -V2 -ErrorAction Stop
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -Cause $_ -TargetObject $VMHost `
                -Message "Get-EsxCli -VMHost $VMHost failed")
    }
    # the whole lists, filtered here: esxcli answers "-d" with a device it does not know by an error whose
    # text is no contract, and an exact match on the Device column is one
    $devices = @(Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.device.list' | Where-Object { $_.Device -eq $Device })
    if ($devices.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId 'DeviceNotFound' -Category 'ObjectNotFound' -TargetObject $Device `
                -Message "esxcli storage core device list on $VMHost has $($devices.Count) devices named $Device (see that list for the names)")
    }
    $thresholds = @(Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.device.latencythreshold.list' | Where-Object { $_.Device -eq $Device })
    if ($thresholds.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId 'DeviceNotFound' -Category 'ObjectNotFound' -TargetObject $Device `
                -Message "esxcli storage core device latencythreshold list on $VMHost has $($thresholds.Count) rows for $Device")
    }
    [pscustomobject]@{
        VMHost                    = $VMHost
        Device                    = $Device
        SchedNumReqOutstanding    = ConvertFrom-StormatrixEsxCliNumber -Value $devices[0].NoofoutstandingIOswithcompetingworlds -Field 'No of outstanding IOs with competing worlds' -Device $Device
        LatencySensitiveThreshold = ConvertFrom-StormatrixEsxCliNumber -Value $thresholds[0].LatencySensitiveThreshold -Field 'Latency Sensitive Threshold' -Device $Device
    }
}
