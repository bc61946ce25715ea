function Get-StormatrixTestDiskForRun {
    <#
    .SYNOPSIS
    The test disk, found by serial and made safe and ready for the workload; reports what it found.

    .NOTES
    Windows protects only mounted volumes: an offline disk with partitions is overwritten without a
    word. So before any write the disk must be RAW (no partition table) unless -AllowPartitioned.
    Windows Server's default SAN policy (OfflineShared) leaves a disk first seen on a shared bus - as
    after a controller change - offline AND read-only; raw writes then fail with "The media is write
    protected". The read-only flag is cleared here (Set-Disk -IsReadOnly $false), and a disk that
    stays read-only gets its own error. Offline is what we want: raw I/O to \\.\PhysicalDriveN works
    on an offline disk, and no volume can be mounted on it.
    The result says what was found and done (PartitionStyle, WasReadOnly, ReadOnlyCleared), so the
    controller journals it with the cell.
    Clearing read-only is a change: it honours -WhatIf/-Confirm (the caller's, through the preference
    variables); under -WhatIf the flag stays and ReadOnlyCleared is $false.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$Serial,
        [Parameter(Mandatory)][bool]$Write,
        [switch]$AllowPartitioned
    )
    $disk = Find-StormatrixTestDisk -Serial $Serial
    $number = [int]$disk.Number
    if ($disk.IsBoot -or $disk.IsSystem) {
        throw (New-StormatrixError -ErrorId 'TestDiskIsSystemDisk' -Category 'PermissionDenied' -TargetObject $Serial `
                -Message "disk $number with serial '$Serial' is the boot or system disk. Fix: give the serial to a separate, empty test disk")
    }
    $style = [string]$disk.PartitionStyle
    $wasReadOnly = [bool]$disk.IsReadOnly
    $cleared = $false
    if ($Write) {
        if ($style -ne 'RAW' -and -not $AllowPartitioned) {
            throw (New-StormatrixError -ErrorId 'TestDiskNotRaw' -Category 'ResourceExists' -TargetObject $Serial `
                    -Message ("refusing to write: disk $number (serial '$Serial') has a $style partition table, and a write workload " +
                        'destroys it. Fix: Initialize-StormatrixGuest -Serial ' + $Serial + ' -ClearTestDisk (erases it), or set ' +
                        '[winrm] allow_partitioned_disk = true if its contents may be destroyed'))
        }
        if ($wasReadOnly -and -not $PSCmdlet.ShouldProcess("disk $number (serial $Serial)", 'clear the read-only flag (Set-Disk -IsReadOnly $false)')) {
            # declined (-WhatIf, or No to -Confirm): nothing changed; the caller decides whether to go on
        }
        elseif ($wasReadOnly) {
            try {
                Set-Disk -Number $number -IsReadOnly $false
            }
            catch {
                Write-Verbose "Set-Disk -IsReadOnly `$false on disk $number failed: $($_.Exception.Message)"
            }
            $disk = Find-StormatrixTestDisk -Serial $Serial
            if ($disk.IsReadOnly) {
                $policy = ''
                $setting = Get-StorageSetting -ErrorAction SilentlyContinue
                if ($setting) { $policy = " The SAN policy is $($setting.NewDiskPolicy)." }
                throw (New-StormatrixError -ErrorId 'TestDiskReadOnly' -Category 'PermissionDenied' -TargetObject $Serial `
                        -Message ("disk $number (serial '$Serial') is read-only and stays read-only after Set-Disk -IsReadOnly `$false." + $policy +
                            ' Fix: check that the hypervisor attaches the disk writable (Proxmox: no ro=1; ESXi: not independent-nonpersistent or a read-only RDM)'))
            }
            $cleared = $true
        }
    }
    [pscustomobject]@{
        Number          = $number
        FriendlyName    = [string]$disk.FriendlyName
        PartitionStyle  = $style
        IsOffline       = [bool]$disk.IsOffline
        WasReadOnly     = $wasReadOnly
        ReadOnlyCleared = $cleared
    }
}
