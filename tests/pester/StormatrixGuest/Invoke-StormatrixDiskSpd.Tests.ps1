# Unit tests of Invoke-StormatrixDiskSpd (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
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

    Context 'When run with -WhatIf or -Confirm' {
        BeforeEach {
            Mock Get-Disk { @(New-TestDisk -Number 2 -IsReadOnly $true) }
            Mock Set-Disk { }
            Mock Invoke-StormatrixNative { New-NativeResult -StdOut '<Results/>' }
        }
        It 'Should clear no flag, start no DiskSpd and return nothing under -WhatIf' {
            Invoke-StormatrixDiskSpd -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -WhatIf | Should -BeNullOrEmpty
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
        It 'Should ask before clearing read-only and before running (-Confirm)' {
            if (-not $script:NonInteractive) { Set-ItResult -Skipped -Because 'an interactive session would wait for the answer'; return }
            { Invoke-StormatrixDiskSpd -Serial 'STORMATRIX01' -Workload @{ ReadWrite = 'randwrite'; BlockSize = 4096 } -Confirm } |
                Should -Throw -ExpectedMessage '*NonInteractive mode*'
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
}
