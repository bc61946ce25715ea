function Find-StormatrixTestDisk {
    <#
    .SYNOPSIS
    Finds the benchmark test disk by its serial number.

    .DESCRIPTION
    Returns the one disk whose serial number matches -Serial (surrounding blanks ignored, as
    controllers pad serials differently). Throws when no disk or more than one disk matches.

    .PARAMETER Serial
    The serial number given to the test disk on the hypervisor (Proxmox: serial=..., QEMU:
    -device ...,serial=...).

    .EXAMPLE
    Find-StormatrixTestDisk -Serial 'STORMATRIX01'

    .OUTPUTS
    The disk object from Get-Disk (Microsoft.Management.Infrastructure.CimInstance#MSFT_Disk).

    .NOTES
    Disk numbers move when the controller changes between cells, so the disk is never addressed
    by a hard-coded number.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)]
        [ValidatePattern('^[A-Za-z0-9_.:-]{1,64}$')]
        [string]$Serial
    )
    $found = @(Get-Disk | Where-Object { $null -ne $_.SerialNumber -and $_.SerialNumber.Trim() -eq $Serial })
    if ($found.Count -eq 0) {
        $seen = (@(Get-Disk | ForEach-Object { '#{0} serial "{1}" ({2})' -f $_.Number, ([string]$_.SerialNumber).Trim(), $_.BusType }) -join '; ')
        throw (New-StormatrixError -ErrorId 'TestDiskNotFound' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                -TargetObject $Serial `
                -Message ("no disk with serial '$Serial' (disks seen: $seen). Fix: give the test disk this serial on the " +
                    'hypervisor, and check that a driver is bound for its controller (Get-PnpDevice -Class SCSIAdapter)'))
    }
    if ($found.Count -gt 1) {
        throw (New-StormatrixError -ErrorId 'TestDiskAmbiguous' -Category 'InvalidData' -TargetObject $Serial `
                -Message ("$($found.Count) disks have serial '$Serial' (numbers $((@($found | ForEach-Object { $_.Number })) -join ', ')). " +
                    'Fix: give each disk a unique serial'))
    }
    $found[0]
}
