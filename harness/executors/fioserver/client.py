"""One fio client process: find fio, build its argument list, and supervise it: stream its output, open
and close the measurement window, reap it.

The window opens ``ramp_s`` after the last guest announced "Starting N process(es)" and closes
``measure_s`` later; whatever happens, fio is stopped (SIGINT first, so it tells the servers to stop
their jobs) and reaped with its own CPU time.
"""

from __future__ import annotations

import logging
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ...core import oscompat
from ...core.errors import EnvironmentProblem
from ..base import WindowListener
from .inputs import FioGuest

log = logging.getLogger("stormatrix.fioserver")

_STARTING_RE = re.compile(r"^<[^>]*> Starting \d+ (?:process|processes|thread|threads)\s*$")


def find_fio(fio: str | None = None) -> str:
    path = shutil.which(fio or "fio")
    if not path:
        raise EnvironmentProblem(f"fio not found ({fio or 'fio'}): install the Debian package 'fio' (on Windows fio's "
                                 "MSI, of the guests' fio version, and put fio.exe on PATH: "
                                 "docs/windows-workstation.md)")
    return path


def client_args(fio: str, jobs: Sequence[tuple[FioGuest, Path]], *, output_format: str = "json") -> list[str]:
    """``fio --output-format=json --client=h,p job --client=h,p job ...``: one job file per client.

    (A job file belongs to the ``--client`` before it; a lone job file after many ``--client``
    would run on the last guest only.)
    """
    args = [fio, f"--output-format={output_format}"]
    for guest, job_path in jobs:
        args += [guest.client_arg, str(job_path)]
    return args


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
    """Reap ``proc`` so that its own CPU time is known (not just "all children"): wait4, or on Windows the
    exited process's times (:func:`stormatrix.core.oscompat.reap`)."""
    while True:
        done = oscompat.reap(proc)
        if done is not None:
            proc.returncode, usage = done
            return proc.returncode, usage.as_dict() if usage else {}
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
                                stderr=err, **oscompat.new_group())
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
                    window.measure_ended()  # type: ignore[union-attr]  # listener_open: set only with a window
            if time.monotonic() >= deadline and not eof:
                timed_out = True
                break
        remaining = max(0.5, deadline - time.monotonic()) if not timed_out else 0.0
        rc, ru = _wait_rusage(proc, time.monotonic() + remaining)
        if rc is None:
            timed_out = True
    finally:
        if proc.returncode is None:
            # SIGINT first (Ctrl-Break on Windows): fio's client then tells every server to stop its job. A
            # killed client leaves the jobs running in the guests (orphaned) until their runtime ends, and
            # they would load the guests during the next point.
            oscompat.interrupt_tree(proc)
            rc, ru = _wait_rusage(proc, time.monotonic() + 10)
            if rc is None:
                oscompat.kill_tree(proc)
                rc, ru = _wait_rusage(proc, time.monotonic() + 10)
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        if listener_open:
            # fio was abandoned inside the window: close it, but never hide the error that got us here
            closed_at = time.time()
            failing = sys.exc_info()[1]
            try:
                window.measure_ended()  # type: ignore[union-attr]  # listener_open: set only with a window
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
