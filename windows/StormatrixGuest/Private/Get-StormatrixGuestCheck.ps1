function Get-StormatrixGuestCheck {
    <#
    .SYNOPSIS
    The guest checks as data: Block, Name, Skip, Test (a script block that takes the check context
    from New-StormatrixCheckContext and throws a message that says how to fix what is wrong).

    .NOTES
    One list serves both runners: Invoke-StormatrixGuestValidation runs it without Pester, and
    Validation\Guest.Validation.Tests.ps1 turns each entry into a Pester 5 It block.
    #>
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [string]$Controller = '',
        [string]$Engine = 'fio'
    )
    @{ Block = 'Test disk'; Name = 'Should find exactly one disk with the serial'; Skip = $false; Test = {
            param($c)
            Assert-StormatrixCheck (-not $c.DiskProblem) $c.DiskProblem
        }
    }
    @{ Block = 'Test disk'; Name = 'Should not be the boot or system disk'; Skip = $false; Test = {
            param($c)
            Assert-StormatrixCheck ($null -ne $c.Disk) "no disk has serial '$($c.Serial)'"
            Assert-StormatrixCheck (-not ($c.Disk.IsBoot -or $c.Disk.IsSystem)) "disk $($c.Disk.Number) holds Windows. Fix: give the serial to a separate, empty disk"
        }
    }
    @{ Block = 'Test disk'; Name = 'Should be raw (no partition table)'; Skip = $false; Test = {
            param($c)
            Assert-StormatrixCheck ($null -ne $c.Disk) "no disk has serial '$($c.Serial)'"
            Assert-StormatrixCheck ([string]$c.Disk.PartitionStyle -eq 'RAW') ("disk $($c.Disk.Number) has a $($c.Disk.PartitionStyle) partition table, and write workloads refuse it. " +
                "Fix: Initialize-StormatrixGuest -Serial $($c.Serial) -ClearTestDisk (destroys the disk's data)")
        }
    }
    @{ Block = 'Test disk'; Name = 'Should be offline'; Skip = $false; Test = {
            param($c)
            Assert-StormatrixCheck ($null -ne $c.Disk) "no disk has serial '$($c.Serial)'"
            Assert-StormatrixCheck ([bool]$c.Disk.IsOffline) ("an online disk can be mounted and written by Windows. Fix: Set-Disk -Number $($c.Disk.Number) -IsOffline `$true " +
                "(or Initialize-StormatrixGuest -Serial $($c.Serial))")
        }
    }
    @{ Block = 'Controller driver'; Name = 'Should have a driver bound for the controller under test'; Skip = (-not $Controller); Test = {
            param($c)
            $controllers = @(Get-StormatrixStorageController -Controller $c.Controller)
            Assert-StormatrixCheck ($controllers.Count -gt 0) "no $($c.Controller) controller is visible to Windows. Fix: attach the test disk to a $($c.Controller) controller on the hypervisor"
            $devices = ($controllers | ForEach-Object { "$($_.InstanceId) (status $($_.Status), problem $($_.ProblemCode))" }) -join '; '
            Assert-StormatrixCheck (@($controllers | Where-Object { $_.DriverBound }).Count -gt 0) ("the $($c.Controller) controller has no working driver: $devices. " +
                'Fix: install its driver (virtio-win: vioscsi for virtio-scsi, viostor for virtio-blk) with pnputil /add-driver <inf> /install, then reboot')
        }
    }
    @{ Block = 'Benchmark engine'; Name = 'Should have fio present and supported'; Skip = ($Engine -ne 'fio'); Test = {
            param($c)
            Assert-StormatrixCheck (Test-Path -LiteralPath $c.FioPath -PathType Leaf) "fio.exe is not at $($c.FioPath). Fix: Initialize-StormatrixGuest -Serial $($c.Serial) -FioSource <folder or share with fio.exe>"
            $version = Get-StormatrixEngineVersion -Engine fio -Path $c.FioPath
            Assert-StormatrixCheck $version.Supported "fio '$($version.Version)' is older than $($version.Minimum). Fix: install a newer fio build"
        }
    }
    @{ Block = 'Benchmark engine'; Name = 'Should have DiskSpd present and supported'; Skip = ($Engine -ne 'diskspd'); Test = {
            param($c)
            Assert-StormatrixCheck (Test-Path -LiteralPath $c.DiskSpdPath -PathType Leaf) "diskspd.exe is not at $($c.DiskSpdPath). Fix: copy diskspd.exe (amd64) there"
            $version = Get-StormatrixEngineVersion -Engine diskspd -Path $c.DiskSpdPath
            Assert-StormatrixCheck $version.Supported "DiskSpd '$($version.Version)' is older than $($version.Minimum). Fix: install DiskSpd 2.0.20 or newer"
        }
    }
    @{ Block = 'System state'; Name = 'Should use the High performance power plan'; Skip = $false; Test = {
            param($c)
            $plan = Get-StormatrixPowerPlan
            Assert-StormatrixCheck $plan.IsHighPerformance "the active plan is '$($plan.Name)'. Fix: powercfg /setactive 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c"
        }
    }
    @{ Block = 'System state'; Name = 'Should have no reboot pending'; Skip = $false; Test = {
            param($c)
            $pending = Test-StormatrixPendingReboot
            Assert-StormatrixCheck (-not $pending.Pending) "Windows waits for a reboot ($($pending.Reasons -join '; ')). Fix: Restart-Computer, then check again"
        }
    }
}
