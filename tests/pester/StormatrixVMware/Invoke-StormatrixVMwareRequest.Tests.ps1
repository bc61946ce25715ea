# Unit tests of Invoke-StormatrixVMwareRequest (StormatrixVMware); the shared set-up is VMware.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'VMware.TestSetup.ps1')
}

AfterAll {
    Remove-VMwareTestSetup
}

Describe 'Invoke-StormatrixVMwareRequest' {
    BeforeAll {
        $script:connection = '"connection":{"Server":"vc01.lab","CredentialSource":"Environment","UserVariable":"SMX_TEST_USER","PasswordVariable":"SMX_TEST_PASSWORD","VerifyCertificate":true}'
    }
    BeforeEach { New-TestLab }
    AfterEach { Remove-TestLab }

    It 'Should connect, run the command with the parameters as data, disconnect and answer ok' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"bench01","DiskName":"Hard disk 2"},' + $script:connection + '}')
        $r.Ok | Should -BeTrue
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.schema | Should -Be 'stormatrix/vmware-1'
        $doc.result.Disk.ControllerKey | Should -Be 1001
        $doc.server.Version | Should -Be '8.0.2'
        @(Get-TestCall | Where-Object { $_ -eq 'Connect-VIServer' }).Count | Should -Be 1
        @(Get-TestCall | Where-Object { $_ -eq 'Disconnect-VIServer' }).Count | Should -Be 1
    }
    It 'Should keep a value that looks like code as data' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"x''; Remove-Item / #","DiskName":"Hard disk 2"},' + $script:connection + '}')
        $r.Ok | Should -BeFalse
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.error.id | Should -Be 'Stormatrix.VMware.VmNotFound'
        $doc.error.message | Should -BeLike "*x'; Remove-Item / #*"
        $doc.error.powercli | Should -BeLike '*was not found*'
        @(Get-TestCall | Where-Object { $_ -eq 'Disconnect-VIServer' }).Count | Should -Be 1
    }
    It 'Should run a command that changes the VM without asking for confirmation' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Set-StormatrixVMwareController","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Type":"NVMe","KeepControllerKey":[1000,1001],"ReadyTimeoutSeconds":30},' + $script:connection + '}')
        $r.Ok | Should -BeTrue
        (ConvertFrom-Json -InputObject $r.Json).result.After.Controller.Type | Should -Be 'NVMe'
    }
    It 'Should refuse a command outside its list' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Remove-Item","parameters":{},' + $script:connection + '}')
        $r.Ok | Should -BeFalse
        (ConvertFrom-Json -InputObject $r.Json).error.id | Should -Be 'Stormatrix.VMware.UnknownCommand'
        Get-TestCall | Should -Not -Contain 'Connect-VIServer'
    }
    It 'Should answer BadRequest for <_>' -ForEach @('not json', '[1, 2]', '{"command":"Get-StormatrixVMwareLayout","parameters":[1],"connection":{}}') {
        (ConvertFrom-Json -InputObject (Invoke-StormatrixVMwareRequest -RequestJson $_).Json).error.id | Should -Be 'Stormatrix.VMware.BadRequest'
    }
    It 'Should report a parameter the command does not have as PowerShell''s binding error' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Snapshot":1},' + $script:connection + '}')
        (ConvertFrom-Json -InputObject $r.Json).error.id | Should -Be 'NamedParameterNotFound,Get-StormatrixVMwareLayout'
    }
    It 'Should return warnings in the answer instead of printing them' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareHostTuning","parameters":{"VMHost":"esx01.lab","Device":"naa.600a"},' + $script:connection.Replace('"VerifyCertificate":true', '"VerifyCertificate":false') + '}')
        $doc = ConvertFrom-Json -InputObject $r.Json
        $doc.result.LatencySensitiveThreshold | Should -Be 0
        @($doc.warnings) -join ' ' | Should -BeLike '*certificate validation*turned off*'
    }

    It 'Should pass -WhatIf to a command that changes the VM: ok, no result, nothing changed' {
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Set-StormatrixVMwareController","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Type":"NVMe","KeepControllerKey":[1000,1001],"ReadyTimeoutSeconds":30},' + $script:connection + '}') -WhatIf
        $r.Ok | Should -BeTrue
        (ConvertFrom-Json -InputObject $r.Json).result | Should -BeNullOrEmpty
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        Get-TestCall | Should -Not -Contain 'New-NvmeController'
        (Get-TestDisk).controllerKey | Should -Be 1001
    }
    It 'Should ask once before a command that changes the VM (-Confirm), and not before one that reads' {
        if (-not $script:NonInteractive) { Set-ItResult -Skipped -Because 'an interactive session would wait for the answer'; return }
        $r = Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Set-StormatrixVMwareController","parameters":{"VMName":"bench01","DiskName":"Hard disk 2","Type":"NVMe","KeepControllerKey":[1000,1001],"ReadyTimeoutSeconds":30},' + $script:connection + '}') -Confirm
        $r.Ok | Should -BeFalse
        (ConvertFrom-Json -InputObject $r.Json).error.message | Should -BeLike '*NonInteractive mode*'
        Get-TestCall | Should -Not -Contain 'Stop-VM'
        (Invoke-StormatrixVMwareRequest -RequestJson ('{"command":"Get-StormatrixVMwareLayout","parameters":{"VMName":"bench01","DiskName":"Hard disk 2"},' + $script:connection + '}') -Confirm).Ok | Should -BeTrue
    }
}
