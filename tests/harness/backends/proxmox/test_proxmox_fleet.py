"""The fleet on the Proxmox stand-in: plan refuses before creating anything; deploy, attach a storage's
volumes, power-cycle, detach, destroy; ownership by the journal (a decoy named and tagged like ours
stays); kill -9 of the harness at each stage, then destroy, leaves nothing of ours and touches nothing else.

The stand-in (``standins/pve_fleet.py``) answers from Proxmox's API schema and documented behaviour,
not from the harness's code: clones are timed tasks that lock the new VMID, storages have capacity.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from standins.pve import PveStandin
from standins.pve_fleet import FleetEndpoints
from suite_pve import SECRET, SECRET_ENV, TOKEN, TOKEN_ID, fio_server_on_host, kill_at_hold

from stormatrix.backends.proxmox.settings import make_transport
from stormatrix.cli import main
from stormatrix.backends.proxmox.fleetstate import ProxmoxFleetState
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.records import replay
from stormatrix.backends.proxmox.fleet import TAG, ProxmoxFleet
from stormatrix.backends.proxmox.fleetspec import load_fleet_file
import paths

REPO = paths.ROOT
TEMPLATE = 9000
GIB = 2**30


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    vol = s.add_volume(TEMPLATE, f"base-{TEMPLATE}-disk-0.raw", size=2 * 2**20)
    s.add_vm(TEMPLATE, {"name": "debian12-fio", "memory": "1024", "cores": "1", "agent": "1",
                        "scsi0": f"{vol},size=2M", "boot": "order=scsi0", "template": "1"})
    s.add_storage("bb-iscsi", type="lvm", vgname="bb", total=64 * GIB)
    s.add_storage("bb-nvme", type="zfspool", pool="rpool/bb", total=64 * GIB)
    s.add_storage("isos", type="dir", path=str(tmp_path / "isos"), content="iso,vztmpl", total=64 * GIB)
    s.add_storage("tiny", type="lvm", vgname="tiny", total=GIB)
    with s:
        yield s


def fleet_file(standin: PveStandin, tmp_path: Path, **fleet: Any) -> Path:
    values: dict[str, Any] = {"template": TEMPLATE, "workers": 3, "storages": ["bb-iscsi", "bb-nvme"],
                              "disk_size": "4G", "vcpus": 2, "memory_mib": 1024, "vmids": "300-309", **fleet}
    body = "[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
    body += (f'[proxmox]\nhost = "127.0.0.1"\nport = {standin.port}\nnode = "{standin.node}"\n'
             f'token_id = "{TOKEN_ID}"\ntoken_secret_env = "{SECRET_ENV}"\nca_file = "{standin.ca_file}"\n'
             'timeout = 20\n')
    path = tmp_path / "fleet.toml"
    path.write_text(body)
    return path


def fleet_for(path: Path, run_dir: Path) -> ProxmoxFleet:
    _raw, spec, proxmox = load_fleet_file(path)
    return ProxmoxFleet(spec, make_transport(proxmox, str(path)), run_dir, poll=0.02)


def _creating(standin: PveStandin) -> list[dict[str, Any]]:
    return [r for r in standin.requests if r["method"] in ("POST", "PUT", "DELETE")]


def test_the_stand_ins_fleet_schema_is_proxmoxs() -> None:
    ref = REPO.parent.parent / "shared" / "reference" / "pve-api-fleet.json"
    if not ref.exists():
        ref = REPO.parent / "shared" / "reference" / "pve-api-fleet.json"
    if not ref.exists():
        pytest.skip("../shared/reference/pve-api-fleet.json is not on this machine")
    reference = json.loads(ref.read_text())
    copy = json.loads((REPO / "tests" / "data" / "pve-api-fleet.json").read_text())
    for path, methods in copy.items():
        for method, info in methods.items():
            assert info == reference[path][method], f"{method} {path} differs from Proxmox's schema"
    # every fleet endpoint the stand-in serves is in the copy (or in the qemu subset it extends)
    served = [name for name in vars(FleetEndpoints) if name.startswith("_api_")]
    assert len(served) >= 10


# --- plan ----------------------------------------------------------------------------------------------

def test_plan_shows_the_fleet_and_what_it_needs(standin: PveStandin, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = fleet_file(standin, tmp_path)
    assert main(["fleet", "plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 workers cloned from template 9000" in out and "300 smx-w01" in out and "302 smx-w03" in out
    assert "storage bb-iscsi (lvm): needs 12.0 GiB, 64.0 GiB free" in out
    assert not _creating(standin)


@pytest.mark.parametrize(("change", "key", "words"), [
    ({"template": 9001}, "[fleet] template", "9001 (plain) is not a template"),
    ({"template": 9002}, "[fleet] template", "no QEMU guest agent"),
    ({"template": 777}, "[fleet] template", "VM 777 does not exist"),
    ({"storages": ["isos"]}, "[fleet] storages", "does not hold VM disks (content: iso,vztmpl)"),
    ({"storages": ["tiny"]}, "[fleet] storages", "has 1.0 GiB free, the fleet needs 12.0 GiB"),
    ({"storages": ["nope"]}, "[fleet] storages", "'nope' does not exist"),
    ({"vmids": "120-129"}, "[fleet] vmids", "VMIDs 120 of 120-129 are in use"),
    ({"template": 9003}, "[fleet] template", "template 9003 declares fio-2.0 (stormatrix-fio in its description), "
                                             "the controller runs fio-3."),
])
def test_plan_and_deploy_refuse_before_creating_anything(standin: PveStandin, tmp_path: Path, change: dict[str, Any],
                                                         key: str, words: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    standin.add_vm(9001, {"name": "plain", "memory": "512", "agent": "1"})
    standin.add_vm(9002, {"name": "noagent", "memory": "512", "template": "1"})
    standin.add_vm(120, {"name": "someone-elses", "memory": "512"})
    standin.add_vm(9003, {"name": "old-fio", "memory": "512", "agent": "1", "template": "1",
                          "description": "Debian 12\nstormatrix-fio: fio-2.0"})
    before = set(standin.vms), standin.volumes()
    path = fleet_file(standin, tmp_path, **change)
    for action in ("plan", "deploy"):
        code = main(["fleet", action, str(path), "-o", str(tmp_path / "run")])
        err = capsys.readouterr().err
        assert code == 2 and key in err and words in err and "Fix:" in err, err
    assert not _creating(standin) and (set(standin.vms), standin.volumes()) == before
    assert not (tmp_path / "run" / "fleet.ndjson").exists()


def test_fleet_template_record_declares_the_controllers_fio_and_plan_reads_it(
        standin: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Undeclared: plan says the check comes before the first point. ``fleet template --record FILE``
    writes the declaration into the template's description (the rest kept), and plan shows it matching;
    a controller of another fio version is then refused before anything is created."""
    path = fleet_file(standin, tmp_path)
    assert main(["fleet", "plan", str(path)]) == 0
    assert "template 9000 declares no fio version" in capsys.readouterr().out
    standin.vms[TEMPLATE].conf["description"] = "Debian 12 cloud image"  # what the user wrote there
    assert main(["fleet", "template", "--record", str(path)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("#cloud-config\n") and "now declares 'stormatrix-fio: fio-3." in out.err
    description = standin.merged(standin.vms[TEMPLATE])["description"]
    assert description.startswith("Debian 12 cloud image\n") and description.count("stormatrix-fio: fio-3.") == 1
    assert main(["fleet", "plan", str(path)]) == 0
    assert "fio: template 9000 declares fio-3." in capsys.readouterr().out
    older = tmp_path / "fio-2.0"
    older.write_text('#!/bin/sh\necho fio-2.0\n')
    older.chmod(0o755)
    writes = len(_creating(standin))
    assert main(["fleet", "deploy", str(path), "-o", str(tmp_path / "run"), "--fio", str(older)]) == 2
    assert "declares fio-3." in capsys.readouterr().err and len(_creating(standin)) == writes


def test_bad_fleet_keys_are_named(standin: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for change, key in (({"workers": 0}, "[fleet] workers"), ({"vmids": "300-301"}, "[fleet] vmids"),
                        ({"clone": "thin"}, "[fleet] clone"), ({"name_prefix": "Bad_Name"}, "[fleet] name_prefix"),
                        ({"aio": "native", "cache": "writeback"}, "[fleet] aio"),
                        ({"storages": ["bb-iscsi", "bb-iscsi"]}, "[fleet] storages"),
                        ({"nodes": ["pve", "pve"]}, "[fleet] nodes"), ({"nodes": ["pve_1"]}, "[fleet] nodes"),
                        ({"node": "pve", "nodes": ["pve", "pve2"]}, "[fleet] nodes")):
        code = main(["fleet", "plan", str(fleet_file(standin, tmp_path, **change))])
        err = capsys.readouterr().err
        assert code == 2 and key in err, (change, err)


# --- the life of a fleet -------------------------------------------------------------------------------

def test_deploy_two_storages_as_sides_then_destroy_exactly_ours(standin: PveStandin, tmp_path: Path,
                                                                request: pytest.FixtureRequest) -> None:
    # a decoy named and tagged like a worker, in no journal: never touched
    standin.add_vm(150, {"name": "smx-w01", "memory": "512", "tags": TAG, "description": "stormatrix fleet x"})
    decoy = standin.add_volume(150, "vm-150-disk-smx1.raw")
    run = tmp_path / "run"
    fleet = fleet_for(fleet_file(standin, tmp_path, clone="full"), run)
    request.addfinalizer(fleet.close)
    vmids = fleet.deploy()
    assert vmids == [300, 301, 302]
    for vmid, name in zip(vmids, ["smx-w01", "smx-w02", "smx-w03"]):
        conf = standin.merged(standin.vms[vmid])
        assert conf["name"] == name and conf["tags"] == TAG and fleet.fleet_id in conf["description"]
        assert conf["cores"] == "2" and conf["memory"] == "1024" and "template" not in conf
    for storage in ("bb-iscsi", "bb-nvme"):  # each storage is a side: allocate, attach, cycle, detach, free
        fleet.attach(storage, vmids)
        for vmid in vmids:
            conf = standin.merged(standin.vms[vmid])
            assert conf["scsi1"].startswith(f"{storage}:vm-{vmid}-disk-smx") and "iothread=1" in conf["scsi1"]
            assert conf["scsihw"] == "virtio-scsi-single"
        assert standin._storage_status(storage)["used"] == 3 * 4 * GIB
        fleet.power_cycle(vmids)
        assert all(standin.vms[v].running for v in vmids)
        fleet.detach(storage)
        assert standin._storage_status(storage)["used"] == 0
        assert all("scsi1" not in standin.merged(standin.vms[v]) for v in vmids)
    left = fleet.destroy()
    assert left.empty
    assert sorted(standin.destroyed_vms) == vmids
    assert 150 in standin.vms and decoy in standin.volumes() and TEMPLATE in standin.vms
    assert not any(v.startswith(("bb-iscsi:", "bb-nvme:")) for v in standin.volumes())
    assert not [v for v in standin.volumes() if "-300-" in v or "-301-" in v or "-302-" in v]


def test_a_failed_clone_task_is_named_and_a_rerun_finishes(standin: PveStandin, tmp_path: Path) -> None:
    run = tmp_path / "run"
    path = fleet_file(standin, tmp_path, vmids="auto", workers=2)
    standin.fail_next_task("qmclone", "clone failed: storage 'local' is out of space")
    with fleet_for(path, run) as fleet, pytest.raises(Exception, match="clone of template 9000 as VM 100 failed: "):
        fleet.deploy()
    assert 100 not in standin.vms  # Proxmox removed the half-made clone
    with fleet_for(path, run) as fleet:
        assert fleet.deploy() == [100, 101]
        assert fleet.destroy().empty and sorted(standin.destroyed_vms) == [100, 101]


def test_a_vmid_someone_else_took_after_our_clone_failed_is_left_alone(standin: PveStandin, tmp_path: Path) -> None:
    run = tmp_path / "run"
    path = fleet_file(standin, tmp_path, workers=1)
    standin.fail_next_task("qmclone", "clone failed")
    with fleet_for(path, run) as fleet, pytest.raises(Exception, match="failed"):
        fleet.deploy()
    standin.add_vm(300, {"name": "smx-w01", "memory": "512", "tags": TAG})  # another tool took the VMID
    with fleet_for(path, run) as fleet:
        left = fleet.destroy()
    assert left.empty and 300 in standin.vms and not standin.destroyed_vms


# --- kill -9 at every stage -----------------------------------------------------------------------------

_HARNESS = """
import sys
from stormatrix.backends.proxmox.settings import make_transport
from stormatrix.backends.proxmox.fleet import ProxmoxFleet
from stormatrix.backends.proxmox.fleetspec import load_fleet_file
_raw, spec, proxmox = load_fleet_file(sys.argv[1])
fleet = ProxmoxFleet(spec, make_transport(proxmox, sys.argv[1]), sys.argv[2], poll=0.02)
vmids = fleet.deploy()
for storage in spec.storages:
    fleet.attach(storage, vmids)
    fleet.power_cycle(vmids)
    fleet.detach(storage)
fleet.destroy()
print("done", flush=True)
"""

STAGES = [  # (method, path suffix, how many matching requests pass first)
    ("POST", "/clone", 1),                      # cloning the second worker
    ("PUT", "/qemu/301/config", 0),             # configuring (tags) the second worker
    ("POST", "/storage/bb-iscsi/content", 1),   # allocating the second volume
    ("PUT", "/qemu/300/config", 1),             # attaching the first volume
    ("POST", "/status/start", 1),               # power-cycling
    ("DELETE", "/storage/bb-iscsi/content/bb-iscsi:vm-301-disk-smx1", 0),  # freeing after the first side
    ("POST", "/storage/bb-nvme/content", 0),    # the second side's first allocation
    ("DELETE", "/qemu/301", 0),                 # destroying
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "suffix", "skip"), STAGES)
def test_kill_9_at_each_stage_then_destroy_leaves_nothing(standin: PveStandin, tmp_path: Path, method: str,
                                                         suffix: str, skip: int) -> None:
    standin.add_vm(150, {"name": "smx-w01", "memory": "512", "tags": TAG})  # decoy
    before_vms, before_volumes = set(standin.vms), standin.volumes()
    path, run = fleet_file(standin, tmp_path, workers=2), tmp_path / "run"
    env = {**os.environ, SECRET_ENV: SECRET, "PYTHONPATH": str(REPO / "tests")}
    kill_at_hold(standin, (method, suffix, skip), [sys.executable, "-c", _HARNESS, str(path), str(run)], env)
    assert FleetJournal(run).path.exists()
    assert main(["fleet", "destroy", str(path), "-o", str(run)]) == 0
    assert set(standin.vms) == before_vms and standin.volumes() == before_volumes
    assert replay(FleetJournal(run), ProxmoxFleetState()).empty


# --- a suite on the fleet: two storages as two sides, the comparison, nothing left ----------------------

def _fleet_suite_file(standin: PveStandin, tmp_path: Path, host: str, port: int, queue_depths: list[int]) -> Path:
    """A suite on a one-worker fleet whose worker (VMID 300, once cloned) reports this machine's address."""
    from standins.pve import guest_interface

    standin.guest_interfaces[300] = [guest_interface("lo", "00:00:00:00:00:00", "127.0.0.1/8"),
                                     guest_interface("ens18", "bc:24:11:00:03:00", f"{host}/24")]
    path = fleet_file(standin, tmp_path, workers=1)
    path.write_text(path.read_text() + f'[suite]\nfilename = "target.dat"\nsize = "4m"\nblock_sizes = ["4k"]\n'
                                       f'queue_depths = {json.dumps(queue_depths)}\nramp_seconds = 0\n'
                                       f'measure_seconds = 1\nport = {port}\n')
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("method", "suffix"), [("POST", "/storage/bb-nvme/content"),  # the second side's start
                                                 ("DELETE", "/qemu/300")])             # the teardown
def test_a_suite_on_a_fleet_killed_then_run_again_finishes_and_leaves_nothing(
        standin: PveStandin, tmp_path: Path, method: str, suffix: str) -> None:
    from stormatrix.journal import Journal

    before_vms, before_volumes = set(standin.vms), standin.volumes()
    run = tmp_path / "run"
    env = {**os.environ, SECRET_ENV: SECRET}
    argv = [sys.executable, "-m", "stormatrix", "suite", "run"]
    with fio_server_on_host(tmp_path / "guest") as (host, port):
        path = _fleet_suite_file(standin, tmp_path, host, port, [1])
        kill_at_hold(standin, (method, suffix, 0), argv + [str(path), "-o", str(run)], env)
        done = subprocess.run(argv + [str(path), "-o", str(run)], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    for storage in ("bb-iscsi", "bb-nvme"):  # each side measured exactly once: the rerun resumed
        cells = [r for r in Journal(run / storage).records() if r["type"] == "cell"]
        assert len(cells) == 1
    assert (run / "comparison.xlsx").exists()
    assert set(standin.vms) == before_vms and standin.volumes() == before_volumes
    assert replay(FleetJournal(run), ProxmoxFleetState()).empty
