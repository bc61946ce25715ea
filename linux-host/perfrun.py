"""The host collector's ``perf stat`` runner: whether perf counts here (and hardware cycles), starting
``perf stat -x, -e EVENTS TARGET -o FILE`` so that it holds its SIGINT handler and dies with its starter, and
stopping it for its counts (parsed by ``perfstat.py``).

Standard library only (copied to a Proxmox node with the rest of ``linux-host/``). Both collectors use it:
one process (``-p PID``, ``collector.py``) and a CPU set system-wide (``-a -C SET``, ``cpuset.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:  # imported as stormatrix.host.perfrun, or run as a script next to perfstat.py (on a node)
    from . import perfstat
    from .procfs import CollectorProblem, catches_sigint
except ImportError:  # pragma: no cover - the script case is exercised through ssh
    # the same modules, found next to this file on a node (mypy checks the package, where they are relative)
    import perfstat  # type: ignore[import,no-redef]
    from procfs import CollectorProblem, catches_sigint  # type: ignore[import,no-redef]

PERF = "perf"


_cycles_supported: bool | None = None


def cycles_supported() -> bool:
    """Whether perf can count hardware cycles here (many VMs and CI machines cannot)."""
    global _cycles_supported
    if _cycles_supported is None:
        try:
            res = subprocess.run([PERF, "stat", "-x,", "-e", "cycles:u", "true"], env=perfstat.perf_env(),
                                 capture_output=True, text=True, timeout=30, check=False)
            events = perfstat.parse(res.stderr).events
            _cycles_supported = res.returncode == 0 and any(
                name.startswith("cycles") and ev.counted for name, ev in events.items())
        except (OSError, subprocess.TimeoutExpired):
            _cycles_supported = False
    return _cycles_supported


_perf_available: bool | None = None


def perf_available() -> bool:
    """Whether ``perf stat`` counts here, asked once per process (as :func:`cycles_supported`): a
    :class:`WindowCollector` with ``use_perf=None`` asks at every window's start, between the guest's
    measure-start marker and its GO, where the probe (a ``perf stat true``, ~50 ms) would be overhead."""
    global _perf_available
    if _perf_available is None:
        try:
            res = subprocess.run([PERF, "stat", "-x,", "-e", "context-switches", "true"], env=perfstat.perf_env(),
                                 capture_output=True, text=True, timeout=30, check=False)
            _perf_available = (res.returncode == 0
                               and perfstat.parse(res.stderr).value("context-switches") is not None)
        except (OSError, subprocess.TimeoutExpired):
            _perf_available = False
    return _perf_available


def wait_for_sigint_handler(pid: int, timeout: float = 10.0) -> None:
    """Until ``perf stat`` (pid) has installed its SIGINT handler. The window ends with a SIGINT, on which
    perf prints its counts; a SIGINT that arrives before the handler (a short window on a loaded machine)
    kills perf with no counts at all. Returns early when perf exits (its error is reported at the stop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = catches_sigint(pid)
        if state is None or state:
            return
        time.sleep(0.005)


def perf_cycles(perf: dict[str, perfstat.PerfEvent]) -> dict[str, float] | None:
    """``{"user": cycles:u, "kernel": cycles:k}`` where perf counted both (machines with the counters), else None."""
    cu, ck = perf.get("cycles:u"), perf.get("cycles:k")
    if cu and ck and cu.value is not None and ck.value is not None:
        return {"user": cu.value, "kernel": ck.value}
    return None


def _die_with_parent() -> None:  # runs in perf's child between fork and exec
    """PR_SET_PDEATHSIG = SIGKILL: perf dies with the process (strictly: the thread) that started it.

    ``perf stat -p PID`` ends by itself when QEMU is gone, but ``perf stat -a -C SET`` counts a CPU set and
    never would: a harness or node collector killed with SIGKILL would leave it counting for ever (and a
    later run's kill -9 test would find it). Should the starting thread end before :func:`stop_perf`, perf
    is killed and writes no counts, so that window fails loudly instead of holding partial counts.
    """
    import ctypes  # stdlib; this module runs on Linux hosts only
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def start_perf(target: list[str], events: list[str]) -> tuple[subprocess.Popen[str], str]:
    """``perf stat -x, -e EVENTS TARGET -o FILE`` started and holding its SIGINT handler: (process, file).

    perf dies with its starter (:func:`_die_with_parent`), so a collector killed by SIGKILL leaves none."""
    fd, out = tempfile.mkstemp(prefix="stormatrix-perf-", suffix=".csv")
    os.close(fd)
    proc = subprocess.Popen([PERF, "stat", "-x,", "-e", ",".join(events), *target, "-o", out],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=perfstat.perf_env(),  # LC_ALL=C: 42.52, never a decimal comma inside the CSV
                            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    wait_for_sigint_handler(proc.pid)
    return proc, out


def stop_perf(proc: subprocess.Popen[str], out: str) -> dict[str, perfstat.PerfEvent]:
    """SIGINT to a :func:`start_perf` process and its counts (CollectorProblem when it wrote none)."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    rc = proc.returncode
    try:
        text = Path(out).read_text()
    except OSError:
        text = ""
    finally:
        Path(out).unlink(missing_ok=True)
    events = perfstat.parse(text).events  # a line no layout fits is perf's own chatter: skipped
    if not events:
        raise CollectorProblem(f"perf stat produced no counts (exit {rc}): {(err or '').strip()[-300:]}")
    return events
