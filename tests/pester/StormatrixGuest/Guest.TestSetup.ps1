# Shared set-up of the StormatrixGuest unit tests (one file per public function, dot-sourced in each file's
# BeforeAll). On Linux: Windows-only cmdlets are stubbed in module scope (Stubs.ps1) and mocked; native
# executables go through Invoke-StormatrixNative, mocked. The same functions run unmocked against the
# data-described fake Windows guest (tests/pwsh/FakeWindows) in tests/harness/executors/test_winrm_standin.py,
# test_winrm_guest_module.py and test_winrm_e2e.py.
$script:ModuleManifest = Join-Path $PSScriptRoot '../../../windows/StormatrixGuest/StormatrixGuest.psd1'
Import-Module -Name $script:ModuleManifest -Force
$stubs = Join-Path $PSScriptRoot 'Stubs.ps1'
InModuleScope StormatrixGuest -Parameters @{ Stubs = $stubs } {
    param($Stubs)
    . $Stubs
    # cmdlets and parameters the module uses beyond Stubs.ps1
    function script:Get-PnpDevice { [CmdletBinding()] param([string[]]$Class, [switch]$PresentOnly) throw 'stub Get-PnpDevice called without a mock' }
    function script:Get-StorageSetting { [CmdletBinding()] param() throw 'stub Get-StorageSetting called without a mock' }
    function script:Get-NetIPAddress { [CmdletBinding()] param([string[]]$AddressFamily) throw 'stub Get-NetIPAddress called without a mock' }
    function script:New-SelfSignedCertificate { [CmdletBinding()] param([string[]]$DnsName, [string]$Subject, [string[]]$TextExtension, [string]$CertStoreLocation) throw 'stub New-SelfSignedCertificate called without a mock' }
}
$PSDefaultParameterValues['Mock:ModuleName'] = 'StormatrixGuest'
$PSDefaultParameterValues['Should:ModuleName'] = 'StormatrixGuest'

function script:New-TestDisk {
    param([int]$Number = 1, [string]$Serial = 'STORMATRIX01', [string]$PartitionStyle = 'RAW', [bool]$IsOffline = $true,
        [bool]$IsBoot = $false, [bool]$IsSystem = $false, [bool]$IsReadOnly = $false)
    [pscustomobject]@{ Number = $Number; SerialNumber = "  $Serial "; FriendlyName = 'QEMU HARDDISK'; BusType = 'SAS'
        Size = 1GB; PartitionStyle = $PartitionStyle; IsOffline = $IsOffline; OfflineReason = 'Policy'
        IsBoot = $IsBoot; IsSystem = $IsSystem; IsReadOnly = $IsReadOnly }
}
function script:Write-FioOutput {
    # what fio does with --output=<file>: writes its JSON document there (for mocks of Invoke-StormatrixNative)
    param([string[]]$ArgumentList, [string]$Json)
    Set-Content -LiteralPath ($ArgumentList | Where-Object { $_ -like '--output=*' }).Substring(9) -Value $Json
}
function script:New-NativeResult {
    param([int]$ExitCode = 0, [string]$StdOut = '', [string]$StdErr = '')
    [pscustomobject]@{ FilePath = 'x'; Arguments = @(); ExitCode = $ExitCode; StdOut = $StdOut; StdErr = $StdErr }
}

# -Confirm prompts; in a session started with -NonInteractive (make test) the prompt fails instead of
# waiting, which shows that the function asked. Elsewhere those tests are skipped (they would wait).
$script:NonInteractive = @([Environment]::GetCommandLineArgs() | Where-Object { $_ -match '^-noni' }).Count -gt 0

function script:Remove-GuestTestSetup {
    $PSDefaultParameterValues.Remove('Mock:ModuleName')
    $PSDefaultParameterValues.Remove('Should:ModuleName')
    Remove-Module -Name StormatrixGuest -Force -ErrorAction SilentlyContinue
}
