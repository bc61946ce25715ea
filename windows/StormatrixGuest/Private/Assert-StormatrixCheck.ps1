function Assert-StormatrixCheck {
    <#
    .SYNOPSIS
    Fails a guest check: throws its message (which says how to fix it) unless the condition holds.

    .NOTES
    The checks throw on failure and return nothing on success, which is what Pester's It blocks and
    the built-in runner of Invoke-StormatrixGuestValidation both read as failed and passed.
    #>
    [CmdletBinding()]
    param(
        [Parameter(Mandatory)][AllowNull()][object]$Condition,
        [Parameter(Mandatory)][AllowEmptyString()][string]$Message
    )
    if (-not $Condition) {
        throw (New-StormatrixError -ErrorId 'CheckFailed' -Category 'InvalidResult' -Message $Message)
    }
}
