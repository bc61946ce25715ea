# Unit tests of Invoke-StormatrixFio (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Invoke-StormatrixFio' {
    BeforeEach {
        Mock Get-Disk { @(New-TestDisk -Number 4) }
    }
    Context 'When fio succeeds on the disk found by serial' {
        It 'Should target \\.\PhysicalDriveN with windowsaio, --thread and --output, and return the JSON' {
            Mock Invoke-StormatrixNative { Write-FioOutput -ArgumentList $ArgumentList -Json '{"fio version": "fio-3.35", "jobs": [{"jobname": "stormatrix", "error": 0}]}'; New-NativeResult }
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
            Mock Invoke-StormatrixNative { Write-FioOutput -ArgumentList $ArgumentList -Json '{"jobs": [{"jobname": "stormatrix", "error": 5}]}'; New-NativeResult }
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
            Mock Invoke-StormatrixNative { Write-FioOutput -ArgumentList $ArgumentList -Json '{"jobs": [{"jobname": "stormatrix", "error": 0}]}'; New-NativeResult }
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

    Context 'When run with -WhatIf or -Confirm' {
        BeforeEach {
            Mock Get-Disk { @(New-TestDisk -Number 4 -IsReadOnly $true) }
            Mock Set-Disk { }
            Mock Invoke-StormatrixNative { New-NativeResult }
        }
        It 'Should clear no flag, start no fio and return nothing under -WhatIf' {
            Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -OutputDirectory $TestDrive -WhatIf | Should -BeNullOrEmpty
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
            @(Get-ChildItem -LiteralPath $TestDrive -Filter 'stormatrix-fio-*').Count | Should -Be 0
        }
        It 'Should ask before clearing read-only and before running (-Confirm)' {
            if (-not $script:NonInteractive) { Set-ItResult -Skipped -Because 'an interactive session would wait for the answer'; return }
            { Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -OutputDirectory $TestDrive -Confirm } |
                Should -Throw -ExpectedMessage '*NonInteractive mode*'
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
        It 'Should not ask without -Confirm (the controller''s calls are non-interactive)' {
            Mock Get-Disk { @(New-TestDisk -Number 4) }
            Mock Invoke-StormatrixNative { Write-FioOutput -ArgumentList $ArgumentList -Json '{"fio version": "fio-3.35", "jobs": [{"jobname": "stormatrix", "error": 0}]}'; New-NativeResult }
            (Invoke-StormatrixFio -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -OutputDirectory $TestDrive).Engine | Should -Be 'fio'
        }
    }
}
