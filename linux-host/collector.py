#!/usr/bin/env python3
"""Host collector: CPU and context switches of one QEMU process during a measurement window.

Standard library only (psutil is not needed), so this file can be copied to a Proxmox node and run
there: ``python3 collector.py --pid 1234 --roles roles.json`` starts measuring at once, stops when a
line arrives on stdin (or stdin closes), and prints one JSON document.

What it measures, and how:

- ``perf stat -x, -p PID -e context-switches,task-clock[,cycles:u,cycles:k]``: whole-process totals,
  including threads that start or exit inside the window (thread-pool aio workers come and go).
  Hardware ``cycles`` only when the machine has the counters; otherwise the CPU metric is CPU time,
  and the result says so (``cpu_metric``).
- ``/proc/PID/stat``: user and system CPU time of the process, dead threads included.
- ``/proc/PID/task/TID/{stat,status,schedstat}``: per thread, for the split by role (vCPU, main loop,
  iothread, aio worker). Threads are sampled every ``interval`` seconds so that a worker that exits
  mid-window still counts with its last sample; such split values are marked approximate.

Everything is a delta between the window's start and end.

Nothing is invented (issue 15, honest values): a figure that was not measured is null, and the result's
``null_reasons`` (present only then) says why, keyed like ``cpu_user`` or ``by_role.main-loop.runtime_s``.

- ``cpu_user``/``cpu_system``: with hardware cycles, perf's own ``cycles:u``/``cycles:k``; otherwise the
  kernel's own user/system split of the process over the window (``/proc/PID/stat`` utime/stime deltas,
  dead threads included, in clock ticks). ``cpu_total`` is then perf's ``task-clock`` (nanosecond
  accounting) where perf ran, so ``cpu_user + cpu_system`` may differ from it by the tick granularity:
  the split is never made by scaling ``cpu_total`` with a ratio. ``cpu_split`` names the source.
- ``cpu_total_source`` names what ``cpu_total`` (the one CPU figure every per-MiB value and score uses)
  is: perf's ``cycles:u + cycles:k``, perf's ``task-clock``, or ``/proc utime + stime`` where perf did not
  run. Where ``cpu_user + cpu_system`` (clock ticks) misses a task-clock total by more than
  ``SPLIT_TOLERANCE``, ``cpu_split_note`` says by how much and which accounting agrees with which: the
  threads' own run time (``schedstat``, nanoseconds) is summed too, so the note tells tick granularity
  (schedstat agrees with the task-clock) from a task-clock that counted less than the threads ran
  (schedstat agrees with user + system).
- A thread whose ``schedstat`` (run time) or ``status`` context-switch lines are missing (a kernel without
  CONFIG_SCHEDSTATS, a thread that exited between two reads) has null for that figure, with the reason. A
  sum over threads (``by_role``, the process's ``ctx_voluntary``/``ctx_involuntary``) with one such thread
  is null, and ``null_reasons`` names the thread(s): a sum over part of the threads would be a smaller,
  different number, never 0 added in.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # imported as stormatrix.host.collector, or run as a script next to perfstat.py (on a node)
    from . import perfstat
    from .hostsettings import format_cpulist as _cpulist, parse_cpulist
except ImportError:  # pragma: no cover - the script case is exercised through ssh
    # the same modules, found next to this file on a node (mypy checks the package, where they are relative)
    import perfstat  # type: ignore[import,no-redef]
    from hostsettings import format_cpulist as _cpulist, parse_cpulist  # type: ignore[import,no-redef]

# (a Windows workstation imports this module for its words, never runs it there: it has no sysconf)
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PERF = "perf"
SPLIT_TOLERANCE = 0.03  # user + system vs task-clock: beyond this the record says why they differ


class CollectorProblem(Exception):
    """The window could not be measured (the process vanished, perf failed)."""


@dataclass
class ThreadSample:
    tid: int
    name: str
    utime: int  # clock ticks
    stime: int
    runtime_ns: int | None  # None: no /proc/PID/task/TID/schedstat (CONFIG_SCHEDSTATS off) or unreadable
    vcsw: int | None  # None: the status file has no voluntary_ctxt_switches line
    ivcsw: int | None


def _read(path: str) -> str:
    with open(path, "r") as fh:
        return fh.read()


def _parse_stat(text: str) -> tuple[str, int, int]:
    """(comm, utime, stime) from a /proc stat line; comm may contain spaces and parentheses."""
    lpar, rpar = text.index("("), text.rindex(")")
    comm = text[lpar + 1:rpar]
    rest = text[rpar + 2:].split()
    # fields after comm: state(3) ppid ... utime is field 14, stime 15 (1-based in proc(5))
    return comm, int(rest[11]), int(rest[12])


def _proc(root: str, rel: str) -> str:
    """``rel`` (``proc/1/stat``, ``sys/...``) under ``root``: "/" on a real host, a folder a test or a stand-in
    fills with the same files (a fake /proc and /sys tree)."""
    return os.path.join(root, rel)


def sample_thread(pid: int, tid: int, root: str = "/") -> ThreadSample | None:
    base = _proc(root, f"proc/{pid}/task/{tid}")
    try:
        comm, ut, st = _parse_stat(_read(f"{base}/stat"))
        status = _read(f"{base}/status")
        try:
            runtime_ns: int | None = int(_read(f"{base}/schedstat").split()[0])
        except (OSError, ValueError, IndexError):
            runtime_ns = None
    except (OSError, ValueError):
        return None  # the thread exited between listing and reading
    return ThreadSample(tid, comm, ut, st, runtime_ns, _status_count(status, "voluntary_ctxt_switches:"),
                        _status_count(status, "nonvoluntary_ctxt_switches:"))


def _status_count(status: str, label: str) -> int | None:
    """A counter line of /proc/.../status, or None when the kernel did not write it (never 0)."""
    for line in status.splitlines():
        if line.startswith(label):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def sample_process(pid: int, root: str = "/") -> dict[int, ThreadSample]:
    out: dict[int, ThreadSample] = {}
    try:
        tids = os.listdir(_proc(root, f"proc/{pid}/task"))
    except OSError:
        raise CollectorProblem(f"process {pid} is gone") from None
    for t in tids:
        s = sample_thread(pid, int(t), root)
        if s is not None:
            out[s.tid] = s
    return out


def process_cpu_ticks(pid: int, root: str = "/") -> tuple[int, int]:
    try:
        _, ut, st = _parse_stat(_read(_proc(root, f"proc/{pid}/stat")))
    except (OSError, ValueError):
        raise CollectorProblem(f"process {pid} is gone") from None
    return ut, st


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


def catches_sigint(pid: int) -> bool | None:
    """Whether process ``pid`` has a SIGINT handler (``SigCgt`` in /proc/PID/status); None when it is gone."""
    try:
        status = _read(f"/proc/{pid}/status")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return None


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


def split_note(task_clock_s: float, user_s: float, system_s: float, runtimes: list[Any]) -> str | None:
    """Why ``cpu_user + cpu_system`` differs from the task-clock total by more than ``SPLIT_TOLERANCE``, or
    None. The threads' own run times (schedstat, ns) say which of the two the kernel's accounting backs."""
    split = user_s + system_s
    if task_clock_s <= 0 or abs(split / task_clock_s - 1) <= SPLIT_TOLERANCE:
        return None
    pct = (split / task_clock_s - 1) * 100
    text = (f"user + system ({split:.3f} s, /proc clock ticks of {1000 / CLK_TCK:.0f} ms) is {abs(pct):.1f} % "
            f"{'above' if pct > 0 else 'below'} perf's task-clock ({task_clock_s:.3f} s, ns); cpu_total and every "
            "per-MiB figure use the task-clock")
    if runtimes and all(isinstance(r, (int, float)) for r in runtimes):
        run = float(sum(runtimes))
        near = "user + system" if abs(run - split) < abs(run - task_clock_s) else "the task-clock"
        why = ("so the gap is not tick granularity: perf's task-clock counted less time than the threads ran"
               if near == "user + system" and pct > 0 else
               "so the gap is the ticks' granularity and sampling" if near == "the task-clock" else
               "so the task-clock counted more time than the threads' own run time")
        text += f"; the threads' own run time (schedstat, ns) is {run:.3f} s, nearer {near}, {why}"
    return text


@dataclass
class WindowCollector:
    """Measure one process between :meth:`start` and :meth:`stop`."""

    pid: int
    roles: dict[int, str] = field(default_factory=dict)
    use_perf: bool | None = None  # None: use it when it works
    interval: float = 0.2
    root: str = "/"  # where /proc is read from ("/": this host; a test's or stand-in's fake tree)

    def __post_init__(self) -> None:
        self._perf: subprocess.Popen[str] | None = None
        self._perf_out: str | None = None
        self._first: dict[int, ThreadSample] = {}
        self._last: dict[int, ThreadSample] = {}
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._t0 = self._t1 = 0.0
        self._proc0 = (0, 0)
        self.cycles = False

    def start(self) -> None:
        if self.use_perf is None:
            self.use_perf = perf_available()
        if self.use_perf:
            self.cycles = cycles_supported()
            events = ["context-switches", "task-clock"] + (["cycles:u", "cycles:k"] if self.cycles else [])
            self._perf, self._perf_out = start_perf(["-p", str(self.pid)], events)
        self._first = sample_process(self.pid, self.root)
        self._last = dict(self._first)
        self._proc0 = process_cpu_ticks(self.pid, self.root)
        self._t0 = time.monotonic()
        self._sampler = threading.Thread(target=self._sample_loop, daemon=True)
        self._sampler.start()

    def _sample_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._last.update(sample_process(self.pid, self.root))
            except CollectorProblem:
                return

    def stop(self) -> dict[str, Any]:
        self._t1 = time.monotonic()
        try:
            end = sample_process(self.pid, self.root)
            proc1 = process_cpu_ticks(self.pid, self.root)
        finally:
            self._stop.set()
            if self._sampler:
                self._sampler.join()
            perf_rows = self._stop_perf()
        gone = {tid: s for tid, s in self._last.items() if tid not in end}
        final = {**gone, **end}
        return self._result(final, gone, proc1, perf_rows)

    def abort(self) -> None:
        """Stop everything without a result (used when the cell fails mid-window)."""
        self._stop.set()
        try:
            self._stop_perf()
        except CollectorProblem:
            pass

    def _stop_perf(self) -> dict[str, perfstat.PerfEvent]:
        if self._perf is None:
            return {}
        self._perf.send_signal(signal.SIGINT)
        try:
            _, err = self._perf.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self._perf.kill()
            _, err = self._perf.communicate()
        rc = self._perf.returncode
        self._perf = None
        try:
            text = Path(self._perf_out).read_text() if self._perf_out else ""
        finally:
            if self._perf_out:
                Path(self._perf_out).unlink(missing_ok=True)
        events = perfstat.parse(text).events  # a line no layout fits is perf's own chatter: skipped
        if not events:
            raise CollectorProblem(f"perf stat produced no counts (exit {rc}): {err.strip()[-300:]}")
        return events

    def _result(self, final: dict[int, ThreadSample], gone: dict[int, ThreadSample],
                proc1: tuple[int, int], perf: dict[str, perfstat.PerfEvent]) -> dict[str, Any]:
        tick = 1.0 / CLK_TCK
        why: dict[str, str] = {}
        threads = [self._thread_row(tid, s, tid in gone, tick) for tid, s in sorted(final.items())]
        by_role: dict[str, dict[str, Any]] = {}
        for role in sorted({t["role"] for t in threads}):
            members = [t for t in threads if t["role"] == role]
            agg: dict[str, Any] = {"threads": len(members)}
            for key in ("user_s", "system_s", "runtime_s", "ctx_voluntary", "ctx_involuntary"):
                agg[key] = _sum_over(members, key, f"by_role.{role}.{key}", why)
            by_role[role] = agg
        user_s = (proc1[0] - self._proc0[0]) * tick
        system_s = (proc1[1] - self._proc0[1]) * tick
        vol = _sum_over(threads, "ctx_voluntary", "ctx_voluntary", why)
        invol = _sum_over(threads, "ctx_involuntary", "ctx_involuntary", why)
        source = "proc"
        ctx_total: float | None = vol + invol if vol is not None and invol is not None else None
        if ctx_total is None:
            why["ctx_switches"] = "; ".join(why[k] for k in ("ctx_voluntary", "ctx_involuntary") if k in why)
        cpu_time = user_s + system_s
        cycles = None
        task_clock = False  # cpu_time is perf's task-clock (else /proc's user + system)
        if perf:
            source = "perf+proc"
            cs = perf.get("context-switches")
            if cs and cs.value is not None:
                ctx_total = cs.value  # perf counts every thread of the window, exited ones too
                why.pop("ctx_switches", None)
            tc = perf.get("task-clock")
            if tc and tc.value is not None:
                cpu_time = tc.value / 1000.0  # msec -> s
                task_clock = True
            cycles = perf_cycles(perf)
        if cycles:
            metric, unit, split = "cycles", "cycles", "perf cycles:u / cycles:k"
            total, cu_v, ck_v = cycles["user"] + cycles["kernel"], cycles["user"], cycles["kernel"]
            total_source = "perf cycles:u + cycles:k"
        else:
            # the kernel's own split of the process's time (ticks), never task-clock scaled by a ratio
            metric, unit, split = "cpu_time", "s", "/proc/PID/stat utime / stime (clock ticks)"
            total, cu_v, ck_v = cpu_time, user_s, system_s
            total_source = "perf task-clock (ns)" if task_clock else "/proc/PID/stat utime + stime (clock ticks)"
        out: dict[str, Any] = {
            "cpu_metric": metric, "cpu_unit": unit, "cpu_total": total, "cpu_user": cu_v, "cpu_system": ck_v,
            "cpu_split": split,
            "cpu_time_s": {"total": cpu_time, "user": user_s, "system": system_s},
            "cycles": cycles,
            "ctx_switches": ctx_total, "ctx_voluntary": vol, "ctx_involuntary": invol,
            "source": source, "scope": "qemu-process", "pid": self.pid,
            "window_s": self._t1 - self._t0,
            "threads": threads, "by_role": by_role,
            "split_approximate": bool(gone) or any(t["new"] for t in threads),
            "perf": {k: {"value": v.value, "unit": v.unit, "status": v.status} for k, v in perf.items()},
        }
        out["cpu_total_source"] = total_source
        if not cycles and task_clock:
            note = split_note(cpu_time, user_s, system_s, [t.get("runtime_s") for t in threads])
            if note:
                out["cpu_split_note"] = note
        if why:
            out["null_reasons"] = dict(sorted(why.items()))
        return out

    def _thread_row(self, tid: int, s: ThreadSample, exited: bool, tick: float) -> dict[str, Any]:
        """One thread's deltas over the window; a counter missing at either end is null, with the reason."""
        s0 = self._first.get(tid)  # None: born inside the window, so its whole life is in it
        role = self.roles.get(tid) or ("main-loop" if tid == self.pid else
                                       "aio-worker" if s.name == "worker" else "other")
        why: dict[str, str] = {}

        def delta(now: int | None, then: int | None, key: str, what: str) -> int | None:
            if now is None or (s0 is not None and then is None):
                why[key] = f"{what} of thread {tid} ({s.name}) could not be read " + \
                    ("at the window's end" if now is None else "at the window's start")
                return None
            return now - (then or 0)

        d_rt = delta(s.runtime_ns, s0.runtime_ns if s0 else None, "runtime_s",
                     f"/proc/{self.pid}/task/{tid}/schedstat (run time; absent without CONFIG_SCHEDSTATS)")
        d_v = delta(s.vcsw, s0.vcsw if s0 else None, "ctx_voluntary", "voluntary_ctxt_switches")
        d_i = delta(s.ivcsw, s0.ivcsw if s0 else None, "ctx_involuntary", "nonvoluntary_ctxt_switches")
        row: dict[str, Any] = {
            "tid": tid, "name": s.name, "role": role,
            "user_s": (s.utime - (s0.utime if s0 else 0)) * tick,
            "system_s": (s.stime - (s0.stime if s0 else 0)) * tick,
            "runtime_s": d_rt / 1e9 if d_rt is not None else None,
            "ctx_voluntary": d_v, "ctx_involuntary": d_i, "new": s0 is None, "exited": exited}
        if why:
            row["null_reasons"] = why
        return row


def _sum_over(rows: list[dict[str, Any]], key: str, where: str, why: dict[str, str]) -> Any:
    """The sum of ``key`` over thread rows, or None (and ``why[where]`` naming the threads) when a thread
    lacks it: a sum over part of the threads is a different, smaller number."""
    lacking = [r for r in rows if r[key] is None]
    if lacking:
        names = ", ".join(f"{r['tid']} ({r['name']})" for r in lacking[:5]) + (" ..." if len(lacking) > 5 else "")
        own = {r["null_reasons"][key] for r in lacking if key in r.get("null_reasons", {})}
        why[where] = f"{key} unknown for {len(lacking)} of {len(rows)} threads: {names}" + \
            (f" ({own.pop()})" if len(lacking) == 1 and own else "")
        return None
    return sum(r[key] for r in rows)


# --- CPU-set mode (issue 33): the CPUs that carry the guest's I/O, measured system-wide ---------------------

#: /proc/stat's per-CPU columns, in order (proc(5)); the first ``len`` a kernel writes are read
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
#: the columns that are work (guest and guest_nice are already inside user and nice; idle and iowait are not work)
WORK_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")
#: softirqs of the storage path (block completions, the network stack of iSCSI/NVMe-TCP, tasklets): the leak's
#: ``io_softirqs``; TIMER, SCHED, RCU, HRTIMER are the CPU's own housekeeping
IO_SOFTIRQS = ("BLOCK", "IRQ_POLL", "NET_RX", "NET_TX", "TASKLET")
SCAN_INTERVAL = 1.0  # seconds between two scans of every task for ``on_set``
ON_SET_LIMIT = 25  # tasks named in ``on_set``; the rest are summed in ``on_set_rest``


def read_cpu_stat(root: str = "/") -> dict[int, dict[str, int]]:
    """Per CPU, /proc/stat's columns in clock ticks (USER_HZ), keyed by CPU number."""
    out: dict[int, dict[str, int]] = {}
    path = _proc(root, "proc/stat")
    try:
        text = _read(path)
    except OSError as exc:
        raise CollectorProblem(f"cannot read {path}: {exc.strerror}") from None
    for line in text.splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu") or words[0] == "cpu":
            continue
        try:
            cpu = int(words[0][3:])
            values = [int(w) for w in words[1:]]
        except ValueError:
            raise CollectorProblem(f"{path}: {line[:80]!r} is not a per-CPU line (cpuN and numbers)") from None
        if len(values) < 8:  # steal (2.6.11) is the last column every kernel of these machines writes
            raise CollectorProblem(f"{path}: {words[0]} has {len(values)} columns, not the 8 or more of "
                                   "user nice system idle iowait irq softirq steal")
        out[cpu] = dict(zip(STAT_FIELDS, values))
    if not out:
        raise CollectorProblem(f"{path} has no per-CPU lines (cpu0 ...)")
    return out


def read_uptime(root: str = "/") -> float | None:
    """/proc/uptime's first figure (seconds since boot, 0.01 s); None when unreadable."""
    try:
        return float(_read(_proc(root, "proc/uptime")).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_per_cpu_counts(root: str, rel: str) -> tuple[list[int], dict[str, tuple[str, list[int]]]]:
    """/proc/interrupts or /proc/softirqs: (the header's CPU numbers, {label: (description, count per column)}).
    A line with fewer counts than CPUs (``ERR:``, ``MIS:``: one system-wide count) is left out: it belongs to no
    CPU. None of it is fatal: an unreadable file gives no rows (the leak then says it was not seen)."""
    try:
        lines = _read(_proc(root, rel)).splitlines()
    except OSError:
        return [], {}
    if not lines:
        return [], {}
    try:
        cpus = [int(w[3:]) for w in lines[0].split() if w.startswith("CPU")]
    except ValueError:
        return [], {}
    rows: dict[str, tuple[str, list[int]]] = {}
    for line in lines[1:]:
        label, colon, rest = line.partition(":")
        if not colon:
            continue
        words = rest.split()
        counts: list[int] = []
        for w in words[:len(cpus)]:
            if not w.isdigit():
                break
            counts.append(int(w))
        if len(counts) < len(cpus) or not cpus:
            continue
        rows[label.strip()] = (" ".join(words[len(cpus):]), counts)
    return cpus, rows


@dataclass
class TaskSample:
    pid: int  # the thread group (process) it belongs to
    comm: str
    cpu: int | None  # the CPU it last ran on (/proc/PID/task/TID/stat field 39, "processor")
    run_s: float  # its CPU time so far: schedstat's run time (ns) where the file exists, else utime + stime


def scan_tasks(root: str = "/") -> dict[int, TaskSample]:
    """Every task (thread) of the host: tid -> where it last ran and its CPU time so far. A task that ends
    between listing and reading is left out."""
    out: dict[int, TaskSample] = {}
    proc = _proc(root, "proc")
    try:
        pids = [int(n) for n in os.listdir(proc) if n.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            tids = [int(n) for n in os.listdir(os.path.join(proc, str(pid), "task")) if n.isdigit()]
        except OSError:
            continue
        for tid in tids:
            base = os.path.join(proc, str(pid), "task", str(tid))
            try:
                text = _read(os.path.join(base, "stat"))
                lpar, rpar = text.index("("), text.rindex(")")
                rest = text[rpar + 2:].split()
                comm = text[lpar + 1:rpar]
                cpu = int(rest[36]) if len(rest) > 36 else None
                run_s = (int(rest[11]) + int(rest[12])) / CLK_TCK
            except (OSError, ValueError, IndexError):
                continue
            try:
                run_s = int(_read(os.path.join(base, "schedstat")).split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                pass
            out[tid] = TaskSample(pid, comm, cpu, run_s)
    return out


class OnSetTracker:
    """Which tasks other than the measured QEMU processes ran on the set, and how much CPU time they used there.

    Every ``interval`` seconds every task is read (:func:`scan_tasks`); the CPU time a task used between two
    scans is counted on the set when the later scan finds it last ran on a CPU of the set. Approximate by
    nature (a task that moved between the set and the rest inside one interval is counted by where it was last;
    one that started and ended between two scans is not seen), so the record says how it was made."""

    def __init__(self, cpus: set[int], exclude: set[int], root: str, interval: float = SCAN_INTERVAL) -> None:
        self.cpus, self.exclude, self.root, self.interval = cpus, exclude, root, interval
        self._last: dict[int, TaskSample] = {}
        self._on: dict[int, float] = {}  # tid -> CPU seconds seen on the set
        self._names: dict[int, tuple[int, str]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.scans = 0
        self.ready = threading.Event()  # set once the first scan (the baseline) is done

    def _scan(self) -> None:
        now = scan_tasks(self.root)
        with self._lock:
            for tid, s in now.items():
                if s.pid in self.exclude:
                    continue
                before = self._last.get(tid)
                if before is not None and s.cpu in self.cpus and s.run_s > before.run_s:
                    self._on[tid] = self._on.get(tid, 0.0) + (s.run_s - before.run_s)
                    self._names[tid] = (s.pid, s.comm)
            self._last = now
            self.scans += 1
        self.ready.set()

    def start(self) -> None:
        """The first scan runs in the tracker's thread (every task read: ~0.1 s on a loaded host), not between
        the guest's measure-start marker and its GO."""
        self._thread = threading.Thread(target=self._loop, name="on-set-scan", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        self._scan()
        while not self._stop.wait(self.interval):
            self._scan()

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._scan()
        by_pid: dict[int, dict[str, Any]] = {}
        leaders = {tid: s.comm for tid, s in self._last.items() if tid == s.pid}
        for tid, cpu_s in self._on.items():
            pid, comm = self._names[tid]
            entry = by_pid.setdefault(pid, {"pid": pid, "comm": leaders.get(pid, comm), "cpu_s": 0.0, "threads": 0})
            entry["cpu_s"] += cpu_s
            entry["threads"] += 1
        rows = sorted(by_pid.values(), key=lambda e: (-e["cpu_s"], e["pid"]))
        for r in rows:
            r["cpu_s"] = round(r["cpu_s"], 4)
        return rows

    def abort(self) -> None:
        self._stop.set()


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


@dataclass
class CpuSetCollector:
    """Measure a set of host CPUs system-wide between :meth:`start` and :meth:`stop` (issue 33, technote 004's
    scope: the CPUs that carry the guest, QEMU's threads, the kernel's I/O work and its interrupts).

    - ``perf stat -a -C SET -e context-switches,task-clock[,cycles:u,cycles:k]``: every context switch on the
      set (to and from idle included), and the cycles where the machine has the counters. perf's task-clock
      in this mode is the set's elapsed time, idle included (journaled under ``perf``, never used as work).
    - /proc/stat per CPU: user, nice, system, irq, softirq, steal (``cpu_stat``, seconds summed over the set)
      and idle, iowait, which are not work. ``cpu_total`` (the set's CPU time) is its busy time: the set's
      elapsed time (/proc/uptime) times its CPU count minus idle and iowait (the kernel measures idle periods
      exactly on a tickless kernel, while the work columns are sampled at the tick); where /proc/uptime
      cannot be read it is the work columns' sum. ``cpu_total_source`` says which.
    - ``leak``: /proc/interrupts and /proc/softirqs deltas on the CPUs outside the set, by kind, and the
      same on the set, so a reader sees the share of the I/O path's interrupts that escaped.
    - ``on_set``: the other tasks that ran on the set (:class:`OnSetTracker`).

    ``exclude`` names the measured QEMU processes (their figures are the result's ``process``); ``root`` is
    where /proc is read (a fake tree in tests and the Proxmox stand-in)."""

    cpus: list[int]
    use_perf: bool | None = None
    root: str = "/"
    exclude: tuple[int, ...] = ()
    scan_interval: float = SCAN_INTERVAL

    def __post_init__(self) -> None:
        self._perf: subprocess.Popen[str] | None = None
        self._perf_out = ""
        self._stat0: dict[int, dict[str, int]] = {}
        self._up0: float | None = None
        self._irq0: tuple[list[int], dict[str, tuple[str, list[int]]]] = ([], {})
        self._soft0: tuple[list[int], dict[str, tuple[str, list[int]]]] = ([], {})
        self._tracker: OnSetTracker | None = None
        self._t0 = 0.0
        self.cycles = False

    def start(self) -> None:
        stat = read_cpu_stat(self.root)
        missing = sorted(set(self.cpus) - set(stat))
        if not self.cpus or missing:
            raise CollectorProblem(f"CPU {_cpulist(missing) or '(none)'} of the set {_cpulist(self.cpus)} is not a "
                                   f"CPU of this host (/proc/stat has {_cpulist(stat)})")
        if self.use_perf is None:
            self.use_perf = perf_available()
        if self.use_perf:
            self.cycles = cycles_supported()
            events = ["context-switches", "task-clock"] + (["cycles:u", "cycles:k"] if self.cycles else [])
            self._perf, self._perf_out = start_perf(["-a", "-C", _cpulist(self.cpus)], events)
        self._tracker = OnSetTracker(set(self.cpus), set(self.exclude), self.root, self.scan_interval)
        self._tracker.start()
        self._irq0 = read_per_cpu_counts(self.root, "proc/interrupts")
        self._soft0 = read_per_cpu_counts(self.root, "proc/softirqs")
        self._up0 = read_uptime(self.root)
        self._stat0 = read_cpu_stat(self.root)
        self._t0 = time.monotonic()

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Until the other tasks' baseline scan is done (it runs beside the window's start); the script and the
        node's multicollector wait before they say "started", a caller that changes a fake tree must too."""
        return self._tracker is not None and self._tracker.ready.wait(timeout)

    def abort(self) -> None:
        if self._tracker is not None:
            self._tracker.abort()
        proc, self._perf = self._perf, None
        if proc is not None:
            try:
                stop_perf(proc, self._perf_out)
            except CollectorProblem:
                pass

    def stop(self) -> dict[str, Any]:
        t1 = time.monotonic()
        try:
            stat1 = read_cpu_stat(self.root)
            up1 = read_uptime(self.root)
            irq1 = read_per_cpu_counts(self.root, "proc/interrupts")
            soft1 = read_per_cpu_counts(self.root, "proc/softirqs")
            on_set = self._tracker.stop() if self._tracker is not None else []
        finally:
            proc, self._perf = self._perf, None
            perf = stop_perf(proc, self._perf_out) if proc is not None else {}
        return self._result(stat1, up1, irq1, soft1, on_set, perf, t1 - self._t0)

    def _result(self, stat1: dict[int, dict[str, int]], up1: float | None, irq1: Any, soft1: Any,
                on_set: list[dict[str, Any]], perf: dict[str, perfstat.PerfEvent], window_s: float) -> dict[str, Any]:
        tick = 1.0 / CLK_TCK
        why: dict[str, str] = {}
        cols = {k: 0.0 for k in STAT_FIELDS}
        per_cpu: dict[str, dict[str, float]] = {}
        for cpu in self.cpus:
            a, b = self._stat0.get(cpu, {}), stat1.get(cpu, {})
            row = {k: round((b[k] - a[k]) * tick, 4) for k in STAT_FIELDS if k in a and k in b}
            per_cpu[str(cpu)] = row
            for k, v in row.items():
                cols[k] += v
        work = sum(cols[k] for k in WORK_FIELDS)
        user, system = cols["user"] + cols["nice"], cols["system"] + cols["irq"] + cols["softirq"]
        busy: float | None = None
        if self._up0 is not None and up1 is not None:
            busy = max((up1 - self._up0) * len(self.cpus) - cols["idle"] - cols["iowait"], 0.0)
            time_source = ("/proc/stat: the set's elapsed time (/proc/uptime x its CPUs) minus idle and iowait "
                           "(clock ticks)")
        else:
            time_source = "/proc/stat: user + nice + system + irq + softirq + steal of the set (clock ticks)"
        cpu_time = busy if busy is not None else work
        ctx = None
        cs = perf.get("context-switches")
        if cs is not None and cs.value is not None:
            ctx = cs.value
        else:
            why["ctx_switches"] = ("perf did not run here: a CPU's context switches have no per-CPU count in /proc "
                                   "(/proc/stat's ctxt is the whole host's)" if not perf else
                                   "perf counted no context-switches on the set")
        cycles = perf_cycles(perf)
        if cycles:
            metric, unit, split = "cycles", "cycles", "perf -a -C cycles:u / cycles:k"
            total, cu_v, ck_v = cycles["user"] + cycles["kernel"], cycles["user"], cycles["kernel"]
            total_source = "perf -a -C cycles:u + cycles:k (the set, system-wide)"
        else:
            metric, unit = "cpu_time", "s"
            split = "/proc/stat user + nice / system + irq + softirq of the set (clock ticks; steal in cpu_stat)"
            total, cu_v, ck_v, total_source = cpu_time, user, system, time_source
        outside = sorted(set(stat1) - set(self.cpus))
        out: dict[str, Any] = {
            "cpu_metric": metric, "cpu_unit": unit, "cpu_total": total, "cpu_user": cu_v, "cpu_system": ck_v,
            "cpu_split": split, "cpu_total_source": total_source,
            "cpu_time_s": {"total": cpu_time, "user": user, "system": system, "steal": cols["steal"],
                           "work_ticks": work},
            "cpu_stat": {k: round(v, 4) for k, v in cols.items()}, "per_cpu": per_cpu,
            "cycles": cycles, "ctx_switches": ctx,
            "source": "perf+proc" if perf else "proc", "scope": "cpus", "cpus": _cpulist(self.cpus),
            "window_s": window_s,
            "leak": _leak(set(self.cpus), outside, self._irq0, irq1, self._soft0, soft1),
            "on_set": on_set[:ON_SET_LIMIT],
            "on_set_source": (f"every task's /proc/PID/task/TID/stat (processor) and schedstat, read every "
                              f"{self.scan_interval:g} s ({self._tracker.scans if self._tracker else 0} scans): the "
                              "CPU time a task used between two scans counts when it last ran on the set; the "
                              "measured QEMU processes are left out (their figures are under process)"),
            "perf": {k: {"value": v.value, "unit": v.unit, "status": v.status} for k, v in perf.items()},
        }
        if len(on_set) > ON_SET_LIMIT:
            rest = on_set[ON_SET_LIMIT:]
            out["on_set_rest"] = {"tasks": len(rest), "cpu_s": round(sum(r["cpu_s"] for r in rest), 4)}
        if why:
            out["null_reasons"] = dict(sorted(why.items()))
        return out


def _leak(inside: set[int], outside: list[int], irq0: Any, irq1: Any, soft0: Any, soft1: Any) -> dict[str, Any]:
    """The window's interrupts and softirqs on the CPUs outside the set and on it, by kind (only kinds that
    changed). ``io_interrupts``: the numbered (device) interrupt lines; ``io_softirqs``: :data:`IO_SOFTIRQS`."""
    out: dict[str, Any] = {"outside_cpus": _cpulist(outside)}
    for name, (c0, rows0), (c1, rows1) in (("interrupts", irq0, irq1), ("softirqs", soft0, soft1)):
        if not c1 or c0 != c1:
            out[name] = None
            out.setdefault("null_reasons", {})[name] = (f"/proc/{name} could not be read at both ends of the window"
                                                        if not c1 or not c0 else
                                                        f"/proc/{name}'s CPUs changed during the window")
            continue
        kinds: dict[str, dict[str, Any]] = {}
        io = {"outside": 0, "on_set": 0}
        for label, (desc, counts1) in rows1.items():
            before = rows0.get(label)
            counts0 = before[1] if before else [0] * len(counts1)
            d = {"outside": 0, "on_set": 0}
            for cpu, a, b in zip(c1, counts0, counts1):
                d["on_set" if cpu in inside else "outside"] += max(b - a, 0)
            if not (d["outside"] or d["on_set"]):
                continue
            if name == "interrupts":
                kinds[label] = {"name": desc, **d}
                if label.isdigit():
                    io = {k: io[k] + d[k] for k in io}
            else:
                kinds[label] = d
                if label in IO_SOFTIRQS:
                    io = {k: io[k] + d[k] for k in io}
        out[name] = kinds
        out[f"io_{name}"] = io
    return out


def with_process(cpu_set: dict[str, Any], process: dict[str, Any] | None) -> dict[str, Any]:
    """The host block of a CPU-set window: the set's figures in the usual keys, the QEMU process's (the same
    keys, as :class:`WindowCollector` gives them) under ``process``, and the process's per-thread split
    (``by_role``, ``threads``, ``pid``) where readers look for it: those are QEMU's threads, whatever the scope."""
    out = dict(cpu_set)
    out["process"] = process
    if process is not None:
        for key in ("by_role", "threads", "pid", "split_approximate"):
            if key in process:
                out[key] = process[key]
    else:
        out.setdefault("null_reasons", {})["process"] = "no QEMU process was named to measure beside the set"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Measure one process's CPU and context switches until "
                                             "a line arrives on stdin; print JSON.")
    ap.add_argument("--pid", type=int, help="the QEMU process (required without --cpus)")
    ap.add_argument("--cpus", help="a kernel CPU list (e.g. 1 or 2-3): measure these CPUs system-wide, with the "
                                   "process's figures (--pid) under 'process'")
    ap.add_argument("--root", default="/", help="where /proc is read (default /; a fake tree for tests)")
    ap.add_argument("--roles", help="JSON file mapping thread id -> role")
    ap.add_argument("--no-perf", action="store_true", help="use /proc accounting only")
    args = ap.parse_args(argv)
    if args.pid is None and not args.cpus:
        ap.error("give --pid PID, --cpus LIST, or both")
    try:
        cpus = parse_cpulist(args.cpus) if args.cpus else None
    except ValueError as exc:
        ap.error(f"--cpus: {exc}")
    roles = {}
    if args.roles:
        roles = {int(k): v for k, v in json.loads(Path(args.roles).read_text()).items()}
    use_perf = False if args.no_perf else None
    c = WindowCollector(args.pid, roles, use_perf=use_perf, root=args.root) if args.pid is not None else None
    cs = CpuSetCollector(cpus, use_perf=use_perf, root=args.root,
                         exclude=(args.pid,) if args.pid else ()) if cpus else None
    try:
        if cs is not None:  # the set's window holds the process's: set >= process by construction
            cs.start()
        try:
            if c is not None:
                c.start()
        except CollectorProblem:
            if cs is not None:
                cs.abort()
            raise
        if cs is not None:
            cs.wait_ready()
        print("started", flush=True)
        sys.stdin.readline()
        try:
            proc = c.stop() if c is not None else None
        finally:
            host = cs.stop() if cs is not None else None
        print(json.dumps(with_process(host, proc) if host is not None else proc), flush=True)
    except CollectorProblem as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
