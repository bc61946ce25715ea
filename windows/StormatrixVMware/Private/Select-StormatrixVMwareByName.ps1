function Select-StormatrixVMwareByName {
    <#
    .SYNOPSIS
    Runs one PowerCLI listing and returns the one object whose Name is exactly -Name; none, several, or a
    PowerCLI failure is the typed error -ErrorId (category ObjectNotFound).

    .DESCRIPTION
    The one place the module's "exactly one, by exact name" rule lives, for hosts, VMs and hard disks.
    PowerCLI reads -Name as a wildcard pattern, so a caller lists with a pattern that can only widen the
    answer (ConvertTo-StormatrixVMwareNamePattern) or lists everything, and the answer is filtered here by
    exact comparison (-eq: case-insensitive, as vSphere treats names).

    .PARAMETER List
    The listing, run as given; it must use -ErrorAction Stop so that a PowerCLI failure is caught here.

    .PARAMETER Name
    The exact name to keep.

    .PARAMETER ErrorId
    The error's id (HostNotFound, VmNotFound, DiskNotFound).

    .PARAMETER FailedMessage
    The message when the listing itself fails (PowerCLI's words are kept as the cause).

    .PARAMETER CountMessage
    Builds the message when the listing finds not exactly one: called with the count.
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][scriptblock]$List,
        [Parameter(Mandatory)][string]$Name,
        [Parameter(Mandatory)][string]$ErrorId,
        [Parameter(Mandatory)][string]$FailedMessage,
        [Parameter(Mandatory)][scriptblock]$CountMessage
    )
    try {
        $found = @(& $List | Where-Object { $_.Name -eq $Name })
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId $ErrorId -Category 'ObjectNotFound' -Cause $_ -TargetObject $Name -Message $FailedMessage)
    }
    if ($found.Count -ne 1) {
        throw (New-StormatrixVMwareError -ErrorId $ErrorId -Category 'ObjectNotFound' -TargetObject $Name -Message (& $CountMessage $found.Count))
    }
    $found[0]
}
