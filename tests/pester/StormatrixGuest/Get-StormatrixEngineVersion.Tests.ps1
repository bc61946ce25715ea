# Unit tests of Get-StormatrixEngineVersion (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Get-StormatrixEngineVersion' {
    Context 'When fio is new enough' {
        It 'Should report it supported' {
            Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'fio-3.33' }
            $v = Get-StormatrixEngineVersion -Engine fio -Path 'C:\fio\fio.exe'
            $v.Supported | Should -BeTrue
            $v.Version | Should -Be 'fio-3.33'
            Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'C:\fio\fio.exe' -and $ArgumentList -contains '--version' }
        }
    }
    Context 'When fio is too old' {
        It 'Should report it unsupported' {
            Mock Invoke-StormatrixNative { New-NativeResult -StdOut 'fio-3.1' }
            (Get-StormatrixEngineVersion -Engine fio -Path 'fio').Supported | Should -BeFalse
        }
    }
    Context 'When fio --version fails' {
        It 'Should throw EngineVersionFailed' {
            Mock Invoke-StormatrixNative { New-NativeResult -ExitCode 1 -StdErr 'broken' }
            { Get-StormatrixEngineVersion -Engine fio -Path 'fio' } | Should -Throw -ErrorId 'Stormatrix.EngineVersionFailed'
        }
    }
    Context 'When diskspd.exe is missing' {
        It 'Should throw ExecutableNotFound' {
            { Get-StormatrixEngineVersion -Engine diskspd -Path (Join-Path $TestDrive 'none.exe') } | Should -Throw -ErrorId 'Stormatrix.ExecutableNotFound'
        }
    }
    Context 'When diskspd.exe has a file version' {
        It 'Should read it' {
            $exe = Join-Path $TestDrive 'diskspd.exe'
            Set-Content -LiteralPath $exe -Value 'x'
            Mock Get-Item { [pscustomobject]@{ VersionInfo = [pscustomobject]@{ ProductVersion = '2.1.0.0' } } } -ParameterFilter { $LiteralPath -eq $exe }
            (Get-StormatrixEngineVersion -Engine diskspd -Path $exe).Supported | Should -BeTrue
        }
    }
}
