function Connect-StormatrixVMware {
    <#
    .SYNOPSIS
    Connects to vCenter or an ESXi host with PowerCLI, taking the credentials from environment variables
    or from the PowerCLI credential store, never from a parameter value.

    .DESCRIPTION
    Imports VMware.VimAutomation.Core, sets this session's certificate policy (Fail, the safe default,
    or Ignore when -VerifyCertificate is false) with Set-PowerCLIConfiguration -Scope Session, and calls
    Connect-VIServer. With -CredentialSource Environment the user name and password are read from the
    environment variables whose NAMES are given; with CredentialStore, Connect-VIServer takes them from
    the entry New-VICredentialStoreItem saved for the server. Returns the server's product, version and
    build (journaled as environment facts).

    .PARAMETER Server
    vCenter Server or ESXi host name (or address).

    .PARAMETER CredentialSource
    Environment: read the variables named by -UserVariable and -PasswordVariable. CredentialStore: use
    the PowerCLI credential store entry for -Server (and -CredentialStoreUser when given).

    .PARAMETER UserVariable
    Name of the environment variable that holds the user name.

    .PARAMETER PasswordVariable
    Name of the environment variable that holds the password (the name, never the password).

    .PARAMETER CredentialStoreUser
    User of the credential store entry, when the store holds several for the server.

    .PARAMETER VerifyCertificate
    Verify the server's TLS certificate (default). $false makes this session ignore certificate errors,
    with a warning; use it only for a lab with self-signed certificates.

    .EXAMPLE
    $env:STORMATRIX_VSPHERE_USER = 'administrator@vsphere.local'
    $env:STORMATRIX_VSPHERE_PASSWORD = Read-Host -AsSecureString | ConvertFrom-SecureString -AsPlainText
    Connect-StormatrixVMware -Server vc01.lab -CredentialSource Environment -UserVariable STORMATRIX_VSPHERE_USER -PasswordVariable STORMATRIX_VSPHERE_PASSWORD

    .EXAMPLE
    New-VICredentialStoreItem -Host esx01.lab -User root -Password (Read-Host)   # once, on Windows
    Connect-StormatrixVMware -Server esx01.lab -CredentialSource CredentialStore

    .OUTPUTS
    PSCustomObject with Server, ProductLine, Version, Build, VerifyCertificate.

    .NOTES
    The password goes from the environment straight into a SecureString and a PSCredential; it is never
    written to any stream. The credential store is a file PowerCLI encrypts per user (on Windows).
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$Server,
        [ValidateSet('Environment', 'CredentialStore')][string]$CredentialSource = 'Environment',
        [ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$UserVariable = 'STORMATRIX_VSPHERE_USER',
        [ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$PasswordVariable = 'STORMATRIX_VSPHERE_PASSWORD',
        [string]$CredentialStoreUser = '',
        [bool]$VerifyCertificate = $true
    )
    try {
        Import-Module -Name 'VMware.VimAutomation.Core' -ErrorAction Stop
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'PowerCLINotInstalled' -Category 'NotInstalled' -Cause $_ `
                -Message 'VMware PowerCLI (VMware.VimAutomation.Core) is not installed: Install-Module VMware.PowerCLI -Scope CurrentUser')
    }
    $action = 'Fail'
    if (-not $VerifyCertificate) {
        $action = 'Ignore'
        Write-Warning "certificate validation of $Server is turned off for this session (verify_tls = false)"
    }
    try {
        Set-PowerCLIConfiguration -Scope Session -InvalidCertificateAction $action -Confirm:$false -ErrorAction Stop | Out-Null
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'ConfigurationFailed' -Cause $_ -Message 'Set-PowerCLIConfiguration -Scope Session failed')
    }
    $connect = @{ Server = $Server }
    if ($CredentialSource -eq 'Environment') {
        $connect['Credential'] = Get-StormatrixVMwareEnvironmentCredential -UserVariable $UserVariable -PasswordVariable $PasswordVariable `
            -TargetObject $Server -Purpose 'set them in the environment that runs stormatrix'
    }
    else {
        $lookup = @{ Host = $Server; ErrorAction = 'SilentlyContinue' }
        if ($CredentialStoreUser) {
            $lookup['User'] = $CredentialStoreUser
            $connect['User'] = $CredentialStoreUser
        }
        $items = @(Get-VICredentialStoreItem @lookup)
        if ($items.Count -eq 0) {
            throw (New-StormatrixVMwareError -ErrorId 'CredentialMissing' -Category 'AuthenticationError' -TargetObject $Server `
                    -Message "the PowerCLI credential store has no entry for $Server$(if ($CredentialStoreUser) { " and user $CredentialStoreUser" }): create one with New-VICredentialStoreItem -Host $Server -User <user>")
        }
    }
    try {
        $script:StormatrixVIServer = Connect-VIServer @connect -ErrorAction Stop
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'ConnectFailed' -Category 'ConnectionError' -Cause $_ -TargetObject $Server `
                -Message "Connect-VIServer $Server failed")
    }
    [pscustomobject]@{
        Server            = $Server
        ProductLine       = [string]$script:StormatrixVIServer.ProductLine
        Version           = [string]$script:StormatrixVIServer.Version
        Build             = [string]$script:StormatrixVIServer.Build
        VerifyCertificate = $VerifyCertificate
    }
}
