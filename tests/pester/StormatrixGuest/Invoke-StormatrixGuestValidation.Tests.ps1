# Unit tests of Invoke-StormatrixGuestValidation (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Invoke-StormatrixGuestValidation' {
    Context 'With the built-in runner (no Pester needed)' {
        It 'Should run every check and report each result and fix' {
            Mock Get-Disk { @(New-TestDisk -Number 1) }
            Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '381b4222-f694-41f0-9685-ff5bb260df2e'; Name = 'Balanced'; IsHighPerformance = $false } }
            Mock Test-StormatrixPendingReboot { [pscustomobject]@{ Pending = $false; Reasons = @() } }
            Mock Get-StormatrixEngineVersion { [pscustomobject]@{ Supported = $true; Version = 'fio-3.33'; Minimum = '3.20' } }
            Mock Get-StormatrixStorageController { [pscustomobject]@{ Name = 'virtio-scsi'; DriverBound = $true; InstanceId = 'PCI\VEN_1AF4&DEV_1004'; Status = 'OK'; ProblemCode = '0' } }
            $fio = Join-Path $TestDrive 'fio.exe'
            Set-Content -LiteralPath $fio -Value 'x'
            $r = Invoke-StormatrixGuestValidation -Serial 'STORMATRIX01' -Controller 'virtio-scsi' -FioPath $fio
            $r.Runner | Should -Be 'built-in runner'
            $r.Passed | Should -BeFalse
            $r.Total | Should -Be 9
            $r.FailedCount | Should -Be 1
            ($r.Tests | Where-Object Result -EQ 'Failed').Message | Should -BeLike "*the active plan is 'Balanced'. Fix: powercfg*"
            @($r.Tests | Where-Object Result -EQ 'Skipped').Name | Should -Be 'Should have DiskSpd present and supported'
        }
    }
    Context 'With -Runner Pester when Pester 5 is not installed' {
        It 'Should throw PesterMissing with the fix' {
            Mock Get-Module { @([pscustomobject]@{ Name = 'Pester'; Version = [version]'3.4.0'; Path = 'x' }) } -ParameterFilter { $ListAvailable }
            { Invoke-StormatrixGuestValidation -Serial 'STORMATRIX01' -Runner Pester } | Should -Throw -ErrorId 'Stormatrix.PesterMissing' -ExpectedMessage '*leave -Runner out*'
        }
    }
}
