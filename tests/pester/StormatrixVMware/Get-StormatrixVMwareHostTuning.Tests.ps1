# Unit tests of Get-StormatrixVMwareHostTuning (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
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
