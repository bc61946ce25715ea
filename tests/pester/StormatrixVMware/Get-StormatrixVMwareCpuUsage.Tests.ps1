# Unit tests of Get-StormatrixVMwareCpuUsage (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Get-StormatrixVMwareCpuUsage' {
    BeforeEach {
        New-TestLab -Change { param($lab)
            $times = @('2026-11-22T03:00:00Z', '2026-11-22T03:00:20Z', '2026-11-22T03:00:40Z')
            $row = { param($entity, $metric, $instance, $unit, $value)
                [pscustomobject]@{ entity = $entity; metricId = $metric; instance = $instance; unit = $unit; intervalSecs = 20
                    samples = @($times | ForEach-Object { [pscustomobject]@{ timestamp = $_; value = $value } }) } }
            $lab.stats = @(
                (& $row 'bench01' 'cpu.used.summation' '' 'millisecond' 4000)
                (& $row 'bench01' 'cpu.used.summation' '0' 'millisecond' 4000)
                (& $row 'bench01' 'cpu.ready.summation' '' 'millisecond' 200)
                (& $row 'bench01' 'cpu.usagemhz.average' '' 'megaHertz' 600)
                (& $row 'esx01.lab' 'cpu.usagemhz.average' '' 'megaHertz' 3000)
                (& $row 'esx01.lab' 'cpu.usage.average' '' 'percent' 6.25)) }
        Connect-TestLab
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should prorate the 20-second samples to the window and use the Linux collector''s keys' {
        $r = Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:00:10Z' -Finish '2026-11-22T03:00:30Z'
        $r.cpu_metric | Should -Be 'cpu_time'
        $r.window_s | Should -Be 20
        $r.cpu_total | Should -Be 4.0    # half of each 4 s sample falls in the window
        $r.ctx_switches | Should -BeNullOrEmpty
        $r.unmatched.ctx_switches | Should -Not -BeNullOrEmpty
        $r.by_role.vcpu.runtime_s | Should -Be 4.0
        $r.vmware.vm_ready_s | Should -Be 0.2
        $r.vmware.vm_usagemhz_avg | Should -Be 600
        $r.vmware.host | Should -Be 'esx01.lab'
        $r.vmware.host_usagemhz_avg | Should -Be 3000
        $r.vmware.coverage | Should -Be 1
        $r.vmware.prorated | Should -BeFalse
        $r.vmware.scale | Should -Be 1
        $request = @((Read-TestLab).statRequests)[0]
        $request.realtime | Should -BeTrue
        $request.startUnixMs | Should -Be ((ConvertTo-TestUnixMs '2026-11-22T03:00:10Z') - 20000)
        $request.finishUnixMs | Should -Be ((ConvertTo-TestUnixMs '2026-11-22T03:00:30Z') + 20000)
    }
    It 'Should take the window as [datetime] of Kind <_>, to the millisecond' -ForEach @('Utc', 'Local') {
        $start = [datetime]::new(2026, 11, 22, 3, 0, 10, 123, [System.DateTimeKind]::Utc)
        $finish = $start.AddSeconds(20)
        if ($_ -eq 'Local') { $start = $start.ToLocalTime(); $finish = $finish.ToLocalTime() }
        $r = Get-StormatrixVMwareCpuUsage -VMName bench01 -Start $start -Finish $finish
        $r.window_s | Should -Be 20
        @((Read-TestLab).statRequests)[0].startUnixMs | Should -Be ((ConvertTo-TestUnixMs '2026-11-22T03:00:10.123Z') - 20000)
    }
    It 'Should refuse a window without a time zone' {
        $start = [datetime]::new(2026, 11, 22, 3, 0, 10, [System.DateTimeKind]::Unspecified)
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start $start -Finish $start.AddSeconds(20) } | Should -Throw -ErrorId 'Stormatrix.VMware.InvalidWindow'
    }
    It 'Should report on the host it is told' {
        (Get-StormatrixVMwareCpuUsage -VMName bench01 -VMHost esx01.lab -Start '2026-11-22T03:00:10Z' -Finish '2026-11-22T03:00:30Z').vmware.host | Should -Be 'esx01.lab'
        @(Get-TestCall -Cmdlet 'Get-VMHost')[0].Name | Should -Be 'esx01.lab'
    }
    It 'Should wait for the sample that covers the end of the window, then use what there is' {
        $r = Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:00:30Z' -Finish '2026-11-22T03:00:50Z' -WaitSeconds 1
        $r.vmware.coverage | Should -Be 0.5
        # the sample ending 03:00:40 covers 10 of the 20 s (2 s of CPU); the total is scaled to the window
        $r.vmware.vm_used_s | Should -Be 2.0
        $r.vmware.scale | Should -Be 2
        $r.vmware.prorated | Should -BeTrue
        $r.cpu_total | Should -Be 4.0
        $r.by_role.vcpu.runtime_s | Should -Be 4.0
        @((Read-TestLab).statRequests | Where-Object { $_.entity -eq 'bench01' }).Count | Should -Be 2
    }
    It 'Should throw StatsNotAvailable when no sample falls in the window' {
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T05:00:00Z' -Finish '2026-11-22T05:01:00Z' -WaitSeconds 0 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.StatsNotAvailable'
    }
    It 'Should leave a vCPU without a sample in the window null, and the vCPUs'' sum, with the reason' {
        # vCPU 1's only sample ends 03:00:00, before the window: it is listed but measured nothing in it
        $lab = Read-TestLab
        $lab.stats = @($lab.stats) + @([pscustomobject]@{ entity = 'bench01'; metricId = 'cpu.used.summation'; instance = '1'; unit = 'millisecond'
                intervalSecs = 20; samples = @([pscustomobject]@{ timestamp = '2026-11-22T03:00:00Z'; value = 900 }) })
        [System.IO.File]::WriteAllText($env:STORMATRIX_FAKE_VCENTER_LAB, (ConvertTo-Json -InputObject $lab -Depth 32))
        $r = Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:00:10Z' -Finish '2026-11-22T03:00:30Z'
        $one = @($r.threads | Where-Object { $_.name -eq 'vCPU 1' })
        $one.Count | Should -Be 1
        $one[0].runtime_s | Should -BeNullOrEmpty
        @($r.threads | Where-Object { $_.name -eq 'vCPU 0' })[0].runtime_s | Should -Be 4.0
        $r.by_role.vcpu.runtime_s | Should -BeNullOrEmpty
        $r.null_reasons.'by_role.vcpu.runtime_s' | Should -BeLike '*vCPU 1 of 2 vCPUs*'
        $r.cpu_total | Should -Be 4.0
    }
    It 'Should refuse a window that ends before it starts' {
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:01:00Z' -Finish '2026-11-22T03:00:00Z' } | Should -Throw -ErrorId 'Stormatrix.VMware.InvalidWindow'
    }
    It 'Should carry PowerCLI''s words when Get-Stat fails' {
        Set-TestFault -Step 'Get-Stat' -Message 'Get-Stat: statistics level too low'
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:00:10Z' -Finish '2026-11-22T03:00:30Z' } | Should -Throw -ErrorId 'Stormatrix.VMware.StatsFailed' -ExpectedMessage '*statistics level too low*'
    }
}
