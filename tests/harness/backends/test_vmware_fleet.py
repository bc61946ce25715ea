"""The ESXi fleet for real: :class:`stormatrix.backends.vmware.fleet.VmwareFleet` runs the StormatrixVMware module's fleet
functions under the real pwsh 7.6.9 against the data-described fake vCenter (tests/pwsh/FakeVCenter: templates,
datastores whose free space thick disks use up, clone tasks, Remove-VM -DeletePermanently), and journals what
they create as they report it. A kill -9 of the deploying process leaves a journal from which destroy removes
exactly what was created, and nothing else.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from stormatrix.cli import main
from stormatrix.core.errors import InputError, MatrixError, PowerCLIError
from stormatrix.fleet.journal import FleetJournal
from stormatrix.backends.vmware.fleet import GUEST_FILE_VARIABLE, VmwareFleet
from stormatrix.backends.vmware.fleetspec import make_runner, vmware_fleet_from_dict
from stormatrix.backends.vmware.fleetstate import VmwareFleetState
from stormatrix.fleet.records import replay
from stormatrix.journal import Journal
from stormatrix.suiterun import fio_version

from standins.fakevcenter import GUEST_PASSWORD, FakeVCenter
from suite_pve import fio_server_on_host
from tests.pwshengine import pwsh_path

pytestmark = pytest.mark.pwsh

PWSH = pwsh_path()
#: the fake lab's own VMs, which no fleet may ever touch
OTHERS = ["bench01", "bench010", "lab[1]"]


def raw_spec(**fleet: Any) -> dict[str, Any]:
    return {"fleet": {"backend": "vmware", "template": "smx-worker-tpl", "vmhost": "esx01.lab", "workers": 3,
                      "vcpus": 2, "memory_mib": 2048, "storages": ["bb-iscsi", "bb-nvme"], "disk_size": "10G",
                      "controller": "pvscsi", **fleet},
            "vmware": {"server": "vc01.lab", "pwsh": PWSH, "call_timeout": 120}}


def fleet_for(run_dir: Path, **fleet: Any) -> VmwareFleet:
    spec = vmware_fleet_from_dict(raw_spec(**fleet), "suite.toml")
    return VmwareFleet(spec, make_runner(spec), run_dir)


@pytest.fixture()
def vcenter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeVCenter:
    return FakeVCenter(tmp_path, monkeypatch)


def vm_names(vcenter: FakeVCenter) -> list[str]:
    return [v["name"] for v in vcenter.read()["vms"]]


def free_gb(vcenter: FakeVCenter, datastore: str) -> float:
    return float(next(d for d in vcenter.read()["datastores"] if d["name"] == datastore)["freeSpaceGB"])


def test_spec_takes_vmware_and_refuses_what_names_one_vm() -> None:
    spec = vmware_fleet_from_dict(raw_spec(), "suite.toml")
    assert spec.names() == ["smx-w01", "smx-w02", "smx-w03"] and spec.storages == ("bb-iscsi", "bb-nvme")
    with pytest.raises(MatrixError, match=r"\[vmware\] vm.*does not apply to a fleet"):
        vmware_fleet_from_dict({**raw_spec(), "vmware": {"server": "vc01.lab", "vm": "bench01"}}, "suite.toml")
    with pytest.raises(MatrixError, match=r"\[fleet\] controller"):
        vmware_fleet_from_dict(raw_spec(controller="virtio-scsi-single"), "suite.toml")
    with pytest.raises(MatrixError, match=r"\[fleet\] storages.*more than once"):
        vmware_fleet_from_dict(raw_spec(storages=["bb-iscsi", "bb-iscsi"]), "suite.toml")
    with pytest.raises(MatrixError, match=r"\[vmware\].*is missing"):
        vmware_fleet_from_dict({"fleet": raw_spec()["fleet"]}, "suite.toml")


def test_record_refuses_on_esxi_and_says_where_a_vsphere_template_declares_its_fio(vcenter: FakeVCenter,
                                                                                   tmp_path: Path) -> None:
    """``fleet template --record`` writes a Proxmox template's description; an ESXi fleet's refuses, naming the
    line to put in the vSphere template's Notes (which its plan reads), and the template is left as it was."""
    before = vcenter.read()
    with pytest.raises(MatrixError) as info:
        fleet_for(tmp_path).record_fio("fio-3.33")
    message = str(info.value)
    assert "[fleet] backend" in message and "'stormatrix-fio: fio-3.33'" in message and "Notes" in message
    assert "smx-worker-tpl" in message and vcenter.read() == before


def test_the_guest_account_is_by_reference_and_checked_before_anything_is_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "guest-password"
    secret.write_text("from-a-file \n")
    secret.chmod(0o600)
    with pytest.raises(InputError, match=r"guest_password_env / guest_password_file.*both are set"):
        vmware_fleet_from_dict(raw_spec(guest_password_env="GUEST_PW", guest_password_file=str(secret)), "suite.toml")
    monkeypatch.setenv("STORMATRIX_VSPHERE_USER", "u")
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "p")
    monkeypatch.delenv("STORMATRIX_GUEST_USER", raising=False)
    fleet = fleet_for(tmp_path / "run", guest_password_file=str(secret))
    with pytest.raises(InputError, match=r"guest_user_env: environment variable STORMATRIX_GUEST_USER .* is not set"):
        fleet.guest_credentials()
    monkeypatch.setenv("STORMATRIX_GUEST_USER", "root")
    assert fleet.guest_credentials() == {"GuestUserVariable": "STORMATRIX_GUEST_USER",
                                         "GuestPasswordVariable": GUEST_FILE_VARIABLE}
    assert fleet.runner.child_env[GUEST_FILE_VARIABLE] == "from-a-file "  # to pwsh's environment only
    monkeypatch.delenv("STORMATRIX_GUEST_PASSWORD", raising=False)
    with pytest.raises(InputError, match="STORMATRIX_GUEST_PASSWORD, which is not set"):
        fleet_for(tmp_path / "run").guest_credentials()
    assert not (tmp_path / "run").exists()


def test_plan_names_every_problem_and_deploy_creates_nothing(vcenter: FakeVCenter, tmp_path: Path) -> None:
    fleet = fleet_for(tmp_path / "run", template="bench01", name_prefix="bench", workers=2, disk_size="15G",
                      storages=["small-ds", "offline-ds", "no-such-ds"])
    plan = fleet.plan()
    text = "; ".join(p for _, p in plan.problems)
    assert "is a VM, not a template" in text
    assert "small-ds has 20.0 GiB free, the fleet's eagerzeroedthick disks need 30.0 GiB" in text
    assert "offline-ds is not accessible" in text
    assert "'no-such-ds'" in text
    assert "bench01" in text and "not this fleet's" in text
    with pytest.raises(MatrixError, match="before anything is created"):
        fleet.deploy()
    assert "New-VM" not in vcenter.cmdlets() and not fleet.journal.path.exists()


def _suite_file(tmp_path: Path, port: int, **fleet: Any) -> Path:
    spec = raw_spec(**fleet)
    body = "[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["fleet"].items())
    body += "[vmware]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["vmware"].items())
    body += ('[suite]\nfilename = "target.dat"\nsize = "4m"\nblock_sizes = ["4k"]\nqueue_depths = [1]\n'
             f'ramp_seconds = 0\nmeasure_seconds = 1\nport = {port}\n')
    path = tmp_path / "suite.toml"
    path.write_text(body)
    return path


def test_space_running_out_mid_attach_is_vspheres_error_and_detach_frees_what_was_made(
        vcenter: FakeVCenter, tmp_path: Path) -> None:
    fleet = fleet_for(tmp_path / "run", storages=["bb-iscsi"])
    ids = fleet.deploy()
    vcenter.fault("CreateDisk#3", "Insufficient disk space on datastore 'bb-iscsi'.")
    with pytest.raises(PowerCLIError, match="Insufficient disk space"):
        fleet.attach("bb-iscsi", ids)
    assert sum(1 for d in fleet.state().disks.values() if d.filename) == 2
    fleet.detach("bb-iscsi")
    assert not fleet.state().disks and free_gb(vcenter, "bb-iscsi") == 400


DEPLOY = textwrap.dedent("""
    import json, sys
    from stormatrix.backends.vmware.fleet import VmwareFleet
    from stormatrix.backends.vmware.fleetspec import make_runner, vmware_fleet_from_dict
    spec = vmware_fleet_from_dict(json.loads(sys.argv[1]), "suite.toml")
    fleet = VmwareFleet(spec, make_runner(spec), sys.argv[2])
    ids = fleet.deploy()
    fleet.attach("bb-iscsi", ids)
""")


@pytest.mark.parametrize("hang, made", [
    # the first clone exists, the process dies before it reports it: known by name only (a kill while a test
    # disk is made is one of the stages of test_esxi_suite_refuses_another_fio_then_kill_9_at_every_stage...)
    ("Get-HardDisk#1", 0),
])
def test_kill_9_leaves_a_journal_from_which_destroy_removes_exactly_what_was_created(
        vcenter: FakeVCenter, tmp_path: Path, hang: str, made: int) -> None:
    vcenter.change(hang=hang)
    run_dir = tmp_path / "run"
    _kill_9_at_the_hang(vcenter, [sys.executable, "-c", DEPLOY, json.dumps(raw_spec()), str(run_dir)])
    lab = vcenter.read()
    # a VM of someone else now has a worker's name that the deploy journaled but may never have cloned
    stranger = "smx-w03" not in [v["name"] for v in lab["vms"]]
    if stranger:
        lab["vms"].append(dict(next(v for v in lab["vms"] if v["name"] == "bench010"), name="smx-w03",
                               id="VirtualMachine-vm-77"))
    vcenter.write(lab)
    state = replay(FleetJournal(run_dir), VmwareFleetState())
    assert sum(1 for v in state.vms.values() if v.id) == made
    toml = tmp_path / "fleet.toml"
    spec = raw_spec()
    toml.write_text("[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["fleet"].items())
                    + "[vmware]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["vmware"].items()))
    assert main(["fleet", "destroy", str(toml), "-o", str(run_dir)]) == 0
    assert replay(FleetJournal(run_dir), VmwareFleetState()).empty
    names = vm_names(vcenter)
    assert [n for n in names if n.startswith("smx-w")] == (["smx-w03"] if stranger else [])
    assert vcenter.vm("bench010")["powerState"] == "PoweredOn"
    assert vcenter.read()["orphanFiles"] == [] and free_gb(vcenter, "bb-iscsi") == 400


def _kill_9_at_the_hang(vcenter: FakeVCenter, argv: list[str], reached: Any = None) -> None:
    """Run ``argv`` until the fake's hang is reached (or ``reached()`` is true), then kill -9 it and the hung pwsh
    (the workstation died: its pwsh with it)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    deadline = time.monotonic() + 120
    while not (reached() if reached else "hung_pid" in vcenter.read()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the stage to kill it at"
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    lab = vcenter.read()
    hung = lab.pop("hung_pid", None)
    if hung is not None:
        try:
            os.killpg(os.getpgid(int(hung)), signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_gone(int(hung))
        vcenter.write(lab)


def _cells(side: Path) -> int:
    try:
        return sum(1 for r in Journal(side).records() if r["type"] == "cell")
    except (OSError, ValueError):
        return 0


def test_esxi_suite_runs_each_datastore_as_a_side_through_a_kill_9_at_every_stage_and_removes_everything(
        vcenter: FakeVCenter, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`suite plan` refuses a template whose Notes declare another fio; then one fleet through a whole suite run on
    ESXi (two datastores as two sides, the comparison workbook), killed at every stage: the fio check before the
    first point refuses the workers' fio (--keep: they stay for the next run), the fio check itself, a side's power
    cycle, between a side's points, a side's disk detach, the next side's disk attach, the teardown; each rerun resumes from the journal, and the last one
    removes everything the fleet created, the lab's own VMs as they were. (A kill during the deploy followed by
    `fleet destroy` is test_kill_9_leaves_a_journal_from_which_destroy_removes_exactly_what_was_created.)"""
    import openpyxl

    before = {name: vcenter.layout(name) for name in OTHERS}
    free_before = {d["name"]: float(d["freeSpaceGB"]) for d in vcenter.read()["datastores"]}
    run = tmp_path / "run"
    controller = str(fio_version("fio"))
    with fio_server_on_host(tmp_path / "guest") as (host, port):
        vcenter.change(guestIpPool=[host])  # the worker's Tools report this machine, where fio --server runs
        vcenter.set_guest_fio("fio-2.2")  # the template was built with another fio than this controller's
        vcenter.declare_fio("fio-2.2")  # and its Notes say so: the plan refuses it
        path = _suite_file(tmp_path, port, workers=1, controller="nvme")
        path.write_text(path.read_text().replace("queue_depths = [1]", "queue_depths = [1, 2]"))
        argv = [sys.executable, "-m", "stormatrix", "suite", "run", str(path), "-o", str(run)]
        assert main(["suite", "plan", str(path)]) == 2
        out, err = capsys.readouterr()
        assert "sides: bb-iscsi, bb-nvme" in out
        assert "template smx-worker-tpl declares fio-2.2 (stormatrix-fio in its Notes), the controller runs" in err
        assert "rebuild the template" in err and "vSphere Client" in err and "New-VM" not in vcenter.cmdlets()
        vcenter.declare_fio(None)  # Notes without a declaration: only the workers' guests can tell
        assert main(["suite", "run", str(path), "-o", str(run), "--keep"]) == 2
        err = capsys.readouterr().err
        assert f"VM smx-w01 runs fio-2.2, the controller {controller}" in err
        assert "rebuild template smx-worker-tpl" in err and "nothing was measured" in err
        assert GUEST_PASSWORD not in err and _cells(run / "bb-iscsi") == 0
        assert "smx-w01" in vm_names(vcenter)  # --keep: the workers stay
        vcenter.set_guest_fio(controller, "smx-w01")  # the worker's fio fixed
        vcenter.change(hang="Invoke-VMScript")  # killed while the workers' fio is checked
        _kill_9_at_the_hang(vcenter, argv)
        vcenter.change(hang="Start-VM")  # killed while a side's workers are power-cycled
        _kill_9_at_the_hang(vcenter, argv)
        _kill_9_at_the_hang(vcenter, argv, reached=lambda: _cells(run / "bb-iscsi") >= 1)  # between/inside points
        vcenter.change(hang="Remove-HardDisk")  # killed while the first side's disk is detached, after its points
        _kill_9_at_the_hang(vcenter, argv)
        assert _cells(run / "bb-iscsi") == 2
        vcenter.change(hang="New-HardDisk")  # killed while the second side's disk is made
        _kill_9_at_the_hang(vcenter, argv)
        assert _cells(run / "bb-iscsi") == 2
        vcenter.change(hang="Remove-VM")  # killed in the teardown, after every point
        _kill_9_at_the_hang(vcenter, argv)
        assert not replay(FleetJournal(run), VmwareFleetState()).empty and "smx-w01" in vm_names(vcenter)
        assert main(["suite", "run", str(path), "-o", str(run)]) == 0, capsys.readouterr().err  # the rerun ends it
    for storage in ("bb-iscsi", "bb-nvme"):
        records = list(Journal(run / storage).records())
        rec = next(r for r in records if r["type"] == "run")
        assert rec["side"] == storage and rec["storage"]["server"] == "vmware datastore"
        assert [d.split("/")[0] for d in rec["storage"]["disks"]] == [f"[{storage}] smx-w01"]
        cells = [r for r in records if r["type"] == "cell"]
        assert len(cells) == 2 and all(c["fio"]["total"]["io_bytes"] > 0 for c in cells)
        assert [c["name"] for c in cells[0]["clients"]] == ["smx-w01"]
    header = [c.value for c in openpyxl.load_workbook(run / "comparison.xlsx")["Comparison"][1]]
    assert "IOPS bb-iscsi" in header and "IOPS bb-nvme" in header
    assert vcenter.cmdlets().count("CloneVM_Task") == 1 and vcenter.cmdlets().count("New-NvmeController") == 2
    # the guests were asked three times: the refused check, the one killed, and the first one after that; the
    # reruns after that took the passed check from the journal (same workers, same controller fio)
    assert [c["ScriptText"] for c in vcenter.calls("Invoke-VMScript")] == ["fio --version"] * 3
    after = vcenter.read()
    assert replay(FleetJournal(run), VmwareFleetState()).empty and vm_names(vcenter) == OTHERS and after["orphanFiles"] == []
    assert {name: vcenter.layout(name) for name in OTHERS} == before  # nothing of theirs changed
    assert {d["name"]: float(d["freeSpaceGB"]) for d in after["datastores"]} == free_before
    assert not [f for f in run.rglob("*") if f.is_file() and GUEST_PASSWORD.encode() in f.read_bytes()]


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
