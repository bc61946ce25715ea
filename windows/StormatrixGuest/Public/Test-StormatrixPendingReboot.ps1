function Test-StormatrixPendingReboot {
    <#
    .SYNOPSIS
    Says whether Windows waits for a reboot, and why.

    .DESCRIPTION
    Checks the three places servicing records a pending reboot: Component Based Servicing
    RebootPending, Windows Update RebootRequired, and Session Manager PendingFileRenameOperations.

    .EXAMPLE
    Test-StormatrixPendingReboot

    .OUTPUTS
    PSCustomObject with Pending (bool) and Reasons (string[]).

    .NOTES
    A guest that reboots itself to finish an update in the middle of a matrix destroys a cell, and
    driver installs only bind after the reboot.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param()
    $reasons = New-Object System.Collections.Generic.List[string]
    if (Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending') {
        $reasons.Add('Component Based Servicing: RebootPending')
    }
    if (Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired') {
        $reasons.Add('Windows Update: RebootRequired')
    }
    $sessionManager = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager' -ErrorAction SilentlyContinue
    if ($null -ne $sessionManager -and $sessionManager.PSObject.Properties['PendingFileRenameOperations'] -and $sessionManager.PendingFileRenameOperations) {
        $reasons.Add('Session Manager: PendingFileRenameOperations')
    }
    [pscustomobject]@{
        Pending = ($reasons.Count -gt 0)
        Reasons = [string[]]$reasons.ToArray()
    }
}
