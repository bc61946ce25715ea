"""The host collector's CPU-set mode (issue 33): the CPUs that carry the guest's I/O, measured system-wide
(:class:`CpuSetCollector`), the other tasks that ran on them (:class:`OnSetTracker`), the interrupts and
softirqs that escaped them (the ``leak``), and the host block that puts a QEMU process's figures beside the
set's (:func:`with_process`).

Standard library only (copied to a Proxmox node with the rest of ``linux-host/``); ``collector.py --cpus``
and ``multicollector.py`` run it there.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

try:  # imported as stormatrix.host.cpuset, or run as a script next to its siblings (on a node)
    from . import perfstat
    from .cpulist import format_cpulist as _cpulist
    from .perfrun import cycles_supported, perf_available, perf_cycles, start_perf, stop_perf
    from .procfs import (CLK_TCK, STAT_FIELDS, CollectorProblem, TaskSample, read_cpu_stat, read_per_cpu_counts,
                         read_uptime, scan_tasks)
except ImportError:  # pragma: no cover - the script case is exercised through ssh
    # the same modules, found next to this file on a node (mypy checks the package, where they are relative)
    import perfstat  # type: ignore[import,no-redef]
    from cpulist import format_cpulist as _cpulist  # type: ignore[import,no-redef]
    from perfrun import (cycles_supported, perf_available, perf_cycles,  # type: ignore[import,no-redef]
                         start_perf, stop_perf)
    from procfs import (CLK_TCK, STAT_FIELDS, CollectorProblem,  # type: ignore[import,no-redef]
                        TaskSample, read_cpu_stat, read_per_cpu_counts, read_uptime, scan_tasks)

#: the columns that are work (guest and guest_nice are already inside user and nice; idle and iowait are not work)
WORK_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")
#: softirqs of the storage path (block completions, the network stack of iSCSI/NVMe-TCP, tasklets): the leak's
#: ``io_softirqs``; TIMER, SCHED, RCU, HRTIMER are the CPU's own housekeeping
IO_SOFTIRQS = ("BLOCK", "IRQ_POLL", "NET_RX", "NET_TX", "TASKLET")
SCAN_INTERVAL = 1.0  # seconds between two scans of every task for ``on_set``
ON_SET_LIMIT = 25  # tasks named in ``on_set``; the rest are summed in ``on_set_rest``


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
