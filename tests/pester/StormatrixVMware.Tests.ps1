# Tests of the StormatrixVMware module against the data-described fake PowerCLI (tests/pwsh/FakeVCenter): the
# module imports "VMware.VimAutomation.Core" from PSModulePath as it would on a workstation, and every test
# starts from a copy of the fake's lab file (VMs, controllers, disks, esxcli rows, statistics). What the module
# did is read back from that lab: the cmdlets it called in order, their parameters, and the VM afterwards.
# No PowerCLI cmdlet is mocked. Runs under PesterLite on the hosted engine and under real Pester 5.
#
# Paths of the module that no test here executes, and why:
# - Move-StormatrixVMwareDisk's NvmeNotSupported and Get-StormatrixVMwareControllerList's "no Get-NvmeController"
#   branch: they are for PowerCLI releases older than 12.x, which lack the NVMe cmdlets the fake has.
# - Set-StormatrixVMwareController's NotPowerCycled and Restore-StormatrixVMwareLayout's RestoreIncomplete: safety
#   nets after PowerCLI reported success; the fake, like vSphere, does what a successful call says. The backend's
#   own check of the same answer is tested in tests/test_vmware_backend.py (test_wrong_controller_in_the_answer_is_refused).
# - Set-StormatrixVMwareHostTuning's TuningNotApplied (esxcli accepts a value and keeps the old one) and
#   Set-StormatrixVMwarePower's "Wait-Tools returned nothing without an error": not seen in PowerCLI's documented
#   behaviour, so not modelled.

BeforeAll {
    $script:FakeDir = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', 'pwsh', 'FakeVCenter'))
    $script:SavedModulePath = $env:PSModulePath
    $env:PSModulePath = $script:FakeDir + [System.IO.Path]::PathSeparator + $env:PSModulePath
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, '..', '..', 'windows', 'StormatrixVMware', 'StormatrixVMware.psd1')) -Force
    $env:SMX_TEST_USER = 'administrator@vsphere.local'
    $env:SMX_TEST_PASSWORD = 's3cr3t-Pa55'

    . ([System.IO.Path]::Combine($script:FakeDir, 'TestLab.ps1'))
}

AfterAll {
    $env:PSModulePath = $script:SavedModulePath
    Remove-Item -Path Env:SMX_TEST_USER, Env:SMX_TEST_PASSWORD, Env:STORMATRIX_FAKE_VCENTER_LAB -ErrorAction SilentlyContinue
    Remove-Module -Name StormatrixVMware, VMware.VimAutomation.Core -Force -ErrorAction SilentlyContinue
}

Describe 'Get-StormatrixVMwareLayout' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should name the disk''s controller in stormatrix terms and list every controller with its disks' {
        $l = Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2'
        $l.Controller.Type | Should -Be 'LsiLogicSAS'
        $l.Controller.Key | Should -Be 1001
        $l.Disk.ControllerKey | Should -Be 1001
        $l.Disk.Filename | Should -Be '[ds1] bench01/bench01_1.vmdk'
        $l.Disk.Uuid | Should -Be '6000C29a-85e1-7c3f-0b44-e2d0a9b1c7f5'
        @($l.Controllers).Count | Should -Be 2
        @($l.Controllers | Where-Object { $_.Key -eq 1000 })[0].Disks | Should -Be @(2000)
        $l.DiskEnableUUID | Should -BeTrue
        $l.PowerState | Should -Be 'PoweredOn'
    }
    It 'Should report DiskEnableUUID false when the VM has <_>' -ForEach @('no disk.EnableUUID', 'disk.EnableUUID = FALSE') {
        $value = $_
        New-TestLab -Change { param($lab) if ($value -like 'no*') { $lab.vms[0].extraConfig = [pscustomobject]@{} } else { $lab.vms[0].extraConfig.'disk.EnableUUID' = 'FALSE' } }
        (Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2').DiskEnableUUID | Should -BeFalse
    }
    It 'Should find a VM whose name holds wildcard characters, exactly' {
        $l = Get-StormatrixVMwareLayout -VMName 'lab[1]' -DiskName 'Hard disk 2'
        $l.VMName | Should -Be 'lab[1]'
        $l.Controller.Type | Should -Be 'NVMe'
        $l.PowerState | Should -Be 'PoweredOff'
        $l.BootTime | Should -BeNullOrEmpty
    }
    It 'Should refuse the VM name pattern <_>' -ForEach @('bench*', 'bench0?', 'bench0[1]') {
        { Get-StormatrixVMwareLayout -VMName $_ -DiskName 'Hard disk 2' } | Should -Throw -ErrorId 'Stormatrix.VMware.VmNotFound'
    }
    It 'Should refuse the disk name pattern <_>' -ForEach @('Hard disk ?', 'Hard disk [2]', 'Hard*') {
        { Get-StormatrixVMwareLayout -VMName bench01 -DiskName $_ } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskNotFound'
    }
    It 'Should carry PowerCLI''s words when the VM does not exist' {
        $err = $null
        try { Get-StormatrixVMwareLayout -VMName nothere -DiskName 'Hard disk 2' } catch { $err = $_ }
        $err.FullyQualifiedErrorId | Should -BeLike 'Stormatrix.VMware.VmNotFound*'
        $err.Exception.InnerException.Message | Should -BeLike "*VM with name 'nothere' was not found*"
    }
}

Describe 'Get-StormatrixVMwareHostInfo' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should describe the host the VM runs on as the lab describes it' {
        $lab = ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText($env:STORMATRIX_FAKE_VCENTER_LAB))
        $h = Get-StormatrixVMwareHostInfo -VMName bench01
        $h.Name | Should -Be $lab.hosts[0].name
        $h.Build | Should -Be $lab.hosts[0].build
        $h.Version | Should -Be $lab.hosts[0].version
        $h.CpuModel | Should -Be $lab.hosts[0].cpu.model
        $h.CpuThreads | Should -Be $lab.hosts[0].cpu.threads
        $h.CpuPackages | Should -Be $lab.hosts[0].cpu.sockets
    }
    It 'Should refuse a host name that is not exactly one host' {
        { Get-StormatrixVMwareHostInfo -VMName bench01 -VMHost 'esx*' } | Should -Throw -ErrorId 'Stormatrix.VMware.HostNotFound'
    }
}

Describe 'Set-StormatrixVMwareController' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should power off, create a ParaVirtual controller with the disk, power on and wait for Tools' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001 -ReadyTimeoutSeconds 60
        $r.Moved | Should -BeTrue
        $r.PowerCycled | Should -BeTrue
        $r.After.Controller.Type | Should -Be 'ParaVirtual'
        $r.After.Disk.Filename | Should -Be $r.Before.Disk.Filename
        $r.After.BootTime | Should -Not -Be $r.Before.BootTime
        $calls = Get-TestCall
        $calls.IndexOf('Stop-VM') | Should -BeLessThan $calls.IndexOf('New-ScsiController')
        $calls.IndexOf('New-ScsiController') | Should -BeLessThan $calls.IndexOf('Start-VM')
        $calls.IndexOf('Start-VM') | Should -BeLessThan $calls.IndexOf('Wait-Tools')
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'ParaVirtual'
        (Get-TestCall -Cmdlet 'Wait-Tools')[0].TimeoutSeconds | Should -Be 60
        $calls | Should -Not -Contain 'ReconfigVM'
        (Get-TestVM).bootedWith.'Hard disk 2' | Should -Be 'ParaVirtual'
    }
    It 'Should move the disk to an empty controller of the type with Set-HardDisk instead of creating one' {
        New-TestLab -Change { param($lab) $lab.vms[0].disks[1].controllerKey = 1000; $lab.vms[0].disks[1].unitNumber = 1 }
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogicSAS -KeepControllerKey 1000, 1001
        $r.After.Controller.Key | Should -Be 1001
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 1001
        Get-TestCall | Should -Not -Contain 'New-ScsiController'
    }
    It 'Should add an NVMe controller and move the disk onto it' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -KeepControllerKey 1000, 1001
        $r.After.Controller.Type | Should -Be 'NVMe'
        @(Get-TestCall -Cmdlet 'New-NvmeController').Count | Should -Be 1
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 31000
    }
    It 'Should move the disk to LsiLogic on a new controller' {
        $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogic -KeepControllerKey 1000, 1001
        $r.After.Controller.Type | Should -Be 'LsiLogic'
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'VirtualLsiLogic'
    }
    It 'Should remove a controller an earlier cell left, and never an original one' {
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1003 -Type 'VirtualLsiLogic' -Bus 3 }
        $null = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001
        (Get-TestCall -Cmdlet 'ReconfigVM').Operations | Should -Be @('remove:1003')
        @((Get-TestVM).controllers | ForEach-Object { $_.key }) | Should -Contain 1001
    }
    It 'Should throw DiskMoveFailed with PowerCLI''s message and leave the VM off' {
        Set-TestFault -Step 'New-ScsiController' -Message 'The operation for the entity "bench01" failed: boom'
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskMoveFailed' -ExpectedMessage '*boom*'
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        (Get-TestDisk).controllerKey | Should -Be 1001
        Get-TestCall | Should -Not -Contain 'Start-VM'
    }
    It 'Should throw GuestNotReady when VMware Tools do not start' {
        New-TestLab -Change { param($lab) $lab.vms[0].tools = 'never' }
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.GuestNotReady'
    }
    It 'Should refuse when the VM has 4 SCSI controllers and none of the type is free' {
        New-TestLab -Change { param($lab)
            Add-TestController -Lab $lab -Key 1002 -Type 'VirtualLsiLogic' -Bus 2
            Add-TestController -Lab $lab -Key 1003 -Type 'VirtualLsiLogic' -Bus 3
            Add-TestDisk -Lab $lab -Key 2032 -Name 'Hard disk 3' -Controller 1002
            Add-TestDisk -Lab $lab -Key 2048 -Name 'Hard disk 4' -Controller 1003 }
        { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogic -KeepControllerKey 1000, 1001, 1002, 1003 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.ControllerLimit'
        Get-TestCall | Should -Not -Contain 'New-ScsiController'
    }
    It 'Should change nothing under -WhatIf' {
        $null = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -WhatIf
        Get-TestCall | Should -Not -Contain 'Stop-VM'
    }
}

Describe 'Restore-StormatrixVMwareLayout' {
    BeforeEach {
        # a cell moved the test disk to an added ParaVirtual controller 1002
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2; $lab.vms[0].disks[1].controllerKey = 1002 }
        Connect-TestLab
        $script:original = @{ VMName = 'bench01'; DiskName = 'Hard disk 2'; ControllerKey = 1001; ControllerType = 'LsiLogicSAS'
            KeepControllerKey = @(1000, 1001); Filename = '[ds1] bench01/bench01_1.vmdk'; PowerState = 'PoweredOn'; UnitNumber = 0 }
    }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should move the disk back, remove the added controller and power on' {
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeTrue
        $r.RemovedControllerKeys | Should -Be @(1002)
        $r.ControllerReplaced | Should -BeFalse
        $r.UnitNumberChanged | Should -BeFalse
        $calls = Get-TestCall
        (Get-TestCall -Cmdlet 'Set-HardDisk')[0].Controller | Should -Be 1001
        $calls.IndexOf('Set-HardDisk') | Should -BeLessThan $calls.IndexOf('ReconfigVM')
        $calls.IndexOf('ReconfigVM') | Should -BeLessThan $calls.IndexOf('Start-VM')
        (Get-TestDisk).controllerKey | Should -Be 1001
        @((Get-TestVM).controllers).Count | Should -Be 2
        (Get-TestVM).powerState | Should -Be 'PoweredOn'
    }
    It 'Should do nothing when the layout is already the original' {
        New-TestLab
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeFalse
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        Get-TestCall | Should -Not -Contain 'Set-HardDisk'
    }
    It 'Should finish a restore that a failure left half-done with the VM off' {
        New-TestLab -Change { param($lab) Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2; $lab.vms[0].disks[1].controllerKey = 1002
            $lab.vms[0].powerState = 'PoweredOff'; $lab.vms[0].bootTime = $null }
        $null = Restore-StormatrixVMwareLayout @script:original
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        @(Get-TestCall | Where-Object { $_ -eq 'Start-VM' }).Count | Should -Be 1
    }
    It 'Should keep a VM that was off, off' {
        $script:original.PowerState = 'PoweredOff'
        $null = Restore-StormatrixVMwareLayout @script:original
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        Get-TestCall | Should -Not -Contain 'Start-VM'
    }
    It 'Should refuse to restore a disk backed by another file' {
        $script:original.Filename = '[ds1] other.vmdk'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskChanged'
        Get-TestCall | Should -Not -Contain 'Set-HardDisk'
    }
    It 'Should put the disk on a new controller of the original type when the original is gone' {
        New-TestLab -Change { param($lab)
            Add-TestController -Lab $lab -Key 1002 -Type 'ParaVirtual' -Bus 2
            $lab.vms[0].disks[1].controllerKey = 1002
            $lab.vms[0].controllers = @($lab.vms[0].controllers | Where-Object { $_.key -ne 1001 }) }
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.ControllerReplaced | Should -BeTrue
        $r.Layout.Controller.Type | Should -Be 'LsiLogicSAS'
        (Get-TestCall -Cmdlet 'New-ScsiController')[0].Type | Should -Be 'VirtualLsiLogicSAS'
        @((Get-TestVM).controllers).Count | Should -Be 2
    }
    It 'Should fail with PowerCLI''s words when moving back fails, and succeed when run again' {
        Set-TestFault -Step 'Set-HardDisk' -Message 'Set-HardDisk refused: boom'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskMoveFailed' -ExpectedMessage '*boom*'
        (Get-TestVM).powerState | Should -Be 'PoweredOff'
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Layout.Disk.ControllerKey | Should -Be 1001
        (Get-TestVM).powerState | Should -Be 'PoweredOn'
    }
    It 'Should report a controller that cannot be removed' {
        Set-TestFault -Step 'ReconfigVM' -Message 'A general system error occurred: boom'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.ControllerRemoveFailed' -ExpectedMessage '*boom*'
    }
}

Describe 'Get-StormatrixVMwareHostTuning' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should read both values through Get-EsxCli -V2 as esxcli prints them ("0 milliseconds")' {
        $t = Get-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a
        $t.SchedNumReqOutstanding | Should -Be 32
        $t.LatencySensitiveThreshold | Should -Be 0
        $call = (Get-TestCall -Cmdlet 'Get-EsxCli')[0]
        $call.VMHost | Should -Be 'esx01.lab'
        $call.V2 | Should -BeTrue
        @(Get-TestCall | Where-Object { $_ -like 'esxcli *' }) | Should -Be @('esxcli storage core device list', 'esxcli storage core device latencythreshold list')
    }
    It 'Should name the field when esxcli prints something that is not a number' {
        New-TestLab -Change { param($lab) $lab.hosts[0].esxcli.'storage.core.device.latencythreshold.list'[0].'Latency Sensitive Threshold' = 'n/a' }
        { Get-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a } | Should -Throw -ErrorId 'Stormatrix.VMware.EsxCliUnexpectedValue' -ExpectedMessage '*Latency Sensitive Threshold*n/a*'
    }
    It 'Should say when the device is not on the host' {
        { Get-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600b } | Should -Throw -ErrorId 'Stormatrix.VMware.DeviceNotFound'
    }
    It 'Should refuse the host name pattern <_>' -ForEach @('esx0*', 'esx01.la?', 'nothere') {
        { Get-StormatrixVMwareHostTuning -VMHost $_ -Device naa.600a } | Should -Throw -ErrorId 'Stormatrix.VMware.HostNotFound'
    }
}

Describe 'Set-StormatrixVMwareHostTuning' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should run the two esxcli set commands of the technote and return the values in force' {
        $r = Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10
        $r.Before.SchedNumReqOutstanding | Should -Be 32
        $r.After.SchedNumReqOutstanding | Should -Be 1024
        $r.After.LatencySensitiveThreshold | Should -Be 10
        $set = (Get-TestCall -Cmdlet 'esxcli storage core device set')[0]
        $set.device | Should -Be 'naa.600a'
        $set.schednumreqoutstanding | Should -Be 1024
        (Get-TestCall -Cmdlet 'esxcli storage core device latencythreshold set')[0].latencysensitivethreshold | Should -Be 10
        (Read-TestLab).hosts[0].esxcli.'storage.core.device.latencythreshold.list'[0].'Latency Sensitive Threshold' | Should -Be '10 milliseconds'
    }
    It 'Should put the first setting back when the second fails, then throw TuningFailed' {
        Set-TestFault -Step 'esxcli:storage.core.device.latencythreshold.set' -Message 'threshold refused'
        { Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.TuningFailed' -ExpectedMessage '*put back to 32*refused*'
        @(Get-TestCall -Cmdlet 'esxcli storage core device set' | ForEach-Object { $_.schednumreqoutstanding }) | Should -Be @(1024, 32)
        (Read-TestLab).hosts[0].esxcli.'storage.core.device.list'[0].'No of outstanding IOs with competing worlds' | Should -Be '32'
    }
    It 'Should say so when putting the first setting back fails too' {
        Set-TestFault -Step 'esxcli:storage.core.device.latencythreshold.set' -Message 'threshold refused'
        Set-TestFault -Step 'esxcli:storage.core.device.set#2' -Message 'host not responding'
        { Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.TuningFailed' -ExpectedMessage '*failed too*host not responding*'
    }
    It 'Should refuse a call with nothing to set' {
        { Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a } | Should -Throw -ErrorId 'Stormatrix.VMware.NothingToSet'
    }
    It 'Should change nothing under -WhatIf' {
        $null = Set-StormatrixVMwareHostTuning -VMHost esx01.lab -Device naa.600a -SchedNumReqOutstanding 64 -WhatIf
        Get-TestCall | Should -Not -Contain 'esxcli storage core device set'
    }
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

Describe 'Connect-StormatrixVMware' {
    BeforeEach { New-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Should build the credential from the named variables and verify certificates' {
        $r = Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD
        $r.Version | Should -Be '8.0.2'
        $r.ProductLine | Should -Be 'vpx'
        $config = (Get-TestCall -Cmdlet 'Set-PowerCLIConfiguration')[0]
        $config.Scope | Should -Be 'Session'
        $config.InvalidCertificateAction | Should -Be 'Fail'
        $connect = (Get-TestCall -Cmdlet 'Connect-VIServer')[0]
        $connect.User | Should -Be 'administrator@vsphere.local'
        $connect.PasswordMatches | Should -BeTrue
    }
    It 'Should refuse a self-signed certificate unless told to ignore it, with a warning' {
        New-TestLab -Change { param($lab) $lab.server.certificate = 'self-signed' }
        { Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.ConnectFailed' -ExpectedMessage '*certificate*'
        $null = Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD -VerifyCertificate $false -WarningVariable w -WarningAction SilentlyContinue
        $w | Should -Not -BeNullOrEmpty
        (Get-TestCall -Cmdlet 'Set-PowerCLIConfiguration')[-1].InvalidCertificateAction | Should -Be 'Ignore'
    }
    It 'Should name the missing variable and never the password' {
        Remove-Item -Path Env:SMX_TEST_PASSWORD
        try {
            { Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.CredentialMissing' -ExpectedMessage '*SMX_TEST_PASSWORD*'
            Get-TestCall | Should -Not -Contain 'Connect-VIServer'
        }
        finally { $env:SMX_TEST_PASSWORD = 's3cr3t-Pa55' }
    }
    It 'Should use the credential store entry when asked' {
        $null = Connect-StormatrixVMware -Server vc01.lab -CredentialSource CredentialStore
        (Get-TestCall -Cmdlet 'Get-VICredentialStoreItem')[0].Host | Should -Be 'vc01.lab'
        (Get-TestCall -Cmdlet 'Connect-VIServer')[0].PasswordMatches | Should -BeNullOrEmpty
    }
    It 'Should say how to make a credential store entry when there is none' {
        { Connect-StormatrixVMware -Server vc01.lab -CredentialSource CredentialStore -CredentialStoreUser nobody } | Should -Throw -ErrorId 'Stormatrix.VMware.CredentialMissing' -ExpectedMessage '*New-VICredentialStoreItem*'
    }
    It 'Should carry PowerCLI''s message when the login fails' {
        $env:SMX_TEST_PASSWORD = 'wrong'
        try {
            { Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.ConnectFailed' -ExpectedMessage '*incorrect user name or password*'
        }
        finally { $env:SMX_TEST_PASSWORD = 's3cr3t-Pa55' }
    }
    It 'Should report a failed session configuration' {
        Set-TestFault -Step 'Set-PowerCLIConfiguration' -Message 'configuration file is locked'
        { Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.ConfigurationFailed'
    }
    It 'Should say how to install PowerCLI when it is missing' {
        $saved = $env:PSModulePath
        Remove-Module -Name VMware.VimAutomation.Core -Force -ErrorAction SilentlyContinue
        $env:PSModulePath = [System.IO.Path]::GetTempPath()
        try {
            { Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.PowerCLINotInstalled' -ExpectedMessage '*Install-Module VMware.PowerCLI*'
        }
        finally { $env:PSModulePath = $saved }
    }
}

Describe 'Invoke-StormatrixVMwareRequest' {
    BeforeAll {
        $script:connection = '"connection":{"Server":"vc01.lab","CredentialSource":"Environment","UserVariable":"SMX_TEST_USER","PasswordVariable":"SMX_TEST_PASSWORD","VerifyCertificate":true}'
    }
    BeforeEach { New-TestLab }
    AfterEach { Remove-TestLab }

    It 'Should connect, run the command with the parameters as data, disconnect and answer ok' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"bench01","DiskName":"Hard disk 2"},' + $script:connection + '}')
        $r.Ok | Should -BeTrue
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.schema | Should -Be 'stormatrix/vmware-1'
        $doc.result.Disk.ControllerKey | Should -Be 1001
        $doc.server.Version | Should -Be '8.0.2'
        @(Get-TestCall | Where-Object { $_ -eq 'Connect-VIServer' }).Count | Should -Be 1
        @(Get-TestCall | Where-Object { $_ -eq 'Disconnect-VIServer' }).Count | Should -Be 1
    }
    It 'Should keep a value that looks like code as data' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"x''; Remove-Item / #","DiskName":"Hard disk 2"},' + $script:connection + '}')
        $r.Ok | Should -BeFalse
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.error.id | Should -BeLike 'Stormatrix.VMware.VmNotFound*'
        $doc.error.message | Should -BeLike "*x'; Remove-Item / #*"
        $doc.error.powercli | Should -BeLike '*was not found*'
        @(Get-TestCall | Where-Object { $_ -eq 'Disconnect-VIServer' }).Count | Should -Be 1
    }
    It 'Should run a command that changes the VM without asking for confirmation' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Set-StormatrixVMwareController","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Type":"NVMe","KeepControllerKey":[1000,1001],"ReadyTimeoutSeconds":30},' + $script:connection + '}')
        $r.Ok | Should -BeTrue
        (ConvertFrom-Json -InputObject $r.Json).result.After.Controller.Type | Should -Be 'NVMe'
    }
    It 'Should refuse a command outside its list' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Remove-Item","parameters":{},' + $script:connection + '}')
        $r.Ok | Should -BeFalse
        (ConvertFrom-Json -InputObject $r.Json).error.id | Should -BeLike 'Stormatrix.VMware.UnknownCommand*'
        Get-TestCall | Should -Not -Contain 'Connect-VIServer'
    }
    It 'Should answer BadRequest for <_>' -ForEach @('not json', '[1, 2]', '{"command":"Get-StormatrixVMwareLayout","parameters":[1],"connection":{}}') {
        (ConvertFrom-Json -InputObject (Invoke-StormatrixVMwareRequest -RequestJson $_).Json).error.id | Should -BeLike 'Stormatrix.VMware.BadRequest*'
    }
    It 'Should report a parameter the command does not have as PowerShell''s binding error' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Snapshot":1},' + $script:connection + '}')
        (ConvertFrom-Json -InputObject $r.Json).error.id | Should -Be 'NamedParameterNotFound,Get-StormatrixVMwareLayout'
    }
    It 'Should return warnings in the answer instead of printing them' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareHostTuning","parameters":{"VMHost":"esx01.lab","Device":"naa.600a"},' + $script:connection.Replace('"VerifyCertificate":true', '"VerifyCertificate":false') + '}')
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.result.LatencySensitiveThreshold | Should -Be 0
        @($doc.warnings) -join ' ' | Should -BeLike '*certificate validation*turned off*'
    }
}

Describe 'Private helpers' {
    BeforeEach { New-TestLab; Connect-TestLab }
    AfterEach { Disconnect-TestLab; Remove-TestLab }

    It 'Disconnect-StormatrixVMware should never throw, even when Disconnect-VIServer fails' {
        Set-TestFault -Step 'Disconnect-VIServer' -Message 'session already gone'
        { InModuleScope StormatrixVMware { Disconnect-StormatrixVMware } } | Should -Not -Throw
        InModuleScope StormatrixVMware { $script:StormatrixVIServer } | Should -BeNullOrEmpty
    }
    It 'Remove-StormatrixVMwareController should refuse a controller that holds disks' {
        { InModuleScope StormatrixVMware {
                $vm = Get-VM -Name bench01
                $controller = @(Get-StormatrixVMwareControllerList -VM $vm | Where-Object { $_.Key -eq 1001 })[0]
                Remove-StormatrixVMwareController -VM $vm -Controller $controller } } | Should -Throw -ErrorId 'Stormatrix.VMware.ControllerNotEmpty'
        Get-TestCall | Should -Not -Contain 'ReconfigVM'
    }
    It 'Invoke-StormatrixEsxCli should name a namespace the host lacks' {
        { InModuleScope StormatrixVMware {
                $esxcli = Get-EsxCli -VMHost (Resolve-StormatrixVMwareHost -Name 'esx01.lab') -V2
                Invoke-StormatrixEsxCli -EsxCli $esxcli -Namespace 'storage.core.nothing.list' } } | Should -Throw -ErrorId 'Stormatrix.VMware.EsxCliFailed'
    }
    It 'Set-StormatrixVMwarePower should report <Step> failing as <Id>' -ForEach @(
        @{ Step = 'Stop-VM'; State = 'Off'; Id = 'Stormatrix.VMware.PowerOffFailed' }
        @{ Step = 'Start-VM'; State = 'On'; Id = 'Stormatrix.VMware.PowerOnFailed' }
    ) {
        if ($State -eq 'On') {
            $lab = Read-TestLab
            $lab.vms[0].powerState = 'PoweredOff'
            [System.IO.File]::WriteAllText($env:STORMATRIX_FAKE_VCENTER_LAB, (ConvertTo-Json -InputObject $lab -Depth 32))
        }
        Set-TestFault -Step $Step -Message "$Step refused: boom"
        { InModuleScope StormatrixVMware -Parameters @{ State = $State } { param($State) Set-StormatrixVMwarePower -VM (Get-VM -Name bench01) -State $State } } |
            Should -Throw -ErrorId $Id -ExpectedMessage '*boom*'
    }
    It 'ConvertTo-StormatrixVMwareHashtable should turn nested objects into hashtables and keep arrays' {
        $h = InModuleScope StormatrixVMware { ConvertTo-StormatrixVMwareHashtable -InputObject (ConvertFrom-Json -InputObject '{"a":{"b":[1,2]},"c":null,"d":"x"}') }
        $h | Should -BeOfType [hashtable]
        $h.a | Should -BeOfType [hashtable]
        $h.a.b | Should -Be @(1, 2)
        $h.c | Should -BeNullOrEmpty
        $h.d | Should -Be 'x'
    }
}
