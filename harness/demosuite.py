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
- each side boots N (2-4) workers of the tiny image in ``mode="server"`` (the qemu backend's suite
  capability, :class:`~stormatrix.backends.qemu_suite.DemoGuests`): virtio-net with QEMU user
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
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from . import guestimage
from .backends.qemu.backend import ensure_test_disk, qemu_version
from .backends.qemu_suite import DemoGuests
from .core.errors import InputError
from .core.model import DiskConfig
from .executors.fioserver.client import find_fio
from .executors.fioserver.inputs import FioGuest
from .fleet.localstore import local_storage
from .journal import Journal
from .suite import Suite, SuitePoint, suite_for_guests
from .suiterun import SuiteOutcome, run_suite, write_comparison

log = logging.getLogger("stormatrix.demosuite")


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


# --- the suite per side, then the workbook ------------------------------------------------------------

def side_suite(config: DemoSuiteConfig, side: DemoSide, guests: Sequence[FioGuest]) -> Suite:
    """The reduced suite of one side, validated like a matrix file. Before the guests exist (to see
    what is left to run) a placeholder guest list gives the same points: keys do not name guests."""
    filename = guests[0].filename or "/dev/vda"
    return suite_for_guests(list(guests), side=side.label, filename=filename, block_sizes=config.block_sizes,
                            queue_depths=config.queue_depths, rw=config.rw, ramp_s=config.ramp_s,
                            measure_s=config.measure_s, disk=side.disk, name="demo-suite",
                            run={"on_error": "skip", "name": "demo-suite"})


def placeholder_guests(config: DemoSuiteConfig) -> list[FioGuest]:
    """The side's guests before they exist (their names; their addresses come when they boot)."""
    return [FioGuest(name=n, host="127.0.0.1", port=i, filename="/dev/vda")
            for i, n in enumerate(config.guest_names(), start=1)]


def todo_points(config: DemoSuiteConfig, side: DemoSide) -> list[SuitePoint]:
    suite = side_suite(config, side, placeholder_guests(config))
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
            settings = side_suite(config, side, placeholder_guests(config)).settings()
            guests = DemoGuests(settings, side.key, side.disk, config.run_dir / side.key, image, config.guest_names(),
                                urls, vcpus=config.vcpus, memory_mib=config.memory_mib,
                                boot_timeout_s=config.boot_timeout_s, fio=config.fio, storage=storage.describe())
            with guests:
                fio_guests = guests.start()
                outcome.boot_s[side.key] = time.monotonic() - t0
                outcome.sides[side.key] = run_suite(side_suite(config, side, fio_guests), config.run_dir / side.key,
                                                    guests, fio=fio, progress=progress)
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
