# Unit tests of Get-StormatrixStorageController (StormatrixGuest); the shared set-up is Guest.TestSetup.ps1.
BeforeAll {
    . (Join-Path $PSScriptRoot 'Guest.TestSetup.ps1')
}

AfterAll {
    Remove-GuestTestSetup
}

Describe 'Get-StormatrixStorageController' {
    BeforeEach {
        Mock Get-PnpDevice {
            @([pscustomobject]@{ InstanceId = 'PCI\VEN_1AF4&DEV_1004&SUBSYS_00081AF4\3&1'; FriendlyName = 'Red Hat VirtIO SCSI controller'; Class = 'SCSIAdapter'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_1000&DEV_0012&SUBSYS_10001000\3&2'; FriendlyName = 'SCSI Controller'; Class = $null; Status = 'Error'; Problem = 'CM_PROB_FAILED_INSTALL'; ConfigManagerErrorCode = 28 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_8086&DEV_2922&SUBSYS_11001AF4\3&3'; FriendlyName = 'Standard SATA AHCI Controller'; Class = 'HDC'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 },
                [pscustomobject]@{ InstanceId = 'PCI\VEN_8086&DEV_100E&SUBSYS_11001AF4\3&4'; FriendlyName = 'Intel(R) PRO/1000'; Class = 'Net'; Status = 'OK'; Problem = 'CM_PROB_NONE'; ConfigManagerErrorCode = 0 })
        }
        Mock Get-PnpDeviceProperty {
            if ($InstanceId -like '*DEV_1004*') {
                @([pscustomobject]@{ KeyName = 'DEVPKEY_Device_Service'; Data = 'vioscsi' }, [pscustomobject]@{ KeyName = 'DEVPKEY_Device_DriverInfPath'; Data = 'oem3.inf' })
            }
            elseif ($InstanceId -like '*DEV_2922*') {
                @([pscustomobject]@{ KeyName = 'DEVPKEY_Device_Service'; Data = 'storahci' })
            }
        }
    }
    It 'Should name each controller and say whether a driver is bound' {
        $all = @(Get-StormatrixStorageController)
        $all.Count | Should -Be 3
        ($all | Where-Object Name -EQ 'virtio-scsi').DriverBound | Should -BeTrue
        ($all | Where-Object Name -EQ 'virtio-scsi').Service | Should -Be 'vioscsi'
        ($all | Where-Object Name -EQ 'lsi').DriverBound | Should -BeFalse -Because 'a controller without its driver has no class yet, and is found by its PCI id'
        ($all | Where-Object Name -EQ 'lsi').ProblemCode | Should -Be '28'
        ($all | Where-Object Name -EQ 'sata').DriverBound | Should -BeTrue
        Should -Invoke Get-PnpDevice -Exactly -Times 1 -Scope It -ParameterFilter { $PresentOnly }
    }
    It 'Should treat virtio-scsi-single as the virtio-scsi device' {
        @(Get-StormatrixStorageController -Controller 'virtio-scsi-single').Name | Should -Be 'virtio-scsi'
    }
    It 'Should reject an unknown controller name' {
        { Get-StormatrixStorageController -Controller 'floppy' } | Should -Throw -ErrorId 'ParameterArgumentValidationError,Get-StormatrixStorageController'
    }
}
