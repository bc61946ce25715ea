@{
    RootModule           = 'StormatrixVMware.psm1'
    ModuleVersion        = '0.1.0'
    GUID                 = '9d3c4a7e-61b2-4f0e-8c55-2e7a1b9f4d63'
    Author               = 'stormatrix'
    Description          = 'Runs on the controller workstation (PowerShell 7 + VMware PowerCLI): moves the test disk of a stormatrix benchmark VM between ESXi controller types, sets and restores the ESXi host storage tuning, reads host CPU usage for a measurement window, and deploys, power-cycles, checks the fio of and removes the worker fleet of a comparison suite.'
    PowerShellVersion    = '7.2'
    CompatiblePSEditions = @('Core')
    FunctionsToExport    = @(
        'Add-StormatrixVMwareFleetDisk'
        'Connect-StormatrixVMware'
        'Get-StormatrixVMwareCpuUsage'
        'Get-StormatrixVMwareFleetFioVersion'
        'Get-StormatrixVMwareFleetTarget'
        'Get-StormatrixVMwareHostInfo'
        'Get-StormatrixVMwareHostTuning'
        'Get-StormatrixVMwareLayout'
        'Invoke-StormatrixVMwareRequest'
        'New-StormatrixVMwareFleet'
        'Remove-StormatrixVMwareFleet'
        'Remove-StormatrixVMwareFleetDisk'
        'Restart-StormatrixVMwareFleet'
        'Restore-StormatrixVMwareLayout'
        'Set-StormatrixVMwareController'
        'Set-StormatrixVMwareHostTuning'
    )
    CmdletsToExport      = @()
    VariablesToExport    = @()
    AliasesToExport      = @()
    PrivateData          = @{
        PSData = @{
            Tags = @('VMware', 'PowerCLI', 'ESXi', 'benchmark', 'storage')
        }
    }
}
