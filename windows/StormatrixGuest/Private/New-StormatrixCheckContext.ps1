function New-StormatrixCheckContext {
    <#
    .SYNOPSIS
    What the guest checks look at, found once: the test disk (or why it was not found) and the settings.
    #>
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory)][string]$Serial,
        [string]$Controller = '',
        [string]$Engine = 'fio',
        [string]$FioPath = 'C:\Program Files\fio\fio.exe',
        [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe'
    )
    $context = @{ Serial = $Serial; Controller = $Controller; Engine = $Engine; FioPath = $FioPath; DiskSpdPath = $DiskSpdPath
        Disk = $null; DiskProblem = '' }
    try {
        $context.Disk = Find-StormatrixTestDisk -Serial $Serial
    }
    catch {
        $context.DiskProblem = $_.Exception.Message
    }
    $context
}
