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
    It 'Get-StormatrixVMwareEnvironmentCredential should build the credential from the named variables' {
        $env:SMX_CRED_USER = 'svc-bench'
        $env:SMX_CRED_PASSWORD = 'cr3d-Pa55'
        try {
            $c = InModuleScope StormatrixVMware { Get-StormatrixVMwareEnvironmentCredential -UserVariable SMX_CRED_USER -PasswordVariable SMX_CRED_PASSWORD -Purpose 'p' }
            $c | Should -BeOfType ([System.Management.Automation.PSCredential])
            $c.UserName | Should -Be 'svc-bench'
            $c.GetNetworkCredential().Password | Should -Be 'cr3d-Pa55'
        }
        finally { Remove-Item -Path Env:SMX_CRED_USER, Env:SMX_CRED_PASSWORD -ErrorAction SilentlyContinue }
    }
    It 'Get-StormatrixVMwareEnvironmentCredential should name every missing variable and the caller''s purpose, never the password' {
        $env:SMX_CRED_PASSWORD = 'cr3d-Pa55'
        try {
            $e = $null
            try { InModuleScope StormatrixVMware { Get-StormatrixVMwareEnvironmentCredential -UserVariable SMX_CRED_NOUSER -PasswordVariable SMX_CRED_PASSWORD -Purpose 'the lab account' -TargetObject 'vc01.lab' } }
            catch { $e = $_ }
            $e.FullyQualifiedErrorId | Should -BeLike 'Stormatrix.VMware.CredentialMissing*'
            $e.Exception.Message | Should -Be 'environment variable(s) SMX_CRED_NOUSER not set: the lab account'
            $e.TargetObject | Should -Be 'vc01.lab'
            Remove-Item -Path Env:SMX_CRED_PASSWORD
            { InModuleScope StormatrixVMware { Get-StormatrixVMwareEnvironmentCredential -UserVariable SMX_CRED_NOUSER -PasswordVariable SMX_CRED_PASSWORD -Purpose 'p' } } |
                Should -Throw -ErrorId 'Stormatrix.VMware.CredentialMissing' -ExpectedMessage 'environment variable(s) SMX_CRED_NOUSER, SMX_CRED_PASSWORD not set: p'
        }
        finally { Remove-Item -Path Env:SMX_CRED_PASSWORD -ErrorAction SilentlyContinue }
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
