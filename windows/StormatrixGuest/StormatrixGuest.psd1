@{
    RootModule           = 'StormatrixGuest.psm1'
    ModuleVersion        = '0.1.0'
    GUID                 = '5b0f6a52-2d7e-4d1c-9d55-6c3f0b7e2a41'
    Author               = 'stormatrix'
    Description          = 'Runs fio or DiskSpd against the raw test disk of a stormatrix benchmark guest, reports guest storage facts, prepares and validates the guest.'
    PowerShellVersion    = '5.1'
    CompatiblePSEditions = @('Desktop', 'Core')
    FunctionsToExport    = @(
        'Find-StormatrixTestDisk'
        'Get-StormatrixEngineVersion'
        'Get-StormatrixGuestFacts'
        'Get-StormatrixPowerPlan'
        'Get-StormatrixStorageController'
        'Initialize-StormatrixGuest'
        'Invoke-StormatrixDiskSpd'
        'Invoke-StormatrixFio'
        'Invoke-StormatrixGuestValidation'
        'Test-StormatrixPendingReboot'
    )
    CmdletsToExport      = @()
    VariablesToExport    = @()
    AliasesToExport      = @()
    PrivateData          = @{
        PSData = @{
            Tags = @('fio', 'DiskSpd', 'benchmark', 'storage')
        }
    }
}
