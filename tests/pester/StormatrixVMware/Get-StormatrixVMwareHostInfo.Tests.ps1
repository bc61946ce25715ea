# Unit tests of Get-StormatrixVMwareHostInfo (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
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
