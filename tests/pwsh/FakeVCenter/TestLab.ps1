# Helpers for Pester tests that use the fake PowerCLI (dot-sourced in a BeforeAll after $script:FakeDir is set):
# a fresh copy of lab.json per test (STORMATRIX_FAKE_VCENTER_LAB), reading back the calls and the VM, editing the
# lab (controllers, disks, one-shot faults), and connecting the StormatrixVMware module to it.

# A fresh copy of the lab for one test; $Change edits it first (it gets the lab as an object).
function script:New-TestLab {
    param([scriptblock]$Change)
    $lab = ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText([System.IO.Path]::Combine($script:FakeDir, 'lab.json')))
    if ($Change) { & $Change $lab }
    $path = [System.IO.Path]::Combine([System.IO.Path]::GetTempPath(), "smx-vcenter-$PID-$([guid]::NewGuid().ToString('N')).json")
    [System.IO.File]::WriteAllText($path, (ConvertTo-Json -InputObject $lab -Depth 32))
    $env:STORMATRIX_FAKE_VCENTER_LAB = $path
}
function script:Remove-TestLab {
    if ($env:STORMATRIX_FAKE_VCENTER_LAB -and [System.IO.File]::Exists($env:STORMATRIX_FAKE_VCENTER_LAB)) {
        [System.IO.File]::Delete($env:STORMATRIX_FAKE_VCENTER_LAB)
    }
}
function script:Read-TestLab { ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText($env:STORMATRIX_FAKE_VCENTER_LAB)) }
function script:Get-TestCall {
    # the names of the cmdlets called, in order, or the parameters of each call of one cmdlet
    param([string]$Cmdlet)
    $calls = @((Read-TestLab).calls)
    if ($Cmdlet) { return @($calls | Where-Object { $_.cmdlet -eq $Cmdlet } | ForEach-Object { $_.parameters }) }
    @($calls | ForEach-Object { [string]$_.cmdlet })
}
function script:Get-TestVM { param([string]$Name = 'bench01') @((Read-TestLab).vms | Where-Object { $_.name -eq $Name })[0] }
function script:Get-TestDisk { param([string]$Name = 'Hard disk 2') @((Get-TestVM).disks | Where-Object { $_.name -eq $Name })[0] }
function script:Connect-TestLab { $null = Connect-StormatrixVMware -Server vc01.lab -UserVariable SMX_TEST_USER -PasswordVariable SMX_TEST_PASSWORD }
function script:Disconnect-TestLab { InModuleScope StormatrixVMware { Disconnect-StormatrixVMware } }
function script:Add-TestController {
    param([object]$Lab, [int]$Key, [string]$Type, [int]$Bus, [string]$Kind = 'scsi')
    $vm = $Lab.vms[0]
    $vm.controllers = @($vm.controllers) + @([pscustomobject]@{ key = $Key; kind = $Kind; type = $Type; bus = $Bus })
}
function script:Add-TestDisk {
    param([object]$Lab, [int]$Key, [string]$Name, [int]$Controller, [int]$Unit = 0)
    $vm = $Lab.vms[0]
    $vm.disks = @($vm.disks) + @([pscustomobject]@{ key = $Key; name = $Name; controllerKey = $Controller; unitNumber = $Unit
            capacityKB = 1048576; filename = "[ds1] bench01/bench01_$Key.vmdk"; uuid = "6000C290-0000-0000-0000-00000000$Key" })
}
function script:Set-TestFault {
    param([string]$Step, [string]$Message)
    $lab = Read-TestLab
    $lab.faults.PSObject.Properties.Add([psnoteproperty]::new($Step, $Message))
    [System.IO.File]::WriteAllText($env:STORMATRIX_FAKE_VCENTER_LAB, (ConvertTo-Json -InputObject $lab -Depth 32))
}
function script:ConvertTo-TestUnixMs { param([string]$Iso) [System.DateTimeOffset]::Parse($Iso, [cultureinfo]::InvariantCulture).ToUnixTimeMilliseconds() }
