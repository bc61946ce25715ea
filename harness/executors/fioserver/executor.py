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
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...analysis.read.fio import extract_json_documents
from ...core.errors import DataFileError, GuestDisconnected, GuestNotReady, WorkloadFailed
from ...core.model import Cell, Timing, parse_size
from ...core.scope import GuestEndpoint
from ..base import GuestExecutor, WindowListener, WorkloadResult
from .client import client_args, find_fio, run_fio_client
from .inputs import FIO_HUNG_CLIENT_S, FioGuest, FioJob, check_unique, fio_rate
from .parse import lost_hosts_in_text, noise_lines, parse_client_output, read_iops_logs, window_skew
from .probe import ProbeResult, require_servers

log = logging.getLogger("stormatrix.fioserver")

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
    of the others in ``details.partial``), :class:`WorkloadFailed` when fio failed otherwise.
    ``workdir`` receives the job files, fio's stderr and the IOPS logs.
    """
    check_unique(guests)
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
            runtime_ms = parsed.per_guest[name]["total"].get("runtime_ms")
            if runtime_ms is not None:
                w["end_ms"] = w["start_ms"] + float(runtime_ms)
            else:  # fio wrote no runtime: the window ends at the last sample, and says so
                w["end_note"] = "fio wrote no runtime: the end is the last IOPS-log sample (up to log_avg_msec early)"
    clients: list[dict[str, Any]]
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


# --- the executor the matrix runner uses -------------------------------------------------------------

class FioServerExecutor(GuestExecutor):
    """Guest executor for Linux guests running ``fio --server`` (one or many at once).

    ``endpoints`` are ``GuestEndpoint(kind="tcp", address=host, port=..., name=...)``. Options:
    ``filename`` (target in the guest, required), ``size`` (bytes), ``direct`` (default True),
    ``ioengine`` (default libaio), ``fio`` (client binary), ``workdir`` (job files and logs),
    ``probe_timeout_s``, ``grace_s``; ``probe_until_ready`` (default True: probe until the deadline, for
    guests still booting; a suite's running guests are probed once) and ``probe_each_cell`` (default
    False: a suite probes every guest before every point, so a dead one is named before fio starts).

    A cell's fixed rate is for the whole cell: each guest runs its share (see :func:`fio_rate`).
    """

    name = "fio-server"

    def __init__(self, endpoints: list[GuestEndpoint], options: dict[str, Any] | None = None) -> None:
        super().__init__(endpoints, options)
        self.guests = [FioGuest.from_endpoint(ep) for ep in endpoints]
        check_unique(self.guests)
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

    def _probe(self, timeout_s: float, point: str | None = None) -> list[ProbeResult]:
        return require_servers(self.guests, self.workdir / "probe", fio=self.fio, timeout_s=timeout_s, point=point)

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """Probe until every guest answers or ``deadline`` (monotonic) passes; then name the silent ones."""
        timeout = float(self.options.get("probe_timeout_s", 15.0))
        if not self.options.get("probe_until_ready", True):
            results = self._probe(timeout)
            return {"guests": [r.guest.name for r in results], "probe": "fio null-engine job"}
        last: GuestNotReady | None = None
        while True:
            try:
                results = self._probe(min(timeout, max(2.0, deadline - time.monotonic())))
                return {"guests": [r.guest.name for r in results], "probe": "fio null-engine job"}
            except GuestNotReady as exc:
                last = exc
            if time.monotonic() + 1.0 >= deadline:
                assert last is not None
                raise last
            time.sleep(1.0)

    def check_ready(self, cell: Cell) -> None:
        if self.options.get("probe_each_cell", False):
            self._probe(float(self.options.get("probe_timeout_s", 15.0)), point=cell.key)

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
                      ioengine=self.options.get("ioengine", "libaio"), rwmixread=w.rwmixread,
                      rate=fio_rate(w.rate_mib_s, w.rw, w.rwmixread, w.numjobs, shares=len(self.guests)))

    def run(self, cell: Cell, timing: Timing, window: WindowListener) -> WorkloadResult:
        job = self.job_for(cell, timing)
        safe_key = re.sub(r"[^A-Za-z0-9._-]+", "_", cell.key)
        res = run_point(self.guests, job, self.workdir / safe_key, fio=self.fio, window=window,
                        grace_s=float(self.options.get("grace_s", FIO_HUNG_CLIENT_S + 50.0)), point=cell.key)
        self.last = res
        data = {"aggregate": res.aggregate, "clients": res.clients, "aggregate_check": res.aggregate_check,
                "skew": res.skew, "controller": res.controller,
                "document": extract_json_documents(res.raw)[-1]}
        opened, fio_start = res.window.get("opened"), res.skew.get("last_start_ms")
        record = {
            "vm": [c["name"] for c in res.clients],
            "times": {  # controller window opening minus the last guest's fio window start (from its log)
                "window_offset_s": (opened - fio_start / 1000.0) if opened and fio_start else None},
            "clients": [{"name": c["name"], "host": c["host"], "port": c["port"], "fio": c["fio"],
                         "window": c["window"]} for c in res.clients],
            "fio_all_clients": res.fio_all_clients, "aggregate_check": res.aggregate_check, "skew": res.skew,
            "controller": {k: v for k, v in res.controller.items() if k != "args"},
            "noise": res.noise,
            "raw": {"engine": "fio", "fio_json": res.raw, "stderr": res.stderr},
        }
        guest = {"fio": res.aggregate.get("version"), "guests": len(res.clients)}
        if self.options.get("filename"):
            guest["device"] = self.options["filename"]
        return WorkloadResult(engine="fio", raw=res.raw, data=data, guest=guest, window_source="timed",
                              summary=res.aggregate, record=record)
