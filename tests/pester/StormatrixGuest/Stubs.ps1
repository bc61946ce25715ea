# Windows-only cmdlets the guest module calls, as empty functions in the module's scope, so that Pester
# can mock them on Linux. Dot-source inside InModuleScope StormatrixGuest { ... }.
# Parameters mirror the real cmdlets as far as the module uses them; the bodies throw so that a test
# that forgets a mock fails loudly instead of passing on $null.
function script:Get-Disk { [CmdletBinding()] param([int]$Number) throw 'stub Get-Disk called without a mock' }
function script:Set-Disk { [CmdletBinding()] param([int]$Number, [bool]$IsOffline, [bool]$IsReadOnly) throw 'stub Set-Disk called without a mock' }
function script:Clear-Disk { [CmdletBinding(SupportsShouldProcess)] param([int]$Number, [switch]$RemoveData, [switch]$RemoveOEM) throw 'stub Clear-Disk called without a mock' }
function script:Get-Partition { [CmdletBinding()] param([int]$DiskNumber) throw 'stub Get-Partition called without a mock' }
function script:Get-PnpDevice { [CmdletBinding()] param([string[]]$Class) throw 'stub Get-PnpDevice called without a mock' }
function script:Get-PnpDeviceProperty { [CmdletBinding()] param([string]$InstanceId, [string[]]$KeyName) throw 'stub Get-PnpDeviceProperty called without a mock' }
function script:Get-CimInstance { [CmdletBinding()] param([string]$ClassName) throw 'stub Get-CimInstance called without a mock' }
function script:Get-WSManInstance { [CmdletBinding()] param([string]$ResourceURI, [switch]$Enumerate) throw 'stub Get-WSManInstance called without a mock' }
function script:New-WSManInstance { [CmdletBinding()] param([string]$ResourceURI, [hashtable]$SelectorSet, [hashtable]$ValueSet) throw 'stub New-WSManInstance called without a mock' }
function script:New-SelfSignedCertificate { [CmdletBinding()] param([string[]]$DnsName, [string]$CertStoreLocation) throw 'stub New-SelfSignedCertificate called without a mock' }
function script:Get-NetFirewallRule { [CmdletBinding()] param([string[]]$Name) throw 'stub Get-NetFirewallRule called without a mock' }
function script:New-NetFirewallRule { [CmdletBinding()] param([string]$Name, [string]$DisplayName, [string]$Direction, [string]$Protocol, [string]$LocalPort, [string]$Action) throw 'stub New-NetFirewallRule called without a mock' }
