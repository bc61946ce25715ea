# Unit tests for every public function of the guest module, on Linux: Windows-only cmdlets are stubbed in
# module scope (Stubs.ps1) and mocked; native executables go through Invoke-StormatrixNative, mocked.
# The same functions run unmocked against the data-described fake Windows guest (tests/pwsh/FakeWindows)
# in tests/test_winrm_standin.py, test_winrm_guest_module.py and test_winrm_e2e.py.
BeforeAll {
    $script:ModuleManifest = Join-Path $PSScriptRoot '../../windows/StormatrixGuest/StormatrixGuest.psd1'
    Import-Module -Name $script:ModuleManifest -Force
    $stubs = Join-Path $PSScriptRoot 'Stubs.ps1'
    InModuleScope StormatrixGuest -Parameters @{ Stubs = $stubs } {
        param($Stubs)
        . $Stubs
        # cmdlets and parameters the module uses beyond Stubs.ps1
        function script:Get-PnpDevice { [CmdletBinding()] param([string[]]$Class, [switch]$PresentOnly) throw 'stub Get-PnpDevice called without a mock' }
        function script:Get-StorageSetting { [CmdletBinding()] param() throw 'stub Get-StorageSetting called without a mock' }
        function script:Get-NetIPAddress { [CmdletBinding()] param([string[]]$AddressFamily) throw 'stub Get-NetIPAddress called without a mock' }
        function script:New-SelfSignedCertificate { [CmdletBinding()] param([string[]]$DnsName, [string]$Subject, [string[]]$TextExtension, [string]$CertStoreLocation) throw 'stub New-SelfSignedCertificate called without a mock' }
    }
    $PSDefaultParameterValues['Mock:ModuleName'] = 'StormatrixGuest'
    $PSDefaultParameterValues['Should:ModuleName'] = 'StormatrixGuest'

    function script:New-TestDisk {
        param([int]$Number = 1, [string]$Serial = 'STORMATRIX01', [string]$PartitionStyle = 'RAW', [bool]$IsOffline = $true,
            [bool]$IsBoot = $false, [bool]$IsSystem = $false, [bool]$IsReadOnly = $false)
        [pscustomobject]@{ Number = $Number; SerialNumber = "  $Serial "; FriendlyName = 'QEMU HARDDISK'; BusType = 'SAS'
            Size = 1GB; PartitionStyle = $PartitionStyle; IsOffline = $IsOffline; OfflineReason = 'Policy'
            IsBoot = $IsBoot; IsSystem = $IsSystem; IsReadOnly = $IsReadOnly }
    }
    function script:New-NativeResult {
        param([int]$ExitCode = 0, [string]$StdOut = '', [string]$StdErr = '')
        [pscustomobject]@{ FilePath = 'x'; Arguments = @(); ExitCode = $ExitCode; StdOut = $StdOut; StdErr = $StdErr }
    }
}

AfterAll {
    $PSDefaultParameterValues.Remove('Mock:ModuleName')
    $PSDefaultParameterValues.Remove('Should:ModuleName')
    Remove-Module -Name StormatrixGuest -Force -ErrorAction SilentlyContinue
}

Describe 'Find-StormatrixTestDisk' {
    Context 'When exactly one disk has the serial' {
        It 'Should return that disk, ignoring padding around the serial' {
            Mock Get-Disk { @((New-TestDisk -Number 0 -Serial 'BOOT' -IsBoot $true), (New-TestDisk -Number 3)) }
            (Find-StormatrixTestDisk -Serial 'STORMATRIX01').Number | Should -Be 3
        }
    }
    Context 'When no disk has the serial' {
        It 'Should throw TestDiskNotFound listing the disks it saw' {
            Mock Get-Disk { @(New-TestDisk -Number 0 -Serial 'OTHER') }
            { Find-StormatrixTestDisk -Serial 'STORMATRIX01' } | Should -Throw -ErrorId 'Stormatrix.TestDiskNotFound' -ExpectedMessage "*serial ""OTHER""*"
        }
    }
    Context 'When two disks have the serial' {
        It 'Should throw TestDiskAmbiguous' {
            Mock Get-Disk { @((New-TestDisk -Number 1), (New-TestDisk -Number 2)) }
            { Find-StormatrixTestDisk -Serial 'STORMATRIX01' } | Should -Throw -ErrorId 'Stormatrix.TestDiskAmbiguous'
        }
    }
    Context 'When the serial holds characters a serial cannot have' {
        It 'Should reject it before looking' {
            Mock Get-Disk { }
            { Find-StormatrixTestDisk -Serial "x'; Remove-Item C:\ #" } | Should -Throw -ErrorId 'ParameterArgumentValidationError,Find-StormatrixTestDisk'
            Should -Invoke Get-Disk -Times 0 -Exactly -Scope It
        }
    }
}

Describe 'Get-StormatrixStorageController' {
    BeforeEach {
        Mock Get-PnpDevice {
            @([pscustomobject]@{ InstanceId = 'PCI\VEN_1AF4&DEV_1004&SUBSYS_00081AF4\3&1'; FriendlyName = 'Red Hat VirtIO SCSI controller'; Class = 'SCSIAdapter'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_1000&DEV_0012&SUBSYS_10001000\3&2'; FriendlyName = 'SCSI Controller'; Class = $null; Status = 'Error'; Problem = 'CM_PROB_FAILED_INSTALL'; ConfigManagerErrorCode = 28 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_8086&DEV_2922&SUBSYS_11001AF4\3&3'; FriendlyName = 'Standard SATA AHCI Controller'; Class = 'HDC'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_8086&DEV_100E&SUBSYS_11001AF4\3&4'; FriendlyName = 'Intel(R) PRO/1000'; Class = 'Net'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 })
        }
        Mock Get-PnpDeviceProperty {
            if ($InstanceId -like '*DEV_1004*') {
                @([pscustomobject]@{ KeyName = 'DEVPKEY_Device_Service'; Data = 'vioscsi' }, [pscustomobject]@{ KeyName = 'DEVPKEY_Device_DriverInfPath'; Data = 'oem3.inf' })
            }
            elseif ($InstanceId -like '*DEV_2922*') {
                @([pscustomobject]@{ KeyName = 'DEVPKEY_Device_Service'; Data = 'storahci' })
            }
        }
    }
    It 'Should name each controller and say whether a driver is bound' {
        $all = @(Get-StormatrixStorageController)
        $all.Count | Should -Be 3
        ($all | Where-Object Name -EQ 'virtio-scsi').DriverBound | Should -BeTrue
        ($all | Where-Object Name -EQ 'virtio-scsi').Service | Should -Be 'vioscsi'
        ($all | Where-Object Name -EQ 'lsi').DriverBound | Should -BeFalse -Because 'a controller without its driver has no class yet, and is found by its PCI id'
        ($all | Where-Object Name -EQ 'lsi').ProblemCode | Should -Be '28'
        ($all | Where-Object Name -EQ 'sata').DriverBound | Should -BeTrue
        Should -Invoke Get-PnpDevice -Exactly -Times 1 -Scope It -ParameterFilter { $PresentOnly }
    }
    It 'Should treat virtio-scsi-single as the virtio-scsi device' {
        @(Get-StormatrixStorageController -Controller 'virtio-scsi-single').Name | Should -Be 'virtio-scsi'
    }
    It 'Should reject an unknown controller name' {
        { Get-StormatrixStorageController -Controller 'floppy' } | Should -Throw -ErrorId 'ParameterArgumentValidationError,Get-StormatrixStorageController'
    }
}

Describe 'Get-StormatrixEngineVersion' {
    Context 'When fio is new enough' {
        It 'Should report it supported' {
            Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'fio-3.33' }
            $v = Get-StormatrixEngineVersion -Engine fio -Path 'C:\fio\fio.exe'
            $v.Supported | Should -BeTrue
            $v.Version | Should -Be 'fio-3.33'
            Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'C:\fio\fio.exe' -and $ArgumentList -contains '--version' }
        }
    }
    Context 'When fio is too old' {
        It 'Should report it unsupported' {
            Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'fio-3.1' }
            (Get-StormatrixEngineVersion -Engine fio -Path 'fio').Supported | Should -BeFalse
        }
    }
    Context 'When fio --version fails' {
        It 'Should throw EngineVersionFailed' {
            Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdErr 'broken' }
            { Get-StormatrixEngineVersion -Engine fio -Path 'fio' } | Should -Throw -ErrorId 'Stormatrix.EngineVersionFailed'
        }
    }
    Context 'When diskspd.exe is missing' {
        It 'Should throw ExecutableNotFound' {
            { Get-StormatrixEngineVersion -Engine diskspd -Path (Join-Path $TestDrive 'none.exe') } | Should -Throw -ErrorId 'Stormatrix.ExecutableNotFound'
        }
    }
    Context 'When diskspd.exe has a file version' {
        It 'Should read it' {
            $exe = Join-Path $TestDrive 'diskspd.exe'
            Set-Content -LiteralPath $exe -Value 'x'
            Mock Get-Item { [pscustomobject]@{ VersionInfo = [pscustomobject]@{ ProductVersion = '2.1.0.0' } } } -ParameterFilter { $LiteralPath -eq $exe }
            (Get-StormatrixEngineVersion -Engine diskspd -Path $exe).Supported | Should -BeTrue
        }
    }
}

Describe 'Get-StormatrixPowerPlan' {
    It 'Should recognise High performance by its GUID' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'Power Scheme GUID: 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c  (High performance)' }
        $plan = Get-StormatrixPowerPlan
        $plan.IsHighPerformance | Should -BeTrue
        $plan.Name | Should -Be 'High performance'
        Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'powercfg.exe' -and $ArgumentList[0] -eq '/getactivescheme' }
    }
    It 'Should report Balanced as not High performance' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'Power Scheme GUID: 381b4222-f694-41f0-9685-ff5bb260df2e  (Balanced)' }
        (Get-StormatrixPowerPlan).IsHighPerformance | Should -BeFalse
    }
    It 'Should throw when powercfg fails' {
        Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdErr 'Access denied' }
        { Get-StormatrixPowerPlan } | Should -Throw -ErrorId 'Stormatrix.PowerCfgFailed'
    }
    It 'Should throw when the output has no GUID' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'nonsense' }
        { Get-StormatrixPowerPlan } | Should -Throw -ErrorId 'Stormatrix.PowerCfgUnreadable'
    }
}

Describe 'Test-StormatrixPendingReboot' {
    It 'Should report no reboot when no marker exists' {
        Mock Test-Path { $false } -ParameterFilter { $LiteralPath -like 'HKLM:*' }
        Mock Get-ItemProperty { [pscustomobject]@{ Other = 1 } }
        (Test-StormatrixPendingReboot).Pending | Should -BeFalse
    }
    It 'Should name each reason' {
        Mock Test-Path { $true } -ParameterFilter { $LiteralPath -like '*RebootPending' }
        Mock Test-Path { $false } -ParameterFilter { $LiteralPath -like '*RebootRequired' }
        Mock Get-ItemProperty { [pscustomobject]@{ PendingFileRenameOperations = @('\??\C:\x') } }
        $r = Test-StormatrixPendingReboot
        $r.Pending | Should -BeTrue
        $r.Reasons | Should -HaveCount 2
    }
}

Describe 'Get-StormatrixGuestFacts' {
    It 'Should report the OS build, controllers and disks with partitions' {
        Mock Get-CimInstance { [pscustomobject]@{ Caption = 'Microsoft Windows Server 2022 Standard'; Version = '10.0.20348'; BuildNumber = '20348'; LastBootUpTime = [datetime]'2026-01-01T00:00:00Z' } }
        Mock Get-Disk { @((New-TestDisk -Number 0 -Serial 'BOOT' -PartitionStyle 'GPT' -IsOffline $false -IsBoot $true), (New-TestDisk -Number 1)) }
        Mock Get-Partition { @([pscustomobject]@{ PartitionNumber = 1; DriveLetter = 'C'; Size = 100GB; Type = 'Basic' }) }
        Mock Get-StormatrixStorageController { [pscustomobject]@{ Name = 'sata'; DriverBound = $true } }
        Mock Get-StorageSetting { [pscustomobject]@{ NewDiskPolicy = 'OfflineShared' } }
        $facts = Get-StormatrixGuestFacts -Serial 'STORMATRIX01'
        $facts.SanPolicy | Should -Be 'OfflineShared'
        $facts.OsBuild | Should -Be '20348'
        $facts.TestDisk | Should -Be 1
        $facts.Disks | Should -HaveCount 2
        $facts.Disks[1].SerialNumber | Should -Be 'STORMATRIX01'
        $facts.Disks[0].Partitions[0].DriveLetter | Should -Be 'C'
        $facts.Controllers[0].Name | Should -Be 'sata'
        Should -Invoke Get-Partition -Exactly -Times 1 -Scope It -ParameterFilter { $DiskNumber -eq 0 }
    }
}

Describe 'Invoke-StormatrixFio' {
    BeforeEach {
        Mock Get-Disk { @(New-TestDisk -Number 4) }
    }
    Context 'When fio succeeds on the disk found by serial' {
        It 'Should target \\.\PhysicalDriveN with windowsaio, --thread and --output, and return the JSON' {
            Mock Invoke-StormatrixNative {
                $out = ($ArgumentList | Where-Object { $_ -like '--output=*' }).Substring(9)
                Set-Content -LiteralPath $out -Value '{"fio version": "fio-3.35", "jobs": [{"jobname": "stormatrix", "error": 0}]}'
                New-NativeResult
            }
            $r = Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randread'; BlockSize = 65536; IoDepth = 8; NumJobs = 2; RampSeconds = 5; RuntimeSeconds = 30; RateMiBps = 32 } -OutputDirectory $TestDrive
            $r.Engine | Should -Be 'fio'
            $r.DiskNumber | Should -Be 4
            $r.FioVersion | Should -Be 'fio-3.35'
            $r.EngineFlags | Should -Be @('--direct=1', '--thread')
            $r.TestDisk.PartitionStyle | Should -Be 'RAW'
            $r.Raw | Should -Match '"jobs"'
            Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter {
                $ArgumentList -contains '--filename=\\.\PhysicalDrive4' -and $ArgumentList -contains '--ioengine=windowsaio' -and
                $ArgumentList -contains '--thread' -and $ArgumentList -contains '--output-format=json' -and
                $ArgumentList -contains '--ramp_time=5s' -and $ArgumentList -contains '--runtime=30s' -and
                $ArgumentList -contains '--rate=16777216' -and $ArgumentList -contains '--numjobs=2'
            }
            @(Get-ChildItem -LiteralPath $TestDrive -Filter 'stormatrix-fio-*').Count | Should -Be 0 -Because 'the output file is removed'
        }
    }
    Context 'When fio exits non-zero' {
        It 'Should throw FioFailed with fio''s stderr' {
            Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdErr 'fio: pid=0, err=5/file:io_u.c' }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioFailed' -ExpectedMessage '*err=5*'
        }
    }
    Context 'When fio writes no JSON' {
        It 'Should throw FioNoJson' {
            Mock Invoke-StormatrixNative { New-NativeResult }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioNoJson'
        }
    }
    Context 'When a job reports an error' {
        It 'Should throw FioJobError' {
            Mock Invoke-StormatrixNative {
                $out = ($ArgumentList | Where-Object { $_ -like '--output=*' }).Substring(9)
                Set-Content -LiteralPath $out -Value '{"jobs": [{"jobname": "stormatrix", "error": 5}]}'
                New-NativeResult
            }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioJobError'
        }
    }
    Context 'When the serial names the system disk' {
        It 'Should refuse without running fio' {
            Mock Get-Disk { @(New-TestDisk -Number 0 -IsSystem $true) }
            Mock Invoke-StormatrixNative { New-NativeResult }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } } | Should -Throw -ErrorId 'Stormatrix.TestDiskIsSystemDisk'
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
    Context 'When a write workload meets a disk with a partition table' {
        It 'Should refuse before fio runs, unless allowed' {
            Mock Get-Disk { @(New-TestDisk -Number 4 -PartitionStyle 'GPT') }
            Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.TestDiskNotRaw' -ExpectedMessage '*GPT partition table*'
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -AllowPartitioned -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioFailed'
        }
    }
    Context 'When the disk is read-only (SAN policy)' {
        It 'Should clear the flag before a write and report it' {
            $script:readOnly = $true
            Mock Get-Disk { @(New-TestDisk -Number 4 -IsReadOnly $script:readOnly) }
            Mock Set-Disk { $script:readOnly = $false }
            Mock Invoke-StormatrixNative {
                $out = ($ArgumentList | Where-Object { $_ -like '--output=*' }).Substring(9)
                Set-Content -LiteralPath $out -Value '{"jobs": [{"jobname": "stormatrix", "error": 0}]}'
                New-NativeResult
            }
            $r = Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'write'; BlockSize = 4096 } -OutputDirectory $TestDrive
            $r.TestDisk.WasReadOnly | Should -BeTrue
            $r.TestDisk.ReadOnlyCleared | Should -BeTrue
            Should -Invoke Set-Disk -Exactly -Times 1 -Scope It -ParameterFilter { $Number -eq 4 -and $IsReadOnly -eq $false }
        }
        It 'Should fail with its own message when the flag stays' {
            Mock Get-Disk { @(New-TestDisk -Number 4 -IsReadOnly $true) }
            Mock Set-Disk { throw 'The media is write protected.' }
            Mock Get-StorageSetting { [pscustomobject]@{ NewDiskPolicy = 'OfflineShared' } }
            Mock Invoke-StormatrixNative { New-NativeResult }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'write'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.TestDiskReadOnly' -ExpectedMessage '*OfflineShared*'
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
        It 'Should leave it alone for a read workload' {
            Mock Get-Disk { @(New-TestDisk -Number 4 -IsReadOnly $true) }
            Mock Set-Disk { }
            Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioFailed'
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
        }
    }
    Context 'When parameters are out of range' {
        It 'Should reject a block size that is not whole sectors' {
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 1000 } } | Should -Throw -ErrorId 'Stormatrix.BadBlockSize'
        }
        It 'Should reject an unknown rw mode' {
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randomread'; BlockSize = 4096 } } | Should -Throw -ErrorId 'ParameterArgumentValidationError,ConvertTo-StormatrixWorkload'
        }
        It 'Should reject a queue depth of 0' {
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096; IoDepth = 0 } } | Should -Throw -ErrorId 'ParameterArgumentValidationError,ConvertTo-StormatrixWorkload'
        }
        It 'Should reject an unknown workload key' {
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096; IoDeph = 8 } } | Should -Throw -ErrorId 'Stormatrix.BadWorkload'
        }
    }
    Context 'When the target is a file path with a drive letter' {
        It 'Should escape the colon for fio' {
            InModuleScope StormatrixGuest { ConvertTo-StormatrixFioTarget -Path 'C:\bench\f.dat' } | Should -Be 'C\:\bench\f.dat'
        }
    }
    Context 'When the workload is mixed and throttled' {
        It 'Should split the rate by rwmixread and per job' {
            $a = InModuleScope StormatrixGuest {
                $w = ConvertTo-StormatrixWorkload -InputObject @{ ReadWrite = 'randrw'; BlockSize = 4096; NumJobs = 2; RuntimeSeconds = 1; RateMiBps = 10; RwMixRead = 70 }
                ConvertTo-StormatrixFioArgument -Target 't' -OutputFile 'o' -Workload $w -IoEngine windowsaio
            }
            $a | Should -Contain '--rwmixread=70'
            $a | Should -Contain '--rate=3670016,1572864'
        }
    }
}

Describe 'Invoke-StormatrixDiskSpd' {
    BeforeEach {
        Mock Get-Disk { @(New-TestDisk -Number 2) }
    }
    It 'Should run diskspd against #N with -Rxml and return the XML' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut "<Results><System/><TimeSpan><TestTimeSeconds>30.00</TestTimeSeconds></TimeSpan></Results>" }
        $r = Invoke-StormatrixDiskSpd -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randrw'; RwMixRead = 70; BlockSize = 65536; IoDepth = 8; NumJobs = 2; RampSeconds = 5; RuntimeSeconds = 30 }
        $r.Engine | Should -Be 'diskspd'
        $r.EngineFlags | Should -Be @('-Su', '-n', '-Z1M')
        $r.Target | Should -Be '#2'
        ([xml]$r.Raw).Results.TimeSpan.TestTimeSeconds | Should -Be '30.00'
        Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter {
            $ArgumentList -contains '-b65536' -and $ArgumentList -contains '-d30' -and $ArgumentList -contains '-W5' -and
            $ArgumentList -contains '-o8' -and $ArgumentList -contains '-t2' -and $ArgumentList -contains '-r' -and
            $ArgumentList -contains '-w30' -and $ArgumentList -contains '-Su' -and $ArgumentList -notcontains '-Sh' -and
            $ArgumentList -contains '-n' -and $ArgumentList -contains '-L' -and $ArgumentList -contains '-Rxml' -and $ArgumentList[-1] -eq '#2'
        }
    }
    It 'Should throw DiskSpdFailed on a non-zero exit' {
        Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdOut 'Error opening file' }
        { Invoke-StormatrixDiskSpd -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } } | Should -Throw -ErrorId 'Stormatrix.DiskSpdFailed'
    }
    It 'Should throw DiskSpdNoXml when the output has no result' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'Usage: diskspd ...' }
        { Invoke-StormatrixDiskSpd -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'read'; BlockSize = 4096 } } | Should -Throw -ErrorId 'Stormatrix.DiskSpdNoXml'
    }
    It 'Should throttle each thread in bytes per millisecond' {
        $a = InModuleScope StormatrixGuest {
            ConvertTo-StormatrixDiskSpdArgument -DiskNumber 1 -Workload (ConvertTo-StormatrixWorkload -InputObject @{ ReadWrite = 'read'; BlockSize = 4096; NumJobs = 4; RuntimeSeconds = 1; RateMiBps = 32 })
        }
        $a | Should -Contain '-g8389'
    }
}

Describe 'Initialize-StormatrixGuest' {
    BeforeEach {
        $script:fio = Join-Path $TestDrive 'fio/fio.exe'
        Mock Get-Module { @([pscustomobject]@{ Name = 'Pester'; Version = [version]'5.6.1'; Path = 'x' }) } -ParameterFilter { $ListAvailable }
        Mock Set-Disk { }
        Mock Clear-Disk { }
        Mock Invoke-StormatrixNative { New-NativeResult }
        Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '381b4222-f694-41f0-9685-ff5bb260df2e'; Name = 'Balanced'; IsHighPerformance = $false } }
    }
    Context 'When everything is already right' {
        It 'Should change nothing' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 1) }
            Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c'; Name = 'High performance'; IsHighPerformance = $true } }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false
            @($steps | Where-Object Status -EQ 'Changed').Count | Should -Be 0
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
    Context 'When fio is missing and a source folder is given' {
        It 'Should copy it, take the disk offline and set the power plan' {
            $source = Join-Path $TestDrive 'share'
            New-Item -ItemType Directory -Path $source -Force | Out-Null
            Set-Content -LiteralPath (Join-Path $source 'fio.exe') -Value 'x'
            Mock Get-Disk { @(New-TestDisk -Number 1 -IsOffline $false) }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -FioSource $source -Confirm:$false
            Test-Path -LiteralPath $script:fio | Should -BeTrue
            ($steps | Where-Object Step -EQ 'disk-offline').Status | Should -Be 'Changed'
            Should -Invoke Set-Disk -Exactly -Times 1 -Scope It -ParameterFilter { $Number -eq 1 -and $IsOffline -eq $true }
            Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'powercfg.exe' -and $ArgumentList -contains '/setactive' }
        }
    }
    Context 'When run with -WhatIf' {
        It 'Should report what it would do and change nothing' {
            Mock Get-Disk { @(New-TestDisk -Number 1 -IsOffline $false -PartitionStyle 'GPT') }
            $source = Join-Path $TestDrive 'fio-src.exe'
            Set-Content -LiteralPath $source -Value 'x'
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -FioSource $source -ClearTestDisk -WhatIf
            @($steps | Where-Object Status -EQ 'WouldChange').Count | Should -BeGreaterOrEqual 3
            Test-Path -LiteralPath $script:fio | Should -BeFalse
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
    Context 'When the test disk has partitions and -ClearTestDisk is not given' {
        It 'Should refuse with the fix' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 1 -PartitionStyle 'GPT') }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.TestDiskNotRaw' -ExpectedMessage '*-ClearTestDisk*'
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
        }
    }
    Context 'When the serial names the system disk' {
        It 'Should refuse to touch it' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 0 -IsSystem $true -PartitionStyle 'GPT') }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -ClearTestDisk -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.TestDiskIsSystemDisk'
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
        }
    }
    Context 'When fio is missing and no source is given' {
        It 'Should throw FioMissing' {
            Mock Get-Disk { @(New-TestDisk) }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.FioMissing'
        }
    }
    Context 'When an HTTPS listener is asked for and none exists' {
        It 'Should create a listener with a self-signed certificate and a firewall rule' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk) }
            Mock Get-WSManInstance { @([pscustomobject]@{ Transport = 'HTTP' }) }
            Mock New-SelfSignedCertificate { [pscustomobject]@{ Thumbprint = 'ABC123' } }
            Mock Get-NetIPAddress { @([pscustomobject]@{ IPAddress = '127.0.0.1'; PrefixOrigin = 'WellKnown' }, [pscustomobject]@{ IPAddress = '192.168.50.21'; PrefixOrigin = 'Dhcp' }) }
            Mock New-WSManInstance { }
            Mock Get-NetFirewallRule { }
            Mock New-NetFirewallRule { }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -SkipPowerPlan -WinRmHttps -Confirm:$false
            ($steps | Where-Object Step -EQ 'winrm-https').Status | Should -Be 'Changed'
            Should -Invoke New-WSManInstance -Exactly -Times 1 -Scope It -ParameterFilter { $SelectorSet.Transport -eq 'HTTPS' -and $ValueSet.CertificateThumbprint -eq 'ABC123' }
            Should -Invoke New-NetFirewallRule -Exactly -Times 1 -Scope It -ParameterFilter { $LocalPort -eq '5986' }
            Should -Invoke New-SelfSignedCertificate -Exactly -Times 1 -Scope It -ParameterFilter { $TextExtension[0] -like '2.5.29.17={text}DNS=*&IPAddress=192.168.50.21' }
        }
    }
}

Describe 'Invoke-StormatrixGuestValidation' {
    Context 'With the built-in runner (no Pester needed)' {
        It 'Should run every check and report each result and fix' {
            Mock Get-Disk { @(New-TestDisk -Number 1) }
            Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '381b4222-f694-41f0-9685-ff5bb260df2e'; Name = 'Balanced'; IsHighPerformance = $false } }
            Mock Test-StormatrixPendingReboot { [pscustomobject]@{ Pending = $false; Reasons = @() } }
            Mock Get-StormatrixEngineVersion { [pscustomobject]@{ Supported = $true; Version = 'fio-3.33'; Minimum = '3.20' } }
            Mock Get-StormatrixStorageController { [pscustomobject]@{ Name = 'virtio-scsi'; DriverBound = $true; InstanceId = 'PCI\VEN_1AF4&DEV_1004'; Status = 'OK'; ProblemCode = '0' } }
            $fio = Join-Path $TestDrive 'fio.exe'
            Set-Content -LiteralPath $fio -Value 'x'
            $r = Invoke-StormatrixGuestValidation -Serial 'STORMATRIX01' -Controller 'virtio-scsi' -FioPath $fio
            $r.Runner | Should -Be 'built-in runner'
            $r.Passed | Should -BeFalse
            $r.Total | Should -Be 9
            $r.FailedCount | Should -Be 1
            ($r.Tests | Where-Object Result -EQ 'Failed').Message | Should -BeLike "*the active plan is 'Balanced'. Fix: powercfg*"
            @($r.Tests | Where-Object Result -EQ 'Skipped').Name | Should -Be 'Should have DiskSpd present and supported'
        }
    }
    Context 'With -Runner Pester when Pester 5 is not installed' {
        It 'Should throw PesterMissing with the fix' {
            Mock Get-Module { @([pscustomobject]@{ Name = 'Pester'; Version = [version]'3.4.0'; Path = 'x' }) } -ParameterFilter { $ListAvailable }
            { Invoke-StormatrixGuestValidation -Serial 'STORMATRIX01' -Runner Pester } | Should -Throw -ErrorId 'Stormatrix.PesterMissing' -ExpectedMessage '*leave -Runner out*'
        }
    }
}
