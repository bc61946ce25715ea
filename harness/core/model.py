"""The things a matrix is made of: disk configurations, workloads and cells.

All are frozen dataclasses so that a cell can be a dict key, travel between stages unchanged, and be
written to the journal exactly as it was planned.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

# --- controllers -----------------------------------------------------------------------------------
# name -> (Proxmox bus, scsihw or None). The names are Proxmox's own where Proxmox has one.
CONTROLLERS: dict[str, tuple[str, str | None]] = {
    "ide": ("ide", None),
    "sata": ("sata", None),
    "virtio-blk": ("virtio", None),
    "virtio-scsi-pci": ("scsi", "virtio-scsi-pci"),
    "virtio-scsi-single": ("scsi", "virtio-scsi-single"),
    "pvscsi": ("scsi", "pvscsi"),
    "megasas": ("scsi", "megasas"),
    "lsi": ("scsi", "lsi"),
    "lsi53c810": ("scsi", "lsi53c810"),
    # ESXi controller types (vmware backend only)
    "lsilogic-sas": ("esxi", None),
    "lsilogic": ("esxi", None),
    "nvme": ("esxi", None),
}
# "virtio-scsi" is the usual short name (the technotes use it) of the shared controller, scsihw=virtio-scsi-pci.
CONTROLLER_ALIASES = {"virtio-scsi": "virtio-scsi-pci", "virtio": "virtio-blk", "vmware-pvscsi": "pvscsi"}

AIO_MODES = ("native", "io_uring", "threads")
# "default" means the cache option is not set: QEMU then opens the image with cache.direct=on.
CACHE_MODES = ("none", "directsync", "writethrough", "writeback", "unsafe", "default")
DIRECT_CACHE_MODES = frozenset({"none", "directsync", "default"})
RW_MODES = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim")
#: fio rw modes that change the disk's contents (a write cell needs [run] allow_write)
WRITE_MODES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim"})
#: fio rw modes that read and write (rwmixread applies)
MIXED_MODES = frozenset({"rw", "readwrite", "randrw"})


def now_iso() -> str:
    """The time of a record: UTC, ISO 8601 to the millisecond (every journal record uses this one form)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def iso_ago(seconds: float) -> str:
    """:func:`now_iso` of ``seconds`` ago (a moment the guest's clock placed before now)."""
    return (datetime.now(timezone.utc) - timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


# Highest slot index per Proxmox bus (ide0-3, sata0-5, scsi0-30, virtio0-15).
BUS_MAX_SLOTS = {"ide": 4, "sata": 6, "scsi": 31, "virtio": 16}
# Disks one SCSI controller holds, per Proxmox scsihw (qemu-server: lsi* 7, virtio-scsi-single one per disk);
# Proxmox adds controllers as slots grow.
SCSIHW_DISKS_PER_CONTROLLER = {"lsi": 7, "lsi53c810": 7, "megasas": 256, "pvscsi": 256,
                               "virtio-scsi-pci": 256, "virtio-scsi-single": 1}


def bus_of(controller: str) -> str:
    return CONTROLLERS[controller][0]


def scsihw_of(controller: str) -> str | None:
    return CONTROLLERS[controller][1]


# Backends whose virtual disks have no aio, iothread or cache setting: ESXi (VMware's virtual disks have
# none of QEMU's). A cell there is its controller alone (DiskConfig.controller_only).
BACKENDS_WITHOUT_DISK_OPTIONS = frozenset({"vmware"})
# How reports and `plan` show such a setting: not "none" (a real cache mode) and not blank (unknown).
NOT_APPLICABLE = "n/a"


def disk_options_apply(controller: str, backend: str | None) -> bool:
    """Whether aio, iothread and cache exist for this controller on this backend.

    Not on the ESXi bus (lsilogic-sas, lsilogic, nvme exist only there), and not for any controller of a
    backend in :data:`BACKENDS_WITHOUT_DISK_OPTIONS` (the vmware backend's pvscsi is ESXi's PVSCSI, not
    QEMU's, which has an aio mode like every QEMU disk). A controller this version does not know (a suite
    point's ``unknown``, a newer journal's) is not taken for ESXi's.
    """
    return CONTROLLERS.get(controller, ("",))[0] != "esxi" and backend not in BACKENDS_WITHOUT_DISK_OPTIONS


def native_aio_problem(aio: str | None, cache: str | None) -> str | None:
    """Why QEMU refuses to start this aio/cache pair, else None: aio=native needs O_DIRECT (cache none,
    directsync, or unset), which qemu-server does not check. The one statement of the rule, for the matrix
    (``[matrix] aio/cache``) and a fleet's workers (``[fleet] aio``)."""
    if aio == "native" and cache is not None and cache not in DIRECT_CACHE_MODES:
        return (f"aio=native with cache={cache}: aio=native needs O_DIRECT and QEMU refuses to start "
                "('aio=native was specified, but it requires cache.direct=on')")
    return None


def iothread_effective(controller: str) -> bool:
    """Proxmox honours iothread=1 only for virtio-blk and for scsi disks on virtio-scsi-single."""
    return controller in ("virtio-blk", "virtio-scsi-single")


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str | int) -> int:
    """fio-style block size: ``4k``, ``64K``, ``512``, ``1m``, ``128KiB`` -> bytes (base 1024)."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text <= 0:
            raise ValueError(f"size must be positive, got {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (write it like 4k, 64k, 512 or 1m)")
    value = float(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if value <= 0 or value != int(value):
        raise ValueError(f"size must be a positive whole number of bytes, got {text!r}")
    return int(value)


def format_size(nbytes: int) -> str:
    for unit, mult in (("m", 1024**2), ("k", 1024)):
        if nbytes % mult == 0 and nbytes >= mult:
            return f"{nbytes // mult}{unit}"
    return str(nbytes)


@dataclass(frozen=True, order=True)
class DiskConfig:
    """How the test disk is attached: what `qm set` would change between cells.

    On a platform without aio, iothread and cache settings (ESXi, see :func:`disk_options_apply`) all
    three are None, never a made-up value: :meth:`controller_only`. The key is then the controller alone.
    """

    controller: str
    aio: str | None
    iothread: bool | None
    cache: str | None

    def __post_init__(self) -> None:
        unset = [v is None for v in (self.aio, self.iothread, self.cache)]
        if any(unset) and not all(unset):
            raise ValueError(f"{self.controller}: aio, iothread and cache are all set or all None (a platform "
                             f"without them), got aio={self.aio!r}, iothread={self.iothread!r}, cache={self.cache!r}")

    @classmethod
    def controller_only(cls, controller: str) -> "DiskConfig":
        """A disk on a platform that has no aio, iothread or cache setting (ESXi)."""
        return cls(controller, None, None, None)

    @property
    def has_options(self) -> bool:
        """False for a controller-only configuration (ESXi)."""
        return self.aio is not None

    @property
    def bus(self) -> str:
        return bus_of(self.controller)

    @property
    def scsihw(self) -> str | None:
        return scsihw_of(self.controller)

    @property
    def key(self) -> str:
        if not self.has_options:
            return self.controller
        return f"{self.controller}/aio={self.aio}/iothread={int(bool(self.iothread))}/cache={self.cache}"


@dataclass(frozen=True)
class Workload:
    name: str
    rw: str
    bs: int
    iodepth: int
    numjobs: int = 1
    rate_mib_s: float | None = None
    rwmixread: int | None = None

    @property
    def key(self) -> str:
        return self.name

    def describe(self) -> str:
        rate = f" @{self.rate_mib_s:g} MiB/s" if self.rate_mib_s else ""
        return f"{self.rw} bs={format_size(self.bs)} qd={self.iodepth} jobs={self.numjobs}{rate}"


@dataclass(frozen=True)
class Cell:
    disk: DiskConfig
    workload: Workload
    repeat: int  # 1-based

    @property
    def key(self) -> str:
        return f"{self.disk.key}/{self.workload.key}/rep{self.repeat}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        d["disk"]["bus"] = self.disk.bus
        d["disk"]["scsihw"] = self.disk.scsihw
        return d


@dataclass(frozen=True)
class SkippedCell:
    disk: DiskConfig
    workload: Workload | None
    reason: str


@dataclass(frozen=True)
class Timing:
    ramp_s: float
    measure_s: float


@dataclass
class Plan:
    cells: list[Cell]
    skipped: list[SkippedCell] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the matrix was read, where it is not obvious

    def disks(self) -> list[DiskConfig]:
        """Distinct disk configurations in plan order: each one is one VM restart."""
        seen: dict[DiskConfig, None] = {}
        for c in self.cells:
            seen.setdefault(c.disk, None)
        return list(seen)
