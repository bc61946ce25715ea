# Unit tests of Find-StormatrixTestDisk (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Find-StormatrixTestDisk' {
    Context 'When exactly one disk has the serial' {
        It 'Should return that disk, ignoring padding around the serial' {
            Mock Get-Disk { @((New-TestDisk -Number 0 -Serial 'BOOT' -IsBoot $true), (New-TestDisk -Number 3)) }
            (Find-StormatrixTestDisk -Serial 'STORMATRIX01').Number | Should -Be 3
        }
    }
    Context 'When no disk has the serial' {
        It 'Should throw TestDiskNotFound listing the disks it saw' {
            Mock Get-Disk { @(New-TestDisk -Number 0 -Serial 'OTHER') }
            { Find-StormatrixTestDisk -Serial 'STORMATRIX01' } | Should -Throw -ErrorId 'Stormatrix.TestDiskNotFound' -ExpectedMessage "*serial ""OTHER""*"
        }
    }
    Context 'When two disks have the serial' {
        It 'Should throw TestDiskAmbiguous' {
            Mock Get-Disk { @((New-TestDisk -Number 1), (New-TestDisk -Number 2)) }
            { Find-StormatrixTestDisk -Serial 'STORMATRIX01' } | Should -Throw -ErrorId 'Stormatrix.TestDiskAmbiguous'
        }
    }
    Context 'When the serial holds characters a serial cannot have' {
        It 'Should reject it before looking' {
            Mock Get-Disk { }
            { Find-StormatrixTestDisk -Serial "x'; Remove-Item C:\ #" } | Should -Throw -ErrorId 'ParameterArgumentValidationError,Find-StormatrixTestDisk'
            Should -Invoke Get-Disk -Times 0 -Exactly -Scope It
        }
    }
}
