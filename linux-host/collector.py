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

This module holds the one-process window (:class:`WindowCollector`) and the command line; the /proc readers
are ``procfs.py``, the ``perf stat`` runner ``perfrun.py``, the CPU-set mode (``--cpus``) ``cpuset.py``, all
next to it and copied to a node with it.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # imported as stormatrix.host.collector, or run as a script next to its siblings (on a node)
    from . import perfstat
    from .cpulist import parse_cpulist
    from .cpuset import CpuSetCollector, with_process
    from .perfrun import cycles_supported, perf_available, perf_cycles, start_perf
    from .procfs import CLK_TCK, CollectorProblem, ThreadSample, process_cpu_ticks, sample_process
except ImportError:  # pragma: no cover - the script case is exercised through ssh
    # the same modules, found next to this file on a node (mypy checks the package, where they are relative)
    import perfstat  # type: ignore[import,no-redef]
    from cpulist import parse_cpulist  # type: ignore[import,no-redef]
    from cpuset import CpuSetCollector, with_process  # type: ignore[import,no-redef]
    from perfrun import cycles_supported, perf_available, perf_cycles, start_perf  # type: ignore[import,no-redef]
    from procfs import (CLK_TCK, CollectorProblem, ThreadSample,  # type: ignore[import,no-redef]
                        process_cpu_ticks, sample_process)

SPLIT_TOLERANCE = 0.03  # user + system vs task-clock: beyond this the record says why they differ


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
