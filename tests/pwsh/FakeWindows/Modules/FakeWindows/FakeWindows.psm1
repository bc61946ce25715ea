<#
FakeWindows: the Windows cmdlets that windows/StormatrixGuest calls, answered from one fake guest
described by data (tests/pwsh/FakeWindows/guest.json, copied per test by fakewindows.py; the copy's
path is in $env:STORMATRIX_FAKE_WINDOWS). Every call reads the state afresh and every change is
written back, so separate powershell processes (one per WinRM command) see one guest.

Output shapes follow Microsoft's documentation of each cmdlet:
- Get-Disk: MSFT_Disk (Number, SerialNumber, FriendlyName, Size, PartitionStyle, IsOffline,
  OfflineReason, IsReadOnly, IsBoot, IsSystem, BusType). UNSURE: on Windows PartitionStyle, BusType
  and OfflineReason are CIM enumerations that the Storage module's type data shows by name; here they
  are the names as strings ('RAW', 'GPT', 'MBR'; 'SAS' for a disk on vioscsi is also unsure).
- Get-PnpDevice: Win32_PnPEntity plus Status/Problem (InstanceId, FriendlyName, Class, Status 'OK' or
  'Error', Problem 'CM_PROB_NONE' or 'CM_PROB_FAILED_INSTALL', ConfigManagerErrorCode 0 or 28,
  Present). A device whose driver is not installed has no class (Device Manager's "Other devices")
  and the generic name from its PCI class code; its disks do not appear in Get-Disk.
- Get-PnpDeviceProperty: KeyName, Data, Type, InstanceId (Data $null where the key has no value).
- Get-CimInstance Win32_OperatingSystem: Caption, Version, BuildNumber, LastBootUpTime [datetime].
- Get-NetIPAddress: IPAddress, AddressFamily, PrefixOrigin, InterfaceAlias.
- Get-StorageSetting: NewDiskPolicy (the SAN policy).
- Get-WSManInstance/New-WSManInstance (winrm/config/Listener), New-SelfSignedCertificate (Thumbprint,
  Subject, DnsNameList; the subject alternative names are kept in the state for tests), Get-/New-
  NetFirewallRule, Get-ItemProperty on HKLM:\ (registry values from the state's Registry map).
UNSURE: the exact texts of Windows' error messages (Set-Disk on write-protected media, Clear-Disk on
an offline disk) - the errors are raised where Windows raises them, with plain texts.
#>

Set-StrictMode -Version 2

function Get-FakeWindowsState {
    # The guest's state as objects (read under the lock file the Python side also takes).
    $path = $env:STORMATRIX_FAKE_WINDOWS
    if (-not $path) { throw 'STORMATRIX_FAKE_WINDOWS is not set: FakeWindows needs a guest (tests/pwsh/FakeWindows/fakewindows.py)' }
    [IO.File]::ReadAllText($path, [Text.Encoding]::UTF8) | ConvertFrom-Json
}

function Save-FakeWindowsState {
    param([Parameter(Mandatory)][object]$State)
    $path = $env:STORMATRIX_FAKE_WINDOWS
    $lock = $null
    for ($i = 0; $null -eq $lock; $i++) {
        try { $lock = [IO.File]::Open($path + '.lock', 'OpenOrCreate', 'ReadWrite', 'None') }
        catch [IO.IOException] { if ($i -gt 200) { throw }; [Threading.Thread]::Sleep(20) }
    }
    try { [IO.File]::WriteAllText($path, (ConvertTo-Json -InputObject $State -Depth 10), [Text.UTF8Encoding]::new($false)) }
    finally { $lock.Dispose() }
}

function Initialize-FakeWindowsDrive {
    # C: and HKLM: as FileSystem drives over the guest's folders (made by fakewindows.py).
    $root = [IO.Path]::GetDirectoryName($env:STORMATRIX_FAKE_WINDOWS)
    $fs = $ExecutionContext.SessionState.Provider.GetOne('FileSystem')
    foreach ($name in 'C', 'HKLM') {
        if (-not ($ExecutionContext.SessionState.Drive.GetAllForProvider('FileSystem') | Where-Object { $_.Name -eq $name })) {
            $drive = [Management.Automation.PSDriveInfo]::new($name, $fs, [IO.Path]::Combine($root, $name), "fake $name", $null)
            $null = $ExecutionContext.SessionState.Drive.New($drive, 'Global')
        }
    }
}

function Enter-FakeWindowsGuest {
    # What a powershell.exe of this guest is like from its first line (fakewindows.py powershell_argv puts
    # `Import-Module FakeWindows -Global; Enter-FakeWindowsGuest` before the command it was given):
    # 1. the console: a powershell.exe whose output is redirected (as under WinRM) writes in the OEM code
    #    page of an en-US Windows, 437, until a script sets [Console]::OutputEncoding; and Windows
    #    PowerShell 5.1 writes no ANSI colour sequences (pwsh 7 would, to redirected output too);
    # 2. the guest's C: and HKLM: drives.
    [Console]::OutputEncoding = [Text.Encoding]::GetEncoding(437)
    if (Get-Variable -Name PSStyle -Scope Global -ErrorAction Ignore) { $global:PSStyle.OutputRendering = 'PlainText' }
    Initialize-FakeWindowsDrive
}

function Get-FakeVisibleDisk {
    param([object]$State)
    $bound = @($State.Controllers | Where-Object { $_.DriverInstalled } | ForEach-Object { $_.InstanceId })
    @($State.Disks | Where-Object { $bound -contains $_.Controller })
}

function ConvertTo-FakeDisk {
    param([object]$Disk)
    $o = [pscustomobject]@{
        Number = [uint32]$Disk.Number; SerialNumber = [string]$Disk.SerialNumber; FriendlyName = [string]$Disk.FriendlyName
        Size = [uint64]$Disk.Size; PartitionStyle = [string]$Disk.PartitionStyle; IsOffline = [bool]$Disk.IsOffline
        OfflineReason = [string]$Disk.OfflineReason; IsReadOnly = [bool]$Disk.IsReadOnly; IsBoot = [bool]$Disk.IsBoot
        IsSystem = [bool]$Disk.IsSystem; BusType = [string]$Disk.BusType; NumberOfPartitions = @($Disk.Partitions).Count
        Path = '\\?\scsi#disk&ven_qemu#' + $Disk.Number
    }
    $o.PSObject.TypeNames.Insert(0, 'Microsoft.Management.Infrastructure.CimInstance#ROOT/Microsoft/Windows/Storage/MSFT_Disk')
    $o
}

function Get-Disk {
    [CmdletBinding()]
    param([Parameter(Position = 0)][uint32[]]$Number, [string[]]$SerialNumber, [string[]]$FriendlyName)
    $state = Get-FakeWindowsState
    $disks = Get-FakeVisibleDisk $state
    if ($PSBoundParameters.ContainsKey('Number')) {
        foreach ($n in $Number) {
            if (-not ($disks | Where-Object { $_.Number -eq $n })) {
                $PSCmdlet.WriteError([Management.Automation.ErrorRecord]::new(
                        [Management.Automation.ItemNotFoundException]::new("No MSFT_Disk objects found with property 'Number' equal to '$n'."),
                        'CmdletizationQuery_NotFound_Number,Get-Disk', 'ObjectNotFound', $n))
            }
        }
        $disks = @($disks | Where-Object { $Number -contains $_.Number })
    }
    if ($SerialNumber) { $disks = @($disks | Where-Object { $SerialNumber -contains $_.SerialNumber }) }
    if ($FriendlyName) { $disks = @($disks | Where-Object { $FriendlyName -contains $_.FriendlyName }) }
    foreach ($d in $disks) { ConvertTo-FakeDisk $d }
}

function Find-FakeDisk {
    param([object]$State, [uint32]$Number, [string]$Cmdlet)
    $disk = Get-FakeVisibleDisk $State | Where-Object { $_.Number -eq $Number }
    if (-not $disk) {
        throw [Management.Automation.ItemNotFoundException]::new("No MSFT_Disk objects found with property 'Number' equal to '$Number'.")
    }
    $disk
}

function Set-Disk {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory)][uint32]$Number, [Nullable[bool]]$IsOffline, [Nullable[bool]]$IsReadOnly)
    $state = Get-FakeWindowsState
    $disk = Find-FakeDisk $state $Number 'Set-Disk'
    if ($PSBoundParameters.ContainsKey('IsReadOnly')) {
        if (-not $IsReadOnly -and $disk.PSObject.Properties['HardwareReadOnly'] -and $disk.HardwareReadOnly) {
            throw [InvalidOperationException]::new('The media is write protected.')
        }
        $disk.IsReadOnly = [bool]$IsReadOnly
    }
    if ($PSBoundParameters.ContainsKey('IsOffline')) {
        $disk.IsOffline = [bool]$IsOffline
        $disk.OfflineReason = $(if ($IsOffline) { 'Policy' } else { '' })
    }
    Save-FakeWindowsState $state
}

function Clear-Disk {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param([Parameter(Mandatory)][uint32]$Number, [switch]$RemoveData, [switch]$RemoveOEM)
    $state = Get-FakeWindowsState
    $disk = Find-FakeDisk $state $Number 'Clear-Disk'
    if ($disk.IsOffline) { throw [InvalidOperationException]::new('The disk is offline.') }
    if ($disk.IsReadOnly) { throw [InvalidOperationException]::new('The media is write protected.') }
    if (@($disk.Partitions).Count -gt 0 -and -not $RemoveData) {
        throw [InvalidOperationException]::new('The disk contains data partitions. Use -RemoveData to clear it.')
    }
    $disk.PartitionStyle = 'RAW'
    $disk.Partitions = @()
    Save-FakeWindowsState $state
}

function Get-Partition {
    [CmdletBinding()]
    param([uint32]$DiskNumber)
    $state = Get-FakeWindowsState
    $disk = Find-FakeDisk $state $DiskNumber 'Get-Partition'
    foreach ($p in @($disk.Partitions)) {
        [pscustomobject]@{ DiskNumber = $DiskNumber; PartitionNumber = [uint32]$p.PartitionNumber
            DriveLetter = $(if ($p.DriveLetter) { [char]$p.DriveLetter } else { [char]0 }); Size = [uint64]$p.Size; Type = [string]$p.Type }
    }
}

function Get-StorageSetting {
    [CmdletBinding()]
    param()
    [pscustomobject]@{ NewDiskPolicy = [string](Get-FakeWindowsState).SanPolicy; ScrubPolicy = 'Off' }
}

function Get-CimInstance {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0)][string]$ClassName, [string]$Namespace = 'root/cimv2', [string]$Filter)
    $state = Get-FakeWindowsState
    switch ($ClassName) {
        'Win32_OperatingSystem' {
            [pscustomobject]@{ Caption = $state.Os.Caption; Version = $state.Os.Version; BuildNumber = $state.Os.BuildNumber
                CSName = $state.ComputerName
                LastBootUpTime = [datetime]::Parse($state.Os.LastBootUpTime, [Globalization.CultureInfo]::InvariantCulture, 'RoundtripKind').ToLocalTime() }
        }
        default { throw [NotSupportedException]::new("FakeWindows has no CIM class $ClassName") }
    }
}

function ConvertTo-FakePnpDevice {
    param([object]$Controller)
    $ok = [bool]$Controller.DriverInstalled
    [pscustomobject]@{
        InstanceId = $Controller.InstanceId; DeviceID = $Controller.InstanceId
        FriendlyName = $(if ($ok) { $Controller.FriendlyName } elseif ($Controller.PSObject.Properties['UnboundName']) { $Controller.UnboundName } else { 'PCI Device' })
        Class = $(if ($ok) { $Controller.Class } else { $null })
        Status = $(if ($ok) { 'OK' } else { 'Error' })
        Problem = $(if ($ok) { 'CM_PROB_NONE' } else { 'CM_PROB_FAILED_INSTALL' })
        ConfigManagerErrorCode = [uint32]$(if ($ok) { 0 } else { 28 })
        Present = $true
    }
}

function Get-PnpDevice {
    [CmdletBinding()]
    param([Parameter(Position = 0)][string[]]$InstanceId, [string[]]$Class, [switch]$PresentOnly)
    foreach ($c in @((Get-FakeWindowsState).Controllers)) {
        $d = ConvertTo-FakePnpDevice $c
        if ($Class -and -not ($Class -contains $d.Class)) { continue }
        if ($InstanceId -and -not @($InstanceId | Where-Object { $d.InstanceId -like $_ }).Count) { continue }
        $d
    }
}

function Get-PnpDeviceProperty {
    [CmdletBinding()]
    param([Parameter(Mandatory)][string[]]$InstanceId, [Parameter(Position = 0)][string[]]$KeyName)
    foreach ($id in $InstanceId) {
        $c = @((Get-FakeWindowsState).Controllers | Where-Object { $_.InstanceId -eq $id })
        if (-not $c) {
            $PSCmdlet.WriteError([Management.Automation.ErrorRecord]::new([Management.Automation.ItemNotFoundException]::new("No device with instance id $id"), 'NotFound,Get-PnpDeviceProperty', 'ObjectNotFound', $id))
            continue
        }
        $values = @{}
        if ($c[0].DriverInstalled) {
            $values = @{ DEVPKEY_Device_Service = $c[0].Service; DEVPKEY_Device_DriverInfPath = $c[0].InfPath; DEVPKEY_Device_DriverVersion = $c[0].DriverVersion }
        }
        foreach ($k in $KeyName) {
            [pscustomobject]@{ InstanceId = $id; KeyName = $k; Data = $values[$k]; Type = $(if ($values.ContainsKey($k)) { 'String' } else { 'Empty' }) }
        }
    }
}

function Get-NetIPAddress {
    [CmdletBinding()]
    param([ValidateSet('IPv4', 'IPv6')][string[]]$AddressFamily)
    foreach ($a in @((Get-FakeWindowsState).IPAddresses)) {
        if ($AddressFamily -and -not ($AddressFamily -contains $a.AddressFamily)) { continue }
        [pscustomobject]@{ IPAddress = $a.IPAddress; AddressFamily = $a.AddressFamily; PrefixOrigin = $a.PrefixOrigin
            InterfaceAlias = $a.InterfaceAlias; AddressState = 'Preferred' }
    }
}

function Get-WSManInstance {
    [CmdletBinding()]
    param([Parameter(Mandatory)][string]$ResourceURI, [switch]$Enumerate)
    if ($ResourceURI -ne 'winrm/config/Listener') { throw [NotSupportedException]::new("FakeWindows has no WS-Man resource $ResourceURI") }
    @((Get-FakeWindowsState).WSManListeners)
}

function New-WSManInstance {
    [CmdletBinding()]
    param([Parameter(Mandatory)][string]$ResourceURI, [Parameter(Mandatory)][hashtable]$SelectorSet, [hashtable]$ValueSet = @{})
    $state = Get-FakeWindowsState
    $port = $(if ($SelectorSet.Transport -eq 'HTTPS') { 5986 } else { 5985 })
    if (@($state.WSManListeners | Where-Object { $_.Transport -eq $SelectorSet.Transport -and $_.Address -eq $SelectorSet.Address }).Count) {
        throw [InvalidOperationException]::new('The WS-Management service cannot create the resource because it already exists.')
    }
    if ($SelectorSet.Transport -eq 'HTTPS' -and -not @($state.Certificates | Where-Object { $_.Thumbprint -eq $ValueSet.CertificateThumbprint }).Count) {
        throw [InvalidOperationException]::new('The WinRM client cannot process the request: the certificate thumbprint is not in LocalMachine\My.')
    }
    $state.WSManListeners = @($state.WSManListeners) + [pscustomobject]@{ Address = $SelectorSet.Address; Transport = $SelectorSet.Transport
        Port = $port; Hostname = [string]$ValueSet.Hostname; CertificateThumbprint = [string]$ValueSet.CertificateThumbprint }
    Save-FakeWindowsState $state
}

function New-SelfSignedCertificate {
    [CmdletBinding(SupportsShouldProcess)]
    param([string[]]$DnsName, [string]$Subject, [string[]]$TextExtension, [string]$CertStoreLocation = 'Cert:\CurrentUser\My')
    $names = New-Object System.Collections.Generic.List[string]
    foreach ($n in @($DnsName)) { if ($n) { $names.Add('DNS=' + $n) } }
    foreach ($e in @($TextExtension)) {
        if ($e -like '2.5.29.17={text}*') { foreach ($part in $e.Substring('2.5.29.17={text}'.Length).Split('&')) { $names.Add($part) } }
    }
    if (-not $Subject) { $Subject = 'CN=' + @($DnsName)[0] }
    $thumb = [BitConverter]::ToString([Security.Cryptography.SHA1]::Create().ComputeHash([Text.Encoding]::UTF8.GetBytes($Subject + [guid]::NewGuid()))).Replace('-', '')
    $state = Get-FakeWindowsState
    $state.Certificates = @($state.Certificates) + [pscustomobject]@{ Thumbprint = $thumb; Subject = $Subject; Store = $CertStoreLocation
        SubjectAlternativeNames = [string[]]$names.ToArray() }
    Save-FakeWindowsState $state
    [pscustomobject]@{ Thumbprint = $thumb; Subject = $Subject; DnsNameList = @($names | Where-Object { $_ -like 'DNS=*' } | ForEach-Object { $_.Substring(4) }) }
}

function Get-NetFirewallRule {
    [CmdletBinding()]
    param([string[]]$Name)
    $found = @((Get-FakeWindowsState).FirewallRules | Where-Object { -not $Name -or $Name -contains $_.Name })
    if ($Name -and -not $found.Count) {
        $PSCmdlet.WriteError([Management.Automation.ErrorRecord]::new([Management.Automation.ItemNotFoundException]::new("No MSFT_NetFirewallRule objects found with property 'Name' equal to '$Name'."), 'CmdletizationQuery_NotFound_Name,Get-NetFirewallRule', 'ObjectNotFound', $Name))
    }
    $found
}

function New-NetFirewallRule {
    [CmdletBinding(SupportsShouldProcess)]
    param([Parameter(Mandatory)][string]$Name, [string]$DisplayName, [string]$Direction, [string]$Protocol, [string[]]$LocalPort, [string]$Action)
    $state = Get-FakeWindowsState
    $rule = [pscustomobject]@{ Name = $Name; DisplayName = $DisplayName; Direction = $Direction; Protocol = $Protocol; LocalPort = [string[]]$LocalPort; Action = $Action; Enabled = 'True' }
    $state.FirewallRules = @($state.FirewallRules) + $rule
    Save-FakeWindowsState $state
    $rule
}

function Get-ItemProperty {
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    param([Parameter(Mandatory, Position = 0, ParameterSetName = 'Path')][string[]]$Path,
        [Parameter(Mandatory, ParameterSetName = 'LiteralPath')][string[]]$LiteralPath,
        [Parameter(Position = 1)][string[]]$Name)
    foreach ($p in @($Path) + @($LiteralPath)) {
        if (-not $p) { continue }
        if ($p -notlike 'HKLM:\*') { throw [NotSupportedException]::new("FakeWindows answers Get-ItemProperty for HKLM:\ only, not $p") }
        $registry = (Get-FakeWindowsState).Registry
        $key = $registry.PSObject.Properties | Where-Object { $_.Name -eq $p }
        if (-not $key) {
            $PSCmdlet.WriteError([Management.Automation.ErrorRecord]::new([Management.Automation.ItemNotFoundException]::new("Cannot find path '$p' because it does not exist."), 'PathNotFound,Microsoft.PowerShell.Commands.GetItemPropertyCommand', 'ObjectNotFound', $p))
            continue
        }
        $out = [ordered]@{}
        foreach ($v in $key.Value.PSObject.Properties) { if (-not $Name -or $Name -contains $v.Name) { $out[$v.Name] = $v.Value } }
        $out['PSPath'] = 'Microsoft.PowerShell.Core\Registry::' + $p.Replace('HKLM:', 'HKEY_LOCAL_MACHINE')
        [pscustomobject]$out
    }
}

function Restart-Computer {
    # The guest "reboots": a new LastBootUpTime (what the executor waits for). The connection drop and
    # the WinRM service's start-up are the WS-Man stand-in's part (drop_next, fault_next).
    [CmdletBinding(SupportsShouldProcess)]
    param([switch]$Force)
    $state = Get-FakeWindowsState
    $state.Os.LastBootUpTime = [DateTime]::UtcNow.AddSeconds(1).ToString('o')
    Save-FakeWindowsState $state
}

Export-ModuleMember -Function Restart-Computer, Get-Disk, Set-Disk, Clear-Disk, Get-Partition, Get-StorageSetting, Get-CimInstance, Get-PnpDevice,
Get-PnpDeviceProperty, Get-NetIPAddress, Get-WSManInstance, New-WSManInstance, New-SelfSignedCertificate, Get-NetFirewallRule,
New-NetFirewallRule, Get-ItemProperty, Initialize-FakeWindowsDrive, Enter-FakeWindowsGuest
