# Fake VMware PowerCLI (VMware.VimAutomation.Core) for the stormatrix tests, described by DATA.
#
# The lab (vCenter, ESXi hosts, VMs with controllers and disks, performance samples, esxcli answers) is a
# JSON file named by $env:STORMATRIX_FAKE_VCENTER_LAB (tests/pwsh/FakeVCenter/lab.json is the example).
# Every cmdlet reads that file, logs itself under "calls", and writes back what it changed, so a sequence
# of pwsh processes (the Python backend runs one per call) sees one lab. A test can also put
#   "faults": {"Set-HardDisk": "message"}   the next call of that cmdlet fails with this message ("Step#N":
#                                            its N-th call; esxcli methods are "esxcli:storage.core.device.set"), and
#   "hang": "Start-VM"                       the next call of that cmdlet ("New-VM#3": its 3rd call) writes "hung_pid" and sleeps,
# so that a half-done reconfiguration or a killed workstation can be reproduced.
#
# What it follows: the PowerCLI cmdlet reference (developer.broadcom.com/powercli, VMware.VimAutomation.Core)
# for parameter names and output properties; the vSphere API reference for ExtensionData
# (VirtualMachine.Config.ExtraConfig, VirtualDevice.Key/ControllerKey/UnitNumber, VirtualController.BusNumber/
# Device, PerfQuerySpec); esxcli's own output for the esxcli rows (e.g. "0 milliseconds").
# Names given to -Name are wildcards, as PowerCLI documents ("wildcards" feature of Get-VM -Name,
# Get-HardDisk -Name, Get-VMHost -Name). Where the real shape or message is not documented this file says so
# with "UNSURE:" next to the code.

$script:Session = @{ Server = $null; InvalidCertificateAction = 'Unset' }

. (Join-Path $PSScriptRoot 'FakeLab.ps1')
. (Join-Path $PSScriptRoot 'FakeObjects.ps1')
. (Join-Path $PSScriptRoot 'FakeInventory.ps1')
. (Join-Path $PSScriptRoot 'FakeHost.ps1')
. (Join-Path $PSScriptRoot 'FakeFleet.ps1')

# --- connection -------------------------------------------------------------------------------------------

function Set-PowerCLIConfiguration {
    [CmdletBinding(SupportsShouldProcess)]
    param(
        [ValidateSet('Session', 'User', 'AllUsers')][string]$Scope = 'User',
        [ValidateSet('Unset', 'Prompt', 'Fail', 'Ignore', 'Warn')][string]$InvalidCertificateAction
    )
    $lab = Open-FakeCall -Cmdlet 'Set-PowerCLIConfiguration' -Parameters @{ Scope = $Scope; InvalidCertificateAction = $InvalidCertificateAction } -Caller $PSCmdlet
    if ($PSBoundParameters.ContainsKey('InvalidCertificateAction')) {
        # UNSURE: only the Session scope is modelled (User/AllUsers would persist in a PowerCLI settings file).
        $script:Session.InvalidCertificateAction = $InvalidCertificateAction
    }
    Save-FakeLab -Lab $lab
    [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.PowerCLIConfigurationImpl'; Scope = $Scope
        InvalidCertificateAction = $script:Session.InvalidCertificateAction }
}

function Get-VICredentialStoreItem {
    [CmdletBinding()]
    param(
        # The real parameter is -Host; a variable named $Host is PowerShell's read-only automatic
        # variable, so the value lands in $HostName and -Host binds through the alias.
        [Alias('Host')][string]$HostName = '*',
        [string]$User = '*'
    )
    $lab = Open-FakeCall -Cmdlet 'Get-VICredentialStoreItem' -Parameters @{ Host = $HostName; User = $User } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    $found = $false
    foreach ($item in @($lab.server.credentialStore)) {
        if ((Test-FakeName -Name $item.host -Pattern $HostName) -and (Test-FakeName -Name $item.user -Pattern $User)) {
            $found = $true
            [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.VICredentialStoreItemImpl'; Host = $item.host; User = $item.user
                File = '~/.local/share/VMware/PowerCLI/credstore.xml' }
        }
    }
    if (-not $found) {
        # UNSURE: the exact message when nothing matches.
        $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-VICredentialStoreItem' -Kind 'VimException' -Category ObjectNotFound `
                    -ErrorId 'Core_GetVICredentialStoreItem_ItemNotFound' -Message "No credential store items found for host '$HostName' and user '$User'."))
    }
}

function Connect-VIServer {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)][string[]]$Server,
        [int]$Port = 443,
        [pscredential]$Credential,
        [string]$User,
        [string]$Password,
        [switch]$Force
    )
    $lab = Open-FakeCall -Cmdlet 'Connect-VIServer' -Parameters @{ Server = ($Server -join ','); User = $(if ($Credential) { $Credential.UserName } else { $User })
        PasswordMatches = $null } -Caller $PSCmdlet
    $name = $Server[0]
    $known = @([string]$lab.server.name) + @($lab.hosts | ForEach-Object { [string]$_.name })
    if ($known -notcontains $name) {
        Save-FakeLab -Lab $lab
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Connect-VIServer' -Kind 'ViServerConnectionException' -Category ObjectNotFound `
                    -ErrorId 'Client20_ConnectivityServiceImpl_Reconnect_NameResolutionFailure' -Message "Could not resolve the requested VC server." -Target $name))
    }
    if ([string]$lab.server.certificate -eq 'self-signed' -and @('Unset', 'Fail', 'Prompt') -contains $script:Session.InvalidCertificateAction) {
        Save-FakeLab -Lab $lab
        # UNSURE: PowerCLI 13 wording; the error id is the one PowerCLI uses for an untrusted certificate.
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Connect-VIServer' -Kind 'ViSecurityNegotiationException' -Category SecurityError `
                    -ErrorId 'Client20_ConnectivityServiceImpl_Reconnect_CertificateError' -Target $name `
                    -Message "Error: Invalid server certificate. Use Set-PowerCLIConfiguration to set the value for the InvalidCertificateAction option to Prompt if you'd like to connect once or to add a permanent exception for this server."))
    }
    $login = $null
    if ($Credential) {
        $plain = $Credential.GetNetworkCredential().Password
        $match = @($lab.server.credentials | Where-Object { $_.user -eq $Credential.UserName -and $_.password -ceq $plain })
        $lab.calls[-1].parameters.PasswordMatches = ($match.Count -gt 0)
        if ($match.Count -gt 0) { $login = $Credential.UserName }
    }
    elseif ($User -and $Password) {
        $match = @($lab.server.credentials | Where-Object { $_.user -eq $User -and $_.password -ceq $Password })
        if ($match.Count -gt 0) { $login = $User }
    }
    else {
        $items = @($lab.server.credentialStore | Where-Object { $_.host -eq $name -and (-not $User -or $_.user -eq $User) })
        if ($items.Count -gt 0) { $login = [string]$items[0].user }
    }
    if (-not $login) {
        Save-FakeLab -Lab $lab
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Connect-VIServer' -Kind 'InvalidLogin' -Category NotSpecified `
                    -ErrorId 'Client20_ConnectivityServiceImpl_Reconnect_SoapException' -Target $name `
                    -Message 'Cannot complete login due to an incorrect user name or password.'))
    }
    Save-FakeLab -Lab $lab
    $viServer = [pscustomobject]@{
        PSTypeName  = 'VMware.VimAutomation.ViCore.Impl.V1.VIServerImpl'
        Name        = $name
        Port        = $Port
        User        = $login
        IsConnected = $true
        ProductLine = [string]$lab.server.productLine
        Version     = [string]$lab.server.version
        Build       = [string]$lab.server.build
        Id          = "/VIServer=$($login.ToLowerInvariant())@$($name):$Port/"
        ServiceUri  = "https://$name/sdk"
    }
    $script:Session.Server = $viServer
    $global:DefaultVIServer = $viServer
    $viServer
}

function Disconnect-VIServer {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param(
        [Parameter(Position = 0)][object[]]$Server,
        [switch]$Force
    )
    $lab = Open-FakeCall -Cmdlet 'Disconnect-VIServer' -Parameters @{ Server = (@($Server | ForEach-Object { [string]$_.Name }) -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if (-not $script:Session.Server) {
        $PSCmdlet.WriteError((New-FakeNotConnectedError -Cmdlet 'Disconnect-VIServer'))
        return
    }
    if ($PSCmdlet.ShouldProcess($script:Session.Server.Name, 'Disconnect')) {
        $script:Session.Server = $null
        $global:DefaultVIServer = $null
    }
}

Export-ModuleMember -Function @(
    'Connect-VIServer', 'Disconnect-VIServer', 'Set-PowerCLIConfiguration', 'Get-VICredentialStoreItem',
    'Get-VM', 'Start-VM', 'Stop-VM', 'Wait-Tools', 'Get-HardDisk', 'Set-HardDisk',
    'Get-ScsiController', 'New-ScsiController', 'Set-ScsiController', 'Get-NvmeController', 'New-NvmeController',
    'Get-VMHost', 'Get-EsxCli', 'Get-Stat', 'Get-AdvancedSetting', 'New-AdvancedSetting',
    'Get-Datastore', 'Get-Template', 'New-VM', 'Set-VM', 'Get-Task', 'Wait-Task', 'New-HardDisk', 'Remove-HardDisk', 'Remove-VM', 'Get-VMGuest', 'Invoke-VMScript'
)
