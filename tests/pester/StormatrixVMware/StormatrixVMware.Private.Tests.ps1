# Tests of StormatrixVMware's private helpers; the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
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
