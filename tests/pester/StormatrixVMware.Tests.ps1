# Unit tests of the StormatrixVMware module with PowerCLI stubbed in module scope (PowerCLI is not needed):
# every stub throws unless mocked, so a test that forgets a call fails loudly; Should -Invoke asserts the
# exact cmdlet calls and parameters of each controller change, tuning change and restore, failures included.
BeforeAll {
    Import-Module -Name (Join-Path $PSScriptRoot '../../windows/StormatrixVMware/StormatrixVMware.psd1') -Force
    InModuleScope StormatrixVMware {
        function script:Get-VM { [CmdletBinding()] param([string]$Name) throw 'stub Get-VM called without a mock' }
        function script:Get-HardDisk { [CmdletBinding()] param([object]$VM, [string]$Name) throw 'stub Get-HardDisk called without a mock' }
        function script:Get-ScsiController { [CmdletBinding()] param([object]$VM) throw 'stub Get-ScsiController called without a mock' }
        function script:Get-NvmeController { [CmdletBinding()] param([object]$VM) throw 'stub Get-NvmeController called without a mock' }
        function script:New-ScsiController { [CmdletBinding(SupportsShouldProcess)] param([object]$HardDisk, [string]$Type) throw 'stub New-ScsiController called without a mock' }
        function script:New-NvmeController { [CmdletBinding()] param([object]$VM) throw 'stub New-NvmeController called without a mock' }
        function script:Set-HardDisk { [CmdletBinding(SupportsShouldProcess)] param([object]$HardDisk, [object]$Controller) throw 'stub Set-HardDisk called without a mock' }
        function script:Stop-VM { [CmdletBinding(SupportsShouldProcess)] param([object]$VM) throw 'stub Stop-VM called without a mock' }
        function script:Start-VM { [CmdletBinding(SupportsShouldProcess)] param([object]$VM) throw 'stub Start-VM called without a mock' }
        function script:Wait-Tools { [CmdletBinding()] param([object]$VM, [int]$TimeoutSeconds) throw 'stub Wait-Tools called without a mock' }
        function script:Get-EsxCli { [CmdletBinding()] param([object]$VMHost, [switch]$V2) throw 'stub Get-EsxCli called without a mock' }
        function script:Get-Stat { [CmdletBinding()] param([object]$Entity, [string[]]$Stat, [switch]$Realtime, [datetime]$Start, [datetime]$Finish) throw 'stub Get-Stat called without a mock' }
        function script:Get-VMHost { [CmdletBinding()] param([string]$Name, [object]$VM) throw 'stub Get-VMHost called without a mock' }
        function script:Connect-VIServer { [CmdletBinding()] param([string]$Server, [pscredential]$Credential, [string]$User) throw 'stub Connect-VIServer called without a mock' }
        function script:Disconnect-VIServer { [CmdletBinding(SupportsShouldProcess)] param([object]$Server, [switch]$Force) throw 'stub Disconnect-VIServer called without a mock' }
        function script:Set-PowerCLIConfiguration { [CmdletBinding(SupportsShouldProcess)] param([string]$Scope, [string]$InvalidCertificateAction) throw 'stub Set-PowerCLIConfiguration called without a mock' }
        function script:Get-VICredentialStoreItem { [CmdletBinding()] param([string]$Host, [string]$User) throw 'stub Get-VICredentialStoreItem called without a mock' }
    }
    $PSDefaultParameterValues['Mock:ModuleName'] = 'StormatrixVMware'
    $PSDefaultParameterValues['Should:ModuleName'] = 'StormatrixVMware'

    # A VM: boot disk on pvscsi 1000, test disk 2016 on LSI SAS 1001. Controllers list their disks.
    function script:New-Lab {
        param([string]$Power = 'PoweredOn', [int]$DiskController = 1001, [object[]]$Extra = @())
        $ctrl = @(
            [pscustomobject]@{ Key = 1000; Name = 'SCSI controller 0'; Type = 'ParaVirtual'; ExtensionData = [pscustomobject]@{ BusNumber = 0; Device = @(2000) } }
            [pscustomobject]@{ Key = 1001; Name = 'SCSI controller 1'; Type = 'VirtualLsiLogicSAS'; ExtensionData = [pscustomobject]@{ BusNumber = 1; Device = @() } }
        ) + $Extra
        foreach ($c in $ctrl) { if ($c.Key -eq $DiskController) { $c.ExtensionData.Device = @($c.ExtensionData.Device) + 2016 } }
        [pscustomobject]@{
            VM         = [pscustomobject]@{ Name = 'bench01'; Id = 'VirtualMachine-vm-42'; PowerState = $Power
                ExtensionData = [pscustomobject]@{ Runtime = [pscustomobject]@{ BootTime = [datetime]'2026-11-22T03:00:00Z' } } }
            Disk       = [pscustomobject]@{ Name = 'Hard disk 2'; Filename = '[ds1] bench01/bench01_1.vmdk'; CapacityGB = 8
                ExtensionData = [pscustomobject]@{ Key = 2016; ControllerKey = $DiskController; UnitNumber = 0 } }
            Scsi       = $ctrl
        }
    }
    function script:New-EsxCli {
        param([hashtable]$Values, [System.Collections.Generic.List[object]]$Log, [string]$FailOn = '')
        $make = {
            param([string]$Namespace)
            $node = [pscustomobject]@{ Namespace = $Namespace }
            $node | Add-Member -MemberType ScriptMethod -Name Invoke -Value {
                param($arguments)
                $Log.Add([pscustomobject]@{ Namespace = $this.Namespace; Arguments = $arguments })
                if ($this.Namespace -eq $FailOn) { throw "EsxCLI.CLIFault.summary: $($this.Namespace) refused" }
                switch ($this.Namespace) {
                    'storage.core.device.list' { [pscustomobject]@{ Device = $arguments.device; NoofoutstandingIOswithcompetingworlds = $Values.sched } }
                    'storage.core.device.latencythreshold.list' { [pscustomobject]@{ Device = $arguments.device; LatencySensitiveThreshold = $Values.latency } }
                    'storage.core.device.set' { $Values.sched = $arguments.schednumreqoutstanding; $true }
                    'storage.core.device.latencythreshold.set' { $Values.latency = $arguments.latencysensitivethreshold; $true }
                }
            }.GetNewClosure()
            $node
        }.GetNewClosure()
        [pscustomobject]@{ storage = [pscustomobject]@{ core = [pscustomobject]@{ device = [pscustomobject]@{
                        list = (& $make 'storage.core.device.list'); set = (& $make 'storage.core.device.set')
                        latencythreshold = [pscustomobject]@{ list = (& $make 'storage.core.device.latencythreshold.list'); set = (& $make 'storage.core.device.latencythreshold.set') } } } } }
    }
}

AfterAll {
    $PSDefaultParameterValues.Remove('Mock:ModuleName')
    $PSDefaultParameterValues.Remove('Should:ModuleName')
    Remove-Module -Name StormatrixVMware -Force -ErrorAction SilentlyContinue
}

Describe 'Set-StormatrixVMwareController' {
    BeforeEach {
        $script:lab = New-Lab
        $script:moved = $false
        Mock Get-VM { $script:lab.VM }
        Mock Get-HardDisk { $script:lab.Disk }
        Mock Get-ScsiController { $script:lab.Scsi }
        Mock Get-NvmeController { @() }
        Mock Stop-VM { $script:lab.VM.PowerState = 'PoweredOff' }
        Mock Start-VM { $script:lab.VM.PowerState = 'PoweredOn'; $script:lab.VM.ExtensionData.Runtime.BootTime = [datetime]'2026-11-22T03:05:00Z' }
        Mock Wait-Tools { $script:lab.VM }
        Mock Remove-StormatrixVMwareController { }
        Mock New-ScsiController {
            $new = [pscustomobject]@{ Key = 1002; Name = 'SCSI controller 2'; Type = $Type; ExtensionData = [pscustomobject]@{ BusNumber = 2; Device = @(2016) } }
            $script:lab.Scsi[1].ExtensionData.Device = @()
            $script:lab.Scsi = @($script:lab.Scsi) + $new
            $script:lab.Disk.ExtensionData.ControllerKey = 1002
            $new
        }
    }
    Context 'When the disk moves to a new ParaVirtual controller' {
        It 'Should power off, create the controller with the disk, power on and wait for Tools' {
            $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001 -ReadyTimeoutSeconds 60
            $r.Moved | Should -BeTrue
            $r.After.Controller.Type | Should -Be 'ParaVirtual'
            $r.After.Disk.Filename | Should -Be '[ds1] bench01/bench01_1.vmdk'
            Should -Invoke Stop-VM -Exactly -Times 1 -Scope It -ParameterFilter { $VM.Name -eq 'bench01' -and $Confirm -eq $false }
            Should -Invoke New-ScsiController -Exactly -Times 1 -Scope It -ParameterFilter { $HardDisk.Name -eq 'Hard disk 2' -and $Type -eq 'ParaVirtual' -and $Confirm -eq $false }
            Should -Invoke Start-VM -Exactly -Times 1 -Scope It
            Should -Invoke Wait-Tools -Exactly -Times 1 -Scope It -ParameterFilter { $TimeoutSeconds -eq 60 }
            Should -Invoke Remove-StormatrixVMwareController -Exactly -Times 0 -Scope It
        }
    }
    Context 'When an empty controller of the type exists' {
        It 'Should move the disk with Set-HardDisk -Controller instead of creating one' {
            $script:lab = New-Lab -DiskController 1000 -Extra @()
            $script:lab.Scsi[0].ExtensionData.Device = @(2000, 2016)
            Mock Set-HardDisk { $script:lab.Disk.ExtensionData.ControllerKey = $Controller.Key; $script:lab.Scsi[0].ExtensionData.Device = @(2000); $script:lab.Scsi[1].ExtensionData.Device = @(2016) }
            $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type LsiLogicSAS -KeepControllerKey 1000, 1001
            $r.After.Controller.Key | Should -Be 1001
            Should -Invoke Set-HardDisk -Exactly -Times 1 -Scope It -ParameterFilter { $Controller.Key -eq 1001 -and $Confirm -eq $false }
            Should -Invoke New-ScsiController -Exactly -Times 0 -Scope It
        }
    }
    Context 'When the disk moves to NVMe' {
        It 'Should add an NVMe controller and move the disk onto it' {
            Mock New-NvmeController { [pscustomobject]@{ Key = 31000; Name = 'NVMe controller 0'; ExtensionData = [pscustomobject]@{ BusNumber = 0; Device = @() } } }
            Mock Set-HardDisk { $script:lab.Disk.ExtensionData.ControllerKey = 31000; $script:lab.Scsi[1].ExtensionData.Device = @() }
            Mock Get-NvmeController { if ($script:lab.Disk.ExtensionData.ControllerKey -eq 31000) { [pscustomobject]@{ Key = 31000; Name = 'NVMe controller 0'; ExtensionData = [pscustomobject]@{ BusNumber = 0; Device = @(2016) } } } }
            $r = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type NVMe -KeepControllerKey 1000, 1001
            $r.After.Controller.Type | Should -Be 'NVMe'
            Should -Invoke New-NvmeController -Exactly -Times 1 -Scope It -ParameterFilter { $VM.Name -eq 'bench01' }
            Should -Invoke Set-HardDisk -Exactly -Times 1 -Scope It -ParameterFilter { $Controller.Key -eq 31000 }
        }
    }
    Context 'When an earlier cell left an empty controller' {
        It 'Should remove it, and never an original one' {
            $extra = [pscustomobject]@{ Key = 1003; Name = 'SCSI controller 3'; Type = 'VirtualLsiLogic'; ExtensionData = [pscustomobject]@{ BusNumber = 3; Device = @() } }
            $script:lab = New-Lab -Extra @($extra)
            $null = Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual -KeepControllerKey 1000, 1001
            Should -Invoke Remove-StormatrixVMwareController -Exactly -Times 1 -Scope It -ParameterFilter { $Controller.Key -eq 1003 }
            Should -Invoke Remove-StormatrixVMwareController -Exactly -Times 0 -Scope It -ParameterFilter { $Controller.Key -eq 1001 }
        }
    }
    Context 'When the move fails half-way' {
        It 'Should throw DiskMoveFailed with PowerCLI''s message and not power the VM on' {
            Mock New-ScsiController { throw 'New-ScsiController  The operation for the entity "bench01" failed: boom' }
            { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskMoveFailed' -ExpectedMessage '*boom*'
            Should -Invoke Stop-VM -Exactly -Times 1 -Scope It
            Should -Invoke Start-VM -Exactly -Times 0 -Scope It
        }
    }
    Context 'When VMware Tools do not start' {
        It 'Should throw GuestNotReady' {
            Mock Wait-Tools { throw 'Wait-Tools timed out' }
            { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.GuestNotReady'
        }
    }
    Context 'When the VM does not boot again' {
        It 'Should throw NotPowerCycled' {
            Mock Start-VM { $script:lab.VM.PowerState = 'PoweredOn' }
            { Set-StormatrixVMwareController -VMName bench01 -DiskName 'Hard disk 2' -Type ParaVirtual } | Should -Throw -ErrorId 'Stormatrix.VMware.NotPowerCycled'
        }
    }
    Context 'When the VM name matches two VMs' {
        It 'Should refuse before touching anything' {
            Mock Get-VM { @($script:lab.VM, $script:lab.VM) }
            { Set-StormatrixVMwareController -VMName 'bench*' -DiskName 'Hard disk 2' -Type NVMe } | Should -Throw -ErrorId 'Stormatrix.VMware.VmNotFound'
            Should -Invoke Stop-VM -Exactly -Times 0 -Scope It
        }
    }
}

Describe 'Restore-StormatrixVMwareLayout' {
    BeforeEach {
        $extra = [pscustomobject]@{ Key = 1002; Name = 'SCSI controller 2'; Type = 'ParaVirtual'; ExtensionData = [pscustomobject]@{ BusNumber = 2; Device = @() } }
        $script:lab = New-Lab -DiskController 1002 -Extra @($extra)
        Mock Get-VM { $script:lab.VM }
        Mock Get-HardDisk { $script:lab.Disk }
        Mock Get-ScsiController { $script:lab.Scsi }
        Mock Get-NvmeController { @() }
        Mock Stop-VM { $script:lab.VM.PowerState = 'PoweredOff' }
        Mock Start-VM { $script:lab.VM.PowerState = 'PoweredOn' }
        Mock Wait-Tools { $script:lab.VM }
        Mock Set-HardDisk { $script:lab.Disk.ExtensionData.ControllerKey = $Controller.Key; $script:lab.Scsi[2].ExtensionData.Device = @(); $script:lab.Scsi[1].ExtensionData.Device = @(2016) }
        Mock Remove-StormatrixVMwareController { $script:lab.Scsi = @($script:lab.Scsi | Where-Object Key -NE $Controller.Key) }
        $script:original = @{ VMName = 'bench01'; DiskName = 'Hard disk 2'; ControllerKey = 1001; ControllerType = 'LsiLogicSAS'
            KeepControllerKey = @(1000, 1001); Filename = '[ds1] bench01/bench01_1.vmdk'; PowerState = 'PoweredOn'; UnitNumber = 0 }
    }
    It 'Should move the disk back to its original controller, remove the added one and power on' {
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeTrue
        $r.RemovedControllerKeys | Should -Be @(1002)
        Should -Invoke Stop-VM -Exactly -Times 1 -Scope It
        Should -Invoke Set-HardDisk -Exactly -Times 1 -Scope It -ParameterFilter { $Controller.Key -eq 1001 -and $HardDisk.Name -eq 'Hard disk 2' }
        Should -Invoke Remove-StormatrixVMwareController -Exactly -Times 1 -Scope It -ParameterFilter { $Controller.Key -eq 1002 }
        Should -Invoke Start-VM -Exactly -Times 1 -Scope It
    }
    It 'Should do nothing when the layout is already the original' {
        $script:lab = New-Lab
        $r = Restore-StormatrixVMwareLayout @script:original
        $r.Changed | Should -BeFalse
        Should -Invoke Stop-VM -Exactly -Times 0 -Scope It
        Should -Invoke Set-HardDisk -Exactly -Times 0 -Scope It
    }
    It 'Should finish a restore after a failure half-way left the VM off' {
        $script:lab.VM.PowerState = 'PoweredOff'
        $null = Restore-StormatrixVMwareLayout @script:original
        Should -Invoke Stop-VM -Exactly -Times 0 -Scope It
        Should -Invoke Start-VM -Exactly -Times 1 -Scope It
    }
    It 'Should refuse to restore a disk backed by another file' {
        $script:original.Filename = '[ds1] other.vmdk'
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.DiskChanged'
        Should -Invoke Set-HardDisk -Exactly -Times 0 -Scope It
    }
    It 'Should report RestoreIncomplete when the move back does not stick' {
        Mock Set-HardDisk { }
        Mock Remove-StormatrixVMwareController { }
        { Restore-StormatrixVMwareLayout @script:original } | Should -Throw -ErrorId 'Stormatrix.VMware.RestoreIncomplete'
    }
}

Describe 'Get-StormatrixVMwareLayout' {
    It 'Should name the disk''s controller type in stormatrix terms' {
        $script:lab = New-Lab
        Mock Get-VM { $script:lab.VM }
        Mock Get-HardDisk { $script:lab.Disk }
        Mock Get-ScsiController { $script:lab.Scsi }
        Mock Get-NvmeController { @() }
        $l = Get-StormatrixVMwareLayout -VMName bench01 -DiskName 'Hard disk 2'
        $l.Controller.Type | Should -Be 'LsiLogicSAS'
        $l.Disk.ControllerKey | Should -Be 1001
        @($l.Controllers).Count | Should -Be 2
        Should -Invoke Get-HardDisk -Exactly -Times 1 -Scope It -ParameterFilter { $Name -eq 'Hard disk 2' }
    }
}

Describe 'Get-StormatrixVMwareHostTuning' {
    It 'Should read both values through Get-EsxCli -V2' {
        $log = New-Object System.Collections.Generic.List[object]
        $esx = New-EsxCli -Values @{ sched = 32; latency = 0 } -Log $log
        Mock Get-EsxCli { $esx }
        $t = Get-StormatrixVMwareHostTuning -VMHost esx01 -Device naa.600a
        $t.SchedNumReqOutstanding | Should -Be 32
        $t.LatencySensitiveThreshold | Should -Be 0
        Should -Invoke Get-EsxCli -Exactly -Times 1 -Scope It -ParameterFilter { $VMHost -eq 'esx01' -and $V2 }
        $log.Namespace | Should -Be @('storage.core.device.list', 'storage.core.device.latencythreshold.list')
    }
}

Describe 'Set-StormatrixVMwareHostTuning' {
    BeforeEach {
        $script:values = @{ sched = 32; latency = 0 }
        $script:log = New-Object System.Collections.Generic.List[object]
    }
    It 'Should run the two esxcli set commands of the technote and return the values in force' {
        $esx = New-EsxCli -Values $script:values -Log $script:log
        Mock Get-EsxCli { $esx }
        $r = Set-StormatrixVMwareHostTuning -VMHost esx01 -Device naa.600a -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10
        $r.Before.SchedNumReqOutstanding | Should -Be 32
        $r.After.SchedNumReqOutstanding | Should -Be 1024
        $r.After.LatencySensitiveThreshold | Should -Be 10
        $sets = @($script:log | Where-Object { $_.Namespace -like '*.set' })
        $sets.Count | Should -Be 2
        $sets[0].Arguments.device | Should -Be 'naa.600a'
        $sets[0].Arguments.schednumreqoutstanding | Should -Be 1024
        $sets[1].Arguments.latencysensitivethreshold | Should -Be 10
    }
    It 'Should put the first setting back when the second fails, then throw TuningFailed' {
        $esx = New-EsxCli -Values $script:values -Log $script:log -FailOn 'storage.core.device.latencythreshold.set'
        Mock Get-EsxCli { $esx }
        { Set-StormatrixVMwareHostTuning -VMHost esx01 -Device naa.600a -SchedNumReqOutstanding 1024 -LatencySensitiveThreshold 10 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.TuningFailed' -ExpectedMessage '*put back to 32*refused*'
        $script:values.sched | Should -Be 32
        @($script:log | Where-Object { $_.Namespace -eq 'storage.core.device.set' }).Arguments.schednumreqoutstanding | Should -Be @(1024, 32)
    }
    It 'Should refuse a call with nothing to set' {
        { Set-StormatrixVMwareHostTuning -VMHost esx01 -Device naa.600a } | Should -Throw -ErrorId 'Stormatrix.VMware.NothingToSet'
    }
}

Describe 'Get-StormatrixVMwareCpuUsage' {
    BeforeEach {
        $script:lab = New-Lab
        Mock Get-VM { $script:lab.VM }
        Mock Get-VMHost { [pscustomobject]@{ Name = 'esx01' } }
        Mock Start-Sleep { }
        Mock Get-Stat {
            if ($Entity.Name -eq 'esx01') {
                foreach ($t in '03:00:20', '03:00:40') {
                    [pscustomobject]@{ MetricId = 'cpu.usagemhz.average'; Instance = ''; Timestamp = [datetime]"2026-11-22T$($t)Z"; Value = 3000 }
                }
                return
            }
            foreach ($t in '03:00:20', '03:00:40') {
                [pscustomobject]@{ MetricId = 'cpu.used.summation'; Instance = ''; Timestamp = [datetime]"2026-11-22T$($t)Z"; Value = 4000 }
                [pscustomobject]@{ MetricId = 'cpu.used.summation'; Instance = '0'; Timestamp = [datetime]"2026-11-22T$($t)Z"; Value = 4000 }
                [pscustomobject]@{ MetricId = 'cpu.ready.summation'; Instance = ''; Timestamp = [datetime]"2026-11-22T$($t)Z"; Value = 200 }
            }
        }
    }
    It 'Should prorate the 20-second samples to the window and use the Linux collector''s keys' {
        $r = Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:00:10Z' -Finish '2026-11-22T03:00:30Z'
        $r.cpu_metric | Should -Be 'cpu_time'
        $r.window_s | Should -Be 20
        $r.cpu_total | Should -Be 4.0    # half of each 4 s sample falls in the window
        $r.ctx_switches | Should -BeNullOrEmpty
        $r.unmatched.ctx_switches | Should -Not -BeNullOrEmpty
        $r.by_role.vcpu.runtime_s | Should -Be 4.0
        $r.vmware.vm_ready_s | Should -Be 0.2
        $r.vmware.host_usagemhz_avg | Should -Be 3000
        Should -Invoke Get-Stat -Exactly -Times 1 -Scope It -ParameterFilter { $Realtime -and $Stat -contains 'cpu.used.summation' -and $Entity.Name -eq 'bench01' }
    }
    It 'Should throw StatsNotAvailable when no sample covers the window' {
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T05:00:00Z' -Finish '2026-11-22T05:01:00Z' -WaitSeconds 0 } |
            Should -Throw -ErrorId 'Stormatrix.VMware.StatsNotAvailable'
    }
    It 'Should refuse a window that ends before it starts' {
        { Get-StormatrixVMwareCpuUsage -VMName bench01 -Start '2026-11-22T03:01:00Z' -Finish '2026-11-22T03:00:00Z' } |
            Should -Throw -ErrorId 'Stormatrix.VMware.InvalidWindow'
    }
}

Describe 'Connect-StormatrixVMware' {
    BeforeEach {
        Mock Import-Module { }
        Mock Set-PowerCLIConfiguration { }
        Mock Connect-VIServer { [pscustomobject]@{ Name = $Server; ProductLine = 'vpx'; Version = '8.0.2'; Build = '1' } }
        Mock Get-VICredentialStoreItem { }
        $env:SMX_TEST_USER = 'administrator@vsphere.local'
        $env:SMX_TEST_PASSWORD = 'pw-for-pester'
    }
    AfterEach {
        Remove-Item Env:SMX_TEST_USER, Env:SMX_TEST_PASSWORD -ErrorAction SilentlyContinue
    }
    It 'Should build the credential from the named environment variables and verify certificates' {
        $r = Connect-StormatrixVMware -Server vc01 -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD
        $r.Version | Should -Be '8.0.2'
        Should -Invoke Set-PowerCLIConfiguration -Exactly -Times 1 -Scope It -ParameterFilter { $Scope -eq 'Session' -and $InvalidCertificateAction -eq 'Fail' }
        Should -Invoke Connect-VIServer -Exactly -Times 1 -Scope It -ParameterFilter {
            $Server -eq 'vc01' -and $Credential.UserName -eq 'administrator@vsphere.local' -and $Credential.GetNetworkCredential().Password -eq 'pw-for-pester' }
    }
    It 'Should ignore certificates only when told, with a warning' {
        $null = Connect-StormatrixVMware -Server vc01 -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD -VerifyCertificate $false -WarningVariable w -WarningAction SilentlyContinue
        $w | Should -Not -BeNullOrEmpty
        Should -Invoke Set-PowerCLIConfiguration -Exactly -Times 1 -Scope It -ParameterFilter { $InvalidCertificateAction -eq 'Ignore' }
    }
    It 'Should name the missing variable and never the password' {
        Remove-Item Env:SMX_TEST_PASSWORD
        { Connect-StormatrixVMware -Server vc01 -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.CredentialMissing' -ExpectedMessage '*SMX_TEST_PASSWORD*'
        Should -Invoke Connect-VIServer -Exactly -Times 0 -Scope It
    }
    It 'Should use the credential store entry when asked' {
        Mock Get-VICredentialStoreItem { [pscustomobject]@{ Host = 'esx01'; User = 'root' } }
        $null = Connect-StormatrixVMware -Server esx01 -CredentialSource CredentialStore
        Should -Invoke Connect-VIServer -Exactly -Times 1 -Scope It -ParameterFilter { $Server -eq 'esx01' -and -not $Credential }
    }
    It 'Should carry PowerCLI''s message when the login fails' {
        Mock Connect-VIServer { throw 'Cannot complete login due to an incorrect user name or password.' }
        { Connect-StormatrixVMware -Server vc01 -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD } | Should -Throw -ErrorId 'Stormatrix.VMware.ConnectFailed' -ExpectedMessage '*incorrect user name or password*'
    }
    It 'Should say how to install PowerCLI when it is missing' {
        Mock Import-Module { throw 'not found' }
        { Connect-StormatrixVMware -Server vc01 } | Should -Throw -ErrorId 'Stormatrix.VMware.PowerCLINotInstalled'
    }
}

Describe 'Invoke-StormatrixVMwareRequest' {
    BeforeEach {
        Mock Connect-StormatrixVMware { [pscustomobject]@{ Server = 'vc01'; Version = '8.0.2' } }
        Mock Disconnect-StormatrixVMware { }
        Mock Get-StormatrixVMwareLayout { [pscustomobject]@{ VMName = $VMName; DiskName = $DiskName } }
    }
    It 'Should splat the parameters as data and answer ok' {
        $json = '{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"x''; Remove-Item / #","DiskName":"Hard disk 2"},"connection":{"Server":"vc01"}}'
        $r = Invoke-StormatrixVMwareRequest -RequestJson $json
        $r.Ok | Should -BeTrue
        ($r.Json | ConvertFrom-Json).result.VMName | Should -Be "x'; Remove-Item / #"
        Should -Invoke Connect-StormatrixVMware -Exactly -Times 1 -Scope It -ParameterFilter { $Server -eq 'vc01' }
        Should -Invoke Disconnect-StormatrixVMware -Exactly -Times 1 -Scope It
    }
    It 'Should refuse a command outside its list' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson '{"command":"Remove-Item","parameters":{},"connection":{"Server":"vc01"}}'
        $r.Ok | Should -BeFalse
        ($r.Json | ConvertFrom-Json).error.id | Should -BeLike 'Stormatrix.VMware.UnknownCommand*'
        Should -Invoke Connect-StormatrixVMware -Exactly -Times 0 -Scope It
    }
    It 'Should report a typed error with PowerCLI''s message and still disconnect' {
        Mock Get-StormatrixVMwareLayout { throw (New-StormatrixVMwareError -ErrorId 'VmNotFound' -Message 'VM x not found' -Cause ([System.Management.Automation.ErrorRecord]::new([Exception]::new('Get-VM  VM with name x was not found'), 'x', 'ObjectNotFound', $null))) }
        $r = Invoke-StormatrixVMwareRequest -RequestJson '{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"x","DiskName":"Hard disk 2"},"connection":{"Server":"vc01"}}'
        $doc = $r.Json | ConvertFrom-Json
        $doc.error.id | Should -BeLike 'Stormatrix.VMware.VmNotFound*'
        $doc.error.powercli | Should -BeLike '*was not found*'
        Should -Invoke Disconnect-StormatrixVMware -Exactly -Times 1 -Scope It
    }
    It 'Should answer BadRequest for text that is not JSON' {
        (Invoke-StormatrixVMwareRequest -RequestJson 'not json').Json | ConvertFrom-Json | ForEach-Object { $_.error.id } | Should -BeLike 'Stormatrix.VMware.BadRequest*'
    }
}
