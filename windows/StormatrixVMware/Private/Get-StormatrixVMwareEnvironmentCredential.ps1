function Get-StormatrixVMwareEnvironmentCredential {
    <#
    .SYNOPSIS
    Builds a PSCredential from the environment variables whose NAMES are given (a user and a password),
    or throws CredentialMissing naming every variable that is not set.

    .DESCRIPTION
    The one place of the module that reads a password: vCenter's (Connect-StormatrixVMware) and the
    workers' guest account (Get-StormatrixVMwareFleetFioVersion) both come through here. Each caller says
    what the account is for (-Purpose, appended to the message after the variable names) and what the
    error is about (-TargetObject).

    .NOTES
    The password goes from the environment straight into a SecureString and the PSCredential; it is never
    written to any stream, never part of a message, and the plain-text variable is cleared at once.
    #>
    [CmdletBinding()]
    [OutputType([System.Management.Automation.PSCredential])]
    param(
        [Parameter(Mandatory)][ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$UserVariable,
        [Parameter(Mandatory)][ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$PasswordVariable,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$Purpose,
        [object]$TargetObject = $null
    )
    $user = [Environment]::GetEnvironmentVariable($UserVariable)
    $password = [Environment]::GetEnvironmentVariable($PasswordVariable)
    $missing = @()
    if (-not $user) { $missing += $UserVariable }
    if (-not $password) { $missing += $PasswordVariable }
    if ($missing.Count -gt 0) {
        $password = $null
        throw (New-StormatrixVMwareError -ErrorId 'CredentialMissing' -Category 'AuthenticationError' -TargetObject $TargetObject `
                -Message "environment variable(s) $($missing -join ', ') not set: $Purpose")
    }
    $secure = ConvertTo-SecureString -String $password -AsPlainText -Force
    $password = $null
    New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList $user, $secure
}
