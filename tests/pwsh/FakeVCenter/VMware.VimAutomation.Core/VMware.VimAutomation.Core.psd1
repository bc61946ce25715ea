@{
    # A FAKE of VMware PowerCLI's core module for the stormatrix tests: same module name, so that
    # `Import-Module VMware.VimAutomation.Core` in windows/StormatrixVMware finds it on PSModulePath
    # (tests/pwsh/FakeVCenter). It answers from the lab file named by STORMATRIX_FAKE_VCENTER_LAB.
    RootModule        = 'VMware.VimAutomation.Core.psm1'
    ModuleVersion     = '13.3.0'
    GUID              = '5e3b2f4c-8a61-4d0b-9c1e-7f2a6b0d9e31'
    Author            = 'stormatrix tests (not VMware)'
    Description       = 'Fake PowerCLI core cmdlets described by a lab file (tests only).'
    PowerShellVersion = '7.2'
    FunctionsToExport = @(
        'Connect-VIServer', 'Disconnect-VIServer', 'Set-PowerCLIConfiguration', 'Get-VICredentialStoreItem',
        'Get-VM', 'Start-VM', 'Stop-VM', 'Wait-Tools', 'Get-HardDisk', 'Set-HardDisk',
        'Get-ScsiController', 'New-ScsiController', 'Set-ScsiController', 'Get-NvmeController', 'New-NvmeController',
        'Get-VMHost', 'Get-EsxCli', 'Get-Stat', 'Get-AdvancedSetting', 'New-AdvancedSetting',
        'Get-Datastore', 'Get-Template', 'New-VM', 'Set-VM', 'Get-Task', 'Wait-Task', 'New-HardDisk', 'Remove-HardDisk', 'Remove-VM', 'Get-VMGuest', 'Invoke-VMScript'
    )
    CmdletsToExport   = @()
    VariablesToExport = @()
    AliasesToExport   = @()
}
