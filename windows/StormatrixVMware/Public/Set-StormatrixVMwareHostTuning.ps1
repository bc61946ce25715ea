function Set-StormatrixVMwareHostTuning {
    <#
    .SYNOPSIS
    Sets the ESXi storage tuning of the Proxmox-vs-ESXi technote for one device and returns the values
    in force before and after; if the second setting fails, the first is put back before the error.

    .DESCRIPTION
    Reads the current values (Get-StormatrixVMwareHostTuning), then through Get-EsxCli -V2 runs
    "esxcli storage core device set -d DEVICE --sched-num-req-outstanding N" and "esxcli storage core
    device latencythreshold set -d DEVICE -t MS" for the values given, and reads the values again.
    The backend calls it once with the matrix's values and once at the end with the original values.

    .PARAMETER VMHost
    The ESXi host (its name in vCenter, or the host itself).

    .PARAMETER Device
    The storage device as esxcli names it (naa..., eui..., t10...).

    .PARAMETER SchedNumReqOutstanding
    Outstanding requests with competing worlds (the technote uses 1024); omitted = unchanged.

    .PARAMETER LatencySensitiveThreshold
    Latency-sensitive threshold in milliseconds (the technote uses 10); omitted = unchanged.

    .EXAMPLE
    Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.6589cfc000000a1b2c3d4e5f60718293 -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10

    .OUTPUTS
    PSCustomObject with Before and After (as Get-StormatrixVMwareHostTuning returns them).

    .NOTES
    The technote sets the latency threshold by vendor and model (-v NVMe -m Blockbridge); per device is
    the same setting scoped to the one device under test, so nothing else on the host changes.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMHost,
        [Parameter(Mandatory)][ValidatePattern('^[A-Za-z0-9._:-]+$')][string]$Device,
        [ValidateRange(1, 4096)][int]$SchedNumReqOutstanding,
        [ValidateRange(0, 1000000)][int]$LatencySensitiveThreshold
    )
    $wantSched = $PSBoundParameters.ContainsKey('SchedNumReqOutstanding')
    $wantLatency = $PSBoundParameters.ContainsKey('LatencySensitiveThreshold')
    if (-not $wantSched -and -not $wantLatency) {
        throw (New-StormatrixVMwareError -ErrorId 'NothingToSet' -Category 'InvalidArgument' -Message 'give -SchedNumReqOutstanding, -LatencySensitiveThreshold or both')
    }
    $before = Get-StormatrixVMwareHostTuning -VMHost $VMHost -Device $Device
    if (-not $PSCmdlet.ShouldProcess("$VMHost $Device", 'set the storage tuning')) {
        return
    }
    $esxcli = Get-EsxCli -VMHost (Resolve-StormatrixVMwareHost -Name $VMHost) -V2 -ErrorAction Stop
    $done = New-Object System.Collections.Generic.List[string]
    try {
        if ($wantSched) {
            Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.device.set' -Arguments @{ device = $Device; schednumreqoutstanding = $SchedNumReqOutstanding } | Out-Null
            $done.Add('SchedNumReqOutstanding')
        }
        if ($wantLatency) {
            Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.device.latencythreshold.set' -Arguments @{ device = $Device; latencysensitivethreshold = $LatencySensitiveThreshold } | Out-Null
            $done.Add('LatencySensitiveThreshold')
        }
    }
    catch {
        $failure = $_
        $rollback = 'nothing to roll back'
        if ($done -contains 'SchedNumReqOutstanding') {
            try {
                Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.device.set' -Arguments @{ device = $Device; schednumreqoutstanding = $before.SchedNumReqOutstanding } | Out-Null
                $rollback = "sched-num-req-outstanding put back to $($before.SchedNumReqOutstanding)"
            }
            catch {
                $rollback = "putting sched-num-req-outstanding back to $($before.SchedNumReqOutstanding) failed too: $($_.Exception.Message)"
            }
        }
        throw (New-StormatrixVMwareError -ErrorId 'TuningFailed' -Cause $failure -TargetObject $Device `
                -Message "setting the storage tuning of $Device on $VMHost failed ($rollback)")
    }
    $after = Get-StormatrixVMwareHostTuning -VMHost $VMHost -Device $Device
    if (($wantSched -and $after.SchedNumReqOutstanding -ne $SchedNumReqOutstanding) -or
        ($wantLatency -and $after.LatencySensitiveThreshold -ne $LatencySensitiveThreshold)) {
        throw (New-StormatrixVMwareError -ErrorId 'TuningNotApplied' -TargetObject $Device `
                -Message "esxcli accepted the settings but $Device on $VMHost now has sched-num-req-outstanding $($after.SchedNumReqOutstanding) and latency threshold $($after.LatencySensitiveThreshold)")
    }
    [pscustomobject]@{ Before = $before; After = $after }
}
