"""``stormatrix suite run`` on a fleet description against the Proxmox stand-in, end to end: the suite
creates the workers, runs two storages as two sides, writes the comparison workbook and removes
everything it created, touching nothing the fleet journal does not list.

Two fleets: 64 API-only workers whose guests are real loopback ``fio --server`` processes, started and
stopped by the stand-in with each VM (``standins/pve_launch.FioServerLauncher``), and 4 workers backed
by real local QEMU guests running ``fio --server`` (``standins/pve_qemu.QemuVmLauncher``). In both, a
worker's address is what its guest agent reports on the stand-in's bridge (a loopback /24 of its own:
``[suite] network`` names it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import openpyxl
import pytest
from standins.pve import PveStandin
from standins.pve_launch import FioServerLauncher
from standins.fioservers import processes_in
from suite_pve import SECRET, SECRET_ENV, TOKEN, TOKEN_ID, kill_at_hold, kill_when

from stormatrix.cli import main
from stormatrix.executors.fioserver.client import find_fio
from stormatrix.backends.proxmox.fleetstate import ProxmoxFleetState
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.records import replay
from stormatrix.backends.proxmox.fleet import TAG
from stormatrix.journal import Journal

TEMPLATE = 9000
GIB = 2**30
STORAGES = ("bb-iscsi", "bb-nvme")


def make_standin(tmp_path: Path, launcher: Any) -> PveStandin:
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET}, launcher=launcher)
    # the template: a cloud image with the guest agent and a network on the bridge (its fio server unit
    # comes up with the VM); no disk the suite would have to tell apart from the test disk
    s.add_vm(TEMPLATE, {"name": "debian12-fio", "memory": "512", "cores": "1", "agent": "1",
                        "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0", "template": "1"})
    s.add_storage("bb-iscsi", type="lvm", vgname="bb", total=512 * GIB)
    s.add_storage("bb-nvme", type="zfspool", pool="rpool/bb", total=512 * GIB)
    # someone else's VM, named and tagged like a worker, with a volume on a storage under test
    vol = s.add_volume(150, "vm-150-disk-0.raw", size=2**20)
    s.add_vm(150, {"name": "smx-w01", "memory": "512", "tags": TAG, "scsi0": f"{vol},size=1M",
                   "description": "stormatrix fleet 0123456789ab"})
    s.add_storage("decoy", type="lvm", vgname="decoy", total=GIB)
    s._make_volume("bb-iscsi:vm-150-disk-smx1", 2**20)
    return s


def suite_file(standin: PveStandin, tmp_path: Path, *, workers: int, fleet: dict[str, Any] | None = None,
               run: dict[str, Any] | None = None, **suite: Any) -> Path:
    values: dict[str, Any] = {"template": TEMPLATE, "workers": workers, "storages": list(STORAGES),
                              "disk_size": "1G", "vcpus": 1, "memory_mib": 512, "vmids": "300-399",
                              **(fleet or {})}
    body = "[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
    body += (f'[proxmox]\nhost = "127.0.0.1"\nport = {standin.port}\nnode = "{standin.node}"\n'
             f'token_id = "{TOKEN_ID}"\ntoken_secret_env = "{SECRET_ENV}"\nca_file = "{standin.ca_file}"\n'
             f'timeout = 30\nqemu_server_dir = "{standin.run_dir}"\n')
    points = {"block_sizes": ["4k"], "queue_depths": [1], "ramp_seconds": 0, "measure_seconds": 1,
              "network": standin.bridge_network, **suite}
    runs = {"order": "grouped", **(run or {})}
    body += "[run]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in runs.items())
    body += "[suite]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in points.items())
    path = tmp_path / "suite.toml"
    path.write_text(body)
    return path


def created(standin: PveStandin) -> list[dict[str, Any]]:
    return [r for r in standin.requests if r["method"] in ("POST", "PUT", "DELETE")]


def assert_only_the_journals_things_were_touched(standin: PveStandin, run: Path) -> None:
    """Every request that changes something names the template (clone), a VM the journal lists, or a
    volume the journal lists (by storage and owner)."""
    owned_vms = {int(r["vmid"]) for r in FleetJournal(run).records() if r["type"] == "vm"}
    owned_volumes = {r["volid"] for r in FleetJournal(run).records() if r["type"] == "volume-made"}
    for req in created(standin):
        path = req["path"]
        if path.endswith(f"/qemu/{TEMPLATE}/clone"):
            continue
        if "/qemu/" in path:
            assert int(path.split("/qemu/")[1].split("/")[0]) in owned_vms, req
        elif path.endswith("/content"):  # an allocation: its owner is ours
            assert int(req["params"]["vmid"]) in owned_vms, req
        else:
            assert path.rsplit("/", 1)[1] in owned_volumes, req


def check_outcome(standin: PveStandin, run: Path, workers: int, before: tuple[set[int], set[str]]) -> None:
    for storage in STORAGES:
        records = list(Journal(run / storage).records())
        rec = next(r for r in records if r["type"] == "run")
        assert rec["side"] == storage and len(rec["storage"]["volumes"]) == workers
        cells = [r for r in records if r["type"] == "cell"]
        assert len(cells) == 1
        clients = cells[0]["clients"]
        assert len(clients) == workers and all(c["fio"]["total"]["io_bytes"] > 0 for c in clients)
        # the fio servers were reached at the addresses the guest agents reported on the bridge
        assert {g["host"] for g in rec["guests"]} == {vm["address"] for vm in rec["vms"]}
        assert all(g["host"].startswith(standin.bridge + ".") for g in rec["guests"])
    header = [c.value for c in openpyxl.load_workbook(run / "comparison.xlsx")["Comparison"][1]]
    assert f"IOPS {STORAGES[0]}" in header and f"IOPS {STORAGES[1]}" in header
    # nothing left behind, nothing else touched
    assert (set(standin.vms), standin.volumes()) == before
    assert replay(FleetJournal(run), ProxmoxFleetState()).empty
    assert sorted(standin.destroyed_vms) == list(range(300, 300 + workers))
    assert_only_the_journals_things_were_touched(standin, run)


@pytest.fixture
def api_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    s = make_standin(tmp_path, FioServerLauncher())
    s.clone_seconds = s.destroy_seconds = 0.02  # type: ignore[misc]
    with s:
        yield s


@pytest.mark.slow
def test_a_suite_on_64_api_only_workers_runs_two_storages_and_removes_everything(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (set(api_only.vms), api_only.volumes())
    path = suite_file(api_only, tmp_path, workers=64, filename="target.dat", size="1m", host_metrics="off")
    assert main(["suite", "plan", str(path)]) == 0
    assert "64 workers cloned from template 9000" in capsys.readouterr().out and not created(api_only)
    run = tmp_path / "run"
    code = main(["suite", "run", str(path), "-o", str(run)])
    assert code == 0, capsys.readouterr().err[-3000:]
    check_outcome(api_only, run, 64, before)
    # one power cycle per side: every worker stopped (when running) and started once per storage
    starts = [r for r in api_only.requests if r["method"] == "POST" and r["path"].endswith("/status/start")]
    assert len(starts) == 2 * 64
    # the fio version of every worker was asked through its guest agent before the first point
    execs = [r for r in api_only.requests if r["path"].endswith("/agent/exec")]
    assert len(execs) == 64 and all(r["params"]["command"] == ["fio", "--version"] for r in execs)


def test_a_worker_fio_of_another_version_stops_the_suite_before_any_point(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The guests' fio (here a fio 3.28 build: a program that says so) is asked through the agent; the
    mismatch is named with the template's fix, exit 2, nothing measured, and the workers are removed."""
    old = tmp_path / "fio-3.28" / "fio"
    old.parent.mkdir()
    old.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo fio-3.28; exit 0; }}\nexec {find_fio()} "$@"\n')
    old.chmod(0o755)
    api_only.launcher = FioServerLauncher(fio=str(old))
    before = (set(api_only.vms), api_only.volumes())
    path = suite_file(api_only, tmp_path, workers=2, filename="target.dat", size="1m", host_metrics="off")
    run = tmp_path / "run"
    assert main(["suite", "run", str(path), "-o", str(run)]) == 2
    err = capsys.readouterr().err
    assert "[fleet] template" in err and "VM 300 runs fio-3.28, the controller fio-3." in err and "VM 301 runs" in err
    assert "stormatrix fleet template" in err and "Traceback" not in err
    assert not [r for r in Journal(run / STORAGES[0]).records() if r["type"] == "cell"] \
        if (run / STORAGES[0] / "journal.ndjson").exists() else True
    assert (set(api_only.vms), api_only.volumes()) == before and replay(FleetJournal(run), ProxmoxFleetState()).empty


def test_a_template_declaring_another_fio_is_refused_by_suite_plan_and_run_before_anything_is_created(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api_only.vms[TEMPLATE].conf["description"] = "Debian 12 workers\nstormatrix-fio: fio-2.0"
    path = suite_file(api_only, tmp_path, workers=2, filename="target.dat", size="1m", host_metrics="off")
    for argv in (["suite", "plan", str(path)], ["suite", "run", str(path), "-o", str(tmp_path / "run")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "[fleet] template" in err and "template 9000 declares fio-2.0" in err and "Fix:" in err, err
    assert not created(api_only) and not (tmp_path / "run" / "fleet.ndjson").exists()


@pytest.mark.slow
def test_power_cycle_point_cycles_the_workers_before_every_point_of_every_repeat(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two repeats are two groups of points (one per repeat, in order): the second repeat's first point
    gets its own cycle too, like every point after the side's first."""
    path = suite_file(api_only, tmp_path, workers=2, fleet={"storages": ["bb-iscsi"], "power_cycle": "point"},
                      run={"repeats": 2}, filename="target.dat", size="1m", host_metrics="off", queue_depths=[1, 2])
    run = tmp_path / "run"
    assert main(["suite", "run", str(path), "-o", str(run)]) == 0, capsys.readouterr().err[-3000:]
    cells = [r for r in Journal(run / "bb-iscsi").records() if r["type"] == "cell"]
    assert len(cells) == 4 and {c["key"].rsplit("/", 1)[1] for c in cells} == {"rep1", "rep2"}
    destroyed_at = next(i for i, r in enumerate(api_only.requests)
                        if r["method"] == "DELETE" and r["path"].endswith("/qemu/300"))

    def calls(action: str) -> int:
        return sum(1 for r in api_only.requests[:destroyed_at]
                   if r["method"] == "POST" and r["path"].endswith(f"/status/{action}"))

    # the side's start, then a stop and a start before each of the 3 later points, per worker (and the
    # stops of the teardown)
    assert calls("start") == 2 * 4 and calls("stop") == 2 * 3 + 2
    cycles = [r for r in FleetJournal(run).records() if r["type"] == "power-cycle"]
    assert [c["point"] for c in cycles] == [None] + [c["key"] for c in cells[1:]]


@pytest.fixture
def real_guests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    from standins.pve_qemu import QemuVmLauncher

    monkeypatch.setenv(SECRET_ENV, SECRET)
    s = make_standin(tmp_path, QemuVmLauncher())
    with s:
        yield s


@pytest.mark.qemu
@pytest.mark.slow
def test_a_suite_on_4_real_local_guests_runs_two_storages_and_removes_everything(
        real_guests: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The workers are real QEMU guests (the tiny image, fio --server, its agent on a serial port) started
    by the stand-in's API: each storage's volume is the guest's /dev/sda, its fio version is asked through
    the agent, and the host collector measures the four QEMU processes in every window."""
    before = (set(real_guests.vms), real_guests.volumes())
    path = suite_file(real_guests, tmp_path, workers=4, fleet={"disk_size": "64M", "controller": "virtio-scsi-single"},
                      filename="/dev/sda", size="16m", host_metrics="require", probe_timeout_seconds=60)
    run = tmp_path / "run"
    code = main(["suite", "run", str(path), "-o", str(run)])
    assert code == 0, capsys.readouterr().err[-3000:]
    check_outcome(real_guests, run, 4, before)
    for storage in STORAGES:
        cell = next(r for r in Journal(run / storage).records() if r["type"] == "cell")
        assert cell["host"] is not None and len(cell["host"]["vms"]) == 4  # the 4 QEMU processes measured


# --- kill -9 inside the suite's own fleet stages: a point's power cycle, the fio version check -----------

@pytest.mark.slow
@pytest.mark.parametrize(("method", "suffix", "skip", "then"), [
    ("POST", "/status/stop", 0, "rerun"),    # the power cycle before the second point (the side's own only starts)
    ("POST", "/agent/exec", 1, "destroy"),   # the second worker's `fio --version` through its agent
])
def test_a_kill_9_in_a_points_power_cycle_or_the_fio_check_leaves_nothing(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str, suffix: str,
        skip: int, then: str) -> None:
    before = (set(api_only.vms), api_only.volumes())
    path = suite_file(api_only, tmp_path, workers=2, fleet={"storages": [STORAGES[0]], "power_cycle": "point"},
                      filename="target.dat", size="1m", host_metrics="off", queue_depths=[1, 2])
    run = tmp_path / "run"
    argv = [sys.executable, "-m", "stormatrix", "suite", "run", str(path), "-o", str(run)]
    kill_at_hold(api_only, (method, suffix, skip), argv, dict(os.environ))
    cycles = [r for r in FleetJournal(run).records() if r["type"] == "power-cycle"]
    if method == "POST" and suffix == "/status/stop":  # killed inside the cycle journaled before a point
        assert cycles and cycles[-1]["point"] is not None
    else:  # killed before any point was measured
        assert [c["point"] for c in cycles] == [None] and not (run / STORAGES[0] / "journal.ndjson").exists()
    if then == "rerun":
        code = main(["suite", "run", str(path), "-o", str(run)])
        assert code == 0, capsys.readouterr().err[-3000:]
        cells = [r for r in Journal(run / STORAGES[0]).records() if r["type"] == "cell"]
        assert len({c["key"] for c in cells}) == len(cells) == 2  # each point measured once: the rerun resumed
    else:
        assert main(["fleet", "destroy", str(path), "-o", str(run)]) == 0, capsys.readouterr().err[-3000:]
    assert (set(api_only.vms), api_only.volumes()) == before  # the decoy VM and volumes are still there
    assert replay(FleetJournal(run), ProxmoxFleetState()).empty
    assert_only_the_journals_things_were_touched(api_only, run)


def fio_running_on_every_worker(standin: PveStandin, workers: int) -> bool:
    """Every worker's guest is running a fio job: besides its fio server, the server's connection child
    and the job's own process have the guest's directory as their working directory (the guest's state,
    read from /proc, not a guess of how long the harness takes to get there)."""
    guests = {spec.run_dir / f"{spec.vmid}.guest" for spec in standin.launcher.started if spec.vmid >= 300}
    return len(guests) == workers and all(len(processes_in(g)) >= 3 for g in guests)


def cells_journaled(side: Path) -> int:
    """Cell records in a side's journal while the harness writes it (a line being written is not one yet)."""
    try:
        lines = (side / "journal.ndjson").read_text().splitlines()
    except FileNotFoundError:
        return 0
    count = 0
    for line in lines:
        try:
            count += json.loads(line).get("type") == "cell"
        except ValueError:
            pass
    return count


@pytest.mark.slow
def test_a_kill_9_while_a_points_fio_runs_on_the_workers_is_measured_once_on_the_rerun(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed while the second point's fio jobs run in the workers (the first point journaled): the
    rerun resumes, measures the second point once and the first not again, finishes the suite and
    removes the fleet; the decoy VM and volumes are untouched."""
    before = (set(api_only.vms), api_only.volumes())
    path = suite_file(api_only, tmp_path, workers=2, fleet={"storages": [STORAGES[0]]},
                      filename="target.dat", size="1m", host_metrics="off", queue_depths=[1, 2], measure_seconds=2)
    run = tmp_path / "run"
    side = run / STORAGES[0]
    argv = [sys.executable, "-m", "stormatrix", "suite", "run", str(path), "-o", str(run)]
    kill_when(argv, dict(os.environ),
              lambda: cells_journaled(side) == 1 and fio_running_on_every_worker(api_only, 2),
              "the second point's fio run on both workers")
    first = [r for r in Journal(side).records() if r["type"] == "cell"]
    assert len(first) == 1
    assert main(["suite", "run", str(path), "-o", str(run)]) == 0, capsys.readouterr().err[-3000:]
    cells = [r for r in Journal(side).records() if r["type"] == "cell"]
    assert len(cells) == 2 and cells[0] == first[0]       # the first point kept, not measured again
    assert len({c["key"] for c in cells}) == 2             # the second measured once
    assert all(len(c["clients"]) == 2 and all(cl["fio"]["total"]["io_bytes"] > 0 for cl in c["clients"])
               for c in cells)
    assert (set(api_only.vms), api_only.volumes()) == before  # the decoy VM and volumes are still there
    assert replay(FleetJournal(run), ProxmoxFleetState()).empty
    assert sorted(api_only.destroyed_vms) == [300, 301]
    assert_only_the_journals_things_were_touched(api_only, run)


@pytest.mark.slow
def test_a_fleet_on_two_nodes_places_the_workers_in_turn_and_removes_everything(
        api_only: PveStandin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``[fleet] nodes``: workers cloned onto the two nodes in turn (``target``), every call about a worker
    sent to its node and each task read on the node that runs it; a storage the second node does not see
    is refused by plan; host metrics are not taken from one node for a fleet on two."""
    api_only.add_node("pve2")
    api_only.storages[STORAGES[0]]["shared"] = 1  # shared LVM over iSCSI: on both nodes; bb-nvme is local
    nodes = {"nodes": [api_only.node, "pve2"]}
    both = suite_file(api_only, tmp_path, workers=3, fleet=nodes, filename="target.dat", size="1m")
    assert main(["suite", "plan", str(both)]) == 2
    err = capsys.readouterr().err
    assert f"storage '{STORAGES[1]}' does not exist on node pve2" in err and not created(api_only)
    before = (set(api_only.vms), api_only.volumes())
    path = suite_file(api_only, tmp_path, workers=3, fleet={**nodes, "storages": [STORAGES[0]]},
                      filename="target.dat", size="1m", host_metrics="auto")
    assert main(["suite", "plan", str(path)]) == 0
    assert f"nodes {api_only.node}, pve2 in turn: 3 workers" in capsys.readouterr().out
    run = tmp_path / "run"
    assert main(["suite", "run", str(path), "-o", str(run)]) == 0, capsys.readouterr().err[-3000:]
    placed = {int(r["vmid"]): r["node"] for r in FleetJournal(run).records() if r["type"] == "vm"}
    assert placed == {300: api_only.node, 301: "pve2", 302: api_only.node}
    clones = [r for r in api_only.requests if r["path"].endswith("/clone")]
    assert [int(r["params"]["newid"]) for r in clones if r["params"].get("target") == "pve2"] == [301]
    for req in api_only.requests:  # a worker's config, power, agent, allocation and tasks: on its node
        parts = req["path"].split("/")
        if "qemu" in parts and parts[parts.index("qemu") + 1].isdigit():
            assert parts[2] == placed.get(int(parts[parts.index("qemu") + 1]), api_only.node), req
        if req["path"].endswith("/content") and req["method"] == "POST":
            assert parts[2] == placed[int(req["params"]["vmid"])], req
        if "/tasks/UPID:" in req["path"]:
            assert parts[2] == req["path"].split("/tasks/UPID:")[1].split(":")[0], req
    records = list(Journal(run / STORAGES[0]).records())
    rec = next(r for r in records if r["type"] == "run")
    assert rec["host_collector"]["mode"] == "none" and "2 nodes" in rec["host_collector"]["detail"]
    cell = next(r for r in records if r["type"] == "cell")
    assert len(cell["clients"]) == 3 and all(c["fio"]["total"]["io_bytes"] > 0 for c in cell["clients"])
    assert (set(api_only.vms), api_only.volumes()) == before and replay(FleetJournal(run), ProxmoxFleetState()).empty
    assert sorted(api_only.destroyed_vms) == [300, 301, 302]
    assert_only_the_journals_things_were_touched(api_only, run)
