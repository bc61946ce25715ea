# Unit tests of Test-StormatrixPendingReboot (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Test-StormatrixPendingReboot' {
    It 'Should report no reboot when no marker exists' {
        Mock Test-Path { $false } -ParameterFilter { $LiteralPath -like 'HKLM:*' }
        Mock Get-ItemProperty { [pscustomobject]@{ Other = 1 } }
        (Test-StormatrixPendingReboot).Pending | Should -BeFalse
    }
    It 'Should name each reason' {
        Mock Test-Path { $true } -ParameterFilter { $LiteralPath -like '*RebootPending' }
        Mock Test-Path { $false } -ParameterFilter { $LiteralPath -like '*RebootRequired' }
        Mock Get-ItemProperty { [pscustomobject]@{ PendingFileRenameOperations = @('\??\C:\x') } }
        $r = Test-StormatrixPendingReboot
        $r.Pending | Should -BeTrue
        $r.Reasons | Should -HaveCount 2
    }
}
