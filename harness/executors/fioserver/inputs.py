"""The fio-server executor's typed inputs: a guest's fio server, one point's fio job, its ``rate=``.

Everything fio gets is built from these validated values: job-file text from checked numbers and names
(:meth:`FioJob.render`); the client's argument list is :func:`~.client.client_args`'s (see
:mod:`stormatrix.executors.fioserver.executor` for the method).
"""

from __future__ import annotations

import math
import re
import secrets
from dataclasses import dataclass
from typing import Sequence

from ...core.model import RW_MODES
from ...core.names import host_problem
from ...core.scope import GuestEndpoint

DEFAULT_PORT = 8765
ALL_CLIENTS = "All clients"
PROBE_JOB_NAME = "stormatrix-probe"
#: fio gives up on a hung server after ~7 missed ETA replies (5 s each); our own deadline is later.
FIO_HUNG_CLIENT_S = 40.0
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class FioGuest:
    """One guest's fio server: a name for reports, where it listens, and optionally its own target."""

    name: str
    host: str
    port: int = DEFAULT_PORT
    filename: str | None = None  # overrides the suite's target device for this guest

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"guest name {self.name!r}: use letters, digits, '.', '_' or '-' "
                             "(it names log files), at most 64 characters")
        problem = host_problem(self.host) or (
            f"{self.host!r} is not a host name" if ".." in self.host else
            f"{self.host!r}: give a host name or IPv4 address (fio's --client takes IPv6 only in its own ip6: form)"
            if ":" in self.host else None)
        if problem:
            raise ValueError(f"guest {self.name}: {problem}")
        if not 1 <= int(self.port) <= 65535:
            raise ValueError(f"guest {self.name}: port {self.port} is not between 1 and 65535")
        if self.filename is not None:
            _check_filename(self.filename)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def client_arg(self) -> str:
        return f"--client={self.host},{self.port}"

    def describe(self) -> str:
        return f"{self.name} ({self.address})"

    @classmethod
    def parse(cls, text: str) -> "FioGuest":
        """``name=host:port`` or ``name=host`` (port 8765)."""
        name, sep, rest = text.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise ValueError(f"{text!r} is not name=host:port")
        host, colon, port = rest.strip().rpartition(":")
        if not colon:
            host, port = rest.strip(), str(DEFAULT_PORT)
        if not port.isdigit():
            raise ValueError(f"{text!r}: port {port!r} is not a number")
        return cls(name=name.strip(), host=host, port=int(port))

    @classmethod
    def from_endpoint(cls, ep: GuestEndpoint) -> "FioGuest":
        port = ep.port or DEFAULT_PORT
        return cls(name=ep.name or f"{ep.address}-{port}", host=ep.address, port=port)


def _check_filename(filename: str) -> None:
    if not filename or any(c in filename for c in "\n\r\0") or filename != filename.strip():
        raise ValueError(f"target {filename!r} is not a usable file or device name")


def _fio_time(seconds: float) -> str:
    """fio time value: whole seconds where possible, else milliseconds (fio accepts the ms suffix)."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}" if ms % 1000 == 0 else f"{ms}ms"


@dataclass(frozen=True)
class FioJob:
    """One suite point's fio job, in typed values. Rendered once per guest (own target, own logs)."""

    name: str
    rw: str
    bs: int
    iodepth: int
    ramp_s: float
    measure_s: float
    filename: str
    numjobs: int = 1
    size: int | None = None
    direct: bool = True
    ioengine: str = "libaio"
    rwmixread: int | None = None
    rate_iops: int | None = None  # per job (clone) and guest: a fixed load, for CPU-per-MiB at equal rates
    rate: str | None = None  # fio's rate= per job (clone) and guest, from :func:`fio_rate`

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name) or self.name == ALL_CLIENTS:
            raise ValueError(f"job name {self.name!r}: letters, digits, '.', '_' or '-' only")
        if self.rw not in RW_MODES:
            raise ValueError(f"rw {self.rw!r} is not one of {', '.join(RW_MODES)}")
        for label, value in (("bs", self.bs), ("iodepth", self.iodepth), ("numjobs", self.numjobs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{label} must be a positive whole number, got {value!r}")
        if self.size is not None and (isinstance(self.size, bool) or self.size < self.bs):
            raise ValueError(f"size {self.size!r} must be at least one block ({self.bs} bytes)")
        if self.ramp_s < 0 or not math.isfinite(self.ramp_s):
            raise ValueError(f"ramp {self.ramp_s!r} s must be >= 0")
        if self.measure_s <= 0 or not math.isfinite(self.measure_s):
            raise ValueError(f"measurement {self.measure_s!r} s must be > 0")
        if not re.match(r"^[a-z0-9_]+$", self.ioengine):
            raise ValueError(f"ioengine {self.ioengine!r} is not an fio engine name")
        if self.rate_iops is not None and (isinstance(self.rate_iops, bool) or self.rate_iops < 1):
            raise ValueError(f"rate_iops {self.rate_iops!r} must be a positive whole number")
        if self.rate is not None and not re.match(r"^\d+(,\d+)?$", self.rate):
            raise ValueError(f"rate {self.rate!r} is not fio's bytes/s (read) or read,write")
        if self.rwmixread is not None and not 0 <= self.rwmixread <= 100:
            raise ValueError(f"rwmixread {self.rwmixread!r} must be 0..100")
        _check_filename(self.filename)

    @property
    def log_avg_msec(self) -> int:
        """IOPS-log averaging period: ~8 samples in short windows, 1 s in the seeds' 20-minute ones."""
        return int(min(1000, max(100, self.measure_s * 1000 / 8)))

    def render(self, *, filename: str | None = None, log_prefix: str | None = None,
               randseed: int | None = None) -> str:
        """The job file text. ``log_prefix`` turns on the IOPS log that dates the window.

        Random offsets come from ``randseed`` (drawn here when not given, one per guest and point),
        not from ``randrepeat=0``: that seeds from the guest's RNG, which in a freshly booted guest
        first waits for jitter entropy (~1 s measured under emulation) and skews the guests' starts.
        """
        target = (filename or self.filename).replace(":", "\\:")  # fio splits file lists on ':'
        if randseed is None:
            randseed = secrets.randbits(63)
        g = ["[global]", f"ioengine={self.ioengine}", f"direct={int(self.direct)}",
             "time_based=1", f"ramp_time={_fio_time(self.ramp_s)}", f"runtime={_fio_time(self.measure_s)}",
             f"numjobs={self.numjobs}", f"randseed={randseed}", "norandommap=1",
             "lat_percentiles=1"]  # total-latency percentiles too (lat_p99_ns), besides the completion ones
        if self.numjobs > 1:
            g.append("group_reporting=1")  # one result per guest, not one per clone
        if self.size is not None:
            g.append(f"size={self.size}")
        if self.rate_iops is not None:
            g.append(f"rate_iops={self.rate_iops}")
        if self.rate is not None:
            g.append(f"rate={self.rate}")
        if log_prefix is not None:
            if not NAME_RE.match(log_prefix):
                raise ValueError(f"log prefix {log_prefix!r} is not a plain file name")
            g += ["log_unix_epoch=1", f"log_avg_msec={self.log_avg_msec}", f"write_iops_log={log_prefix}"]
        job = [f"[{self.name}]", f"filename={target}", f"rw={self.rw}", f"bs={self.bs}",
               f"iodepth={self.iodepth}"]
        if self.rwmixread is not None and self.rw in ("rw", "readwrite", "randrw"):
            job.append(f"rwmixread={self.rwmixread}")
        return "\n".join(g + [""] + job) + "\n"


def fio_rate(rate_mib_s: float | None, rw: str, rwmixread: int | None, numjobs: int, shares: int = 1) -> str | None:
    """fio's ``rate=`` value for a workload whose rate is for the whole workload, or None (unthrottled).

    fio applies ``rate`` per job (clone), and to reads and writes *separately*: ``rate=1m`` on a
    70/30 randrw runs 1 MiB/s of reads plus 1 MiB/s of writes (twice the target, a 50/50 mix; real
    fio 3.33). So the total is divided by ``numjobs`` and by ``shares`` (guests that each run the
    workload), and a mixed workload gets ``read,write`` split by ``rwmixread``, as the Windows guest
    module does (``--rate=3670016,1572864``).
    """
    if not rate_mib_s:
        return None
    per_job = rate_mib_s * 2**20 / numjobs / shares
    if rw in ("rw", "readwrite", "randrw"):
        mix = 50 if rwmixread is None else rwmixread
        # a direction with no share gets 1 byte/s, not 0: fio reads 0 as "no limit"
        read, write = (max(1, round(per_job * share / 100)) for share in (mix, 100 - mix))
        return f"{read},{write}"
    return str(max(1, round(per_job)))


def check_unique(guests: Sequence[FioGuest]) -> None:
    names = [g.name for g in guests]
    addrs = [(g.host, g.port) for g in guests]
    if not guests:
        raise ValueError("no guests given")
    if len(set(names)) != len(names):
        raise ValueError(f"guest names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    if len(set(addrs)) != len(addrs):
        raise ValueError("two guests share one host:port; fio could not tell their results apart")
