"""The local guest agent: the tiny guest's init script, reached through QEMU's second serial port.

Protocol (see ``harness/guest/init``): the guest announces ``@@SMX READY k=v ...``; the host sends
``RUN <base64 fio job>``; fio's measurement job runs ``smx-mark measure-start`` as exec_prerun and
``smx-mark measure-end`` as exec_postrun, which the guest forwards as ``@@SMX MARK ...`` lines. The
start marker then waits for the host's ``GO``, sent once the host's window is open (QEMU's
accounting snapshotted, the collector running), so fio's measurement starts inside it; the
result comes back gzipped, as base64 between ``@@SMX RESULT rc= bytes= sha256= encoding=gzip`` and
``@@SMX END``, and is verified against its length and SHA-256 (:func:`decode_result`).

Warm-up and measurement are two jobs of ONE fio process (``stonewall`` between them), so the window
the host measures starts when fio really starts measuring, with no second fio start-up inside it.

Jobs set up before they are needed (``[qemu] prepare_ahead``, passed as the endpoint's hint
``measure_job_early``): :meth:`LocalAgentExecutor.prepare` sends a cell's job to a VM booted ahead while
another VM's cell runs, and fio holds it at the warm-up's gate (``smx-mark warmup-gate``) until
:meth:`~LocalAgentExecutor.send` answers GO; with one job clone the measurement job starts beside the
warm-up (no stonewall) and holds in its marker until the warm-up's end marker wakes it. The warm-up's
``warmup-start`` marker carries the guest's uptime, so the host places the warm-up's start
(``Window.warmup_started``) by the guest's clock, back from the measure-start marker it reads as it comes.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import logging
import secrets
import socket
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from ..analysis.read.fio import parse_fio_json
from ..core.errors import DataFileError, GuestDisconnected, GuestNotReady, WorkloadFailed
from ..core.model import Cell, Timing, Workload
from ..core.scope import GuestEndpoint
from ..qmp import connect_unix
from .base import GuestExecutor, WindowListener, WorkloadResult
from .fioserver.inputs import fio_rate

log = logging.getLogger("stormatrix.agent")

PREFIX = b"@@SMX "


def fio_job(workload: Workload, timing: Timing, filename: str, *, ioengine: str = "libaio",
            markers: bool = True, randseed: int | None = None, gate: bool = False,
            measure_early: bool = False) -> str:
    """The fio job file for one cell: a warm-up job, then the measurement job (stonewalled).

    With ``markers`` the warm-up job says when its I/O starts (``smx-mark warmup-start``), and with ``gate``
    (a job sent ahead, :meth:`LocalAgentExecutor.prepare`) it first holds at ``smx-mark warmup-gate`` until
    the host's GO: fio has then parsed the job, opened the disk and allocated its buffers, and the warm-up's
    first I/O follows the GO at once.

    With ``measure_early`` (and markers, a warm-up and one job clone) the measurement job is started with the
    warm-up instead of after it (no ``stonewall``): its thread forks, opens the disk and allocates while the
    warm-up runs, then waits in its marker (``smx-mark measure-next``) until the warm-up's own end marker
    wakes it (``warmup-end``); the switch is then two marker round trips, not fio's start of a new job.
    Several clones keep the stonewall: the marker's hand-over is one to one.

    Values are typed and validated before they get here (spec.py); nothing user-supplied is
    interpolated as free text except the workload name, which is not used in the file.

    Random offsets differ from cell to cell through a seed drawn here on the host (``randseed``, kept
    in fio's JSON output with the job options), not through ``randrepeat=0``: that makes fio seed
    from the guest's RNG, and in a guest seconds after boot the kernel first collects jitter entropy,
    which took ~1 s under emulation (measured) before fio issued its first I/O.
    """
    if randseed is None:
        randseed = secrets.randbits(63)
    g = ["[global]", f"ioengine={ioengine}", "direct=1", f"filename={filename}", f"rw={workload.rw}",
         f"bs={workload.bs}", f"iodepth={workload.iodepth}", f"numjobs={workload.numjobs}",
         "time_based=1", f"randseed={randseed}", "norandommap=1",
         # fio's own TSC calibration is as unreliable under emulation as the kernel's: use the kernel clock
         "clocksource=clock_gettime",
         # total-latency (submission to completion) percentiles besides fio's default completion ones:
         # the record's lat_p99_ns and clat_p99_ns are then both measured (fio writes lat_ns.percentile)
         "lat_percentiles=1"]
    if workload.rwmixread is not None:
        g.append(f"rwmixread={workload.rwmixread}")
    rate = fio_rate(workload.rate_mib_s, workload.rw, workload.rwmixread, workload.numjobs)
    if rate is not None:
        g.append(f"rate={rate}")  # per job and per direction: see fio_rate
    lines = g + [""]
    early = measure_early and markers and timing.ramp_s > 0 and workload.numjobs == 1
    if timing.ramp_s > 0:
        lines += ["[warmup]", f"runtime={max(1, round(timing.ramp_s))}"]
        if markers:
            lines.append(f"exec_prerun=/bin/smx-mark {'warmup-gate' if gate else 'warmup-start'}")
        if early:
            lines.append("exec_postrun=/bin/smx-mark warmup-end")
        lines.append("")
    lines += ["[measure]", *([] if early else ["stonewall"]), "new_group", f"runtime={max(1, round(timing.measure_s))}"]
    if markers:
        lines += [f"exec_prerun=/bin/smx-mark {'measure-next' if early else 'measure-start'}",
                  "exec_postrun=/bin/smx-mark measure-end"]
    return "\n".join(lines) + "\n"


class AgentChannel:
    """Line-oriented access to the guest agent's serial socket."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock: socket.socket | None = None
        self.buf = b""

    def connect(self, deadline: float) -> None:
        try:
            self.sock = connect_unix(self.path, deadline)
        except OSError as exc:
            raise GuestNotReady(f"cannot connect to the guest agent socket {self.path}: {exc}") from None

    def send(self, line: str) -> None:
        assert self.sock is not None
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError as exc:
            raise GuestDisconnected(f"guest agent connection lost while sending: {exc}") from None

    def readline(self, deadline: float) -> bytes:
        assert self.sock is not None
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(min(remaining, 1.0))
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as exc:
                raise GuestDisconnected(f"guest agent connection lost: {exc}") from None
            if not chunk:
                raise GuestDisconnected("the guest closed the agent channel (did QEMU exit?)")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.rstrip(b"\r")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def parse_event(line: bytes) -> tuple[str, list[str], dict[str, str]] | None:
    if not line.startswith(PREFIX):
        return None
    words = line[len(PREFIX):].decode("utf-8", "replace").split()
    if not words:
        return None
    kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words[0], words[1:], kv


def _uptime(args: list[str]) -> float | None:
    """The guest uptime a MARK line carries after its name (None when it has none, e.g. an older image)."""
    try:
        return float(args[1])
    except (IndexError, ValueError):
        return None


def decode_result(body: bytes, meta: dict[str, str], cell_key: str) -> bytes:
    """The fio output the guest sent between RESULT and END: base64, of the gzipped output when the RESULT
    line says ``encoding=gzip`` (the current guest: an emulated serial port moves ~20-50 KB/s, and the JSON
    shrinks ~8x), of the plain output otherwise (an image built before). ``bytes`` and ``sha256`` are the
    plain output's, so a transfer damaged anywhere is refused."""
    try:
        raw = base64.b64decode(body)
        if meta.get("encoding") == "gzip":
            raw = gzip.decompress(raw)
        elif meta.get("encoding") not in (None, "plain"):
            raise WorkloadFailed(f"the guest sent its fio result as {meta['encoding']!r}, which this harness cannot "
                                 "read: rebuild the guest image with this version", cell=cell_key)
    except (binascii.Error, OSError, EOFError, zlib.error):  # gzip raises BadGzipFile (an OSError) or zlib.error
        raw = b""
    if str(len(raw)) != meta.get("bytes") or hashlib.sha256(raw).hexdigest() != meta.get("sha256"):
        raise WorkloadFailed("the fio result arrived damaged (length or SHA-256 mismatch)", cell=cell_key)
    return raw


@dataclass
class _InFlight:
    """What the guest said so far about the cell whose job was sent."""

    limit: float  # time.monotonic() by which fio must have finished
    starts: int = 0  # measure-start markers (one per job clone)
    ends: int = 0
    meta: dict[str, str] | None = None  # the RESULT line's k=v
    body: list[bytes] = field(default_factory=list)
    done: bool = False  # END came
    warmup_up: float | None = None  # the guest's uptime when the warm-up's I/O started (its warmup-start marker)


class LocalAgentExecutor(GuestExecutor):
    name = "local-agent"

    def __init__(self, endpoints: list[GuestEndpoint], options: dict[str, Any] | None = None) -> None:
        super().__init__(endpoints, options)
        if len(endpoints) != 1 or endpoints[0].kind != "local-agent":
            raise GuestNotReady("the local agent executor needs exactly one local-agent endpoint")
        self.channel = AgentChannel(endpoints[0].address)
        self.channel.sock = endpoints[0].connected  # the backend may have listened since QEMU started
        #: the measurement job set up during the warm-up (fio_job's measure_early): the backend's [qemu] prepare_ahead
        self.measure_early = bool(endpoints[0].hints.get("measure_job_early", False))
        self.facts: dict[str, Any] = {}
        self._cell: _InFlight | None = None  # the cell whose job was sent and whose END has not come
        self._prepared: str | None = None  # the key of the cell whose job was sent ahead (prepare), its GO owed

    def connect(self, deadline: float) -> None:
        """Connect at once after QEMU starts, so the READY line is not missed."""
        if self.channel.sock is None:
            self.channel.connect(deadline)

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """Wait for the guest's READY line.

        A guest that announced READY before anyone listened (another client had the channel, e.g. a
        readiness probe) is asked again with PING: first after 2 s of silence, then every 10 s. A
        PING that reaches a guest still booting is dropped by the serial port or answered with a
        second READY, which the run ignores.
        """
        self.connect(deadline)
        quiet_s = 2.0
        while True:
            try:
                line = self.channel.readline(min(deadline, time.monotonic() + quiet_s))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise GuestNotReady("the guest did not report ready before the deadline") from None
                self.channel.send("PING")
                quiet_s = 10.0
                continue
            ev = parse_event(line)
            if ev and ev[0] == "READY":
                self.facts = ev[2]
                if not self.facts.get("disk"):
                    raise GuestNotReady("the guest booted but found no test disk "
                                        "(its driver did not load or the disk never appeared)")
                return dict(self.facts)

    #: :meth:`send`, :meth:`await_window` and :meth:`collect` are :meth:`run` in three steps: the runner sends the
    #: next cell's job before it collects this one's result (two cells in flight)
    splits = True

    def run(self, cell: Cell, timing: Timing, window: WindowListener) -> WorkloadResult:
        self.send(cell, timing, window)
        self.await_window(cell, window)
        return self.collect(cell)

    #: :meth:`prepare` can send a cell's job ahead, to a VM that waits for its turn
    prepares = True

    def prepare(self, cell: Cell, timing: Timing) -> None:
        """Send ``cell``'s job ahead, while another VM's cell runs: the guest's fio reads it, opens the disk,
        allocates, and holds before the warm-up's first I/O (``smx-mark warmup-gate``) until :meth:`send`
        answers GO. Needs a warm-up (``timing.ramp_s`` > 0): the gate is the warm-up job's."""
        if timing.ramp_s <= 0:
            raise ValueError("a job sent ahead holds at its warm-up: the timing has none")
        job = fio_job(cell.workload, timing, "@DISK@", gate=True, measure_early=self.measure_early)
        self.channel.send("RUN " + base64.b64encode(job.encode()).decode())
        self._prepared = cell.key
        self._cell = _InFlight(limit=float("inf"))  # from the GO on: ramp + measure + 120 s

    def send(self, cell: Cell, timing: Timing, window: WindowListener) -> None:
        """Start the cell: hand its job to the guest's waiting fio, or, when the job was sent ahead
        (:meth:`prepare`), answer its warm-up gate (one GO per job clone: each clone's marker reads one line;
        a GO sent before fio reached the gate waits in the guest's serial port). Its warm-up starts now."""
        if self._prepared is not None and self._prepared == cell.key and self._cell is not None:
            for _ in range(cell.workload.numjobs):
                self.channel.send("GO")
            self._prepared = None
        else:
            if self._prepared is not None:
                raise WorkloadFailed(f"this guest holds the job of {self._prepared} sent ahead, not this cell's",
                                     cell=cell.key)
            job = fio_job(cell.workload, timing, "@DISK@", measure_early=self.measure_early)
            self.channel.send("RUN " + base64.b64encode(job.encode()).decode())
            self._cell = _InFlight(limit=0.0)
        sent = getattr(window, "job_sent", None)  # the runner's Window; a bare WindowListener has none
        if sent is not None:
            sent()
        self._cell.limit = time.monotonic() + timing.ramp_s + timing.measure_s + 120

    def await_window(self, cell: Cell, window: WindowListener) -> None:
        """Answer the guest's window markers until the window has closed (or fio ended without one)."""
        self._read(cell, window, until_window=True)

    def collect(self, cell: Cell) -> WorkloadResult:
        """Read the result that follows the window, check it and parse it."""
        state = self._read(cell, None, until_window=False)
        meta = state.meta
        assert meta is not None
        raw = decode_result(b"".join(state.body), meta, cell.key)
        text = raw.decode("utf-8", "replace")
        rc = int(meta.get("rc", "1"))
        if rc != 0:
            raise WorkloadFailed(f"fio exited {rc} in the guest: {text.strip()[-500:]}", cell=cell.key)
        if state.starts == 0 or state.ends < cell.workload.numjobs:
            raise WorkloadFailed("fio finished without marking its measurement window", cell=cell.key)
        try:
            data = parse_fio_json(text, source=f"guest fio output for {cell.key}")
        except DataFileError as exc:  # the guest's fault, not the user's input: a failed workload
            raise WorkloadFailed(f"fio printed no usable JSON: {exc.problem}; it said: {text.strip()[-300:]!r}",
                                 cell=cell.key) from None
        return WorkloadResult(engine="fio", raw=text, data=data, guest=dict(self.facts),
                              window_source="guest-marker")

    def _read(self, cell: Cell, window: WindowListener | None, *, until_window: bool) -> _InFlight:
        """The guest's lines for the cell in flight: until its window closed (``until_window``; markers need
        ``window``), or until the result's END."""
        state = self._cell
        if state is None:
            raise WorkloadFailed("no job was sent to the guest", cell=cell.key)
        while not state.done:
            if until_window and (state.ends >= cell.workload.numjobs or state.meta is not None):
                return state
            try:
                line = self.channel.readline(state.limit)
            except TimeoutError:
                raise WorkloadFailed("fio did not finish in time (ramp + measure + 120 s)",
                                     cell=cell.key) from None
            ev = parse_event(line)
            if state.meta is not None:
                if ev and ev[0] == "END":
                    state.done = True
                else:
                    state.body.append(line)
                continue
            if ev is None:
                continue
            kind, args, kv = ev
            if kind == "MARK" and args and args[0] == "warmup-start":
                if state.warmup_up is None:
                    state.warmup_up = _uptime(args)
            elif kind == "MARK" and args and args[0] == "measure-start":
                state.starts += 1
                if state.starts == 1 and window is not None:
                    # the warm-up's start on the host's clock: its length by the guest's clock back from now
                    # (this marker is read as it comes: the guest waits for its GO); the warmup-start marker
                    # itself may have been read late, behind the previous cell's result
                    up = _uptime(args)
                    told = getattr(window, "warmup_started", None)
                    if told is not None and up is not None and state.warmup_up is not None:
                        told(max(up - state.warmup_up, 0.0))
                    window.measure_started()
                # each job clone's marker holds its I/O until this answer: the window is open now
                self.channel.send("GO")
            elif kind == "MARK" and args and args[0] == "measure-end":
                state.ends += 1
                if state.ends == cell.workload.numjobs and window is not None:
                    window.measure_ended()
            elif kind == "RESULT":
                state.meta = kv
        return state

    def poweroff(self) -> None:
        try:
            self.channel.send("POWEROFF")
        except GuestDisconnected:
            pass

    def close(self) -> None:
        self.channel.close()


__all__ = ["LocalAgentExecutor", "fio_job", "parse_event"]
