@{
    RootModule        = 'FakeWindows.psm1'
    ModuleVersion     = '0.1.0'
    GUID              = '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0'
    Author            = 'stormatrix tests'
    Description       = 'A fake Windows guest described by data: Storage, PnpDevice, CimCmdlets, NetSecurity, NetTCPIP, PKI and WS-Man cmdlets for tests of windows/StormatrixGuest.'
    PowerShellVersion = '7.2'
    FunctionsToExport = @('Get-Disk', 'Set-Disk', 'Clear-Disk', 'Get-Partition', 'Get-StorageSetting', 'Get-CimInstance', 'Get-PnpDevice',
        'Get-PnpDeviceProperty', 'Get-NetIPAddress', 'Get-WSManInstance', 'New-WSManInstance', 'New-SelfSignedCertificate', 'Get-NetFirewallRule',
        'New-NetFirewallRule', 'Get-ItemProperty', 'Initialize-FakeWindowsDrive', 'Enter-FakeWindowsGuest', 'Restart-Computer')
    CmdletsToExport   = @()
    VariablesToExport = @()
    AliasesToExport   = @()
}
