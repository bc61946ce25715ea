function Get-StormatrixVMwareCpuUsage {
    <#
    .SYNOPSIS
    Host CPU used by the VM, and by the whole host, during a measurement window, from vSphere's realtime
    performance statistics, in the shape of the Linux host collector's result.

    .DESCRIPTION
    Reads Get-Stat -Realtime (20-second samples, kept for about an hour) for the VM (cpu.used.summation
    and cpu.ready.summation per vCPU and in total, cpu.usagemhz.average) and for its host
    (cpu.usagemhz.average, cpu.usage.average), waits up to -WaitSeconds until the sample that covers the
    end of the window exists, and prorates every sample by how much of its 20 seconds falls inside the
    window (so a 30-second window is not charged 60 seconds of CPU).

    Coverage, as the esxtop source does it: the samples may cover only part of the window (the last
    sample not yet written when -WaitSeconds ran out, a gap). vmware.covered_s and vmware.coverage
    (covered_s / window_s) say how much; cpu_total and the per-vCPU run times are then scaled up to the
    whole window (CPU use assumed even; vmware.scale is the factor, vmware.prorated is true) while
    vmware.vm_used_s and vm_ready_s keep what the samples hold. Refusing a window whose coverage is too
    low (the harness: under 80 %) is the caller's decision; this function reports the coverage.

    Where the metric corresponds to the Linux collector's, the same key holds it: cpu_metric "cpu_time",
    cpu_unit "s", cpu_total = the VM's cpu.used (its vCPU worlds plus the system time ESXi charges to it),
    by_role.vcpu = the per-vCPU split. Where nothing corresponds (context switches, user/system split,
    hardware cycles) the key is null and "unmatched" says why; ESXi-only figures are under "vmware".

    .PARAMETER VMName
    The VM's name (exactly one VM must have it).

    .PARAMETER VMHost
    The ESXi host to report on; by default the host the VM runs on.

    .PARAMETER Start
    Start of the window: a [datetime] of Kind Utc or Local, or text PowerShell converts to one, ISO 8601
    with an offset or Z (e.g. 2026-11-22T03:12:00.000Z). A time without a zone is refused.

    .PARAMETER Finish
    End of the window, like -Start.

    .PARAMETER IntervalSeconds
    Length of a realtime sample (20 on ESXi).

    .PARAMETER WaitSeconds
    How long to wait for the sample that covers the end of the window.

    .EXAMPLE
    Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:12:00Z' -Finish '2026-11-22T03:14:00Z'

    .OUTPUTS
    PSCustomObject: cpu_metric, cpu_unit, cpu_total, cpu_user, cpu_system, cpu_time_s, cycles,
    ctx_switches, ctx_voluntary, ctx_involuntary, source, scope, pid, vm, window_s, threads, by_role,
    split_approximate, unmatched, vmware; null_reasons only when a figure is null for want of samples (a
    vCPU without a cpu.used sample inside the window: its run time and the vCPUs' sum are null, not 0).

    .NOTES
    The window is [datetime] on purpose: the request's ISO strings reach this function through
    ConvertFrom-Json, which on PowerShell 6+ has already made them [datetime] (Kind Utc for a Z). Bound to a
    [string] they would lose the zone and the milliseconds and be read back as local time. Get-Stat is
    given the edges as UTC [datetime] values.

    Proration assumes the VM's CPU use is even inside each 20-second sample, and scaling that it is even
    over the window; windows of a minute or more keep that error small (the technote measured 20-minute
    windows).
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$VMName,
        [string]$VMHost = '',
        [Parameter(Mandatory)][datetime]$Start,
        [Parameter(Mandatory)][datetime]$Finish,
        [ValidateRange(1, 3600)][int]$IntervalSeconds = 20,
        [ValidateRange(0, 3600)][int]$WaitSeconds = 60
    )
    if ($Start.Kind -eq [System.DateTimeKind]::Unspecified -or $Finish.Kind -eq [System.DateTimeKind]::Unspecified) {
        throw (New-StormatrixVMwareError -ErrorId 'InvalidWindow' -Category 'InvalidArgument' `
                -Message "the window $($Start.ToString('o')) .. $($Finish.ToString('o')) has a time without a zone: give UTC (Z) or an offset")
    }
    $startUtc = $Start.ToUniversalTime()
    $finishUtc = $Finish.ToUniversalTime()
    $Start = $startUtc
    $Finish = $finishUtc
    if ($finishUtc -le $startUtc) {
        throw (New-StormatrixVMwareError -ErrorId 'InvalidWindow' -Category 'InvalidArgument' -Message "the window ends ($($finishUtc.ToString('o'))) before it starts ($($startUtc.ToString('o')))")
    }
    $vm = (Resolve-StormatrixVMwareTarget -VMName $VMName).VM
    try {
        if ($VMHost) {
            $esx = Resolve-StormatrixVMwareHost -Name $VMHost
        }
        else {
            $esx = Get-VMHost -VM $vm -ErrorAction Stop
        }
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'HostNotFound' -Category 'ObjectNotFound' -Cause $_ -Message "the ESXi host of VM '$VMName' not found")
    }
    $from = $startUtc.AddSeconds(-$IntervalSeconds)
    $to = $finishUtc.AddSeconds($IntervalSeconds)
    $deadline = [datetime]::UtcNow.AddSeconds($WaitSeconds)
    while ($true) {
        try {
            $vmSamples = @(Get-Stat -Entity $vm -Stat 'cpu.used.summation', 'cpu.ready.summation', 'cpu.usagemhz.average' -Realtime -Start $from -Finish $to -ErrorAction Stop)
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'StatsFailed' -Cause $_ -TargetObject $VMName -Message "Get-Stat -Realtime for VM '$VMName' failed")
        }
        $covered = @($vmSamples | Where-Object { $_.MetricId -eq 'cpu.used.summation' -and ([datetime]$_.Timestamp).ToUniversalTime() -ge $finishUtc })
        if ($covered.Count -gt 0 -or [datetime]::UtcNow -ge $deadline) {
            break
        }
        Start-Sleep -Seconds 5
    }
    try {
        $hostSamples = @(Get-Stat -Entity $esx -Stat 'cpu.usagemhz.average', 'cpu.usage.average' -Realtime -Start $from -Finish $to -ErrorAction Stop)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'StatsFailed' -Cause $_ -TargetObject $esx -Message "Get-Stat -Realtime for host '$($esx.Name)' failed")
    }
    $windowS = ($finishUtc - $startUtc).TotalSeconds
    # sum (for .summation, in ms per sample) or overlap-weighted mean (for .average) of one metric and instance
    $measure = {
        param([object[]]$Samples, [string]$MetricId, [string]$Instance, [bool]$Sum, [bool]$Scale = $false)
        $total = 0.0
        $weights = 0.0
        $count = 0
        foreach ($s in $Samples) {
            if ($s.MetricId -ne $MetricId -or [string]$s.Instance -ne $Instance) {
                continue
            }
            $end = ([datetime]$s.Timestamp).ToUniversalTime()
            $begin = $end.AddSeconds(-$IntervalSeconds)
            $lo = $begin
            if ($startUtc -gt $lo) { $lo = $startUtc }
            $hi = $end
            if ($finishUtc -lt $hi) { $hi = $finishUtc }
            $overlap = ($hi - $lo).TotalSeconds
            if ($overlap -le 0) {
                continue
            }
            $count += 1
            $total += [double]$s.Value * $overlap / $IntervalSeconds
            $weights += $overlap
        }
        if ($count -eq 0) {
            return $null
        }
        if ($Sum -and $Scale) {
            return $total * $windowS / $weights  # the covered part, scaled up to the whole window
        }
        if ($Sum) {
            return $total
        }
        $total * $IntervalSeconds / $weights
    }
    $usedMs = & $measure $vmSamples 'cpu.used.summation' '' $true
    if ($null -eq $usedMs) {
        throw (New-StormatrixVMwareError -ErrorId 'StatsNotAvailable' -Category 'ResourceUnavailable' -TargetObject $VMName `
                -Message "vSphere has no realtime cpu.used sample of VM '$VMName' inside $($startUtc.ToString('o')) .. $($finishUtc.ToString('o')) (waited $WaitSeconds s): realtime statistics may be off or the window is older than an hour")
    }
    $covering = @($vmSamples | Where-Object { $_.MetricId -eq 'cpu.used.summation' -and [string]$_.Instance -eq '' } |
            ForEach-Object { ([datetime]$_.Timestamp).ToUniversalTime() } | Where-Object { $_ -gt $startUtc -and $_.AddSeconds(-$IntervalSeconds) -lt $finishUtc } | Sort-Object)
    $coveredS = 0.0
    foreach ($end in $covering) {
        $lo = $end.AddSeconds(-$IntervalSeconds)
        if ($startUtc -gt $lo) { $lo = $startUtc }
        $hi = $end
        if ($finishUtc -lt $hi) { $hi = $finishUtc }
        $coveredS += ($hi - $lo).TotalSeconds
    }
    $readyMs = & $measure $vmSamples 'cpu.ready.summation' '' $true
    $coverage = $coveredS / $windowS
    $usedWindowMs = & $measure $vmSamples 'cpu.used.summation' '' $true $true
    $threads = New-Object System.Collections.Generic.List[object]
    $instances = @($vmSamples | Where-Object { $_.MetricId -eq 'cpu.used.summation' -and [string]$_.Instance -ne '' } | ForEach-Object { [string]$_.Instance } | Sort-Object -Unique)
    $vcpuTotal = 0.0
    $nullReasons = [ordered]@{}
    $lacking = New-Object System.Collections.Generic.List[string]
    foreach ($instance in $instances) {
        $ms = & $measure $vmSamples 'cpu.used.summation' $instance $true $true
        $ready = & $measure $vmSamples 'cpu.ready.summation' $instance $true
        $runS = $null
        if ($null -ne $ms) {
            $runS = $ms / 1000.0
            $vcpuTotal += $ms
        }
        else {
            # a vCPU with no sample inside the window is unknown, never 0 added to the sum
            $lacking.Add("vCPU $instance")
        }
        $readyS = $null
        if ($null -ne $ready) { $readyS = $ready / 1000.0 }
        $threads.Add([ordered]@{ tid = $null; name = "vCPU $instance"; role = 'vcpu'; user_s = $null; system_s = $null
                runtime_s = $runS; ready_s = $readyS; ctx_voluntary = $null; ctx_involuntary = $null; new = $false; exited = $false })
    }
    $byRole = [ordered]@{}
    if ($threads.Count -gt 0) {
        $vcpuRunS = $vcpuTotal / 1000.0
        if ($lacking.Count -gt 0) {
            $vcpuRunS = $null
            $nullReasons['by_role.vcpu.runtime_s'] = "no cpu.used sample inside the window for $($lacking -join ', ') of $($threads.Count) vCPUs"
        }
        $byRole['vcpu'] = [ordered]@{ threads = $threads.Count; user_s = $null; system_s = $null; runtime_s = $vcpuRunS
            ctx_voluntary = $null; ctx_involuntary = $null }
    }
    $readyTotal = $null
    if ($null -ne $readyMs) { $readyTotal = $readyMs / 1000.0 }
    $record = [ordered]@{
        cpu_metric        = 'cpu_time'
        cpu_unit          = 's'
        cpu_total         = $usedWindowMs / 1000.0
        cpu_user          = $null
        cpu_system        = $null
        cpu_time_s        = [ordered]@{ total = $usedWindowMs / 1000.0; user = $null; system = $null }
        cycles            = $null
        ctx_switches      = $null
        ctx_voluntary     = $null
        ctx_involuntary   = $null
        source            = 'vsphere-realtime'
        scope             = 'esxi-vm'
        pid               = $null
        vm                = $VMName
        window_s          = $windowS
        threads           = $threads.ToArray()
        by_role           = $byRole
        split_approximate = $true
        unmatched         = [ordered]@{
            cpu_total    = "cpu.used.summation of the VM: its vCPU worlds plus the system time ESXi charges to the VM; on Linux the QEMU process's CPU time (task-clock)"
            cpu_user     = 'vSphere statistics have no user/system split of a VM'
            cpu_system   = 'vSphere statistics have no user/system split of a VM'
            cycles       = 'no hardware cycle counts through vSphere statistics'
            ctx_switches = 'vSphere statistics have no context-switch counter for a VM'
            threads      = 'one row per vCPU (cpu.used per instance); no main-loop, iothread or worker threads as in QEMU'
        }
        vmware            = [ordered]@{
            interval_s        = $IntervalSeconds
            prorated          = ($coveredS -lt $windowS - 1e-9)
            scale             = $windowS / $coveredS
            samples           = $covering.Count
            covered_s         = $coveredS
            coverage          = $coverage
            first_sample_end  = $(if ($covering.Count) { $covering[0].ToString('o') } else { $null })
            last_sample_end   = $(if ($covering.Count) { $covering[-1].ToString('o') } else { $null })
            vm_used_s         = $usedMs / 1000.0
            vm_ready_s        = $readyTotal
            vm_usagemhz_avg   = (& $measure $vmSamples 'cpu.usagemhz.average' '' $false)
            host              = [string]$esx.Name
            host_usagemhz_avg = (& $measure $hostSamples 'cpu.usagemhz.average' '' $false)
            host_usage_pct_avg = (& $measure $hostSamples 'cpu.usage.average' '' $false)
        }
    }
    if ($nullReasons.Count -gt 0) {
        $record['null_reasons'] = $nullReasons  # present only when something is null, as in the Linux collector's record
    }
    [pscustomobject]$record
}
