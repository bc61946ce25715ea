"""Many Linux guests running ``fio --server``, driven at once by ONE fio client process.

This is the seeds' platform-comparison method (32 VMs, each a fio worker, one controller): every
guest runs ``fio --server``; the controller runs ``fio --output-format=json --client=<host>,<port>
<job file> --client=... <job file> ...`` and fio starts the job on all of them together.

What fio 3.33 really does (found by experiment on this machine, see docs/fio-server.md):

- ``--client=A --client=B job.fio`` gives the job file to B only: a job file belongs to the
  ``--client`` before it. So every client is followed by its own job file (which also lets each
  guest have its own target device and its own log-file prefix).
- The output is one JSON document with ``client_stats``: one entry per job per client, each with
  ``hostname`` (as given on the command line) and ``port``, plus an ``"All clients"`` entry when
  more than one client reported. Around it fio writes non-JSON lines: ``<server hostname> ...`` text
  that the servers send (job description, "Starting 1 process", "Laying out IO file"), and
  ``client: host=<h> disconnected`` / ``client <h>: timeout on SEND_ETA`` on **stdout**.
- A server whose process group is killed mid-run: fio prints ``client: host=<h> disconnected``
  (host only, no port), exits 1, and writes the JSON of the surviving clients; ``All clients`` then
  sums only the survivors. A server that hangs (stopped process, dead VM, lost network): after
  ~40 s of ``timeout on SEND_ETA`` fio writes ``fio: client <h> timed out`` to stderr, exits 1, and
  the JSON has the survivors **without** an ``All clients`` entry. A refused connection:
  ``fio: failed to connect to <h>:<port>`` on stderr, and that client is simply left out.
  So the one reliable sign of a lost guest is that its (hostname, port) is missing from
  ``client_stats``; the text lines are kept as evidence.
- Killing only the listening ``fio --server`` process does not stop a running job: the server
  forks a child per connection. A guest "drops out" when the child dies or the network goes.
- fio 3.33 has no per-job start time in its JSON (``job_start`` arrived in 3.36). Each client's
  measurement window is read from its IOPS log instead: ``write_iops_log`` with
  ``log_unix_epoch=1``; fio resets the log epoch when ``ramp_time`` ends, so the first sample is
  written ``log_avg_msec`` after the measurement started, in the guest's wall clock. In client
  mode the logs come back to the controller as ``<prefix>_iops.<job>.log.<hostname>`` in the fio
  client's working directory; the per-guest prefix keeps 32 loopback clients apart.

Everything fio gets is built from typed values: argument lists, never shell strings; job-file text
from validated numbers and names.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..analysis.fio import extract_json_documents, parse_fio_json, summarize_jobs
from ..backends.base import GuestEndpoint
from ..core.errors import (
    DataFileError,
    EnvironmentProblem,
    GuestDisconnected,
    GuestNotReady,
    WorkloadFailed,
)
from ..core.model import RW_MODES, Cell, Timing, parse_size
from .base import GuestExecutor, WindowListener, WorkloadResult

log = logging.getLogger("stormatrix.fioserver")

DEFAULT_PORT = 8765
ALL_CLIENTS = "All clients"
PROBE_JOB_NAME = "stormatrix-probe"
#: fio gives up on a hung server after ~7 missed ETA replies (5 s each); our own deadline is later.
FIO_HUNG_CLIENT_S = 40.0
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
_STARTING_RE = re.compile(r"^<[^>]*> Starting \d+ (?:process|processes|thread|threads)\s*$")
_DISCONNECT_RES = (
    re.compile(r"client: host=(?P<host>\S+) disconnected"),
    re.compile(r"client <(?P<host>[^>]+)>: timeout on"),
    re.compile(r"fio: client (?P<host>\S+?),? timed out"),
    re.compile(r"fio: client (?P<host>\S+?), timeout on cmd"),
    re.compile(r"fio: failed to connect to (?P<host>[^:\s]+):(?P<port>\d+)"),
    re.compile(r"client <(?P<host>[^>]+)>: exited with error"),
)


# --- typed inputs ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FioGuest:
    """One guest's fio server: a name for reports, where it listens, and optionally its own target."""

    name: str
    host: str
    port: int = DEFAULT_PORT
    filename: str | None = None  # overrides the suite's target device for this guest

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"guest name {self.name!r}: use letters, digits, '.', '_' or '-' "
                             "(it names log files), at most 64 characters")
        if not _HOST_RE.match(self.host) or ".." in self.host:
            raise ValueError(f"guest {self.name}: {self.host!r} is not a host name or IPv4 address")
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

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name) or self.name == ALL_CLIENTS:
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
             f"numjobs={self.numjobs}", f"randseed={randseed}", "norandommap=1"]
        if self.numjobs > 1:
            g.append("group_reporting=1")  # one result per guest, not one per clone
        if self.size is not None:
            g.append(f"size={self.size}")
        if self.rate_iops is not None:
            g.append(f"rate_iops={self.rate_iops}")
        if log_prefix is not None:
            if not _NAME_RE.match(log_prefix):
                raise ValueError(f"log prefix {log_prefix!r} is not a plain file name")
            g += ["log_unix_epoch=1", f"log_avg_msec={self.log_avg_msec}", f"write_iops_log={log_prefix}"]
        job = [f"[{self.name}]", f"filename={target}", f"rw={self.rw}", f"bs={self.bs}",
               f"iodepth={self.iodepth}"]
        if self.rwmixread is not None and self.rw in ("rw", "readwrite", "randrw"):
            job.append(f"rwmixread={self.rwmixread}")
        return "\n".join(g + [""] + job) + "\n"


def client_args(fio: str, jobs: Sequence[tuple[FioGuest, Path]], *, output_format: str = "json") -> list[str]:
    """``fio --output-format=json --client=h,p job --client=h,p job ...``: one job file per client.

    (A job file belongs to the ``--client`` before it; a lone job file after many ``--client``
    would run on the last guest only.)
    """
    args = [fio, f"--output-format={output_format}"]
    for guest, job_path in jobs:
        args += [guest.client_arg, str(job_path)]
    return args


def _check_unique(guests: Sequence[FioGuest]) -> None:
    names = [g.name for g in guests]
    addrs = [(g.host, g.port) for g in guests]
    if not guests:
        raise ValueError("no guests given")
    if len(set(names)) != len(names):
        raise ValueError(f"guest names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    if len(set(addrs)) != len(addrs):
        raise ValueError("two guests share one host:port; fio could not tell their results apart")


def find_fio(fio: str | None = None) -> str:
    path = shutil.which(fio or "fio")
    if not path:
        raise EnvironmentProblem(f"fio not found ({fio or 'fio'}): install the Debian package 'fio'")
    return path


# --- parsing the client's mixed output ---------------------------------------------------------------

def _is_noise(line: str) -> bool:
    return bool(line.strip()) and not line.startswith((" ", "\t", "{", "}", "]", "["))


def noise_lines(text: str) -> list[str]:
    """The non-JSON lines fio's client mode writes around the document (kept as evidence)."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        if depth == 0 and stripped and not stripped.startswith("{"):
            out.append(line.rstrip())
            continue
        depth += line.count("{") - line.count("}")  # fio's own JSON has no braces in strings we use
        depth = max(depth, 0)
    return out


def lost_hosts_in_text(text: str) -> list[tuple[str, int | None, str]]:
    """(host, port or None, line) for every line where fio says a client connection failed."""
    found: list[tuple[str, int | None, str]] = []
    for line in text.splitlines():
        for rx in _DISCONNECT_RES:
            m = rx.search(line)
            if m:
                port = m.groupdict().get("port")
                found.append((m.group("host"), int(port) if port else None, line.strip()))
                break
    return found


@dataclass
class ClientOutput:
    """The parsed document: per-guest fio summaries, fio's own aggregate, and our sum."""

    document: dict[str, Any]
    per_guest: dict[str, dict[str, Any]]  # guest name -> summarize_jobs(...) (+ "version")
    missing: list[FioGuest]
    aggregate: dict[str, Any] | None  # sum over every guest's jobs (None if no guest reported)
    fio_all_clients: dict[str, Any] | None  # fio's "All clients" entry, summarized
    check: dict[str, Any]
    unknown_entries: list[str] = field(default_factory=list)


def _close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def aggregate_check(aggregate: dict[str, Any] | None, fio_all: dict[str, Any] | None,
                    n_reported: int) -> dict[str, Any]:
    """Does fio's "All clients" agree with the sum of the clients?

    Counts must be equal exactly: io_bytes and total_ios. Rates differ by definition: our aggregate
    IOPS/bandwidth is the sum of the clients' own rates (each over its own window); fio's "All
    clients" divides the summed I/Os by the *longest* client runtime (stat.c ``sum_thread_stats``
    keeps the max runtime), so it is a little lower whenever the clients' runtimes differ. We check
    fio's rates against that definition (to 0.1 %) and record both.

    fio only writes "All clients" when more than one client reported, and not at all when a client
    timed out; ``match`` is then None (nothing to compare), never True.
    """
    out: dict[str, Any] = {"clients": n_reported, "fio_all_clients": fio_all is not None, "match": None,
                           "rule": "io_bytes and total_ios equal; fio rates = summed I/O / longest runtime"}
    if aggregate is None or fio_all is None:
        return out
    empty = {"io_bytes": 0, "total_ios": 0, "iops": 0.0, "bw_bytes": 0.0, "runtime_ms": 0.0}
    ok = True
    for d in ("read", "write", "trim", "total"):
        if d not in aggregate and d not in fio_all:
            continue
        s = aggregate.get(d, empty)
        f = fio_all.get(d, empty)
        row = {"sum_io_bytes": s["io_bytes"], "fio_io_bytes": f["io_bytes"],
               "sum_total_ios": s["total_ios"], "fio_total_ios": f["total_ios"],
               "sum_iops": s["iops"], "fio_iops": f["iops"],
               "sum_bw_bytes": s["bw_bytes"], "fio_bw_bytes": f["bw_bytes"],
               "longest_runtime_ms": s["runtime_ms"], "fio_runtime_ms": f["runtime_ms"]}
        good = s["io_bytes"] == f["io_bytes"] and s["total_ios"] == f["total_ios"]
        if d != "total" and f["runtime_ms"]:
            want_iops = s["total_ios"] * 1000.0 / f["runtime_ms"]
            want_bw = s["io_bytes"] * 1000.0 / f["runtime_ms"]
            row.update(fio_definition_iops=want_iops, fio_definition_bw_bytes=want_bw)
            good = good and f["runtime_ms"] == s["runtime_ms"] and _close(f["iops"], want_iops) \
                and _close(f["bw_bytes"], want_bw)
        row["match"] = good
        out[d] = row
        ok = ok and good
    out["match"] = ok
    return out


def parse_client_output(text: str, guests: Sequence[FioGuest], source: str = "<fio client output>") -> ClientOutput:
    """Split fio's client-mode JSON into per-guest results; pure function over the text.

    Guests are matched on (hostname, port) exactly as given to ``--client``: fio echoes the host
    string it was given, and the port tells loopback servers apart.
    """
    doc = parse_fio_json(text, source)
    entries = doc.get("client_stats")
    if not isinstance(entries, list):
        raise DataFileError(source, "this is not client-mode output (no 'client_stats')",
                            "run fio with --client=... and --output-format=json")
    by_addr = {(g.host, g.port): g for g in guests}
    jobs: dict[str, list[dict[str, Any]]] = {g.name: [] for g in guests}
    all_clients: list[dict[str, Any]] = []
    unknown: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("jobname") == ALL_CLIENTS:
            all_clients.append(entry)
            continue
        guest = by_addr.get((str(entry.get("hostname")), _int(entry.get("port"))))
        if guest is None:
            unknown.append(f"{entry.get('hostname')}:{entry.get('port')}")
            continue
        jobs[guest.name].append(entry)
    version = doc.get("fio version")
    per_guest = {}
    for g in guests:
        if jobs[g.name]:
            per_guest[g.name] = {"version": version, **summarize_jobs(jobs[g.name])}
    missing = [g for g in guests if g.name not in per_guest]
    every_job = [j for g in guests for j in jobs[g.name]]
    aggregate = {"version": version, **summarize_jobs(every_job)} if every_job else None
    fio_all = {"version": version, **summarize_jobs(all_clients)} if all_clients else None
    return ClientOutput(document=doc, per_guest=per_guest, missing=missing, aggregate=aggregate,
                        fio_all_clients=fio_all, check=aggregate_check(aggregate, fio_all, len(per_guest)),
                        unknown_entries=unknown)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- the measurement window of each client, from its IOPS log ---------------------------------------

def read_iops_logs(directory: Path, prefix: str, log_avg_msec: int) -> dict[str, Any] | None:
    """Window edges (unix ms) of one guest from ``<prefix>_iops.<n>.log.<host>`` files, or None.

    Start = first sample - log_avg_msec (fio writes a sample when a period has passed since the
    window began); end = last sample. With ``numjobs`` > 1 each clone has a file: the earliest start
    and the latest end are the guest's window.
    """
    starts: list[float] = []
    ends: list[float] = []
    samples = 0
    for path in sorted(directory.glob(f"{prefix}_iops.*.log.*")):
        first = last = None
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head = line.split(",", 1)[0].strip()
                if not head.isdigit():
                    continue
                t = float(head)
                first = t if first is None else first
                last = t
                samples += 1
        if first is not None and last is not None:
            starts.append(first - log_avg_msec)
            ends.append(last)
    if not starts:
        return None
    return {"start_ms": min(starts), "end_ms": max(ends), "samples": samples}


def window_skew(windows: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """Start/end skew between clients' measurement windows, in seconds (None if fewer than two)."""
    have = {k: v for k, v in windows.items() if v}
    out: dict[str, Any] = {
        "source": "fio IOPS log with log_unix_epoch (first sample - log_avg_msec); guest wall clocks",
        "clients_dated": len(have),
        "start_skew_s": None, "end_skew_s": None, "first_start_ms": None, "last_start_ms": None,
        "overlap_s": None,
    }
    if len(have) >= 1:
        starts = [v["start_ms"] for v in have.values()]
        ends = [v["end_ms"] for v in have.values()]
        out.update(first_start_ms=min(starts), last_start_ms=max(starts),
                   overlap_s=max(0.0, (min(ends) - max(starts)) / 1000.0))
        if len(have) >= 2:
            out.update(start_skew_s=(max(starts) - min(starts)) / 1000.0,
                       end_skew_s=(max(ends) - min(ends)) / 1000.0)
    return out


# --- running fio and watching its output ------------------------------------------------------------

@dataclass
class FioClientRun:
    """What one fio client process did: its output, exit, timing and the CPU it used."""

    args: list[str]
    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    elapsed_s: float
    rusage: dict[str, float]
    started_lines: int
    window: dict[str, float | None]  # controller-side window edges (time.time()), None if never opened


def _reader(stream: Any, q: "queue.Queue[tuple[float, str | None]]") -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put((time.time(), raw.decode("utf-8", errors="replace")))
    finally:
        q.put((time.time(), None))


def _wait_rusage(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int | None, dict[str, float]]:
    """Reap ``proc`` with wait4 so that its own CPU time is known (not just "all children")."""
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, {"user_s": ru.ru_utime, "system_s": ru.ru_stime,
                                     "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_kib": float(ru.ru_maxrss)}
        if time.monotonic() >= deadline:
            return None, {}
        time.sleep(0.02)


def run_fio_client(args: list[str], *, cwd: Path, n_clients: int, ramp_s: float = 0.0,
                   measure_s: float = 0.0, window: WindowListener | None = None,
                   timeout_s: float = 120.0) -> FioClientRun:
    """Run one fio client process; open/close ``window`` around the measurement; always reap fio.

    The window opens ``ramp_s`` after the last guest announced "Starting N process(es)" (the
    servers' own text, streamed live through the client) and closes ``measure_s`` later or when fio
    exits, whichever is first. fio itself dates each guest's window from its IOPS log afterwards;
    the suite records both so a misaligned collector window shows.
    """
    stderr_path = cwd / "fio-client.stderr"
    lines: list[str] = []
    started = 0
    opened_at: float | None = None
    closed_at: float | None = None
    listener_open = False  # measure_started() returned and measure_ended() is still owed
    open_due: float | None = None  # time.time() at which to open
    t0 = time.time()
    mono0 = time.monotonic()
    deadline = mono0 + timeout_s
    timed_out = False
    rc: int | None = None
    ru: dict[str, float] = {}
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
    q: "queue.Queue[tuple[float, str | None]]" = queue.Queue()
    reader = threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True, name="fio-client-out")
    reader.start()
    try:
        eof = False
        while not eof:
            now = time.time()
            due = [deadline - time.monotonic() + now]
            if open_due is not None and opened_at is None:
                due.append(open_due)
            if opened_at is not None and closed_at is None:
                due.append(opened_at + measure_s)
            wait = max(0.0, min(due) - now)
            try:
                ts, line = q.get(timeout=wait)
            except queue.Empty:
                ts, line = time.time(), ""
            if line is None:
                eof = True
            elif line:
                lines.append(line)
                if _STARTING_RE.match(line.rstrip("\n")):
                    started += 1
                    if started == n_clients:
                        open_due = ts + ramp_s
            now = time.time()
            if opened_at is None and open_due is not None and now >= open_due and not eof:
                opened_at = now
                if window is not None:
                    window.measure_started()
                    listener_open = True
            if opened_at is not None and closed_at is None and (now >= opened_at + measure_s or eof):
                closed_at = now
                if listener_open:
                    listener_open = False
                    window.measure_ended()  # type: ignore[union-attr]
            if time.monotonic() >= deadline and not eof:
                timed_out = True
                break
        remaining = max(0.5, deadline - time.monotonic()) if not timed_out else 0.0
        rc, ru = _wait_rusage(proc, time.monotonic() + remaining)
        if rc is None:
            timed_out = True
    finally:
        if proc.returncode is None:
            # SIGINT first: fio's client then tells every server to stop its job. A SIGKILLed client
            # leaves the jobs running in the guests (orphaned) until their runtime ends, and they
            # would load the guests during the next point.
            _signal_group(proc, signal.SIGINT)
            rc, ru = _wait_rusage(proc, time.monotonic() + 10)
            if rc is None:
                _signal_group(proc, signal.SIGKILL)
                rc, ru = _wait_rusage(proc, time.monotonic() + 10)
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        if listener_open:
            # fio was abandoned inside the window: close it, but never hide the error that got us here
            closed_at = time.time()
            failing = sys.exc_info()[1]
            try:
                window.measure_ended()  # type: ignore[union-attr]
            except Exception:
                if failing is None:
                    raise
                log.exception("closing the measurement window after %r also failed", failing)
    # lines that arrived after a timeout break are still queued
    while True:
        try:
            _, line = q.get_nowait()
        except queue.Empty:
            break
        if line:
            lines.append(line)
    return FioClientRun(args=args, stdout="".join(lines),
                        stderr=stderr_path.read_text(encoding="utf-8", errors="replace"),
                        returncode=rc, timed_out=timed_out, elapsed_s=time.time() - t0, rusage=ru,
                        started_lines=started,
                        window={"opened": opened_at, "closed": closed_at, "fio_started": t0})


def _signal_group(proc: subprocess.Popen[Any], sig: int) -> None:
    """Signal the process group we created for ``proc`` (start_new_session=True)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# --- probing: does every guest's fio server run a job? ----------------------------------------------

PROBE_JOB = FioJob(name=PROBE_JOB_NAME, rw="read", bs=4096, iodepth=1, ramp_s=0, measure_s=0.1,
                   filename="stormatrix-probe", size=1 << 20, direct=False, ioengine="null")


@dataclass(frozen=True)
class ProbeResult:
    guest: FioGuest
    ok: bool
    detail: str


def _probe_once(guests: Sequence[FioGuest], fio: str, workdir: Path, timeout_s: float) -> FioClientRun:
    workdir = Path(workdir).resolve()  # fio runs in workdir: its job-file paths must not be relative
    workdir.mkdir(parents=True, exist_ok=True)
    text = PROBE_JOB.render()
    pairs: list[tuple[FioGuest, Path]] = []
    for g in guests:
        path = workdir / f"probe-{g.name}.fio"
        path.write_text(text, encoding="utf-8")
        pairs.append((g, path))
    return run_fio_client(client_args(fio, pairs), cwd=workdir, n_clients=len(guests), timeout_s=timeout_s)


def probe_servers(guests: Sequence[FioGuest], workdir: Path, *, fio: str = "fio",
                  timeout_s: float = 15.0) -> list[ProbeResult]:
    """A real fio handshake with every guest: a null-engine job (no disk I/O) through client mode.

    One fio process asks all guests at once (about 1.3 s for any number of them). If it cannot
    finish in ``timeout_s`` (a hung guest makes fio wait ~40 s), each guest is asked on its own, in
    parallel, so that the report names exactly the guests that did not answer.
    """
    _check_unique(guests)
    fio = find_fio(fio)
    run = _probe_once(guests, fio, workdir, timeout_s)
    if run.timed_out:
        with ThreadPoolExecutor(max_workers=min(8, len(guests))) as pool:
            singles = list(pool.map(lambda g: (g, _probe_once([g], fio, workdir / f"single-{g.name}", timeout_s)),
                                    guests))
        results: list[ProbeResult] = []
        for g, r in singles:
            results.append(_probe_verdicts([g], r)[0])
        return results
    return _probe_verdicts(guests, run)


def _probe_verdicts(guests: Sequence[FioGuest], run: FioClientRun) -> list[ProbeResult]:
    evidence = lost_hosts_in_text(run.stdout + "\n" + run.stderr)
    try:
        parsed: ClientOutput | None = parse_client_output(run.stdout, guests, "<fio probe>")
    except DataFileError:
        parsed = None
    out = []
    for g in guests:
        if parsed is not None and g.name in parsed.per_guest:
            err = parsed.per_guest[g.name]["error"]
            out.append(ProbeResult(g, err == 0, "answered" if err == 0 else f"probe job failed with error {err}"))
            continue
        why = [line for host, port, line in evidence if host == g.host and port in (None, g.port)]
        if run.timed_out:
            why.append(f"no answer within {run.elapsed_s:.0f} s")
        if "bad server cmd version" in run.stdout + run.stderr:
            why.append("fio client/server protocol mismatch: the guest's fio must be the same version "
                       "as the controller's")
        if not why and run.stderr.strip():
            why.append("fio: " + run.stderr.strip().splitlines()[-1])
        out.append(ProbeResult(g, False, "; ".join(why) or "no result from this server"))
    return out


def require_servers(guests: Sequence[FioGuest], workdir: Path, *, fio: str = "fio",
                    timeout_s: float = 15.0, point: str | None = None) -> list[ProbeResult]:
    """:func:`probe_servers`, raising :class:`GuestNotReady` that names every guest that did not answer."""
    results = probe_servers(guests, workdir, fio=fio, timeout_s=timeout_s)
    bad = [r for r in results if not r.ok]
    if bad:
        names = ", ".join(f"{r.guest.describe()}: {r.detail}" for r in bad)
        raise GuestNotReady(f"fio server not answering on {len(bad)} of {len(results)} guests: {names}",
                            cell=point, guests=[r.guest.name for r in bad])
    return results


# --- one point on all guests -------------------------------------------------------------------------

@dataclass
class PointResult:
    """One suite point measured on every guest: per-guest results, the aggregate, and how it ran."""

    point: str
    clients: list[dict[str, Any]]  # [{"name", "host", "port", "fio": {...}, "window": {...}}]
    aggregate: dict[str, Any]  # sum over all guests (== fio's "All clients", checked)
    fio_all_clients: dict[str, Any] | None
    aggregate_check: dict[str, Any]
    skew: dict[str, Any]
    controller: dict[str, Any]  # the fio client process: CPU, elapsed, exit code
    window: dict[str, float | None]
    noise: list[str]
    raw: str
    stderr: str


def run_point(guests: Sequence[FioGuest], job: FioJob, workdir: Path, *, fio: str = "fio",
              window: WindowListener | None = None, grace_s: float = FIO_HUNG_CLIENT_S + 50.0,
              point: str | None = None) -> PointResult:
    """Run ``job`` on all ``guests`` at once with one fio client process; return every guest's result.

    Raises :class:`GuestDisconnected` naming each guest whose result is missing (with the results
    of the others in ``details['partial']``), :class:`WorkloadFailed` when fio failed otherwise.
    ``workdir`` receives the job files, fio's stderr and the IOPS logs.
    """
    _check_unique(guests)
    fio = find_fio(fio)
    point = point or job.name
    workdir = Path(workdir).resolve()  # fio runs in workdir: its job-file paths must not be relative
    workdir.mkdir(parents=True, exist_ok=True)
    for stale in workdir.glob("*_iops.*.log.*"):
        stale.unlink()  # a re-run of the point must not read the previous attempt's logs
    pairs: list[tuple[FioGuest, Path]] = []
    for g in guests:
        path = workdir / f"{g.name}.fio"
        path.write_text(job.render(filename=g.filename, log_prefix=g.name), encoding="utf-8")
        pairs.append((g, path))
    args = client_args(fio, pairs)
    log.info("point %s: fio client for %d guests: %s", point, len(guests), " ".join(args[:4]) + " ...")
    run = run_fio_client(args, cwd=workdir, n_clients=len(guests), ramp_s=job.ramp_s,
                         measure_s=job.measure_s, window=window,
                         timeout_s=job.ramp_s + job.measure_s + grace_s)
    controller = {"args": args, "returncode": run.returncode, "timed_out": run.timed_out,
                  "elapsed_s": run.elapsed_s, **run.rusage}
    evidence = lost_hosts_in_text(run.stdout + "\n" + run.stderr)
    try:
        parsed = parse_client_output(run.stdout, guests, f"fio client output of point {point}")
    except DataFileError as exc:
        lost = ", ".join(f"{h}{':' + str(p) if p else ''}" for h, p, _ in evidence)
        msg = (f"fio client produced no result (exit {run.returncode}"
               f"{', killed after ' + format(run.elapsed_s, '.0f') + ' s' if run.timed_out else ''})"
               f"{'; lost: ' + lost if lost else ''}; stderr: {run.stderr.strip()[-500:] or '(empty)'}")
        cls = GuestDisconnected if evidence or run.timed_out else WorkloadFailed
        raise cls(msg, cell=point, stdout=run.stdout[-4000:], stderr=run.stderr[-4000:],
                  controller=controller) from exc
    windows = {g.name: read_iops_logs(workdir, g.name, job.log_avg_msec) for g in guests}
    for name, w in windows.items():
        if w is not None and name in parsed.per_guest:
            # the last log sample can be up to log_avg_msec before the end: fio's runtime is exact
            w["last_sample_ms"] = w["end_ms"]
            w["end_ms"] = w["start_ms"] + float(parsed.per_guest[name]["total"]["runtime_ms"])
    clients = [{"name": g.name, "host": g.host, "port": g.port, "fio": parsed.per_guest[g.name],
                "window": windows[g.name]} for g in guests if g.name in parsed.per_guest]
    if parsed.missing:
        parts = []
        for g in parsed.missing:
            why = [line for host, port, line in evidence if host == g.host and port in (None, g.port)]
            parts.append(f"{g.describe()}" + (f" [fio: {'; '.join(dict.fromkeys(why))}]" if why else ""))
        elapsed = f"{run.elapsed_s:.1f} s after the point started"
        raise GuestDisconnected(
            f"{len(parsed.missing)} of {len(guests)} guests dropped out during point {point}, no result from "
            f"{', '.join(parts)} ({elapsed}; fio exit {run.returncode})",
            cell=point, guests=[g.name for g in parsed.missing], partial=clients,
            controller=controller, stderr=run.stderr[-4000:])
    failed = [(c["name"], c["fio"]["error"]) for c in clients if c["fio"]["error"]]
    if failed or run.returncode not in (0,) or run.timed_out:
        detail = ", ".join(f"{n} (fio error {e}: {os.strerror(e) if 0 < e < 200 else 'see stderr'})"
                           for n, e in failed) or f"fio exited {run.returncode}"
        raise WorkloadFailed(f"point {point} failed: {detail}; stderr: {run.stderr.strip()[-500:] or '(empty)'}",
                             cell=point, partial=clients, controller=controller)
    assert parsed.aggregate is not None
    return PointResult(point=point, clients=clients, aggregate=parsed.aggregate,
                       fio_all_clients=parsed.fio_all_clients, aggregate_check=parsed.check,
                       skew=window_skew(windows), controller=controller, window=run.window,
                       noise=noise_lines(run.stdout), raw=run.stdout, stderr=run.stderr)


# --- loopback servers (tests, the scale benchmark, the demo's plumbing) -----------------------------

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def processes_in(directory: Path) -> list[int]:
    """Pids of the processes whose working directory is ``directory`` (or below it)."""
    root = str(Path(directory).resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + "/"):
            found.append(int(entry.name))
    return found


class LocalFioServers:
    """``fio --server`` processes on 127.0.0.1, each in its own directory and process group.

    A context manager: every server (and the per-connection children fio forks) is killed on exit,
    also after an exception. ``kill(name)`` drops one guest mid-run, the way a crashed VM would.
    """

    def __init__(self, count: int, root: Path, *, fio: str = "fio", prefix: str = "g") -> None:
        self.count = count
        self.root = Path(root)
        self.fio = fio
        self.prefix = prefix
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.guests: list[FioGuest] = []

    def __enter__(self) -> "LocalFioServers":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> list[FioGuest]:
        width = max(2, len(str(self.count)))
        for i in range(1, self.count + 1):
            name = f"{self.prefix}{i:0{width}d}"
            for _attempt in range(5):
                port = _free_port()
                if self._spawn(name, port):
                    self.guests.append(FioGuest(name=name, host="127.0.0.1", port=port))
                    break
            else:
                raise EnvironmentProblem(f"could not start fio --server for {name}: "
                                         f"see {self.root / name / 'server.log'}")
        return self.guests

    def _spawn(self, name: str, port: int) -> bool:
        """Start one server; False (and nothing left running) if it did not come up on ``port``."""
        cwd = self.root / name
        cwd.mkdir(parents=True, exist_ok=True)
        with open(cwd / "server.log", "ab") as out:
            proc = subprocess.Popen([find_fio(self.fio), f"--server=ip:127.0.0.1,{port}"], cwd=cwd,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[name] = proc
        if self._wait_listening(proc, port):
            return True
        self._stop(name)  # e.g. the port was taken between our check and fio's bind
        return False

    def restart(self, name: str) -> None:
        """Bring a killed guest back on its old port (the guest rebooted)."""
        self._stop(name)
        if not self._spawn(name, self.guest(name).port):
            raise EnvironmentProblem(f"could not restart fio --server for {name} on port {self.guest(name).port}")

    @staticmethod
    def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if _listening(port):
                return True
            time.sleep(0.02)
        return False

    def guest(self, name: str) -> FioGuest:
        return next(g for g in self.guests if g.name == name)

    def kill(self, name: str) -> None:
        """SIGKILL one server and the children it forked for connections: the guest is gone."""
        self._stop(name)

    def _stop(self, name: str) -> None:
        """Kill the server, its connection children and its job processes.

        fio's job processes call setsid(), so they leave the server's process group (and outlive it
        when the connection child dies first). They keep the server's working directory, which is
        ours alone: every process whose cwd is that directory is one we started.
        """
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        _signal_group(proc, signal.SIGKILL)
        for pid in processes_in(self.root / name):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not time out in practice
            log.error("fio server %s (pid %d) did not exit after SIGKILL", name, proc.pid)

    def close(self) -> None:
        for name in list(self.procs):
            self._stop(name)


# --- the executor the matrix runner uses -------------------------------------------------------------

class FioServerExecutor(GuestExecutor):
    """Guest executor for Linux guests running ``fio --server`` (one or many at once).

    ``endpoints`` are ``GuestEndpoint(kind="tcp", address=host, port=..., name=...)``. Options:
    ``filename`` (target in the guest, required), ``size`` (bytes), ``direct`` (default True),
    ``ioengine`` (default libaio), ``fio`` (client binary), ``workdir`` (job files and logs),
    ``probe_timeout_s``, ``grace_s``.
    """

    name = "fio-server"

    def __init__(self, endpoints: list[GuestEndpoint], options: dict[str, Any] | None = None) -> None:
        super().__init__(endpoints, options)
        self.guests = [FioGuest.from_endpoint(ep) for ep in endpoints]
        _check_unique(self.guests)
        self.fio = self.options.get("fio", "fio")
        self.workdir = Path(self.options.get("workdir") or Path.cwd() / "fio-server")
        self.last: PointResult | None = None

    @classmethod
    def for_guests(cls, guests: Iterable[tuple[str, str, int] | FioGuest],
                   options: dict[str, Any] | None = None) -> "FioServerExecutor":
        """An executor for guests given directly (no backend): ``(name, host, port)`` or :class:`FioGuest`."""
        typed = [g if isinstance(g, FioGuest) else FioGuest(g[0], g[1], g[2]) for g in guests]
        ex = cls([GuestEndpoint("tcp", g.host, g.port, g.name) for g in typed], options)
        ex.guests = typed  # keeps each guest's own target device, which an endpoint cannot carry
        return ex

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """Probe until every guest answers or ``deadline`` (monotonic) passes; then name the silent ones."""
        timeout = float(self.options.get("probe_timeout_s", 15.0))
        last: GuestNotReady | None = None
        while True:
            try:
                results = require_servers(self.guests, self.workdir / "probe", fio=self.fio,
                                          timeout_s=min(timeout, max(2.0, deadline - time.monotonic())))
                return {"guests": [r.guest.name for r in results], "probe": "fio null-engine job"}
            except GuestNotReady as exc:
                last = exc
            if time.monotonic() + 1.0 >= deadline:
                assert last is not None
                raise last
            time.sleep(1.0)

    def job_for(self, cell: Cell, timing: Timing) -> FioJob:
        filename = self.options.get("filename")
        if not filename and not all(g.filename for g in self.guests):
            raise WorkloadFailed("fio-server executor: no target: set the 'filename' option "
                                 "(the test device inside the guests, e.g. /dev/sdb)", cell=cell.key)
        w = cell.workload
        return FioJob(name=re.sub(r"[^A-Za-z0-9._-]", "_", w.name)[:64] or "point", rw=w.rw, bs=w.bs,
                      iodepth=w.iodepth, numjobs=w.numjobs, ramp_s=timing.ramp_s, measure_s=timing.measure_s,
                      filename=filename or "unused",
                      size=parse_size(self.options["size"]) if self.options.get("size") is not None else None,
                      direct=bool(self.options.get("direct", True)),
                      ioengine=self.options.get("ioengine", "libaio"), rwmixread=w.rwmixread)

    def run(self, cell: Cell, timing: Timing, window: WindowListener) -> WorkloadResult:
        job = self.job_for(cell, timing)
        safe_key = re.sub(r"[^A-Za-z0-9._-]+", "_", cell.key)
        res = run_point(self.guests, job, self.workdir / safe_key, fio=self.fio, window=window,
                        grace_s=float(self.options.get("grace_s", FIO_HUNG_CLIENT_S + 50.0)), point=cell.key)
        self.last = res
        data = {"aggregate": res.aggregate, "clients": res.clients, "aggregate_check": res.aggregate_check,
                "skew": res.skew, "controller": res.controller,
                "document": extract_json_documents(res.raw)[-1]}
        return WorkloadResult(engine="fio", raw=res.raw, data=data,
                              guest={"fio": res.aggregate.get("version"), "guests": len(res.clients)},
                              window_source="timed")
