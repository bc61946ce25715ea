function ConvertTo-StormatrixFioTarget {
    <#
    .SYNOPSIS
    The value of fio's --filename for a disk number or a file path.

    .NOTES
    fio treats ':' in --filename as a separator between several files, so a Windows path such as
    C:\bench\file must be written C\:\bench\file. The raw-disk form \\.\PhysicalDriveN has no colon.
    #>
    [CmdletBinding(DefaultParameterSetName = 'Disk')]
    [OutputType([string])]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Disk')][ValidateRange(0, 4096)][int]$DiskNumber,
        [Parameter(Mandatory, ParameterSetName = 'File')][ValidateNotNullOrEmpty()][string]$Path
    )
    if ($PSCmdlet.ParameterSetName -eq 'Disk') {
        return ('\\.\PhysicalDrive' + $DiskNumber)
    }
    $Path.Replace(':', '\:')
}
