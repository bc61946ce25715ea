"""The local fleet (``[fleet] backend = "qemu"``): one package, one registry line; its suite file's validation;
its plan; what it creates found and removed from its journal alone.

The end-to-end run (2 real workers, iSCSI then NBD, then a resume) is ``test_local_fleet_suite.py``; the storage
servers themselves are ``test_fleet_localstore.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import paths
import psutil
import pytest
from standins.processes import process_gone
from test_import_graph import package_dirs, read_graph

from stormatrix import registry
from stormatrix.backends.qemu.fleet import LocalFleet, LocalFleetSpec, QEMU_FLEET_SECTION, local_fleet_from_dict
from stormatrix.backends.qemu.fleetstate import LocalFleetState
from stormatrix.backends.qemu.fleetsuite import QemuFleetSuite
from stormatrix.backends.qemu.storages import TGT_IPC_DIR
from stormatrix.cli import main
from stormatrix.core.errors import InputError, MatrixError
from stormatrix.demosuite import suite_text, write_suite_file
from stormatrix.fleet.records import replay
from stormatrix.suiterun import fio_version

PACKAGE = "stormatrix.backends.qemu"
#: the local fleet's modules: its spec and lifecycle, its suite, its workers, its storages
LOCAL_FLEET = {f"{PACKAGE}.fleet", f"{PACKAGE}.fleetsuite", f"{PACKAGE}.guests", f"{PACKAGE}.storages"}


# --- the done-when of issue 23: the local fleet is its package plus one registry line ---------------------

def test_the_local_fleet_is_its_package_plus_one_registry_line() -> None:
    graph = read_graph(paths.ROOT, package_dirs(paths.ROOT))
    assert LOCAL_FLEET <= set(graph.modules)
    outside = sorted(f"{i.source}:{i.line} imports {i.target}" for i in graph.imports
                     if i.target in LOCAL_FLEET and not i.source.startswith(PACKAGE + "."))
    assert outside == [], "only the qemu package may import the local fleet; the rest reaches it by the registry"
    # the registry names it by string (loaded when a suite file says backend = "qemu"), in one line
    assert registry.FLEET_SUITES["qemu"] == f"{PACKAGE}.fleetsuite:QemuFleetSuite"
    lines = [line for line in (paths.ROOT / "harness" / "registry.py").read_text().splitlines()
             if "backends.qemu.fleet" in line or "backends.qemu.guests" in line or "backends.qemu.storages" in line]
    assert len(lines) == 1
    # no other module of ours names it in code either (a string import would dodge the graph)
    for module, path in graph.modules.items():
        if module.startswith(PACKAGE + ".") or module == "stormatrix.registry":
            continue
        code = path.read_text()
        for name in LOCAL_FLEET:
            assert f'"{name}' not in code and f"'{name}" not in code, f"{module} names {name}"


# --- the suite file --------------------------------------------------------------------------------------

SUITE = """\
[run]
name = "local"

[suite]
rw = ["randread"]
block_sizes = ["4k"]
queue_depths = [1]
ramp_seconds = 1
measure_seconds = 2
filename = "{filename}"
{suite_extra}
[fleet]
backend = "qemu"
{fleet}
"""


def _suite(tmp_path: Path, fleet: str = "", filename: str = "/dev/sda", extra: str = "",
           suite_extra: str = "") -> QemuFleetSuite:
    path = tmp_path / "suite.toml"
    path.write_text(SUITE.format(filename=filename, fleet=textwrap.dedent(fleet), suite_extra=suite_extra) + extra)
    fleet_suite = registry.fleet_suite(registry.load_suite(path))
    assert isinstance(fleet_suite, QemuFleetSuite)
    return fleet_suite


def test_defaults_are_the_protocol_comparison_in_miniature(tmp_path: Path) -> None:
    spec = _suite(tmp_path).spec
    assert spec.workers == 2 and spec.storages == ("iscsi", "nbd") and spec.disk_size == 128 * 2**20
    assert spec.disk.key == "virtio-scsi-single/aio=native/iothread=1/cache=none"
    assert spec.power_cycle == "side" and spec.names() == ["g1", "g2"] and spec.device == "/dev/sda"


def test_every_key_is_read(tmp_path: Path) -> None:
    spec = _suite(tmp_path, """\
        workers = 4
        storages = ["file", "nbd", "iscsi"]
        disk_size = "64M"
        controller = "virtio-blk"
        aio = "io_uring"
        iothread = false
        cache = "writeback"
        power_cycle = "point"
        vcpus = 2
        memory_mib = 768
        boot_timeout = 60
        """, filename="/dev/vda").spec
    assert spec == LocalFleetSpec(path=spec.path, workers=4, storages=("file", "nbd", "iscsi"), disk_size=64 * 2**20,
                                  disk=spec.disk, power_cycle="point", vcpus=2, memory_mib=768, boot_timeout=60.0)
    assert (spec.disk.controller, spec.disk.aio, spec.disk.iothread, spec.disk.cache) == \
        ("virtio-blk", "io_uring", False, "writeback")
    assert set(QEMU_FLEET_SECTION.fields) == {"backend", "workers", "storages", "disk_size", "controller", "aio",
                                              "iothread", "cache", "power_cycle", "vcpus", "memory_mib",
                                              "boot_timeout"}


@pytest.mark.parametrize(("fleet", "key", "words"), [
    ("workers = 5", "[fleet] workers", "at most 4"),
    ("workers = 0", "[fleet] workers", "minimum 1"),
    ('storages = ["iscsi", "nvme"]', "[fleet] storages[2]", "iscsi, nbd"),
    ('storages = ["nbd", "nbd"]', "[fleet] storages", "more than once"),
    ('power_cycle = "never"', "[fleet] power_cycle", "command line"),
    ('aio = "native"\ncache = "writeback"', "[fleet] aio", "O_DIRECT"),
    ('controller = "sata"', "[fleet] iothread", "no effect"),
    ('controller = "pvscsi-esx"', "[fleet] controller", "not a controller"),
    ('disk_size = "1M"', "[fleet] disk_size", "16M to 64G"),
    ("template = 9000", "[fleet] template", "unknown key"),
])
def test_a_bad_key_is_named_with_file_key_and_fix(tmp_path: Path, fleet: str, key: str, words: str) -> None:
    with pytest.raises(MatrixError) as err:
        _suite(tmp_path, fleet)
    assert err.value.path == str(tmp_path / "suite.toml") and err.value.key == key
    assert words in err.value.problem + err.value.fix and err.value.fix


def test_the_suite_must_name_the_workers_test_disk_and_its_own_section_only(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match=r'\[suite\] filename.*set filename = "/dev/sda"'):
        _suite(tmp_path, filename="/dev/sdb")
    with pytest.raises(MatrixError, match=r'\[suite\] filename.*"/dev/vda"'):
        _suite(tmp_path, 'controller = "virtio-blk"')
    with pytest.raises(MatrixError, match=r"\[proxmox\].*does not apply to a local fleet"):
        _suite(tmp_path, extra='\n[proxmox]\nhost = "pve"\nnode = "pve"\n')
    # the [suite] disk keys, when given, must be the fleet's (the side's disk is the one the workers attach)
    with pytest.raises(MatrixError, match=r"\[suite\] controller.*differs"):
        _suite(tmp_path, suite_extra='controller = "virtio-scsi-single"\naio = "threads"\n')
    same = 'controller = "virtio-scsi-single"\naio = "native"\niothread = true\ncache = "none"\n'
    assert _suite(tmp_path, suite_extra=same).spec.disk == _suite(tmp_path).spec.disk


def test_the_demo_ships_a_local_fleet_suite_file(tmp_path: Path) -> None:
    for n in (2, 3, 4):
        suite = registry.load_suite(write_suite_file(tmp_path / f"s{n}" / "suite.toml", n))
        fleet_suite = registry.fleet_suite(suite)
        assert isinstance(fleet_suite, QemuFleetSuite)
        assert fleet_suite.spec.workers == n and fleet_suite.spec.storages == ("iscsi", "nbd")
    for n in (1, 5):
        with pytest.raises(InputError, match="2 to 4"):
            suite_text(n)


# --- plan ------------------------------------------------------------------------------------------------

def test_plan_heads_a_fleet_suite_with_its_sides_not_a_side_and_disk_it_does_not_have(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "plan", str(write_suite_file(tmp_path / "suite.toml", 2))]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "suite 'demo-suite', sides: the storages under test of its [fleet] (backend 'qemu')"
    assert "side 'A'" not in out and "disk unknown" not in out and "storage iscsi" in out and "storage nbd" in out


def test_plan_refuses_an_fio_mismatch_and_a_volume_folder_without_o_direct(tmp_path: Path) -> None:
    spec = local_fleet_from_dict({"fleet": {"backend": "qemu", "storages": ["file", "nbd"]}}, "s.toml")
    ok = LocalFleet(spec, tmp_path / "run", fio=fio_version("/usr/bin/fio")).plan()
    assert ok.problems == [] and ok.workers == ["g1", "g2"]
    wrong = LocalFleet(spec, tmp_path / "run", fio="fio-2.0").plan()
    assert [k for k, _ in wrong.problems] == ["workers"] and "fio-2.0" in wrong.problems[0][1]
    if Path("/dev/shm").is_dir():  # tmpfs takes no O_DIRECT before Linux 6.6; the NBD export and cache=none need it
        shm = LocalFleet(spec, Path("/dev/shm") / f"smx-{os.getpid()}", fio=None).plan()
        try:
            os.close(os.open(Path("/dev/shm") / f"smx-odirect-{os.getpid()}", os.O_CREAT | os.O_WRONLY | os.O_DIRECT))
            direct = True
        except OSError:
            direct = False
        finally:
            (Path("/dev/shm") / f"smx-odirect-{os.getpid()}").unlink(missing_ok=True)
        assert [k for k, _ in shm.problems] == ([] if direct else ["storages"])
        assert direct or "O_DIRECT" in shm.problems[0][1]
    with pytest.raises(MatrixError, match="before anything is created"):
        LocalFleet(spec, tmp_path / "run2", fio="fio-2.0").deploy()
    assert not (tmp_path / "run2").exists()


# --- what it creates, from the journal alone ------------------------------------------------------------

CHILD = """\
import sys, time
from stormatrix.backends.qemu.fleet import LocalFleet, local_fleet_from_dict
spec = local_fleet_from_dict({"fleet": {"backend": "qemu", "storages": ["iscsi", "nbd"], "disk_size": "16M"}}, "s.toml")
fleet = LocalFleet(spec, sys.argv[1])
fleet.journal.append({"type": "fleet", "fleet_id": fleet.fleet_id, "backend": "qemu"})
fleet.attach("iscsi")
fleet.attach("nbd")
print("served", flush=True)
time.sleep(120)
"""


def kill_9_once_served(run: Path) -> None:
    """Run :data:`CHILD` on ``run`` and kill -9 it the moment it says its storages are served."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "served"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdout is not None
        child.stdout.close()


def test_a_kill_9_leaves_only_journaled_files_and_destroy_removes_exactly_those(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    decoy_file = run / "volumes" / "not-ours.raw"
    decoy_file.parent.mkdir(parents=True)
    decoy_file.write_bytes(b"x")
    kill_9_once_served(run)
    state = replay(LocalFleet(local_fleet_from_dict({"fleet": {"backend": "qemu"}}, "s.toml"), run).journal, LocalFleetState())
    servers = {p.role: p for p in state.servers}
    assert set(servers) == {"tgtd", "qemu-storage-daemon"} and len(state.volumes) == 4
    control = servers["tgtd"].control
    # the servers die with the harness (PR_SET_PDEATHSIG); the volumes and tgtd's control socket stay
    assert all(process_gone(p.pid) for p in servers.values())
    assert all((run / v).is_file() for v in state.volumes)
    # a process the kernel gave a journaled pid since is never touched: a decoy journaled with its pid
    decoy = subprocess.Popen(["sleep", "60"])
    try:
        fleet = LocalFleet(local_fleet_from_dict({"fleet": {"backend": "qemu"}}, "s.toml"), run)
        fleet.journal.append({"type": "local-process", "role": "qemu", "pid": decoy.pid, "storage": "nbd",
                              "started": psutil.Process(decoy.pid).create_time() - 30, "name": "nbd-g1"})
        # `stormatrix fleet destroy SUITE -o RUN_DIR`, as after any crash: the journal is all it goes by
        suite = tmp_path / "suite.toml"
        suite.write_text(SUITE.format(filename="/dev/sda", fleet="", suite_extra=""))
        assert main(["fleet", "destroy", str(suite), "-o", str(run)]) == 0
        assert "everything it created is gone" in capsys.readouterr().out
        assert fleet.state().empty and decoy.poll() is None
    finally:
        decoy.kill()
        decoy.wait()
    assert not any((run / v).exists() for v in state.volumes)
    assert decoy_file.read_bytes() == b"x"  # not journaled: left alone
    assert not (TGT_IPC_DIR / f"socket.{control}").exists() and not (TGT_IPC_DIR / f"socket.{control}.lock").exists()


def test_destroy_ends_a_journaled_server_that_still_runs(tmp_path: Path) -> None:
    """A rerun or fleet destroy in another process finds a live server by its journal and ends it (tgtd ignores
    SIGTERM); only the process with the journaled pid, program and start time."""
    spec = local_fleet_from_dict({"fleet": {"backend": "qemu", "storages": ["iscsi"], "disk_size": "16M"}}, "s.toml")
    first = LocalFleet(spec, tmp_path)
    first.attach("iscsi")
    server = first._served["iscsi"]  # its process, to see it end
    assert server.proc is not None
    pid, control = server.proc.pid, server.control
    other = LocalFleet(spec, tmp_path)  # what a rerun or `fleet destroy` sees: the journal only
    left = other.destroy()
    assert left.empty
    assert process_gone(pid)
    server.proc.wait(timeout=10)  # (reaped by the other fleet's wait already: Popen learns it is gone)
    server.proc = None  # ended by the other fleet: nothing for the first to stop
    first.close()
    assert not (TGT_IPC_DIR / f"socket.{control}").exists()
    assert not (tmp_path / "volumes").exists()


def test_keep_leaves_the_volumes_for_destroy_and_never_a_server(tmp_path: Path) -> None:
    """``--keep``: a side's server stops with the side (it cannot outlive the harness), its volumes stay journaled
    until ``fleet destroy``."""
    spec = local_fleet_from_dict({"fleet": {"backend": "qemu", "storages": ["nbd"], "disk_size": "16M"}}, "s.toml")
    with LocalFleet(spec, tmp_path) as fleet:
        urls = fleet.attach("nbd")
        assert [u.rsplit("/", 1)[1] for u in urls] == ["disk1", "disk2"]
        pid = fleet.served("nbd")["pid"]
        fleet.detach("nbd", keep_volumes=True)
        assert process_gone(pid) and not fleet.state().processes
        assert sorted(fleet.state().volumes) == ["volumes/nbd-g1.raw", "volumes/nbd-g2.raw"]
        assert all((tmp_path / v).stat().st_size == 16 * 2**20 for v in fleet.state().volumes)
    left = LocalFleet(spec, tmp_path).destroy()
    assert left.empty and not (tmp_path / "volumes").exists()


def test_a_rerun_after_a_kill_9_reaps_the_journal_and_serves_the_same_volumes_again(tmp_path: Path) -> None:
    """The same command again after a kill -9: deploy reaps what the journal lists (a killed tgtd's control socket
    included), the side serves its journaled volumes again (not new ones), and the end leaves nothing."""
    run = tmp_path / "run"
    kill_9_once_served(run)
    spec = local_fleet_from_dict({"fleet": {"backend": "qemu", "storages": ["iscsi", "nbd"], "disk_size": "16M"}},
                                 "s.toml")
    killed = replay(LocalFleet(spec, run).journal, LocalFleetState())
    control = next(p.control for p in killed.servers if p.role == "tgtd")
    inodes = {v: (run / v).stat().st_ino for v in killed.volumes}
    with LocalFleet(spec, run, fio=fio_version("/usr/bin/fio")) as fleet:
        assert killed.header is not None and fleet.fleet_id == killed.header.fleet_id
        assert fleet.deploy() == ["g1", "g2"]
        assert not fleet.state().processes  # every journaled process found ended (none outlived its harness)
        assert not (TGT_IPC_DIR / f"socket.{control}").exists()
        fleet.attach("iscsi")
        assert {v: (run / v).stat().st_ino for v in fleet.state().volumes} == inodes  # the same files again
        fleet.detach("iscsi")
        left = fleet.destroy()
    assert left.empty and not (run / "volumes").exists()
