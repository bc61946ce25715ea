# Unit tests of Get-StormatrixPowerPlan (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Get-StormatrixPowerPlan' {
    It 'Should recognise High performance by its GUID' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'Power Scheme GUID: 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c  (High performance)' }
        $plan = Get-StormatrixPowerPlan
        $plan.IsHighPerformance | Should -BeTrue
        $plan.Name | Should -Be 'High performance'
        Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'powercfg.exe' -and $ArgumentList[0] -eq '/getactivescheme' }
    }
    It 'Should report Balanced as not High performance' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'Power Scheme GUID: 381b4222-f694-41f0-9685-ff5bb260df2e  (Balanced)' }
        (Get-StormatrixPowerPlan).IsHighPerformance | Should -BeFalse
    }
    It 'Should throw when powercfg fails' {
        Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdErr 'Access denied' }
        { Get-StormatrixPowerPlan } | Should -Throw -ErrorId 'Stormatrix.PowerCfgFailed'
    }
    It 'Should throw when the output has no GUID' {
        Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'nonsense' }
        { Get-StormatrixPowerPlan } | Should -Throw -ErrorId 'Stormatrix.PowerCfgUnreadable'
    }
}
