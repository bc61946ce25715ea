"""The vmware backend end to end: the Python backend, the real StormatrixVMware module on the PowerShell
pwsh (tests/pwshengine.py) and the data-described fake PowerCLI (tests/pwsh/FakeVCenter, see
test_vmware_pwsh.FakeVCenter): argument and JSON building, the [vmware] section, error mapping, and restore
from every half-done state. The fake keeps the lab in a file, so these tests fail if Python sends a name the
module does not have, if a cell's change is not power-cycled in, or if restore leaves anything behind.
"""

from __future__ import annotations

import json
import time
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from stormatrix.backends.vmware import backend as vm
from stormatrix.backends.vmware import pwsh as vmware_pwsh
from stormatrix.core.errors import EnvironmentProblem, GuestNotReady, InputError, MatrixError
from stormatrix.core.model import DiskConfig
from stormatrix.registry import backend_class, spec_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_vmware_pwsh import PASSWORD, FakeVCenter, matrix  # noqa: E402

Lab = FakeVCenter


@pytest.fixture()
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lab:
    return Lab(tmp_path, monkeypatch)


@pytest.fixture()
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What Python handed to pwsh: argv and the request document of every call."""
    calls: list[dict[str, Any]] = []
    real = vmware_pwsh.run_pwsh_process

    def recording(argv: list[str], request: str, timeout: float, env: dict[str, str]) -> Any:
        calls.append({"argv": list(argv), "request": json.loads(request or "null"), "env": env})
        return real(argv, request, timeout, env)

    monkeypatch.setattr(vmware_pwsh, "run_pwsh_process", recording)
    return calls


@pytest.fixture()
def backend(lab: Lab, tmp_path: Path) -> Iterator[vm.VmwareBackend]:
    b = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)
    yield b
    b.close()


# --- building arguments and requests -------------------------------------------------------------------------

def test_argv_is_fixed_and_carries_no_value_from_the_matrix() -> None:
    assert vm.pwsh_argv("/opt/pwsh") == ["/opt/pwsh", "-NoLogo", "-NoProfile", "-NonInteractive", "-File",
                                         str(vm.MODULE_DIR / "stormatrix-vmware.ps1")]


def test_request_is_data_and_refuses_names_outside_the_contract() -> None:
    text = vm.build_request("Get-StormatrixVMwareLayout", {"VMName": "x'; Remove-Item / #", "DiskName": "Hard disk 2"},
                            {"Server": "vc", "CredentialSource": "Environment"})
    assert json.loads(text)["parameters"]["VMName"] == "x'; Remove-Item / #"
    with pytest.raises(vm.PowerCLIContractError, match="Disk"):
        vm.build_request("Get-StormatrixVMwareLayout", {"VMName": "a", "Disk": "b"}, {"Server": "vc"})
    with pytest.raises(vm.PowerCLIContractError, match="Password"):
        vm.build_request("Get-StormatrixVMwareLayout", {"VMName": "a"}, {"Server": "vc", "Password": "x"})
    with pytest.raises(vm.PowerCLIContractError):
        vm.build_request("Invoke-Expression", {}, {})


def test_response_is_the_prefixed_line_and_noise_is_kept_apart() -> None:
    doc, noise = vm.parse_response("WARNING: CEIP\nSTORMATRIX-JSON:{\"ok\": true}\n")
    assert doc == {"ok": True} and noise == ["WARNING: CEIP"]
    with pytest.raises(vm.PowerCLIContractError):
        vm.parse_response("STORMATRIX-JSON:{not json\n")


# --- the [vmware] section ------------------------------------------------------------------------------------

def test_section_is_registered_with_safe_defaults() -> None:
    spec = spec_from_dict(matrix())
    s = spec.section("vmware")
    assert s["verify_tls"] is True and s["credential_source"] == "env"
    assert s["password_env"] == "STORMATRIX_VSPHERE_PASSWORD"
    assert backend_class("vmware") is vm.VmwareBackend


@pytest.mark.parametrize("key, value, problem", [
    ("password", "hunter2", "unknown key"),
    ("password_env", "hunter 2!", "not an environment-variable name"),
    ("password_file", "hunter 2!", "names no existing file"),
    ("test_disk", "scsi1", "not a vSphere disk name"),
    ("credential_source", "file", "is not one of"),
    ("device", "naa.1; rm", "not an esxcli device name"),
])
def test_section_rejects_secrets_and_bad_values(key: str, value: str, problem: str) -> None:
    with pytest.raises(MatrixError, match=problem) as info:
        spec_from_dict(matrix(**{key: value}))
    if key.startswith("password"):
        assert value not in str(info.value)  # a pasted secret is described, never repeated


def test_password_from_a_file_reaches_pwsh_only_in_its_environment(lab: Lab, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    sent: list[dict[str, Any]]) -> None:
    monkeypatch.delenv("STORMATRIX_VSPHERE_PASSWORD")
    secret = tmp_path / "vsphere-password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    b = vm.VmwareBackend(spec_from_dict(matrix(password_file=str(secret))), tmp_path)
    assert b.prepare()["original_controller"] == "LsiLogicSAS"
    assert lab.calls("Connect-VIServer")[0]["PasswordMatches"] is True
    assert sent[0]["request"]["connection"]["PasswordVariable"] == vm.FILE_PASSWORD_VARIABLE
    # on the command line and in the request document: never; in pwsh's environment: under the named variable
    assert PASSWORD not in json.dumps([{"argv": c["argv"], "request": c["request"]} for c in sent])
    assert all(c["env"][vm.FILE_PASSWORD_VARIABLE] == PASSWORD for c in sent)
    with pytest.raises(MatrixError, match="both are set"):
        vm.VmwareBackend(spec_from_dict(matrix(password_file=str(secret), password_env="OTHER_VAR")), tmp_path)


def test_esxi_cells_are_the_controller_alone(tmp_path: Path) -> None:
    """ESXi has no aio, iothread or cache: each controller is one configuration with those None, keyed by the
    controller alone, whatever the matrix lists; aio x iothread x cache = 2 x 2 x 2 values plan no more cells."""
    from stormatrix.cells import expand

    plain = expand(spec_from_dict(matrix()), backend_controllers=vm.VmwareBackend.controllers)
    assert [c.key for c in plain.cells] == ["pvscsi/r/rep1", "lsilogic-sas/r/rep1", "nvme/r/rep1"]
    assert all((c.disk.aio, c.disk.iothread, c.disk.cache) == (None, None, None) for c in plain.cells)
    assert plain.notes == [] and plain.skipped == []               # nothing asked, nothing to explain
    disk = json.loads(json.dumps(plain.cells[0].to_dict()))["disk"]          # as the journal holds it
    assert (disk["controller"], disk["aio"], disk["iothread"], disk["cache"]) == ("pvscsi", None, None, None)

    raw = matrix()
    raw["matrix"].update(aio=["native", "io_uring"], iothread=[False, True], cache=["none", "writeback"])
    raw["run"]["repeats"] = 2
    plan = expand(spec_from_dict(raw), backend_controllers=vm.VmwareBackend.controllers)
    assert [c.key for c in plan.cells] == [f"{c}/r/rep{r}" for c in ("pvscsi", "lsilogic-sas", "nvme") for r in (1, 2)]
    assert plan.skipped == []      # not skipped: measured once each; native + writeback is no error here either
    (note,) = plan.notes
    assert note.startswith("[matrix] aio/iothread/cache (aio = native, io_uring; iothread = false, true; cache = "
                           "none, writeback) do not apply to pvscsi, lsilogic-sas, nvme: ESXi has no aio, iothread "
                           "or cache setting for a virtual disk, so each is planned once")
    assert "pvscsi/r/rep1" in note and "Leave aio, iothread, cache out of [matrix]" in note
    vm.VmwareBackend(spec_from_dict(raw), tmp_path)                  # the backend takes that matrix


def test_a_cell_with_an_aio_is_refused_by_the_backend(backend: vm.VmwareBackend) -> None:
    backend.prepare()
    with pytest.raises(InputError, match="pvscsi/aio=io_uring/iothread=0/cache=none: ESXi has no aio"):
        backend.apply(DiskConfig("pvscsi", "io_uring", False, "none"))


def test_controllers_are_the_esxi_ones() -> None:
    assert vm.VmwareBackend.controllers == {"pvscsi", "lsilogic-sas", "lsilogic", "nvme"}


# --- prepare, apply, restore -----------------------------------------------------------------------------------

def test_prepare_only_reads_and_the_first_apply_sets_the_tuning(backend: vm.VmwareBackend, lab: Lab) -> None:
    """prepare() changes nothing (the runner journals the original after it); the first apply sets
    the esxcli values, later applies do not repeat it, restore puts the originals back."""
    facts = backend.prepare()
    assert facts["original_controller"] == "LsiLogicSAS"
    assert facts["tuning_original"]["SchedNumReqOutstanding"] == 32
    assert facts["tuning_wanted"] == {"SchedNumReqOutstanding": 1024, "LatencySensitiveThreshold": 10}
    assert facts["vsphere"]["Version"] == "8.0.2"
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")
    changes = {"esxcli storage core device set", "esxcli storage core device latencythreshold set", "Set-HardDisk",
               "Stop-VM", "Start-VM", "New-ScsiController", "New-NvmeController", "ReconfigVM"}
    assert not changes & set(lab.cmdlets())
    original = backend.original_config()
    assert original is not None and original["kind"] == "vmware"
    assert PASSWORD not in json.dumps(original)
    backend.apply(DiskConfig.controller_only("pvscsi"))
    assert lab.devices()["naa.600a"] == ("1024", "10 milliseconds")
    assert backend.tuning_in_force == {"VMHost": "esx01.lab", "Device": "naa.600a", "SchedNumReqOutstanding": 1024,
                                       "LatencySensitiveThreshold": 10}
    backend.apply(DiskConfig.controller_only("nvme"))
    assert lab.cmdlets().count("esxcli storage core device set") == 1
    backend.restore()
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")
    assert backend.tuning_in_force == original["tuning"]


@pytest.mark.parametrize("controller, type_", sorted(vm.CONTROLLER_TYPES.items()))
def test_each_controller_is_applied_by_a_power_cycle_and_restored(backend: vm.VmwareBackend, lab: Lab,
                                                                  controller: str, type_: str) -> None:
    before = lab.layout()
    backend.prepare()
    boots = lab.vm().get("boots", 0)
    backend.apply(DiskConfig.controller_only(controller))
    state = lab.vm()
    assert state["bootedWith"]["Hard disk 2"] == {"NVMe": "NVMe", "LsiLogicSAS": "VirtualLsiLogicSAS",
                                                  "LsiLogic": "VirtualLsiLogic"}.get(type_, type_)
    assert state["boots"] == boots + 1 and state["powerState"] == "PoweredOn"
    assert sorted(d["filename"] for d in state["disks"]) == sorted(f for _, f, _ in before[2])
    backend.restore()
    assert lab.layout() == before
    backend.restore()  # idempotent
    assert lab.layout() == before


def test_a_sequence_of_cells_reuses_and_cleans_up_controllers(backend: vm.VmwareBackend, lab: Lab) -> None:
    before = lab.layout()
    backend.prepare()
    for c in ("nvme", "pvscsi", "lsilogic", "nvme", "lsilogic-sas"):
        backend.apply(DiskConfig.controller_only(c))
        ctrls = lab.vm()["controllers"]
        assert len(ctrls) <= 3, "each cell leaves at most one controller beyond the original two"
    backend.restore()
    assert lab.layout() == before
    assert "ReconfigVM" in lab.cmdlets()


def test_wrong_controller_in_the_answer_is_refused(backend: vm.VmwareBackend, lab: Lab) -> None:
    backend.prepare()
    result = {"Before": {"BootTime": "a"}, "After": {"PowerState": "PoweredOn", "BootTime": "a",
                                                    "Controller": {"Type": "NVMe"},
                                                    "Disk": {"Filename": "[ds1] bench01/bench01_1.vmdk"}},
              "PowerCycled": True}
    with pytest.raises(vm.BackendError, match="not power-cycled"):
        backend._verify_apply(result, "NVMe")
    result["After"]["Disk"]["Filename"] = "[ds1] other.vmdk"
    with pytest.raises(vm.BackendError, match="backed by"):
        backend._verify_apply(result, "NVMe")


@pytest.mark.parametrize("step, error_type", [
    ("Stop-VM", vm.PowerCLIError),
    ("New-ScsiController", vm.PowerCLIError),
    ("Start-VM", vm.PowerCLIError),
    ("Wait-Tools", vm.PowerCLIGuestNotReady),
    ("ReconfigVM", vm.PowerCLIError),
])
def test_failure_half_way_is_typed_and_restore_recovers(backend: vm.VmwareBackend, lab: Lab, step: str,
                                                        error_type: type[Exception]) -> None:
    before = lab.layout()
    backend.prepare()
    backend.apply(DiskConfig.controller_only("nvme"))  # leaves an NVMe controller behind for ReconfigVM
    lab.fault(step, f"{step}\t\tThe operation for the entity \"bench01\" failed with the following message: \"boom\"")
    with pytest.raises(error_type) as info:
        backend.apply(DiskConfig.controller_only("pvscsi"))
    assert info.value.details.powercli and "boom" in info.value.details.powercli
    assert info.value.details.error_id.startswith("Stormatrix.VMware.")
    assert sorted(d["filename"] for d in lab.vm()["disks"]) == sorted(f for _, f, _ in before[2])
    backend.restore()
    assert lab.layout() == before


def test_guest_not_ready_is_a_guest_error(backend: vm.VmwareBackend, lab: Lab) -> None:
    backend.prepare()
    lab.fault("Wait-Tools", "Wait-Tools\t\tTimed out")
    with pytest.raises(GuestNotReady):
        backend.apply(DiskConfig.controller_only("pvscsi"))


def test_tuning_failure_half_way_rolls_back_and_restore_still_runs(backend: vm.VmwareBackend, lab: Lab) -> None:
    backend.prepare()
    lab.fault("esxcli:storage.core.device.latencythreshold.set", "Unable to set threshold")
    with pytest.raises(vm.PowerCLIError) as info:
        backend.apply(DiskConfig.controller_only("pvscsi"))
    assert info.value.details.error_id == "Stormatrix.VMware.TuningFailed"
    assert "Unable to set threshold" in (info.value.details.powercli or "")
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")
    assert "Set-HardDisk" not in lab.cmdlets() and "Stop-VM" not in lab.cmdlets(), "no controller change after it"
    backend.apply(DiskConfig.controller_only("pvscsi"))  # the retry sets it (the fault was one-shot)
    assert lab.devices()["naa.600a"] == ("1024", "10 milliseconds")
    backend.restore()
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")


def test_restore_failure_still_restores_tuning_then_raises(backend: vm.VmwareBackend, lab: Lab) -> None:
    backend.prepare()
    backend.apply(DiskConfig.controller_only("nvme"))
    lab.fault("Set-HardDisk", "Set-HardDisk\t\tboom")
    with pytest.raises(vm.PowerCLIError, match="DiskMoveFailed|moving"):
        backend.restore()
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")
    backend.restore()  # the fault was one-shot: a second restore completes the layout
    assert lab.vm()["disks"][1]["controllerKey"] == 1001


def test_restore_from_the_journaled_original(lab: Lab, tmp_path: Path) -> None:
    first = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)
    before = lab.layout()
    first.prepare()
    first.apply(DiskConfig.controller_only("lsilogic"))
    journaled = json.loads(json.dumps(first.original_config()))
    second = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)  # "stormatrix restore" after a crash
    second.load_original(journaled)
    second.restore()
    assert lab.layout() == before
    assert lab.devices()["naa.600a"] == ("32", "0 milliseconds")
    with pytest.raises(InputError):
        second.load_original({**journaled, "vm": "other"})


def test_original_power_state_off_is_kept(lab: Lab, tmp_path: Path) -> None:
    lab.edit_vm(powerState="PoweredOff", bootTime=None)
    b = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)
    b.prepare()
    b.apply(DiskConfig.controller_only("pvscsi"))
    assert lab.vm()["powerState"] == "PoweredOn"
    b.restore()
    assert lab.vm()["powerState"] == "PoweredOff"


# --- errors and secrets --------------------------------------------------------------------------------------

def test_missing_credentials_fail_before_pwsh_runs(backend: vm.VmwareBackend, lab: Lab,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STORMATRIX_VSPHERE_PASSWORD")
    with pytest.raises(InputError, match="STORMATRIX_VSPHERE_PASSWORD"):
        backend.prepare()
    assert lab.read()["calls"] == []


def test_wrong_password_is_a_connect_error_without_the_secret(lab: Lab, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "not-the-password")
    b = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)
    with pytest.raises(vm.PowerCLIConnectError) as info:
        b.prepare()
    assert "incorrect user name or password" in (info.value.details.powercli or "")
    assert "not-the-password" not in str(info.value)


def test_password_never_reaches_argv_or_request(backend: vm.VmwareBackend, lab: Lab,
                                                sent: list[dict[str, Any]]) -> None:
    backend.prepare()
    backend.apply(DiskConfig.controller_only("nvme"))
    backend.restore()
    requests = [c["request"] for c in sent]
    assert PASSWORD not in json.dumps([c["argv"] for c in sent])
    assert requests and all(r["connection"] == {"Server": "vc01.lab", "CredentialSource": "Environment",
                                                "UserVariable": "STORMATRIX_VSPHERE_USER",
                                                "PasswordVariable": "STORMATRIX_VSPHERE_PASSWORD",
                                                "VerifyCertificate": True} for r in requests)
    assert PASSWORD not in json.dumps(requests)


def test_self_signed_server_fails_unless_validation_is_off(lab: Lab, tmp_path: Path) -> None:
    lab.change(server={**lab.read()["server"], "certificate": "self-signed"})
    with pytest.raises(vm.PowerCLIConnectError, match="certificate|Connect-VIServer"):
        vm.VmwareBackend(spec_from_dict(matrix()), tmp_path).prepare()
    b = vm.VmwareBackend(spec_from_dict(matrix(verify_tls=False)), tmp_path)
    assert b.prepare()["original_controller"] == "LsiLogicSAS"


def test_credential_store_source_sends_no_variable_names(lab: Lab, tmp_path: Path, sent: list[dict[str, Any]]) -> None:
    b = vm.VmwareBackend(spec_from_dict(matrix(credential_source="credential-store")), tmp_path)
    b.prepare()
    conn = sent[0]["request"]["connection"]
    assert conn["CredentialSource"] == "CredentialStore" and "PasswordVariable" not in conn
    assert lab.calls("Connect-VIServer")[0]["PasswordMatches"] is None  # no credential sent: PowerCLI's store
    assert "Get-VICredentialStoreItem" in lab.cmdlets()


@pytest.mark.parametrize("over, error", [({"vm": "nope"}, vm.PowerCLINotFound),
                                         ({"device": "naa.missing"}, vm.PowerCLINotFound),
                                         ({"esx_host": "esx99"}, vm.PowerCLINotFound)])
def test_not_found_errors_are_typed(lab: Lab, tmp_path: Path, over: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        vm.VmwareBackend(spec_from_dict(matrix(**over)), tmp_path).prepare()


def test_contract_error_when_python_sends_a_parameter_the_module_lacks(lab: Lab, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    b = vm.VmwareBackend(spec_from_dict(matrix()), tmp_path)
    monkeypatch.setitem(vm.PYTHON_CALLS, "Get-StormatrixVMwareLayout", ("VMName", "DiskName", "Snapshot"))
    with pytest.raises(vm.PowerCLIContractError) as info:
        b.runner.call("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2", "Snapshot": 1})
    assert info.value.details.error_id == "NamedParameterNotFound,Get-StormatrixVMwareLayout"


def test_pwsh_missing_is_an_environment_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(vmware_pwsh, "TOOL_DIRS", (Path("~/.dotnet/tools"), tmp_path / ".tools" / "pwsh"))
    monkeypatch.setenv("STORMATRIX_VSPHERE_USER", "u")
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "p")
    with pytest.raises(EnvironmentProblem, match="pwsh not found") as info:
        vm.VmwareBackend(spec_from_dict(matrix(pwsh="pwsh")), tmp_path).prepare()
    message = str(info.value)
    assert f"searched PATH, {tmp_path}/.dotnet/tools/pwsh, {tmp_path}/.tools/pwsh/pwsh" in message
    assert "dotnet tool install -g PowerShell --version 7.6.9" in message and "PowerShell Gallery" in message


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("where", ["dotnet-global-tool", "checkout-tools"])
def test_pwsh_installed_as_a_dotnet_tool_is_found_off_path(where: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`dotnet tool install -g PowerShell` puts pwsh in ~/.dotnet/tools, which a service's PATH often lacks;
    make test's pinned copy is in the checkout's .tools/pwsh. A bare [vmware] pwsh name finds either."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    checkout = tmp_path / "checkout" / ".tools" / "pwsh"
    monkeypatch.setattr(vmware_pwsh, "TOOL_DIRS", (Path("~/.dotnet/tools"), checkout))
    target = tmp_path / "home" / ".dotnet" / "tools" / "pwsh" if where == "dotnet-global-tool" else checkout / "pwsh"
    _executable(target)
    assert vmware_pwsh.find_pwsh("pwsh")[0] == str(target)
    # PATH comes first; a path is taken as it is (and is not searched for elsewhere)
    on_path = _executable(tmp_path / "bin" / "pwsh")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert vmware_pwsh.find_pwsh("pwsh")[0] == str(on_path)
    assert vmware_pwsh.find_pwsh(str(tmp_path / "nowhere" / "pwsh")) == (None, [str(tmp_path / "nowhere" / "pwsh")])


def test_pwsh_crash_without_an_answer_carries_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "pwsh"
    exe.write_text("#!/bin/sh\necho 'Import-Module: boom' >&2\nexit 3\n")
    exe.chmod(0o755)
    runner = vm.PwshRunner(str(exe), {"Server": "vc"})
    with pytest.raises(vm.PowerCLIError, match="exited 3 without an answer: Import-Module: boom"):
        runner.call("Get-StormatrixVMwareLayout", {"VMName": "a", "DiskName": "Hard disk 2"})


def test_a_call_past_its_timeout_ends_with_every_process_it_started(tmp_path: Path) -> None:
    """pwsh as a .NET tool is a launcher whose child (dotnet pwsh.dll) does the work and holds the output
    pipes: the timeout must end that child too (else it runs on, and the call waits for its pipes). The
    stand-in launcher starts a child that keeps running (its output elsewhere, so a leak shows as a live
    process rather than as a hang)."""
    child_pid = tmp_path / "child.pid"
    exe = tmp_path / "pwsh"
    exe.write_text(f"#!/bin/sh\nsleep 600 >/dev/null 2>&1 &\necho $! > {child_pid}\nwait\n")
    exe.chmod(0o755)
    runner = vm.PwshRunner(str(exe), {"Server": "vc"}, timeout=2)
    with pytest.raises(vm.PowerCLIError, match=r"did not answer within 2 s \(\[vmware\] call_timeout\)"):
        runner.call("Get-StormatrixVMwareLayout", {"VMName": "a", "DiskName": "Hard disk 2"})
    if not child_pid.exists():  # the launcher was ended before it started its child: nothing to outlive it
        return
    state = Path(f"/proc/{int(child_pid.read_text())}/stat")

    def ended() -> bool:  # gone, or a zombie: a SIGKILL takes effect when the kernel next schedules the child
        try:
            return state.read_text().split(") ", 1)[1].startswith("Z")
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 30
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended(), "the launcher's child still runs"


def test_secret_in_an_answer_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_PW", 'pa"ss\\word')
    answer = {"schema": "stormatrix/vmware-1", "ok": False, "command": "Get-StormatrixVMwareLayout",
              "error": {"id": "Stormatrix.VMware.ConnectFailed", "message": 'login pa"ss\\word failed',
                        "powercli": 'bad pa"ss\\word'}}
    (tmp_path / "answer.txt").write_text("STORMATRIX-JSON:" + json.dumps(answer) + "\n")
    exe = tmp_path / "pwsh"
    exe.write_text(f"#!/bin/sh\ncat >/dev/null\ncat {tmp_path / 'answer.txt'}\nexit 1\n")
    exe.chmod(0o755)
    runner = vm.PwshRunner(str(exe), {"Server": "vc"}, redact=("SMX_PW",))
    with pytest.raises(vm.PowerCLIConnectError) as info:
        runner.call("Get-StormatrixVMwareLayout", {"VMName": "a", "DiskName": "Hard disk 2"})
    assert 'pa"ss\\word' not in str(info.value) and 'pa"ss\\word' not in (info.value.details.powercli or "")


# --- the window collector ------------------------------------------------------------------------------------

def test_collector_asks_for_the_window_and_returns_a_host_record(backend: vm.VmwareBackend, lab: Lab,
                                                                sent: list[dict[str, Any]]) -> None:
    from datetime import datetime, timezone

    lab.add_cpu_samples(datetime.now(timezone.utc))
    backend.prepare()
    (scope,) = backend.scope()
    collector = backend.collector_factory(scope)
    collector.start()
    assert collector.t0 is not None
    collector.t0 -= timedelta(seconds=30)  # a 30 s window, without waiting for it
    host = collector.stop()
    assert host["window_s"] == pytest.approx(30, abs=1)
    assert host["cpu_metric"] == "cpu_time" and host["source"] == "vsphere-realtime"
    assert host["ctx_switches"] is None and "ctx_switches" in host["unmatched"]
    assert host["vmware"]["tuning_in_force"] == backend.tuning_in_force
    params = sent[-1]["request"]["parameters"]
    assert params["Start"].endswith("Z") and params["Finish"].endswith("Z") and params["VMHost"] == "esx01.lab"


def test_empty_window_is_a_collector_error(backend: vm.VmwareBackend, lab: Lab) -> None:
    from stormatrix.core.errors import CollectorError

    backend.prepare()
    collector = backend.collector_factory(backend.scope()[0])
    collector.start()
    assert collector.t0 is not None
    collector.t0 += timedelta(seconds=5)  # a window that ends before it starts
    with pytest.raises(CollectorError):
        collector.stop()


# --- `stormatrix plan` on an ESXi matrix ------------------------------------------------------------------

PLAN_MATRIX = """
[run]
backend = "vmware"
order = "grouped"  # the listing below is in matrix order

[matrix]
controllers = ["pvscsi", "nvme"]
{axes}

[[workload]]
name = "r"
rw = "randread"
bs = "4k"

[vmware]
server = "esx01.lab"
vm = "bench01"
test_disk = "Hard disk 2"
"""


def test_plan_lists_esxi_cells_once_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.cli import main

    path = tmp_path / "m.toml"
    path.write_text(PLAN_MATRIX.format(axes='aio = ["native", "io_uring", "threads"]'))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit() and "cells" not in line]
    assert rows == [["1", "pvscsi", "n/a", "n/a", "n/a", "r", "1"], ["2", "nvme", "n/a", "n/a", "n/a", "r", "1"]]
    assert "2 cells (2 VM starts, 0 skipped) on backend vmware" in out
    assert "notes:\n  [matrix] aio (aio = native, io_uring, threads) do not apply to pvscsi, nvme: ESXi has no aio" \
        in out and "planned once" in out
    path.write_text(PLAN_MATRIX.format(axes=""))
    assert main(["plan", str(path)]) == 0
    assert "notes:" not in capsys.readouterr().out                     # nothing asked, nothing to explain


@pytest.mark.parametrize("change, key, words", [
    (('["pvscsi", "nvme"]', '["pvscsi", "virtio-blk"]'), "[matrix] controllers",
     "'virtio-blk' is not available on the vmware backend"),
    (("{axes}", 'aio = ["naitve"]'), "[matrix] aio[1]", "did you mean 'native'"),
    (("{axes}", 'iothread = ["yes"]'), "[matrix] iothread[1]", "is not true/false"),
])
def test_a_bad_esxi_matrix_is_exit_2_naming_key_and_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       change: tuple[str, str], key: str, words: str) -> None:
    from stormatrix.cli import main

    path = tmp_path / "m.toml"
    path.write_text(PLAN_MATRIX.replace(*change).replace("{axes}", ""))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert key in err and words in err and "Fix:" in err and str(path) in err


# --- the host that was measured ------------------------------------------------------------------------------

def test_run_environment_describes_the_esxi_host_not_the_workstation(backend: vm.VmwareBackend, lab: Lab) -> None:
    """The environment's host facts are the lab's ESXi host (its build and CPU, read through PowerCLI's
    Get-VMHost); the workstation's own facts are kept apart under ``workstation``."""
    from stormatrix.host.inventory import inventory
    from stormatrix.records import run_environment

    esx = lab.read()["hosts"][0]
    backend.prepare()
    env = run_environment(backend)
    assert "host_inventory_error" not in env
    assert (env["host"], env["esxi_build"], env["esxi_version"]) == (esx["name"], esx["build"], esx["version"])
    assert (env["cpu_model"], env["cpus"], env["cpu_cores"], env["cpu_packages"], env["cpu_mhz"]) == (
        esx["cpu"]["model"], esx["cpu"]["threads"], esx["cpu"]["cores"], esx["cpu"]["sockets"], esx["cpu"]["mhz"])
    assert env["host_inventory_source"].startswith("PowerCLI Get-VMHost")
    assert env["workstation"]["cpu_model"] == inventory()["cpu_model"]
    assert "Get-VMHost" in lab.cmdlets()


def test_an_esxi_host_that_cannot_be_read_is_said(backend: vm.VmwareBackend, lab: Lab) -> None:
    from stormatrix.records import run_environment

    backend.prepare()
    lab.fault("Get-VMHost", "Permission to perform this operation was denied.")
    env = run_environment(backend)
    assert "ESXi host of VM bench01 not described" in env["host_inventory_error"]
    assert "cpu_model" not in env and "esxi_build" not in env and "workstation" in env
