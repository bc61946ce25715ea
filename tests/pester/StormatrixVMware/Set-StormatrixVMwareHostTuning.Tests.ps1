# Unit tests of Set-StormatrixVMwareHostTuning (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
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
