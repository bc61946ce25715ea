"""The Python <-> PowerShell contract for real: the backend runs the real StormatrixVMware module under
pwsh, with a stub PowerCLI module (VMware.VimAutomation.Core) first on PSModulePath that keeps a VM in
a JSON file and records every cmdlet call with its parameters. Skipped (with the reason) where no pwsh
is installed (.tools/pwsh or PATH); scripts/install-pwsh.sh says why it could not install one.
NOT RUN on the machine this was written on: PowerShell 7 could not be installed there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stormatrix.backends import vmware as vm
from stormatrix.core.model import DiskConfig
from stormatrix.spec import spec_from_dict
from tests.standins.wsman import find_pwsh

PWSH = find_pwsh()
pytestmark = [pytest.mark.pwsh,
              pytest.mark.skipif(PWSH is None, reason="pwsh not found in .tools/pwsh or on PATH "
                                                      "(scripts/install-pwsh.sh could not install PowerShell 7)")]

STUB = r'''
# Stub of the PowerCLI cmdlets StormatrixVMware uses. State: $env:SMX_STUB_STATE (JSON); calls appended to it.
if (-not ('VMware.Vim.VirtualMachineConfigSpec' -as [type])) {
    Add-Type -TypeDefinition @"
namespace VMware.Vim {
    public class VirtualDeviceConfigSpec { public string Operation; public object Device; }
    public class VirtualMachineConfigSpec { public VirtualDeviceConfigSpec[] DeviceChange; }
}
"@
}
function Read-State { Get-Content -Raw -Path $env:SMX_STUB_STATE | ConvertFrom-Json }
function Save-State($s) { Set-Content -Path $env:SMX_STUB_STATE -Value ($s | ConvertTo-Json -Depth 10) }
function Add-Call([string]$Name, [hashtable]$P) { $s = Read-State; $s.calls += [pscustomobject]@{ cmdlet = $Name; params = $P }; Save-State $s }
function New-VmObject($s) {
    $vmObj = [pscustomobject]@{ Name = $s.vm.name; Id = 'VirtualMachine-vm-42'; PowerState = $s.vm.power
        ExtensionData = [pscustomobject]@{ Runtime = [pscustomobject]@{ BootTime = [datetime]::new(2026, 1, 1, 0, [int]$s.vm.boots, 0, 'Utc') } } }
    $vmObj.ExtensionData | Add-Member -MemberType ScriptMethod -Name ReconfigVM -Value {
        param($spec)
        $key = [int]$spec.DeviceChange[0].Device.Key
        Add-Call 'ReconfigVM' @{ Operation = $spec.DeviceChange[0].Operation; Key = $key }
        $st = Read-State; $st.vm.controllers = @($st.vm.controllers | Where-Object { $_.key -ne $key }); Save-State $st
    }
    $vmObj
}
function Get-VM { param([string]$Name, $ErrorAction) Add-Call 'Get-VM' @{ Name = $Name }; $s = Read-State
    if ($Name -ne $s.vm.name) { throw "VM with name '$Name' was not found using the specified filter(s)." }; New-VmObject $s }
function Get-HardDisk { param($VM, [string]$Name, $ErrorAction) $s = Read-State
    $d = $s.vm.disks | Where-Object { $_.name -eq $Name }
    if (-not $d) { throw "Hard disk '$Name' was not found" }
    [pscustomobject]@{ Name = $d.name; Filename = $d.file; CapacityGB = 8; ExtensionData = [pscustomobject]@{ Key = $d.key; ControllerKey = $d.controller; UnitNumber = 0 } } }
function Get-ScsiController { param($VM, $ErrorAction) $s = Read-State
    foreach ($c in @($s.vm.controllers | Where-Object { $_.type -ne 'NVMe' })) {
        [pscustomobject]@{ Key = $c.key; Name = "SCSI controller $($c.bus)"; Type = $c.type
            ExtensionData = [pscustomobject]@{ Key = $c.key; BusNumber = $c.bus; Device = @($s.vm.disks | Where-Object { $_.controller -eq $c.key } | ForEach-Object { $_.key }) } } } }
function Get-NvmeController { param($VM, $ErrorAction) @() }
function New-ScsiController { param($HardDisk, [string]$Type, $Confirm, $ErrorAction) Add-Call 'New-ScsiController' @{ HardDisk = $HardDisk.Name; Type = $Type }
    $s = Read-State; if ($s.vm.power -ne 'PoweredOff') { throw 'The attempted operation cannot be performed in the current state (Powered on).' }
    $bus = @(0, 1, 2, 3 | Where-Object { $_ -notin @($s.vm.controllers | ForEach-Object { $_.bus }) })[0]
    $s.vm.controllers += [pscustomobject]@{ key = 1000 + $bus; type = $Type; bus = $bus }
    ($s.vm.disks | Where-Object { $_.name -eq $HardDisk.Name }).controller = 1000 + $bus; Save-State $s }
function Set-HardDisk { param($HardDisk, $Controller, $Confirm, $ErrorAction) Add-Call 'Set-HardDisk' @{ HardDisk = $HardDisk.Name; Controller = $Controller.Key }
    $s = Read-State; if ($s.vm.power -ne 'PoweredOff') { throw 'The attempted operation cannot be performed in the current state (Powered on).' }
    ($s.vm.disks | Where-Object { $_.name -eq $HardDisk.Name }).controller = $Controller.Key; Save-State $s }
function Stop-VM { param($VM, $Confirm, $ErrorAction) Add-Call 'Stop-VM' @{ VM = $VM.Name }; $s = Read-State; $s.vm.power = 'PoweredOff'; Save-State $s }
function Start-VM { param($VM, $Confirm, $ErrorAction) Add-Call 'Start-VM' @{ VM = $VM.Name }; $s = Read-State; $s.vm.power = 'PoweredOn'; $s.vm.boots += 1; Save-State $s }
function Wait-Tools { param($VM, [int]$TimeoutSeconds, $ErrorAction) Add-Call 'Wait-Tools' @{ TimeoutSeconds = $TimeoutSeconds }; $VM }
function Set-PowerCLIConfiguration { param($Scope, $InvalidCertificateAction, $Confirm, $ErrorAction) Add-Call 'Set-PowerCLIConfiguration' @{ Scope = $Scope; InvalidCertificateAction = $InvalidCertificateAction } }
function Connect-VIServer { param([string]$Server, [pscredential]$Credential, [string]$User, $ErrorAction)
    Add-Call 'Connect-VIServer' @{ Server = $Server; User = $Credential.UserName; PasswordMatches = ($Credential.GetNetworkCredential().Password -eq (Read-State).password) }
    [pscustomobject]@{ Name = $Server; ProductLine = 'embeddedEsx'; Version = '7.0.3'; Build = '19193900' } }
function Disconnect-VIServer { param($Server, [switch]$Force, $Confirm, $ErrorAction) Add-Call 'Disconnect-VIServer' @{ Server = $Server.Name } }
function Get-VICredentialStoreItem { param($Host, $User, $ErrorAction) @() }
Export-ModuleMember -Function *
'''


def _state() -> dict[str, Any]:
    return {"password": "pw-stub", "calls": [],
            "vm": {"name": "bench01", "power": "PoweredOn", "boots": 1,
                   "controllers": [{"key": 1000, "type": "ParaVirtual", "bus": 0}, {"key": 1001, "type": "VirtualLsiLogicSAS", "bus": 1}],
                   "disks": [{"key": 2000, "name": "Hard disk 1", "file": "[ds1] a.vmdk", "controller": 1000},
                             {"key": 2016, "name": "Hard disk 2", "file": "[ds1] b.vmdk", "controller": 1001}]}}


def test_real_module_moves_and_restores_through_stub_powercli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = tmp_path / "modules" / "VMware.VimAutomation.Core"
    mod.mkdir(parents=True)
    (mod / "VMware.VimAutomation.Core.psm1").write_text(STUB)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(_state()))
    monkeypatch.setenv("PSModulePath", str(tmp_path / "modules"))
    monkeypatch.setenv("SMX_STUB_STATE", str(state))
    monkeypatch.setenv("DOTNET_ROLL_FORWARD", "Major")
    monkeypatch.setenv("STORMATRIX_VSPHERE_USER", "root")
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "pw-stub")
    raw = {"run": {"backend": "vmware", "boot_timeout_seconds": 60}, "matrix": {"controllers": ["pvscsi"]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "vmware": {"server": "esx01", "vm": "bench01", "test_disk": "Hard disk 2", "pwsh": PWSH}}
    b = vm.VmwareBackend(spec_from_dict(raw), tmp_path)
    facts = b.prepare()
    assert facts["original_controller"] == "LsiLogicSAS"
    b.apply(DiskConfig.controller_only("pvscsi"))
    b.restore()
    s = json.loads(state.read_text())
    calls = [(c["cmdlet"], c["params"]) for c in s["calls"] if c["cmdlet"] not in ("Get-VM",)]
    names = [n for n, _ in calls]
    assert ("New-ScsiController", {"HardDisk": "Hard disk 2", "Type": "ParaVirtual"}) in calls
    assert names.index("Stop-VM") < names.index("New-ScsiController") < names.index("Start-VM")
    assert ("Set-HardDisk", {"HardDisk": "Hard disk 2", "Controller": 1001}) in calls
    assert ("ReconfigVM", {"Operation": "remove", "Key": 1002}) in calls
    assert all(p["InvalidCertificateAction"] == "Fail" for n, p in calls if n == "Set-PowerCLIConfiguration")
    assert all(p["PasswordMatches"] for n, p in calls if n == "Connect-VIServer")
    assert names.count("Connect-VIServer") == names.count("Disconnect-VIServer")
    assert [d["controller"] for d in s["vm"]["disks"]] == [1000, 1001] and len(s["vm"]["controllers"]) == 2


def test_injected_values_arrive_as_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert PWSH is not None
    monkeypatch.setenv("DOTNET_ROLL_FORWARD", "Major")
    marker = tmp_path / "pwned"
    runner = vm.PwshRunner(PWSH, {"Server": "esx01", "CredentialSource": "Environment"})
    monkeypatch.setenv("PSModulePath", str(tmp_path))  # no PowerCLI: the call fails at Import-Module, as data
    with pytest.raises(vm.PowerCLIError) as info:
        runner.call("Get-StormatrixVMwareLayout", {"VMName": f"x'; New-Item -Path {marker} #", "DiskName": "Hard disk 2"})
    assert info.value.error_id.startswith("Stormatrix.VMware.PowerCLINotInstalled")
    assert not marker.exists()
