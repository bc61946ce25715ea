# Unit tests of Connect-StormatrixVMware (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
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
