"""``stormatrix demo --suite``: the protocol comparison of the seeds (``003_*``: iSCSI vs NVMe/TCP on
Proxmox) in miniature, on this machine.

The seeds run 32 VMs, each a ``fio --server`` worker with one test disk on the storage under test, drive
every point of a block-size x queue-depth grid on all of them at once from one controller, once per
storage, and compare the two sides point by point. Here:

- a side is a storage under test of the local backend (:mod:`stormatrix.fleet.localstore`), served
  for real on 127.0.0.1: side ``iscsi`` is a ``tgtd`` target with one LUN per worker, opened by QEMU's
  own initiator (libiscsi), side ``nbd`` a ``qemu-storage-daemon`` NBD export per worker; both sides
  attach it the same way (virtio-scsi-single, aio=native, iothread, cache=none), so the protocol is
  what differs;
- each side boots N (2-4) workers of the tiny image in ``mode="server"``: virtio-net with QEMU user
  networking and a host port forwarded from ``127.0.0.1:<port>`` to the guest's fio server; every
  worker's volume is its own raw file (one per worker index, served by each side's target in turn:
  a side's storage and guests are stopped before the next side's start);
- the runner (:func:`stormatrix.suiterun.run_suite`) runs a reduced grid into ``<out>/iscsi`` and
  ``<out>/nbd``, with the host collector measuring all the side's QEMU processes during each
  point's window (:class:`~stormatrix.collect.ProcessesCollector`), so each point has host CPU and context
  switches per MiB; the run record says which server served the disks (``storage``);
- the comparison workbook is written by the same code as ``stormatrix compare``.

Resumable like the rest: a re-run skips journaled points and starts no storage and boots no guest for a
side that is complete. Storage servers and guests are always stopped (``finally``); they also die with
the harness (PR_SET_PDEATHSIG), which is tied to the thread that started them: start them from the
main thread.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from . import guestimage
from .backends.qemu import QemuVm, VmSpec, ensure_test_disk, qemu_version
from .collect import ProcessesCollector
from .core.errors import GuestNotReady, InputError, StormatrixError, VmStartError
from .core.model import DiskConfig
from .core.scope import HostScope
from .executors.fioserver_client import find_fio
from .executors.fioserver_inputs import FioGuest
from .executors.fioserver_probe import probe_servers
from .executors.localagent import AgentChannel, parse_event
from .fleet.localstore import local_storage
from .journal import Journal
from .suite import Suite, SuitePoint, suite_for_guests
from .suiterun import SuiteOutcome, run_suite, write_comparison

log = logging.getLogger("stormatrix.demosuite")


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now, for a guest's forwarded fio server port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MIN_GUESTS, MAX_GUESTS = 2, 4


@dataclass(frozen=True)
class DemoSide:
    """One side of the comparison: where its journal goes, its label, how the workers attach their
    disk, and the storage that serves it (:data:`stormatrix.fleet.localstore.STORAGE_KINDS`)."""

    key: str  # run sub-directory
    label: str  # the journal's side and the workbook's column label
    disk: DiskConfig
    storage: str = "file"


#: both sides attach the disk the same way (the seeds' virtio-scsi-single with an iothread): only the
#: protocol between the worker's QEMU and its volume differs
DEMO_DISK = DiskConfig("virtio-scsi-single", "native", True, "none")
DEMO_SIDES: tuple[DemoSide, ...] = (
    DemoSide("iscsi", "iSCSI", DEMO_DISK, "iscsi"),
    DemoSide("nbd", "NBD", DEMO_DISK, "nbd"),
)


@dataclass(frozen=True)
class DemoSuiteConfig:
    """Everything the demo suite needs, passed explicitly (the CLI and the tests build one).

    The defaults are the reduced suite that fits in a few minutes on a 2-core machine under TCG:
    2 block sizes x 2 queue depths, 2 s warm-up + 6 s measured per point, 2 guests per side.
    """

    run_dir: Path
    workbook: Path
    guests: int = 2
    block_sizes: tuple[str, ...] = ("4k", "64k")
    queue_depths: tuple[int, ...] = (1, 8)
    rw: tuple[str, ...] = ("randread",)
    ramp_s: float = 2.0
    measure_s: float = 6.0
    disk_size_mib: int = 128
    # where the guests' raw test disks live (default: the image cache). QEMU write-locks an image,
    # so two demo suites running at once on one machine need different folders.
    disk_dir: Path | None = None
    vcpus: int = 1
    memory_mib: int = 512
    boot_timeout_s: float = 120.0
    sides: tuple[DemoSide, ...] = DEMO_SIDES
    fio: str = "fio"
    image: guestimage.GuestImage | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not MIN_GUESTS <= self.guests <= MAX_GUESTS:
            raise InputError(f"--guests {self.guests}: the demo suite boots {MIN_GUESTS} to {MAX_GUESTS} guests "
                             "per side (each is a QEMU process under software emulation)")
        if len(self.sides) != 2 or len({s.key for s in self.sides}) != 2 or len({s.label for s in self.sides}) != 2:
            raise InputError("the demo suite compares exactly two sides with distinct keys and labels")

    def guest_names(self) -> list[str]:
        return [f"g{i}" for i in range(1, self.guests + 1)]


@dataclass
class DemoSuiteOutcome:
    """What the demo did per side, and the workbook it wrote."""

    sides: dict[str, SuiteOutcome | None] = field(default_factory=dict)  # None: nothing left to run
    boot_s: dict[str, float] = field(default_factory=dict)
    workbook: Path | None = None

    @property
    def failed(self) -> list[tuple[str, str]]:
        return [f for o in self.sides.values() if o is not None for f in o.failed]


# --- one side's guests -------------------------------------------------------------------------------

class SideGuests:
    """N server-mode QEMU guests with one disk configuration, each with its own test disk and port.

    :meth:`start` boots them all (QEMU processes run in parallel), waits for each guest's READY
    line on its agent socket (which names the test device), then until every fio server answers a
    probe through the forwarded port. :meth:`stop` always stops every VM.
    """

    PORT_ATTEMPTS = 3

    def __init__(self, side: DemoSide, config: DemoSuiteConfig, image: guestimage.GuestImage,
                 disks: Sequence[Path | str]) -> None:
        self.side = side
        self.config = config
        self.image = image
        self.disks = list(disks)
        self.vms: list[QemuVm] = []
        self.guests: list[FioGuest] = []
        self.ready: dict[str, dict[str, str]] = {}
        self.workdir = config.run_dir / side.key / "vm"

    def __enter__(self) -> "SideGuests":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spec(self, name: str, disk: Path | str, port: int) -> VmSpec:
        c = self.config
        return VmSpec(name=f"{self.side.key}-{name}", disk=self.side.disk, disk_image=disk, run_dir=self.workdir,
                      image=self.image, slot=0, vcpus=c.vcpus, memory_mib=c.memory_mib, mode="server",
                      fio_port=port)

    def _boot(self, name: str, disk: Path | str) -> tuple[QemuVm, AgentChannel]:
        """Start one VM and connect to its agent socket at once: QEMU drops what the guest writes
        to a socket chardev while nobody is connected, and READY comes only once."""
        last: VmStartError | None = None
        for _ in range(self.PORT_ATTEMPTS):
            vm = QemuVm(self._spec(name, disk, free_port()))
            try:
                vm.start()
            except VmStartError as exc:
                # another process may take the free port between our probe and QEMU's bind
                if "forward" in str(exc).lower():
                    last = exc
                    continue
                raise
            self.vms.append(vm)
            channel = AgentChannel(str(vm.agent_path))
            channel.connect(time.monotonic() + 10)
            return vm, channel
        raise VmStartError(f"{self.side.key}-{name}: no free host port for the fio server after "
                           f"{self.PORT_ATTEMPTS} attempts: {last}")

    def start(self) -> list[FioGuest]:
        c = self.config
        t0 = time.monotonic()
        channels: list[tuple[QemuVm, AgentChannel]] = []
        try:
            for name, disk in zip(c.guest_names(), self.disks):
                channels.append(self._boot(name, disk))
            deadline = time.monotonic() + c.boot_timeout_s
            for (vm, ch), name in zip(channels, c.guest_names()):
                kv = self._wait_ready(vm, ch, deadline)
                self.ready[name] = kv
                assert vm.spec.fio_port is not None
                self.guests.append(FioGuest(name=name, host="127.0.0.1", port=vm.spec.fio_port, filename=kv["disk"]))
        finally:
            for _, ch in channels:
                ch.close()
        self._wait_servers(time.monotonic() + max(30.0, c.boot_timeout_s - (time.monotonic() - t0)))
        log.info("side %s: %d guests ready in %.1f s: %s", self.side.key, len(self.guests), time.monotonic() - t0,
                 ", ".join(f"{g.name}={g.address} {g.filename}" for g in self.guests))
        return self.guests

    def _wait_ready(self, vm: QemuVm, ch: AgentChannel, deadline: float) -> dict[str, str]:
        while True:
            try:
                line = ch.readline(deadline)
            except TimeoutError:
                raise GuestNotReady(f"{vm.spec.name}: no READY from the guest within {self.config.boot_timeout_s:.0f} s"
                                    f"; console: {self._console(vm)}") from None
            except StormatrixError as exc:
                raise GuestNotReady(f"{vm.spec.name}: {exc}; QEMU: {vm.stderr_tail()}; console: {self._console(vm)}"
                                    ) from None
            event = parse_event(line)
            if event is None or event[0] != "READY":
                continue
            kv = event[2]
            if kv.get("mode") != "server":
                raise GuestNotReady(f"{vm.spec.name}: the guest booted in mode {kv.get('mode', 'agent')!r}, "
                                    "not as a fio server")
            if not kv.get("disk", "").startswith("/dev/"):
                raise GuestNotReady(f"{vm.spec.name}: the guest found no test disk for {self.side.disk.controller}"
                                    f"; console: {self._console(vm)}")
            return kv

    def _wait_servers(self, deadline: float) -> None:
        """The guest says READY just before it execs ``fio --server``: probe until all answer."""
        pending = list(self.guests)
        probe_dir = self.config.run_dir / self.side.key / "points" / "boot-probe"
        while True:
            results = probe_servers(pending, probe_dir, fio=self.config.fio, timeout_s=15.0)
            pending = [r.guest for r in results if not r.ok]
            if not pending:
                return
            dead = [vm.spec.name for vm in self.vms if not vm.alive()]
            if dead or time.monotonic() > deadline:
                why = "; ".join(f"{r.guest.describe()}: {r.detail}" for r in results if not r.ok)
                raise GuestNotReady(f"side {self.side.key}: fio server not answering on {len(pending)} guests"
                                    f"{' (QEMU exited: ' + ', '.join(dead) + ')' if dead else ''}: {why}",
                                    guests=[g.name for g in pending])
            time.sleep(0.5)

    @staticmethod
    def _console(vm: QemuVm, limit: int = 600) -> str:
        try:
            return vm.console_path.read_text(errors="replace").strip()[-limit:] or "(empty)"
        except OSError:
            return "(no console log)"

    def scopes(self) -> list[HostScope]:
        return [HostScope(pid=vm.pid, threads=vm.thread_roles(), vm=vm.spec.name) for vm in self.vms]

    def stop(self) -> None:
        errors: list[BaseException] = []
        for vm in self.vms:
            try:
                vm.stop()
            except BaseException as exc:  # any failure: stop the others, then report the first
                errors.append(exc)
        self.vms = []
        if errors:
            raise errors[0]


# --- the suite per side, then the workbook ------------------------------------------------------------

def side_suite(config: DemoSuiteConfig, side: DemoSide, guests: Sequence[FioGuest]) -> Suite:
    """The reduced suite of one side, validated like a matrix file. Before the guests exist (to see
    what is left to run) a placeholder guest list gives the same points: keys do not name guests."""
    filename = guests[0].filename or "/dev/vda"
    return suite_for_guests(list(guests), side=side.label, filename=filename, block_sizes=config.block_sizes,
                            queue_depths=config.queue_depths, rw=config.rw, ramp_s=config.ramp_s,
                            measure_s=config.measure_s, disk=side.disk, name="demo-suite",
                            run={"on_error": "skip", "name": "demo-suite"})


def todo_points(config: DemoSuiteConfig, side: DemoSide) -> list[SuitePoint]:
    placeholder = [FioGuest(name=n, host="127.0.0.1", port=i, filename="/dev/vda")
                   for i, n in enumerate(config.guest_names(), start=1)]
    suite = side_suite(config, side, placeholder)
    journal = Journal(config.run_dir / side.key)
    done = journal.done_keys() if journal.path.exists() else set()
    return [p for p in suite.points() if p.key not in done]


def write_workbook(config: DemoSuiteConfig) -> Path:
    """The comparison workbook of the two sides (:func:`stormatrix.suiterun.write_comparison`)."""
    a_side, b_side = config.sides
    return write_comparison((a_side.label, config.run_dir / a_side.key), (b_side.label, config.run_dir / b_side.key),
                            config.workbook)


def demo_suite(config: DemoSuiteConfig, *, progress: bool = True, stream: Any = None) -> DemoSuiteOutcome:
    """Run both sides (booting guests only for a side with points left), then write the workbook.

    Must run in the main thread (QEMU's PR_SET_PDEATHSIG follows the thread that started it).
    Raises the error that stopped a side (after stopping its guests); points that failed on their
    own are journaled and listed in the outcome (``on_error = skip``).
    """
    stream = stream or sys.stderr
    qemu_version()  # EnvironmentProblem with the package name if QEMU is missing
    fio = find_fio(config.fio)
    image = config.image or guestimage.build()
    disk_dir = config.disk_dir or guestimage.cache_root() / "disks"
    disks = [ensure_test_disk(disk_dir / f"suite-{n}-{config.disk_size_mib}m.raw", config.disk_size_mib)
             for n in config.guest_names()]
    outcome = DemoSuiteOutcome()
    for side in config.sides:
        todo = todo_points(config, side)
        if not todo:
            print(f"side {side.key} ({side.label}): every point is journaled; not booting its guests", file=stream)
            outcome.sides[side.key] = None
            continue
        print(f"side {side.key} ({side.label}): serving {config.guests} volumes over {side.storage}, booting "
              f"{config.guests} guests for {len(todo)} points", file=stream)
        t0 = time.monotonic()
        with local_storage(side.storage, config.run_dir / side.key / "storage") as storage:
            urls = storage.start(disks)
            with SideGuests(side, config, image, urls) as guests:
                fio_guests = guests.start()
                outcome.boot_s[side.key] = time.monotonic() - t0
                suite = side_suite(config, side, fio_guests)
                collector = ProcessesCollector(guests.scopes)

                status = {"mode": "local", "processes": len(guests.vms),
                          "detail": f"{len(guests.vms)} local QEMU processes (side {side.key})"}
                outcome.sides[side.key] = run_suite(suite, config.run_dir / side.key, collector=collector,
                                                    fio=fio, backend="qemu", progress=progress,
                                                    host_collector=status, storage=storage.describe())
    outcome.workbook = write_workbook(config)
    return outcome


def run_demo_suite(args: argparse.Namespace) -> int:
    """``stormatrix demo --suite``: returns the exit code (1 when points failed, 0 otherwise)."""
    for flag in ("matrix", "full"):
        if getattr(args, flag, None):
            raise InputError(f"--{flag} does not apply to --suite: the demo suite builds its own grid "
                             "(use --guests for 2-4 guests per side)")
    run_dir = Path(args.output or "runs/demo-suite")
    workbook = Path(args.workbook) if args.workbook else run_dir / "stormatrix-demo-suite.xlsx"
    config = DemoSuiteConfig(run_dir=run_dir, workbook=workbook, guests=getattr(args, "guests", None) or 2)
    outcome = demo_suite(config, progress=not args.no_progress)
    print(f"workbook: {Path(outcome.workbook or workbook).resolve()}")
    if outcome.failed:
        print(f"{len(outcome.failed)} points failed; see the cell-error records in "
              + " and ".join(str(run_dir / side.key / "journal.ndjson") for side in config.sides))
        return 1
    return 0
