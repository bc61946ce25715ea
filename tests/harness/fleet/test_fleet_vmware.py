"""The ESXi fleet for real: :class:`stormatrix.fleet.vmware.VmwareFleet` runs the StormatrixVMware module's fleet
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
from stormatrix.core.errors import MatrixError, PowerCLIError
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.vmware import VmwareFleet, make_runner, replay, vmware_fleet_from_dict

from standins.fakevcenter import FakeVCenter
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


def test_deploy_two_datastores_as_sides_then_destroy_leaves_nothing(vcenter: FakeVCenter, tmp_path: Path) -> None:
    before = {name: vcenter.layout(name) for name in OTHERS}
    free_before = {d["name"]: float(d["freeSpaceGB"]) for d in vcenter.read()["datastores"]}
    fleet = fleet_for(tmp_path / "run")
    ids = fleet.deploy()  # after a plan without problems
    assert len(ids) == 3 and [vcenter.vm(f"smx-w0{i}")["id"] for i in (1, 2, 3)] == ids
    assert all(vcenter.vm(f"smx-w0{i}")["notes"].startswith(f"stormatrix fleet {fleet.fleet_id}:") for i in (1, 2, 3))
    assert fleet.deploy() == ids and vcenter.cmdlets().count("CloneVM_Task") == 3  # resume: nothing cloned twice
    for storage, controller in (("bb-iscsi", "ParaVirtual"), ("bb-nvme", "ParaVirtual")):
        fleet.attach(storage, ids)
        assert free_gb(vcenter, storage) == 400 - 3 * 10  # eager-zeroed thick: the space is taken at creation
        disks = [d for d in vcenter.vm("smx-w02")["disks"] if d["filename"].startswith(f"[{storage}] ")]
        assert len(disks) == 1
        ctrl = next(c for c in vcenter.vm("smx-w02")["controllers"] if c["key"] == disks[0]["controllerKey"])
        assert ctrl["type"] == controller
        guests = fleet.power_cycle(ids)
        assert [g["IPAddress"] for g in guests] == ["10.20.0.11", "10.20.0.12", "10.20.0.13"]
        assert vcenter.vm("smx-w01")["bootedWith"] == {"Hard disk 1": "ParaVirtual", "Hard disk 2": controller}
        fleet.detach(storage)
        assert free_gb(vcenter, storage) == 400
        assert all(len(vcenter.vm(f"smx-w0{i}")["disks"]) == 1 for i in (1, 2, 3))
    left = fleet.destroy()
    assert left.empty
    after = vcenter.read()
    assert vm_names(vcenter) == OTHERS and after["orphanFiles"] == []
    assert {name: vcenter.layout(name) for name in OTHERS} == before  # nothing of theirs changed
    assert {d["name"]: float(d["freeSpaceGB"]) for d in after["datastores"]} == free_before


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
    from stormatrix.fleet.vmware import VmwareFleet, make_runner, vmware_fleet_from_dict
    spec = vmware_fleet_from_dict(json.loads(sys.argv[1]), "suite.toml")
    fleet = VmwareFleet(spec, make_runner(spec), sys.argv[2])
    ids = fleet.deploy()
    fleet.attach("bb-iscsi", ids)
""")


@pytest.mark.parametrize("hang, made", [
    ("Get-HardDisk#1", 0),   # the first clone exists, the process dies before it reports it: known by name only
    ("New-HardDisk#2", 3),   # every VM ready, one test disk made, the second being created
])
def test_kill_9_leaves_a_journal_from_which_destroy_removes_exactly_what_was_created(
        vcenter: FakeVCenter, tmp_path: Path, hang: str, made: int) -> None:
    vcenter.change(hang=hang)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", DEPLOY, json.dumps(raw_spec()), str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    deadline = time.monotonic() + 90
    while "hung_pid" not in vcenter.read():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the fake never reached the hang"
        time.sleep(0.2)
    hung = int(vcenter.read()["hung_pid"])
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    try:
        os.killpg(os.getpgid(hung), signal.SIGKILL)  # the workstation died: its pwsh with it
    except ProcessLookupError:
        pass
    _wait_gone(hung)
    lab = vcenter.read()
    lab.pop("hung_pid")
    # a VM of someone else now has a worker's name that the deploy journaled but may never have cloned
    stranger = "smx-w03" not in [v["name"] for v in lab["vms"]]
    if stranger:
        lab["vms"].append(dict(next(v for v in lab["vms"] if v["name"] == "bench010"), name="smx-w03",
                               id="VirtualMachine-vm-77"))
    vcenter.write(lab)
    state = replay(FleetJournal(run_dir))
    assert sum(1 for v in state.vms.values() if v.id) == made
    toml = tmp_path / "fleet.toml"
    spec = raw_spec()
    toml.write_text("[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["fleet"].items())
                    + "[vmware]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec["vmware"].items()))
    assert main(["fleet", "destroy", str(toml), "-o", str(run_dir)]) == 0
    assert replay(FleetJournal(run_dir)).empty
    names = vm_names(vcenter)
    assert [n for n in names if n.startswith("smx-w")] == (["smx-w03"] if stranger else [])
    assert vcenter.vm("bench010")["powerState"] == "PoweredOn"
    assert vcenter.read()["orphanFiles"] == [] and free_gb(vcenter, "bb-iscsi") == 400


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
