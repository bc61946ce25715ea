"""The StormatrixVMware module for real: the Python backend builds each request, PwshRunner runs
``windows/StormatrixVMware/stormatrix-vmware.ps1`` under the real pwsh 7.6.9 (tests/pwshengine.py; installed
by scripts/install-pwsh.sh when missing, a failure to install fails these tests), and PowerCLI is the
data-described fake in
tests/pwsh/FakeVCenter found through PSModulePath. Nothing of the module is re-implemented in Python.

:class:`FakeVCenter` is the lab those tests share: a copy of tests/pwsh/FakeVCenter/lab.json that every
fake cmdlet reads and writes (calls, stat requests, injected faults and hangs included).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from stormatrix.backends.vmware import backend as vm
from stormatrix.core.errors import InputError
from stormatrix.core.model import DiskConfig
from stormatrix.registry import spec_from_dict

from tests.pwshengine import pwsh_path, run_pwsh_command
from standins.fakevcenter import FAKE_DIR, PASSWORD, USER, FakeVCenter  # noqa: F401 (other tests import them here)
import paths

ROOT = paths.ROOT
#: what [vmware] pwsh names in these tests: the tests' pwsh (the same one make test runs Pester on)
PWSH = pwsh_path()


def matrix(controllers: list[str] | None = None, **vmware: Any) -> dict[str, Any]:
    section = {"server": "vc01.lab", "vm": "bench01", "test_disk": "Hard disk 2", "esx_host": "esx01.lab",
               "device": "naa.600a", "sched_num_req_outstanding": 1024, "latency_threshold_ms": 10,
               "guest_host": "10.0.0.5", "guest_port": 8765, "pwsh": PWSH, "stats_wait_seconds": 0,
               **vmware}
    return {"run": {"backend": "vmware", "boot_timeout_seconds": 60},
            "matrix": {"controllers": controllers or ["pvscsi", "lsilogic-sas", "nvme"]},
            "workload": [{"name": "r", "rw": "randread", "bs": "4k"}], "vmware": section}


@pytest.fixture()
def vcenter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeVCenter:
    return FakeVCenter(tmp_path, monkeypatch)


def backend_for(tmp_path: Path, **vmware: Any) -> vm.VmwareBackend:
    return vm.VmwareBackend(spec_from_dict(matrix(**vmware)), tmp_path)


def runner() -> vm.PwshRunner:
    return vm.PwshRunner(PWSH, {"Server": "vc01.lab", "CredentialSource": "Environment",
                                         "UserVariable": "STORMATRIX_VSPHERE_USER",
                                         "PasswordVariable": "STORMATRIX_VSPHERE_PASSWORD", "VerifyCertificate": True},
                         redact=("STORMATRIX_VSPHERE_PASSWORD",))


# --- layout, controller change, restore -----------------------------------------------------------------

def test_layout_reports_the_disk_its_controller_and_disk_enable_uuid(vcenter: FakeVCenter) -> None:
    layout = runner().call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2"})
    assert layout["Disk"] == {"Name": "Hard disk 2", "Filename": "[ds1] bench01/bench01_1.vmdk", "Key": 2016,
                              "ControllerKey": 1001, "UnitNumber": 0, "CapacityGB": 8.0,
                              "Uuid": "6000C29a-85e1-7c3f-0b44-e2d0a9b1c7f5"}
    assert layout["Controller"] == {"Key": 1001, "Name": "SCSI controller 1", "Type": "LsiLogicSAS", "Bus": 1}
    assert [(c["Key"], c["Type"], c["Disks"]) for c in layout["Controllers"]] == \
        [(1000, "ParaVirtual", [2000]), (1001, "LsiLogicSAS", [2016])]
    assert layout["PowerState"] == "PoweredOn" and layout["BootTime"] == "2026-11-22T03:00:00.0000000Z"
    assert layout["DiskEnableUUID"] is True
    vcenter.edit_vm(extraConfig={})
    assert runner().call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2"})[
        "DiskEnableUUID"] is False
    calls = vcenter.cmdlets()
    assert calls.count("Connect-VIServer") == calls.count("Disconnect-VIServer") == 2
    assert all(p["PasswordMatches"] for p in vcenter.calls("Connect-VIServer"))


@pytest.mark.parametrize("controller, powercli_type", [("pvscsi", "ParaVirtual"), ("lsilogic", "VirtualLsiLogic"),
                                                       ("lsilogic-sas", "VirtualLsiLogicSAS"), ("nvme", "NVMe")])
def test_each_controller_type_is_applied_by_a_power_cycle_and_restored(vcenter: FakeVCenter, tmp_path: Path,
                                                                       controller: str, powercli_type: str) -> None:
    before = vcenter.layout()
    b = backend_for(tmp_path)
    facts = b.prepare()
    assert facts["original_controller"] == "LsiLogicSAS" and facts["tuning_original"]["SchedNumReqOutstanding"] == 32
    b.apply(DiskConfig.controller_only(controller))
    lab_vm = vcenter.vm()
    disk = next(d for d in lab_vm["disks"] if d["name"] == "Hard disk 2")
    ctrl = next(c for c in lab_vm["controllers"] if c["key"] == disk["controllerKey"])
    assert ctrl["type"] == powercli_type and lab_vm["powerState"] == "PoweredOn"
    assert lab_vm["bootedWith"]["Hard disk 2"] == powercli_type  # the guest booted with the new controller
    assert disk["filename"] == "[ds1] bench01/bench01_1.vmdk"
    calls = vcenter.cmdlets()
    assert calls.index("Stop-VM") < calls.index("Start-VM") < calls.index("Wait-Tools")
    assert vcenter.devices()["naa.600a"] == ("1024", "10 milliseconds")
    b.restore()
    assert vcenter.layout() == before and vcenter.devices()["naa.600a"] == ("32", "0 milliseconds")


def test_a_sequence_of_cells_reuses_and_cleans_up_controllers(vcenter: FakeVCenter, tmp_path: Path) -> None:
    b = backend_for(tmp_path)
    b.prepare()
    for controller in ("pvscsi", "nvme", "lsilogic", "pvscsi"):
        b.apply(DiskConfig.controller_only(controller))
        keys = [c["key"] for c in vcenter.vm()["controllers"]]
        assert len(keys) <= 3, keys  # the two originals and the one the disk is on
    b.restore()
    assert [c["key"] for c in vcenter.vm()["controllers"]] == [1000, 1001]
    assert any(o.startswith("remove:") for o in (p["Operations"] for p in vcenter.calls("ReconfigVM")))


def test_restore_when_the_original_controller_is_gone_uses_a_new_one_of_its_type(vcenter: FakeVCenter,
                                                                                 tmp_path: Path) -> None:
    # the test disk on LSI Logic SAS 1002 (bus 2; bus 1 unused), so a new controller gets another key
    lab = vcenter.read()
    bench = lab["vms"][0]
    bench["controllers"][1].update(key=1002, bus=2)
    bench["disks"][1]["controllerKey"] = 1002
    vcenter.write(lab)
    b = backend_for(tmp_path, sched_num_req_outstanding=0, latency_threshold_ms=-1)
    b.prepare()
    b.apply(DiskConfig.controller_only("nvme"))
    lab = vcenter.read()  # someone removed the (now empty) original controller 1002 meanwhile
    lab["vms"][0]["controllers"] = [c for c in lab["vms"][0]["controllers"] if c["key"] != 1002]
    vcenter.write(lab)
    b.restore()
    lab_vm = vcenter.vm()
    disk = next(d for d in lab_vm["disks"] if d["name"] == "Hard disk 2")
    ctrl = next(c for c in lab_vm["controllers"] if c["key"] == disk["controllerKey"])
    assert ctrl["type"] == "VirtualLsiLogicSAS" and ctrl["key"] != 1002
    assert sorted(c["key"] for c in lab_vm["controllers"]) == [1000, ctrl["key"]]  # the NVMe one is gone
    assert lab_vm["powerState"] == "PoweredOn" and disk["filename"] == "[ds1] bench01/bench01_1.vmdk"


# --- exact names ------------------------------------------------------------------------------------------

def test_a_wildcard_vm_name_selects_nothing_and_changes_nothing(vcenter: FakeVCenter, tmp_path: Path) -> None:
    with pytest.raises(vm.PowerCLINotFound, match="bench\\*"):
        runner().call("Set-StormatrixVMwareController", {"VMName": "bench*", "DiskName": "Hard disk 2",
                                                         "Type": "NVMe", "KeepControllerKey": [1000, 1001]})
    assert "Stop-VM" not in vcenter.cmdlets()


def test_a_name_with_brackets_is_found_exactly(vcenter: FakeVCenter) -> None:
    layout = runner().call("Get-StormatrixVMwareLayout", {"VMName": "lab[1]", "DiskName": "Hard disk 2"})
    assert layout["VMName"] == "lab[1]" and layout["Controller"]["Type"] == "NVMe"


@pytest.mark.parametrize("disk", ["Hard disk ?", "Hard disk [2]", "hard disk*"])
def test_a_wildcard_disk_name_is_not_found(vcenter: FakeVCenter, disk: str) -> None:
    with pytest.raises(vm.PowerCLINotFound):
        runner().call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": disk})


def test_host_name_is_matched_exactly(vcenter: FakeVCenter) -> None:
    with pytest.raises(vm.PowerCLINotFound):
        runner().call("Get-StormatrixVMwareHostTuning", {"VMHost": "esx0*", "Device": "naa.600a"})


# --- host tuning ------------------------------------------------------------------------------------------

def test_host_tuning_reads_esxcli_values_as_esxcli_prints_them(vcenter: FakeVCenter) -> None:
    tuning = runner().call("Get-StormatrixVMwareHostTuning", {"VMHost": "esx01.lab", "Device": "naa.600a"})
    assert tuning == {"VMHost": "esx01.lab", "Device": "naa.600a", "SchedNumReqOutstanding": 32,
                      "LatencySensitiveThreshold": 0}
    result = runner().call("Set-StormatrixVMwareHostTuning", {"VMHost": "esx01.lab", "Device": "naa.600a",
                                                              "SchedNumReqOutstanding": 1024,
                                                              "LatencySensitiveThreshold": 10})
    assert result["After"]["LatencySensitiveThreshold"] == 10 and result["After"]["SchedNumReqOutstanding"] == 1024
    assert vcenter.devices()["naa.600a"] == ("1024", "10 milliseconds")
    sets = vcenter.calls("esxcli storage core device set")
    assert sets == [{"device": "naa.600a", "schednumreqoutstanding": 1024}]


def test_tuning_failure_half_way_puts_the_first_setting_back(vcenter: FakeVCenter) -> None:
    vcenter.fault("esxcli:storage.core.device.latencythreshold.set", "latency threshold refused")
    with pytest.raises(vm.PowerCLIError, match="put back to 32") as info:
        runner().call("Set-StormatrixVMwareHostTuning", {"VMHost": "esx01.lab", "Device": "naa.600a",
                                                         "SchedNumReqOutstanding": 1024, "LatencySensitiveThreshold": 10})
    assert "latency threshold refused" in str(info.value)
    assert vcenter.devices()["naa.600a"] == ("32", "0 milliseconds")


# --- CPU usage and the window -----------------------------------------------------------------------------

def _ms(iso: str) -> int:
    t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (t - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "America/New_York"])
def test_cpu_usage_window_is_exact_to_the_millisecond_in_any_time_zone(vcenter: FakeVCenter, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch, tz: str) -> None:
    monkeypatch.setenv("TZ", tz)
    now = datetime.now(timezone.utc)
    vcenter.add_cpu_samples(now)
    b = backend_for(tmp_path)
    collector = b.collector_factory(b.scope()[0])
    collector.start()
    assert isinstance(collector, vm.VmwareCpuCollector) and collector.t0 is not None
    collector.t0 = collector.t0.replace(microsecond=123_456) - timedelta(seconds=45)  # a 45 s window, ms in it
    host = collector.stop()
    start, finish = vm.iso_utc(collector.t0), vm.iso_utc(collector.t1)
    (vm_request, host_request) = vcenter.read()["statRequests"]
    for request in (vm_request, host_request):
        assert request["startUnixMs"] == _ms(start) - 20_000 and request["finishUnixMs"] == _ms(finish) + 20_000
        assert request["realtime"] is True
    assert host["window_s"] == pytest.approx((_ms(finish) - _ms(start)) / 1000, abs=1e-9)
    assert host["cpu_metric"] == "cpu_time" and host["source"] == "vsphere-realtime"
    assert host["vmware"]["host"] == "esx01.lab" and host["vmware"]["coverage"] == pytest.approx(1.0)
    assert host["cpu_total"] == pytest.approx(4.0 * host["window_s"] / 20)  # 4 s of CPU per 20 s sample, prorated
    assert sorted(t["name"] for t in host["threads"]) == ["vCPU 0", "vCPU 1"]


def test_a_window_without_samples_is_a_stats_error(vcenter: FakeVCenter, tmp_path: Path) -> None:
    vcenter.add_cpu_samples(datetime.now(timezone.utc) - timedelta(hours=3))
    b = backend_for(tmp_path)
    collector = b.collector_factory(b.scope()[0])
    collector.start()
    assert collector.t0 is not None
    collector.t0 -= timedelta(seconds=30)
    with pytest.raises(vm.PowerCLIStatsError, match="no realtime cpu.used sample"):
        collector.stop()


# --- disk.EnableUUID: the guest's disk serial -------------------------------------------------------------

def test_winrm_without_disk_enable_uuid_fails_before_any_power_cycle_and_the_fix_works(
        vcenter: FakeVCenter, tmp_path: Path) -> None:
    vcenter.edit_vm(extraConfig={"disk.EnableUUID": "FALSE"})
    raw = matrix()
    raw["run"]["executor"] = "winrm"
    b = vm.VmwareBackend(spec_from_dict(raw), tmp_path)
    with pytest.raises(InputError) as info:
        b.prepare()
    text = str(info.value)
    assert "disk.EnableUUID = TRUE" in text and "Edit Settings > VM Options > Advanced > Configuration Parameters" in text
    assert "powered off" in text
    assert "Stop-VM" not in vcenter.cmdlets()
    one_liner = text[text.index("New-AdvancedSetting"):].split("\n")[0].rstrip(".")
    # the one-liner the message gives, run as given (against the fake PowerCLI, after connecting)
    script = ("$c = [pscredential]::new($env:STORMATRIX_VSPHERE_USER, (ConvertTo-SecureString -String "
              "$env:STORMATRIX_VSPHERE_PASSWORD -AsPlainText -Force)); Connect-VIServer -Server vc01.lab -Credential $c "
              f"| Out-Null; {one_liner}")
    proc = run_pwsh_command(script, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert vcenter.vm()["extraConfig"]["disk.EnableUUID"] == "TRUE"
    assert b.prepare()["disk_enable_uuid"] is True


def test_injected_values_arrive_as_data(vcenter: FakeVCenter, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(vm.PowerCLINotFound):
        runner().call("Get-StormatrixVMwareLayout", {"VMName": f"x'; New-Item -Path {marker} #",
                                                     "DiskName": "Hard disk 2"})
    assert not marker.exists()


def test_without_powercli_the_error_says_how_to_install_it(vcenter: FakeVCenter, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PSModulePath", str(tmp_path))
    with pytest.raises(vm.PowerCLIUnavailable, match="Install-Module VMware.PowerCLI"):
        runner().call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2"})


def test_a_module_that_does_not_load_is_reported_naming_the_file(vcenter: FakeVCenter, tmp_path: Path) -> None:
    copy = tmp_path / "StormatrixVMware"
    shutil.copytree(vm.MODULE_DIR, copy)
    (copy / "Private" / "Broken-Thing.ps1").write_text("function Broken-Thing {\n    \"unterminated $Name: text\n")
    r = vm.PwshRunner(PWSH, runner().connection, module_dir=copy)
    with pytest.raises(vm.PowerCLIUnavailable) as info:
        r.call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2"})
    assert info.value.details.error_id == "Stormatrix.VMware.ModuleLoadFailed" and "Broken-Thing.ps1" in str(info.value)
    assert vcenter.cmdlets() == []  # nothing reached vSphere
