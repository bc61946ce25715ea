"""The qemu backend's fleet: 1-4 local QEMU workers, and this machine's storages under test as the sides.

The seeds' protocol comparison (``003_*``: iSCSI vs NVMe/TCP) in miniature, described in a suite file::

    [fleet]
    backend = "qemu"
    workers = 2                      # 1 to 4 local QEMU guests (software emulation on this machine's cores)
    storages = ["iscsi", "nbd"]      # each a side, in this order: iscsi, nbd or file (see storages.py)
    disk_size = "128M"               # each worker's test volume, a raw file under RUN_DIR/volumes
    controller = "virtio-scsi-single"
    aio = "native"
    iothread = true
    cache = "none"
    power_cycle = "side"             # boot the workers for each storage (the disk is on QEMU's command line),
                                     # or also before every "point"
    vcpus = 1
    memory_mib = 512
    boot_timeout = 120

For each storage in turn the fleet makes each worker's volume (a raw file of ``disk_size``, filled with data),
serves them over the storage's protocol on 127.0.0.1 (:mod:`.storages`: ``tgtd`` opened by QEMU's own
libiscsi, ``qemu-storage-daemon`` over NBD, or the files as they are), boots the workers in fio server mode
with the volume as their only disk (:class:`~.guests.LocalGuests`), and, after the side's points, stops them,
stops the server and removes the volumes.

What it creates is journaled in ``RUN_DIR/fleet.ndjson`` (the fleet journal's file discipline,
:class:`~stormatrix.fleet.journal.FleetJournal`): a volume *before* its file is made, a server or QEMU process
the moment it runs (its pid, program and start time, which together name it: a pid the kernel gave to another
process since is never touched), and each as it goes. The processes also die with the harness (PR_SET_PDEATHSIG), so a
``kill -9`` leaves files at most (volumes, a tgtd's control socket); a rerun reaps whatever the journal lists
before it starts anew, and ``stormatrix fleet destroy`` removes it all. The records, and what they say the fleet
owns, are :mod:`.fleetstate`'s.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psutil

from ... import guestimage
from ...core.errors import MatrixError
from ...core.model import (AIO_MODES, CACHE_MODES, CONTROLLERS, DIRECT_CACHE_MODES, DiskConfig, format_size,
                           iothread_effective, native_aio_problem, parse_size)
from ...fleet.journal import FleetJournal
from ...fleet.records import replay
from ...fleet.spec import refuse_problems
from ...schema import Field, Section, parse_section
from .fleetstate import LocalFleetState, OwnedProcess
from .storages import (STORAGE_KINDS, LocalStorage, local_storage, release_control_socket,
                       sweep_stale_control_sockets)
from .testdisks import ensure_test_disk

log = logging.getLogger("stormatrix.fleet")

#: the most workers a local fleet boots: each is a QEMU process under software emulation on this machine
MAX_LOCAL_WORKERS = 4
#: when the workers are booted: for each storage (always: a worker's disk is on its QEMU command line, so a
#: new storage is a new process), and with "point" again before every point
POWER_CYCLE = ("side", "point")
#: how a storage heads its side's columns in the comparison workbook and its records
SIDE_LABELS = {"iscsi": "iSCSI", "nbd": "NBD", "file": "file"}
#: the programs each storage kind needs, and their Debian packages
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "iscsi": (("tgtd", "tgt"), ("tgtadm", "tgt")),
    "nbd": (("qemu-storage-daemon", "qemu-system-common"),),
    "file": (),
}
VOLUMES = "volumes"


def _size_ok(value: Any) -> None:
    size = parse_size(value)
    if not 16 * 2**20 <= size <= 64 * 2**30:
        raise ValueError(f"{str(value)[:40]} is outside 16M to 64G (a local volume is a file on this machine, "
                         "written in full before the side starts)")


def _controller_ok(value: str) -> None:
    if value not in CONTROLLERS or CONTROLLERS[value][0] == "esxi":
        raise ValueError(f"{value!r} is not a controller of the local qemu backend "
                         f"({', '.join(k for k, v in CONTROLLERS.items() if v[0] != 'esxi')})")


def _workers_ok(value: int) -> None:
    if value > MAX_LOCAL_WORKERS:
        raise ValueError(f"{value} workers: a local fleet boots at most {MAX_LOCAL_WORKERS} (each is a QEMU guest "
                         f"under software emulation on this machine's {os.cpu_count()} cores, and more would "
                         "measure the machine's own contention); deploy a larger fleet on Proxmox or ESXi")


def _power_cycle_ok(value: str) -> None:
    if value == "never":
        raise ValueError('"never" cannot hold locally: a worker\'s test disk is part of its QEMU command line, so '
                         'each storage needs freshly started workers; use "side" (or "point")')


def _check(path: str, f: dict[str, Any]) -> None:
    """The cross-key checks of a local ``[fleet]`` (run as the suite file is read)."""
    problem = native_aio_problem(f["aio"], f["cache"])
    if problem:
        raise MatrixError(path, "[fleet] aio", problem, 'set cache = "none" or "directsync", or aio = "io_uring"')
    if f["iothread"] and not iothread_effective(f["controller"]):
        raise MatrixError(path, "[fleet] iothread", f"has no effect on {f['controller']} (only virtio-blk and "
                          "virtio-scsi-single take an iothread)", "set iothread = false, or controller = "
                          '"virtio-scsi-single" or "virtio-blk"')


QEMU_FLEET_SECTION = Section("fleet", {
    "backend": Field(str, choices=("qemu",), help="qemu: the workers are local QEMU guests on this machine"),
    "workers": Field(int, 2, min=1, check=_workers_ok, help=f"give 1 to {MAX_LOCAL_WORKERS} local QEMU workers"),
    "storages": Field(str, ["iscsi", "nbd"], list_of=True, choices=STORAGE_KINDS,
                      help="the storages under test, each a side in this order: iscsi (tgtd, QEMU's libiscsi), "
                           "nbd (qemu-storage-daemon), file (the raw files themselves)"),
    "disk_size": Field((str, int), "128M", check=_size_ok, help="each worker's test volume, like 128M"),
    "controller": Field(str, "virtio-scsi-single", check=_controller_ok),
    "aio": Field(str, "native", choices=AIO_MODES),
    "iothread": Field(bool, True, help="an iothread for the test disk (virtio-blk and virtio-scsi-single only)"),
    "cache": Field(str, "none", choices=CACHE_MODES),
    "power_cycle": Field(str, "side", choices=POWER_CYCLE + ("never",), check=_power_cycle_ok,
                         help="side: boot the workers for each storage; point: also before every point"),
    "vcpus": Field(int, 1, min=1, max=4),
    "memory_mib": Field(int, 512, min=256, max=4096),
    "boot_timeout": Field(float, 120.0, min=10, max=3600, help="seconds the workers may take to boot"),
}, help="the local fleet: 1-4 QEMU workers on this machine, and its storages under test as the sides",
    check=_check)


@dataclass(frozen=True)
class LocalFleetSpec:
    path: str
    workers: int
    storages: tuple[str, ...]
    disk_size: int
    disk: DiskConfig
    power_cycle: str
    vcpus: int
    memory_mib: int
    boot_timeout: float

    def names(self) -> list[str]:
        return [f"g{i}" for i in range(1, self.workers + 1)]

    @property
    def device(self) -> str:
        """The test disk as the workers' kernel names it: their only disk (virtio-blk's vda, else sda)."""
        return "/dev/vda" if self.disk.controller == "virtio-blk" else "/dev/sda"


def local_fleet_from_dict(raw: dict[str, Any], path: str) -> LocalFleetSpec:
    """``[fleet]`` with ``backend = "qemu"``, validated (every mistake names the file, the key and the fix)."""
    for key in ("proxmox", "vmware"):
        if key in raw:
            raise MatrixError(path, f"[{key}]", 'does not apply to a local fleet ([fleet] backend = "qemu")',
                              f"remove [{key}]: the workers are QEMU guests on this machine")
    f = parse_section(path, QEMU_FLEET_SECTION, raw.get("fleet"))
    return LocalFleetSpec(path=path, workers=f["workers"], storages=tuple(f["storages"]),
                          disk_size=parse_size(f["disk_size"]),
                          disk=DiskConfig(f["controller"], f["aio"], f["iothread"], f["cache"]),
                          power_cycle=f["power_cycle"], vcpus=f["vcpus"], memory_mib=f["memory_mib"],
                          boot_timeout=f["boot_timeout"])


#: the program each role runs, as the kernel names its process (15 characters)
PROGRAMS = {"qemu": "qemu-system-x86_64", "tgtd": "tgtd", "qemu-storage-daemon": "qemu-storage-daemon"}


def _alive(owned: OwnedProcess) -> psutil.Process | None:
    """The journaled process if it still runs (a zombie is gone): the same pid, program *and* start time."""
    try:
        proc = psutil.Process(owned.pid)
        if (abs(proc.create_time() - owned.started) > 0.5 or proc.status() == psutil.STATUS_ZOMBIE
                or proc.name()[:15] != PROGRAMS.get(owned.role, owned.role)[:15]):
            return None
        return proc
    except psutil.Error:
        return None


# --- plan ------------------------------------------------------------------------------------------------

@dataclass
class LocalFleetPlan:
    workers: list[str]
    storages: list[dict[str, Any]]
    volume_dir: Path
    needed: int  # bytes of volumes at once (one storage's)
    avail: int
    fio: str = ""
    problems: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> list[str]:
        lines = [f"this machine: {len(self.workers)} local QEMU workers ({', '.join(self.workers)})",
                 f"  volumes under {self.volume_dir}: {self.needed / 2**20:.0f} MiB per storage at a time, "
                 f"{self.avail / 2**30:.1f} GiB free"]
        if self.fio:
            lines.append(f"  fio: {self.fio}")
        for s in self.storages:
            lines.append(f"  storage {s['storage']}: {s['how']}")
        lines.append(f"  time: each of the {len(self.storages)} sides runs every point (the ETA below is one side's), "
                     "after writing its volumes and booting its workers (6-8 s for 2 workers under software "
                     "emulation, measured on a 2-core machine; docs/fio-server.md)")
        return lines


def _direct_io_problem(folder: Path) -> str | None:
    """Whether the file system under ``folder`` (its nearest existing parent) takes O_DIRECT opens, which
    aio=native with cache=none, and qemu-storage-daemon's export, need (tmpfs does not)."""
    probe_dir = folder
    while not probe_dir.exists() and probe_dir != probe_dir.parent:
        probe_dir = probe_dir.parent
    probe = probe_dir / f".stormatrix-odirect-{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o600)
        os.close(fd)
    except OSError as exc:
        return f"{probe_dir} does not take O_DIRECT opens ({exc.strerror})"
    finally:
        probe.unlink(missing_ok=True)
    return None


def _guest_fio() -> str | None:
    """The fio the workers run: the image is built from this machine's /usr/bin/fio (guestimage.py)."""
    try:
        return subprocess.run(["/usr/bin/fio", "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class LocalFleet:
    """One local fleet (one run directory's ``fleet.ndjson``). ``fio``: the controller's ``fio --version``
    line, which the workers' fio must be (None: not checked)."""

    def __init__(self, spec: LocalFleetSpec, run_dir: str | Path, *, fio: str | None = None) -> None:
        self.spec = spec
        self.fio = fio
        self.run_dir = Path(run_dir)
        self.journal = FleetJournal(self.run_dir)
        st = self.state()
        self.fleet_id = st.header.fleet_id if st.header else uuid.uuid4().hex[:12]
        self._served: dict[str, LocalStorage] = {}
        self.image: guestimage.GuestImage | None = None

    def __enter__(self) -> "LocalFleet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop any storage server this process still runs (its volumes stay journaled)."""
        for storage in list(self._served):
            self._stop_server(storage)

    def state(self) -> LocalFleetState:
        return replay(self.journal, LocalFleetState())

    def owned(self) -> LocalFleetState:
        """What the journal says the fleet owns (``stormatrix fleet plan -o``)."""
        return self.state()

    def record_fio(self, version_line: str) -> str:
        """``stormatrix fleet template --record``: a local worker has no template; its guest image's fio is read
        from its READY line when it boots."""
        raise MatrixError(self.spec.path, "[fleet] backend", "is \"qemu\": a local fleet has no template to declare "
                          "its fio in", "drop --record: the local workers run the guest image's fio, checked when they "
                          "boot")

    @property
    def volume_dir(self) -> Path:
        return self.run_dir / VOLUMES

    def volume(self, storage: str, worker: str) -> str:
        """A worker's volume on ``storage``, as journaled: relative to the run directory (which may move)."""
        return f"{VOLUMES}/{storage}-{worker}.raw"

    # --- plan ------------------------------------------------------------------------------------------
    def plan(self) -> LocalFleetPlan:
        """What a deploy needs from this machine, checked before anything is created; every problem listed."""
        s = self.spec
        problems: list[tuple[str, str]] = []
        probe = self.volume_dir
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        avail = shutil.disk_usage(probe).free
        needed = s.workers * s.disk_size
        if avail < needed:
            problems.append(("disk_size", f"{probe} has {avail / 2**20:.0f} MiB free, one storage's volumes need "
                                          f"{needed / 2**20:.0f} MiB ({s.workers} x {format_size(s.disk_size)}); "
                                          "free space, or lower workers or disk_size"))
        storages: list[dict[str, Any]] = []
        for kind in s.storages:
            missing = [(b, pkg) for b, pkg in NEEDS[kind] if not (shutil.which(b) or shutil.which(b, path="/usr/sbin"))]
            for binary, package in missing:
                problems.append(("storages", f"storage {kind} needs {binary}: install the Debian package {package}"))
            how = {"iscsi": "tgtd on 127.0.0.1, one LUN per worker, opened by QEMU's libiscsi",
                   "nbd": "qemu-storage-daemon on 127.0.0.1, one NBD export per worker",
                   "file": "the raw files, opened by QEMU directly"}[kind]
            storages.append({"storage": kind, "how": how})
        direct_cache = s.disk.cache in DIRECT_CACHE_MODES
        direct = [k for k in s.storages if k == "nbd" or (k == "file" and direct_cache)]
        if direct:
            problem = _direct_io_problem(self.volume_dir)
            if problem:
                problems.append(("storages", f"{', '.join(direct)} open the volumes with O_DIRECT, but {problem}; "
                                             "give the run directory (-o) on a disk-backed file system"))
        if shutil.which("qemu-system-x86_64") is None:
            problems.append(("backend", "qemu-system-x86_64 is not installed: install the Debian package "
                                        "qemu-system-x86"))
        guest_fio = _guest_fio()
        note = f"the workers run {guest_fio or 'no fio (/usr/bin/fio)'} (the guest image's, from this machine)"
        if guest_fio is None:
            problems.append(("workers", "/usr/bin/fio does not run: the guest image carries this machine's fio; "
                                        "install the Debian package fio"))
        elif self.fio is not None and guest_fio != self.fio:
            problems.append(("workers", f"the workers run {guest_fio} (the guest image's, from /usr/bin/fio), the "
                                        f"controller {self.fio}: client and server speak one protocol version; run "
                                        "with --fio /usr/bin/fio"))
        return LocalFleetPlan(s.names(), storages, self.volume_dir, needed, avail, note, problems)

    def check(self, plan: LocalFleetPlan) -> None:
        refuse_problems(self.spec.path, plan.problems)

    # --- deploy ----------------------------------------------------------------------------------------
    def deploy(self, *, on_step: Callable[[str, str], None] | None = None) -> list[str]:
        """Check the plan, journal the fleet, reap what an interrupted run left, and have the guest image
        ready (built once into the cache). Returns the workers' names: a worker's QEMU starts with its side."""
        self.check(self.plan())
        if self.state().header is None:
            self.journal.append({"type": "fleet", "fleet_id": self.fleet_id, "backend": "qemu",
                                 "workers": self.spec.workers, "names": self.spec.names(),
                                 "storages": list(self.spec.storages)})
        self.reap(on_step=on_step)
        self.image = guestimage.build()
        return self.spec.names()

    # --- one storage: its volumes, its server, its workers ---------------------------------------------
    def attach(self, storage: str) -> list[str]:
        """Make each worker's volume on ``storage`` (journaled before the file is made) and serve them;
        returns the URL each worker's QEMU opens, in worker order."""
        files = []
        state = self.state()
        for name in self.spec.names():
            path = self.volume(storage, name)
            if path not in state.volumes:
                self.journal.append({"type": "local-volume", "storage": storage, "worker": name, "path": path})
            files.append(ensure_test_disk(self.run_dir / path, self.spec.disk_size // 2**20))
        server = local_storage(storage, self.run_dir / storage / "storage")
        server.on_spawn = lambda role, pid, control: self._journal_process(role, pid, storage, storage, control)
        self._served[storage] = server
        return server.start(files)

    def served(self, storage: str) -> dict[str, Any]:
        """What serves ``storage`` now, for the side's run record."""
        return {**self._served[storage].describe(), "power_cycle": self.spec.power_cycle}

    def on_vm_start(self, storage: str) -> Callable[[str, int], None]:
        """What a side's :class:`~.guests.LocalGuests` reports each started worker to: the journal."""
        return lambda name, pid: self._journal_process("qemu", pid, name, storage, None)

    def _journal_process(self, role: str, pid: int, name: str, storage: str, control: int | None) -> None:
        try:
            started = psutil.Process(pid).create_time()
        except psutil.Error:
            return  # gone already (it dies with us anyway)
        self.journal.append({"type": "local-process", "role": role, "pid": pid, "started": started, "name": name,
                             "storage": storage, "control": control})

    def _stop_server(self, storage: str) -> None:
        server = self._served.pop(storage, None)
        if server is None:
            return
        pid = server.proc.pid if server.proc else None
        server.stop()
        if pid is not None:
            self.journal.append({"type": "local-gone", "kind": "process", "pid": pid})

    def detach(self, storage: str | None = None, *, keep_volumes: bool = False,
               on_step: Callable[[str, str], None] | None = None) -> None:
        """Stop the server of ``storage`` (or of every storage), end every journaled process of it still
        running, and (unless ``keep_volumes``) remove its volumes."""
        for kind in ([storage] if storage else list(self._served)):
            self._stop_server(kind)
        self.reap(storage, on_step=on_step)
        if keep_volumes:
            return
        step = on_step or (lambda _stage, _what: None)
        for path, kind in self.state().volumes.items():
            if storage is not None and kind != storage:
                continue
            step("remove", path)
            (self.run_dir / path).unlink(missing_ok=True)
            (self.run_dir / path).with_suffix(".part").unlink(missing_ok=True)
            self.journal.append({"type": "local-gone", "kind": "volume", "path": path, "storage": kind})

    def reap(self, storage: str | None = None, *, on_step: Callable[[str, str], None] | None = None) -> None:
        """End every journaled process (of ``storage``, or all) that still runs: a worker or server an
        interrupted run left (SIGKILL by pid, after checking its start time); then the control sockets of
        tgtds that are gone (a killed tgtd's, once its threads let go of the socket's lock)."""
        step = on_step or (lambda _stage, _what: None)
        controls: list[int] = []
        for owned in self.state().processes.values():
            if storage is not None and owned.storage != storage:
                continue
            proc = _alive(owned)
            if proc is not None:
                step("stop", f"{owned.role} {owned.name} (pid {owned.pid})")
                log.warning("ending %s %s (pid %d) left by an earlier run", owned.role, owned.name, owned.pid)
                try:
                    proc.send_signal(signal.SIGKILL)  # tgtd ignores SIGTERM in the foreground
                    proc.wait(timeout=10)
                except psutil.NoSuchProcess:
                    pass
                except psutil.TimeoutExpired:
                    log.warning("pid %d did not end within 10 s of SIGKILL", owned.pid)
                    continue
            self.journal.append({"type": "local-gone", "kind": "process", "pid": owned.pid})
            if owned.role == "tgtd" and owned.control is not None:
                controls.append(int(owned.control))
        for number in controls:
            if not release_control_socket(number):
                log.warning("tgtd control socket %d is held by a running tgtd: not ours, left alone", number)
        sweep_stale_control_sockets()

    def destroy(self, *, on_step: Callable[[str, str], None] | None = None) -> LocalFleetState:
        """End every journaled process still running and remove every journaled volume; returns what is left."""
        self.detach(on_step=on_step)
        try:
            self.volume_dir.rmdir()
        except OSError:
            pass  # not empty (a file that is not ours) or gone
        return self.state()
