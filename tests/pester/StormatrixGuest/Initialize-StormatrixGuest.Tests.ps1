# Unit tests of Initialize-StormatrixGuest (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Initialize-StormatrixGuest' {
    BeforeEach {
        $script:fio = Join-Path $TestDrive 'fio/fio.exe'
        Mock Get-Module { @([pscustomobject]@{ Name = 'Pester'; Version = [version]'5.6.1'; Path = 'x' }) } -ParameterFilter { $ListAvailable }
        Mock Set-Disk { }
        Mock Clear-Disk { }
        Mock Invoke-StormatrixNative { New-NativeResult }
        Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '381b4222-f694-41f0-9685-ff5bb260df2e'; Name = 'Balanced'; IsHighPerformance = $false } }
    }
    Context 'When everything is already right' {
        It 'Should change nothing' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 1) }
            Mock Get-StormatrixPowerPlan { [pscustomobject]@{ Guid = '8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c'; Name = 'High performance'; IsHighPerformance = $true } }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false
            @($steps | Where-Object Status -EQ 'Changed').Count | Should -Be 0
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
    Context 'When fio is missing and a source folder is given' {
        It 'Should copy it, take the disk offline and set the power plan' {
            $source = Join-Path $TestDrive 'share'
            New-Item -ItemType Directory -Path $source -Force | Out-Null
            Set-Content -LiteralPath (Join-Path $source 'fio.exe') -Value 'x'
            Mock Get-Disk { @(New-TestDisk -Number 1 -IsOffline $false) }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -FioSource $source -Confirm:$false
            Test-Path -LiteralPath $script:fio | Should -BeTrue
            ($steps | Where-Object Step -EQ 'disk-offline').Status | Should -Be 'Changed'
            Should -Invoke Set-Disk -Exactly -Times 1 -Scope It -ParameterFilter { $Number -eq 1 -and $IsOffline -eq $true }
            Should -Invoke Invoke-StormatrixNative -Exactly -Times 1 -Scope It -ParameterFilter { $FilePath -eq 'powercfg.exe' -and $ArgumentList -contains '/setactive' }
        }
    }
    Context 'When run with -WhatIf' {
        It 'Should report what it would do and change nothing' {
            Mock Get-Disk { @(New-TestDisk -Number 1 -IsOffline $false -PartitionStyle 'GPT') }
            $source = Join-Path $TestDrive 'fio-src.exe'
            Set-Content -LiteralPath $source -Value 'x'
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -FioSource $source -ClearTestDisk -WhatIf
            @($steps | Where-Object Status -EQ 'WouldChange').Count | Should -BeGreaterOrEqual 3
            Test-Path -LiteralPath $script:fio | Should -BeFalse
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Set-Disk -Times 0 -Exactly -Scope It
            Should -Invoke Invoke-StormatrixNative -Times 0 -Exactly -Scope It
        }
    }
    Context 'When the test disk has partitions and -ClearTestDisk is not given' {
        It 'Should refuse with the fix' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 1 -PartitionStyle 'GPT') }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.TestDiskNotRaw' -ExpectedMessage '*-ClearTestDisk*'
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
        }
    }
    Context 'When the serial names the system disk' {
        It 'Should refuse to touch it' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk -Number 0 -IsSystem $true -PartitionStyle 'GPT') }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -ClearTestDisk -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.TestDiskIsSystemDisk'
            Should -Invoke Clear-Disk -Times 0 -Exactly -Scope It
        }
    }
    Context 'When fio is missing and no source is given' {
        It 'Should throw FioMissing' {
            Mock Get-Disk { @(New-TestDisk) }
            { Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -Confirm:$false } | Should -Throw -ErrorId 'Stormatrix.FioMissing'
        }
    }
    Context 'When an HTTPS listener is asked for and none exists' {
        It 'Should create a listener with a self-signed certificate and a firewall rule' {
            New-Item -ItemType File -Path $script:fio -Force | Out-Null
            Mock Get-Disk { @(New-TestDisk) }
            Mock Get-WSManInstance { @([pscustomobject]@{ Transport = 'HTTP' }) }
            Mock New-SelfSignedCertificate { [pscustomobject]@{ Thumbprint = 'ABC123' } }
            Mock Get-NetIPAddress { @([pscustomobject]@{ IPAddress = '127.0.0.1'; PrefixOrigin = 'WellKnown' }, [pscustomobject]@{ IPAddress = '192.168.50.21'; PrefixOrigin = 'Dhcp' }) }
            Mock New-WSManInstance { }
            Mock Get-NetFirewallRule { }
            Mock New-NetFirewallRule { }
            $steps = Initialize-StormatrixGuest -Serial 'STORMATRIX01' -FioPath $script:fio -SkipPowerPlan -WinRmHttps -Confirm:$false
            ($steps | Where-Object Step -EQ 'winrm-https').Status | Should -Be 'Changed'
            Should -Invoke New-WSManInstance -Exactly -Times 1 -Scope It -ParameterFilter { $SelectorSet.Transport -eq 'HTTPS' -and $ValueSet.CertificateThumbprint -eq 'ABC123' }
            Should -Invoke New-NetFirewallRule -Exactly -Times 1 -Scope It -ParameterFilter { $LocalPort -eq '5986' }
            Should -Invoke New-SelfSignedCertificate -Exactly -Times 1 -Scope It -ParameterFilter { $TextExtension[0] -like '2.5.29.17={text}DNS=*&IPAddress=192.168.50.21' }
        }
    }
}
