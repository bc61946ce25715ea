#!/usr/bin/env python3
"""Where the demo's noise comes from: per-role figures per I/O under one variable changed at a time.

(The measured table and the finding are in docs/demo-noise.md; this docstring keeps the table too, below.)

Each *condition* is a set of ``[qemu]`` settings (guest kernel arguments, TCG thread mode, pinning,
restore, iothread) plus a *placement*:

- ``split``: ``[host] scope = "process"`` with ``pin_threads = "1/0"`` (the vCPU alone on CPU 1; main loop,
  aio workers and the harness on CPU 0: the placement before the scope "cpus");
- ``one``: every QEMU thread on CPU 1 (the measured CPU), the harness and the VMs booting ahead on CPU 0: the
  ``[host] scope = "cpus"`` placement before the vCPUs were kept off the set under TCG, placed from outside (the
  harness under ``taskset -c 0`` with ``[host] scope = "process"``, ``pin_threads = "off"``, this script's
  sampler moving each new QEMU thread to CPU 1);
- ``iopath``: the backend's own default, ``[host] scope = "cpus"``: under TCG QEMU's I/O path (main loop,
  iothreads, aio workers) alone on the measured CPU, the vCPU (the emulated guest) beside the harness.

With ``--syscalls`` each QEMU's threads' futex, ppoll and aio syscalls are counted per sample interval
(``perf stat --per-thread -I`` on the syscall tracepoints, as root; software events, no hardware counters),
and each cell's window gets the main loop's and the vCPUs' counts per I/O beside their voluntary switches:
whether a mode is lock waits (futex) or waits for work (ppoll), and how many of its ppoll calls ended on their
timeout (``ppoll_timeout``: a QEMU timer due, e.g. an emulated guest timer) rather than on an event.

Every condition boots its guests with ``smx.stats=1``: the guest's marker (``harness/guest/smx-mark``) writes
its own ``/proc/stat``, ``/proc/interrupts`` and every process's CPU to its console before and after the
window; the sampler keeps them (``NN-cond.consoles.json``): what the guest did in the window (fio's user and
system time, its idle, the local-timer interrupts).

The conditions run in ABBA blocks (A B B A ...), each block one short ``stormatrix run`` of a small matrix
(two controllers x native/threads x ``--repeats``), so that a change of the machine's load falls on every
condition alike. Through every run a sampler reads each QEMU thread's run time (``schedstat``) and its
voluntary/involuntary switches (``status``) every ``--sample-ms`` ms: whether a mode holds for a VM's life
or flips inside a window shows in the per-interval series (summarised as the vCPU's busy fraction per
interval: its spread inside a window against its spread between windows).

Per cell it reads the journal's ``host.by_role`` and divides by the cell's I/Os (fio's total I/Os): switches
and CPU-ms per I/O of the vCPU, the main loop, the iothreads, the aio workers, and the sum of all but the
vCPU (the I/O path). Per condition and configuration it prints the mean and CV of each.

    .venv/bin/python benchmarks/bench_demo_modes.py --conditions base,idlepoll --blocks 2 --repeats 2

Measured (2026-12-03, the idle 2-CPU development machine, load average 0.8-1.7; ``--conditions iopath --once
--repeats 3 --syscalls``; I/O-path switches per I/O, each window; the rest is in docs/demo-noise.md):

  guest's fio               config               windows              guest fio CPU   main loop ppoll timeouts/IO
  sleeps or spins (before)  sata native          4.43 mean, 29 % CV   202-487 ticks   0.55-1.32
                            virtio-blk native    3.17, 3.20, 5.50     by window       0.55-1.33
                            virtio-blk threads   5.41, 3.23, 5.46
  spins (20 ms slack)       sata native          2.59, 2.60, 2.59     437-509 ticks   0.40-0.48
                            sata threads         4.04, 4.04, 4.05
                            virtio-blk native    2.88, 2.90, 2.85
                            virtio-blk threads   5.09, 5.09, 5.15

The main loop's two levels were the guest's fio: it waits out a rate gap shorter than the nanosleep
granularity it measured at its start by spinning, and a longer one by sleeping; a sleeping fio arms a guest
timer per I/O, which under TCG the main loop runs. The guest's init now gives fio a 20 ms timer slack, so it
spins every gap; before that, idle=poll, thread=single, clocksource=tsc, nohz=off and boot-/prepare-ahead off
did not remove the levels (docs/demo-noise.md, at load 7-40).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> ([qemu] settings, placement, [matrix]/[run] overrides)
CONDITIONS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "base": ({}, "split", {}),
    "one": ({}, "one", {}),
    "idlepoll": ({"guest_args": "idle=poll"}, "split", {}),
    "idlepoll-one": ({"guest_args": "idle=poll"}, "one", {}),
    "nohz-off": ({"guest_args": "nohz=off"}, "split", {}),
    "hz-periodic-one": ({"guest_args": "nohz=off"}, "one", {}),
    "single": ({"tcg_thread": "single"}, "split", {}),
    "single-one": ({"tcg_thread": "single"}, "one", {}),
    "boot": ({"restore": False}, "split", {}),
    "noahead": ({"boot_ahead": False, "prepare_ahead": False}, "split", {}),
    "noahead-one": ({"boot_ahead": False, "prepare_ahead": False}, "one", {}),
    "iothread": ({}, "split", {"iothread": True}),
    "iothread-one": ({}, "one", {"iothread": True}),
    "iopath": ({}, "iopath", {}),
    "iopath-idlepoll": ({"guest_args": "idle=poll"}, "iopath", {}),
    "iopath-iothread": ({}, "iopath", {"iothread": True}),
}

#: the syscalls counted per QEMU thread with --syscalls (perf stat tracepoints, software: no hardware counters)
SYSCALLS = ("futex", "ppoll", "io_submit", "io_getevents", "io_uring_enter", "preadv")


def host_tsc_khz() -> int:
    """The host's TSC in kHz (/proc/cpuinfo's cpu MHz where the flags say the TSC is constant): under TCG the
    guest reads the host's TSC, and given this the guest kernel does not calibrate it against an emulated PIT
    (which on a loaded host went ~10x wrong)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return 0
    if "constant_tsc" not in text:
        return 0
    for line in text.splitlines():
        if line.startswith("cpu MHz"):
            return int(float(line.split(":")[1]) * 1000)
    return 0


_TSC = f"clocksource=tsc tsc=reliable tsc_early_khz={host_tsc_khz()}"
CONDITIONS["tsc"] = ({"guest_args": _TSC}, "split", {})
CONDITIONS["tsc-one"] = ({"guest_args": _TSC}, "one", {})
CONDITIONS["iopath-tsc"] = ({"guest_args": _TSC}, "iopath", {})

ROLES = ("vcpu", "main-loop", "iothread", "aio-worker", "other")


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)


def matrix(cond: str, controllers: list[str], repeats: int, measure_s: int, ramp_s: int, rate: int,
           extra: str = "") -> str:
    qemu, placement, over = CONDITIONS[cond]
    external = placement == "one"  # the backend's own scope "cpus" is the iopath placement now (under TCG)
    pin = {"pin_threads": "1/0"} if placement == "split" else {"pin_threads": "off"} if external else {}
    qemu = {"vcpus": 1, "memory_mib": 512, "disk_size_mib": 256, **pin, **qemu}
    # the guest's own CPU accounting around each window, to its console (harness/guest/smx-mark)
    qemu["guest_args"] = (qemu.get("guest_args", "") + " smx.stats=1").strip()
    iothread = over.get("iothread", False)
    lines = ["[run]", f'name = "modes-{cond}"', 'backend = "qemu"', f"repeats = {repeats}",
             f"ramp_seconds = {ramp_s}", f"measure_seconds = {measure_s}", 'on_error = "skip"', "retries = 1",
             *[x.strip() for x in extra.split(";") if x.strip()],
             "", "[matrix]", f"controllers = {toml_value(controllers)}", 'aio = ["native", "threads"]',
             f"iothread = [{toml_value(iothread)}]", 'cache = ["none"]', "disk_slot = 0", "",
             "[[workload]]", 'name = "randread-64k"', 'rw = "randread"', 'bs = "64k"', "iodepth = 8",
             "numjobs = 1", f"rate_mib_s = {rate}", "", "[qemu]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in qemu.items()]
    if placement == "split" or external:
        lines += ["", "[host]", 'scope = "process"']
    return "\n".join(lines) + "\n"


def read_thread(pid: int, tid: int) -> tuple[str, int, int, int] | None:
    """(comm, run ns, voluntary, involuntary) of one thread, or None when it is gone."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        comm = Path(base, "comm").read_text().strip()
        run = int(Path(base, "schedstat").read_text().split()[0])
        vol = invol = 0
        for line in Path(base, "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches"):
                vol = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                invol = int(line.split()[1])
        return comm, run, vol, invol
    except (OSError, ValueError, IndexError):
        return None


class Sampler(threading.Thread):
    """Every ``period`` s: each QEMU (whose command line names ``marker``) thread's counters; with
    ``pin_one``, each new QEMU thread is moved onto CPU ``pin_one``; with ``vcpu_cpu`` too, the vCPU threads
    (:func:`is_vcpu`) go to ``vcpu_cpu`` instead (the ``iopath`` placement: the emulated guest beside the
    harness, QEMU's I/O path alone on ``pin_one``)."""

    def __init__(self, marker: str, period: float, pin_one: int | None, vcpu_cpu: int | None = None,
                 syscalls: Path | None = None) -> None:
        super().__init__(daemon=True)
        self.marker, self.period, self.pin_one, self.vcpu_cpu = marker, period, pin_one, vcpu_cpu
        self.samples: list[tuple[float, int, dict[int, tuple[str, int, int, int]]]] = []
        self.stop_event = threading.Event()
        self.pinned: set[int] = set()
        self.consoles: dict[str, tuple[str, str, str]] = {}  # key -> (console file, start|end, block)
        self.syscalls = syscalls  # a folder: one `perf stat --per-thread -I` per QEMU, its output there
        self.perfs: dict[int, tuple[subprocess.Popen[bytes], float, Path]] = {}  # pid -> (perf, start, file)

    def count_syscalls(self, pid: int) -> None:
        """Start counting QEMU ``pid``'s syscalls per thread, every ``period``, until it ends (perf stat -p
        stops when its process does); the CPU 0 (the harness's) runs it, off the measured CPU."""
        if self.syscalls is None or pid in self.perfs:
            return
        out = self.syscalls / f"perf-{pid}.csv"
        events = ",".join(f"syscalls:sys_enter_{n}" for n in SYSCALLS)
        cmd = ["taskset", "-c", "0", "perf", "stat", "--per-thread", "-x,", "-I", str(int(self.period * 1000)),
               "-e", events, "-e", "syscalls:sys_exit_ppoll", "--filter", "ret == 0",  # ppoll's timeouts
               "-p", str(pid), "-o", str(out)]
        self.perfs[pid] = (subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                           time.time(), out)

    def grab_consoles(self) -> None:
        """Keep each guest console's ``@@STAT`` blocks (a VM's console file starts afresh with every start)."""
        for f in Path(self.marker, "vm").glob("*.console.log"):
            try:
                text = f.read_text(errors="replace")
            except OSError:
                continue
            for m in re.finditer(r"@@STAT (\w+) begin\n(.*?)@@STAT \1 end", text, re.S):
                self.consoles.setdefault(f"{f.name}:{hash(m.group(2))}", (f.name, m.group(1), m.group(2)))

    def stop_perfs(self) -> None:
        for proc, _, _ in self.perfs.values():
            if proc.poll() is None:
                proc.send_signal(2)  # SIGINT: perf stat prints what it has and ends
        for proc, _, _ in self.perfs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def qemus(self) -> list[int]:
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"qemu-system") and self.marker.encode() in cmd:
                out.append(int(entry))
        return out

    def run(self) -> None:
        while not self.stop_event.is_set():
            t = time.time()
            for pid in self.qemus():
                self.count_syscalls(pid)
                try:
                    tids = [int(x) for x in os.listdir(f"/proc/{pid}/task")]
                except OSError:
                    continue
                rows = {}
                for tid in tids:
                    r = read_thread(pid, tid)
                    if r is None:
                        continue  # the thread ended
                    rows[tid] = r
                    if self.pin_one is not None and tid not in self.pinned:
                        where = self.vcpu_cpu if self.vcpu_cpu is not None and is_vcpu(r[0]) else self.pin_one
                        try:
                            os.sched_setaffinity(tid, {where})
                            self.pinned.add(tid)
                        except OSError:
                            pass
                self.samples.append((t, pid, rows))
            self.grab_consoles()
            self.stop_event.wait(max(0.0, self.period - (time.time() - t)))


def is_vcpu(comm: str) -> bool:
    """QEMU names its vCPU threads ``CPU <n>/TCG`` (``CPU <n>/KVM`` on KVM)."""
    return comm.startswith("CPU ")


def records(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    path = run_dir / "journal.ndjson"
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("type") == "cell" and rec.get("host"):
            out.append(rec)
    return out


def ios_of(rec: dict[str, Any]) -> float | None:
    fio = rec.get("fio") or {}
    total = fio.get("total") or {}
    ios = total.get("total_ios") or total.get("ios")
    if not ios:
        ios = sum(((fio.get(d) or {}).get("total_ios") or 0) for d in ("read", "write"))
    return float(ios) if ios else None


def per_io(rec: dict[str, Any]) -> dict[str, float]:
    """Switches and CPU-ms per I/O by role, the I/O path (every role but vcpu) and the process."""
    host = rec.get("host") or {}
    by_role = host.get("by_role") or {}
    ios = ios_of(rec)
    out: dict[str, float] = {}
    if not ios:
        return out
    path_ctx = path_cpu = 0.0
    for role in ROLES:
        r = by_role.get(role) or {}
        ctx = (r.get("ctx_voluntary") or 0) + (r.get("ctx_involuntary") or 0)
        cpu = (r.get("user_s") or 0) + (r.get("system_s") or 0)
        out[f"{role}.vol"] = (r.get("ctx_voluntary") or 0) / ios
        out[f"{role}.ctx"] = ctx / ios
        out[f"{role}.cpu"] = cpu * 1000 / ios
        if role != "vcpu":
            path_ctx += ctx
            path_cpu += cpu
    out["path.ctx"] = path_ctx / ios
    out["path.cpu"] = path_cpu * 1000 / ios
    if host.get("ctx_switches") is not None:
        out["proc.ctx"] = host["ctx_switches"] / ios
    if host.get("cpu_total") is not None:
        out["proc.cpu"] = host["cpu_total"] * 1000 / ios
    out["ios"] = ios
    return out


def perf_series(path: Path) -> list[tuple[float, int, str, str, float]]:
    """``perf stat --per-thread -I -x,`` lines: (seconds since its start, tid, comm, syscall, count)."""
    out = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        f = line.split(",")
        if len(f) < 5 or not f[0].strip() or f[0].lstrip().startswith("#"):
            continue
        try:
            t = float(f[0])
            comm, _, tid = f[1].rpartition("-")
            count = float(f[2]) if f[2] not in ("<not counted>", "<not supported>") else 0.0
        except ValueError:
            continue
        name = "ppoll_timeout" if f[4] == "syscalls:sys_exit_ppoll" else f[4].removeprefix("syscalls:sys_enter_")
        out.append((t, int(tid), comm, name, count))
    return out


def guest_windows(blocks: list[tuple[str, str, str]]) -> list[dict[str, float]]:
    """Each window's guest accounting from its console's start and end blocks (in the order they were kept): the
    CPU ticks of its busiest process (fio), the guest's idle share, its local-timer interrupts and switches."""
    def parse(text: str) -> tuple[list[int], dict[str, int], int]:
        cpu, procs, loc = [0] * 7, {}, 0
        for line in text.splitlines():
            f = line.split()
            if f and f[0] == "cpu":
                cpu = [int(x) for x in f[1:8]]
            elif f and f[0] == "ctxt":
                procs["@ctxt"] = int(f[1])
            elif f and f[0] == "LOC:":
                loc = int(f[1])
            elif f and f[0] == "P" and ") " in line:
                pid, rest = line[2:].split(" ", 1)[0], line.rsplit(") ", 1)[1].split()
                procs[pid] = int(rest[11]) + int(rest[12])  # utime + stime (fields 14 and 15)
        return cpu, procs, loc
    out, start = [], {}
    for name, kind, text in blocks:
        if kind == "start":
            start[name] = parse(text)
        elif name in start:
            (c0, p0, l0), (c1, p1, l1) = start.pop(name), parse(text)
            ticks = [b - a for a, b in zip(c0, c1)]
            busiest = max((v - p0.get(k, 0) for k, v in p1.items() if k != "@ctxt"), default=0)
            out.append({"fio_ticks": busiest, "idle_pct": 100 * ticks[3] / (sum(ticks) or 1),
                        "timer_irqs": l1 - l0, "switches": p1.get("@ctxt", 0) - p0.get("@ctxt", 0)})
    return out


def window_syscalls(sampler: Sampler, rec: dict[str, Any]) -> dict[str, float]:
    """Per I/O: the main loop's and the vCPUs' syscalls (``main-loop.futex``, ``vcpu.futex``, ...) in the cell's
    window (the perf intervals that end inside it), from the perf stat the sampler ran for its QEMU."""
    host, times = rec.get("host") or {}, rec.get("times") or {}
    pid, ios = host.get("pid"), ios_of(rec)
    if not pid or not ios or pid not in sampler.perfs:
        return {}
    try:
        start = datetime.fromisoformat(times["measure_start"]).timestamp()
        end = datetime.fromisoformat(times["measure_end"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return {}
    _, t0, path = sampler.perfs[pid]
    sums: dict[str, float] = {}
    for t, tid, comm, name, count in perf_series(path):
        if not start + sampler.period <= t0 + t <= end:  # the interval lies inside the window
            continue
        role = "main-loop" if tid == pid else "vcpu" if is_vcpu(comm) else "worker" if comm == "worker" else None
        if role:
            sums[f"{role}.{name}"] = sums.get(f"{role}.{name}", 0.0) + count
    return {k: v / ios for k, v in sums.items()}


def cv(values: list[float]) -> float | None:
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / abs(statistics.fmean(values)) * 100


def window_modes(sampler: Sampler, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: the vCPU's busy fraction per sample interval inside its window (mean, sd) — does it flip
    inside the window?"""
    out = []
    for rec in recs:
        times = rec.get("times") or {}
        try:
            start = datetime.fromisoformat(times["measure_start"]).timestamp()
            end = datetime.fromisoformat(times["measure_end"]).timestamp()
        except (KeyError, TypeError, ValueError):
            continue
        pid = (rec.get("host") or {}).get("pid")
        if not pid:
            continue
        series = [(t, rows) for t, p, rows in sampler.samples if p == pid and start <= t <= end]
        fracs = []
        for (t0, a), (t1, b) in zip(series, series[1:]):
            for tid, row in b.items():
                if is_vcpu(row[0]) and tid in a:
                    fracs.append((row[1] - a[tid][1]) / 1e9 / (t1 - t0))
        if fracs:
            out.append({"fracs": fracs})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conditions", default="base,one")
    ap.add_argument("--blocks", type=int, default=1, help="ABBA blocks (each runs every condition twice)")
    ap.add_argument("--controllers", default="virtio-blk,sata")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--measure-seconds", type=int, default=6)
    ap.add_argument("--ramp-seconds", type=int, default=2)
    ap.add_argument("--rate", type=int, default=32)
    ap.add_argument("--sample-ms", type=int, default=200)
    ap.add_argument("--run-extra", default="", help="more [run] lines, ';'-separated, e.g. "
                    "'max_repeats = 5; cv_limit_pct = 5; time_budget_minutes = 8.5' (the demo's extra repeats)")
    ap.add_argument("--syscalls", action="store_true", help="count each QEMU thread's futex, ppoll and aio "
                    "syscalls per window (perf stat tracepoints, as root): whether a mode is lock waits")
    ap.add_argument("--once", action="store_true", help="each condition once, in the order given (no ABBA)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    conds = args.conditions.split(",")
    for c in conds:
        if c not in CONDITIONS:
            ap.error(f"unknown condition {c!r}: one of {', '.join(CONDITIONS)}")
    order: list[str] = []
    for _ in range(args.blocks):
        order += conds if args.once else conds + conds[::-1]
    out = args.out or Path(tempfile.mkdtemp(prefix="smx-modes-"))
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    inside: dict[str, list[float]] = {}
    exe = str(Path(sys.executable).parent / "stormatrix")
    for i, cond in enumerate(order):
        run_dir = out / f"{i:02d}-{cond}"
        mfile = out / f"{i:02d}-{cond}.toml"
        mfile.write_text(matrix(cond, args.controllers.split(","), args.repeats, args.measure_seconds,
                                args.ramp_seconds, args.rate, args.run_extra))
        one = CONDITIONS[cond][1] == "one"  # placed from outside: every QEMU thread on CPU 1
        sampler = Sampler(str(run_dir), args.sample_ms / 1000, 1 if one else None, None,
                          syscalls=out if args.syscalls else None)
        sampler.start()
        cmd = ([*(["taskset", "-c", "0"] if one else []), exe, "run", "--no-progress", "-o", str(run_dir),
                str(mfile)])
        t0 = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sampler.stop_event.set()
        sampler.join()
        sampler.stop_perfs()
        load = os.getloadavg()[0]
        with open(out / f"{i:02d}-{cond}.samples.ndjson", "w") as fh:  # the raw series, for a closer look
            for t, pid, rows in sampler.samples:
                fh.write(json.dumps({"t": t, "pid": pid, "threads": {str(k): v for k, v in rows.items()}}) + "\n")
        with open(out / f"{i:02d}-{cond}.consoles.json", "w") as fh:
            json.dump(list(sampler.consoles.values()), fh)
        for g in guest_windows(list(sampler.consoles.values())):  # what the guest did, window by window
            print(f"    guest: fio {g['fio_ticks']} ticks, idle {g['idle_pct']:.0f} %, {g['timer_irqs']} timer "
                  f"interrupts, {g['switches']} switches", flush=True)
        print(f"[{i}] {cond}: rc {proc.returncode}, {time.monotonic() - t0:.0f} s, load {load:.1f}", flush=True)
        if proc.returncode not in (0, 1):
            print(proc.stderr[-2000:], file=sys.stderr)
        recs = records(run_dir)
        for rec in recs:
            disk = (rec.get("cell") or {}).get("disk") or {}
            key = f"{disk.get('controller')}/{disk.get('aio')}"
            results.setdefault(cond, {}).setdefault(key, []).append({**per_io(rec), **window_syscalls(sampler, rec)})
        if args.syscalls:  # per cell: does a mode of the main loop's switches go with its lock waits?
            for rec in recs:
                disk = (rec.get("cell") or {}).get("disk") or {}
                r = {**per_io(rec), **window_syscalls(sampler, rec)}
                print(f"    {disk.get('controller')}/{disk.get('aio')}: " + "  ".join(
                    f"{k} {r[k]:.2f}" for k in ("main-loop.vol", "main-loop.futex", "main-loop.ppoll", "main-loop.ppoll_timeout", "vcpu.vol",
                                                "vcpu.futex", "path.ctx") if k in r), flush=True)
        for m in window_modes(sampler, recs):
            f = m["fracs"]
            inside.setdefault(cond, []).append(statistics.pstdev(f) if len(f) > 1 else 0.0)
            inside.setdefault(cond + ":mean", []).append(statistics.fmean(f))
    figures = ["vcpu.ctx", "vcpu.cpu", "main-loop.ctx", "main-loop.cpu", "iothread.ctx", "aio-worker.ctx",
               "aio-worker.cpu", "path.ctx", "path.cpu", "proc.ctx", "proc.cpu"]
    if args.syscalls:
        figures += ["main-loop.vol", "main-loop.futex", "main-loop.ppoll", "main-loop.ppoll_timeout", "vcpu.vol",
                    "vcpu.futex"]
    print(f"\nuptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"{'condition':<16}{'config':<20}{'n':>3} " + " ".join(f"{f:>15}" for f in figures))
    table: dict[str, Any] = {}
    for cond in conds:
        for key, rows in sorted(results.get(cond, {}).items()):
            cells = []
            for f in figures:
                vals = [r[f] for r in rows if f in r]
                m = statistics.fmean(vals) if vals else float("nan")
                c = cv(vals)
                cells.append(f"{m:8.3f} {('%4.0f%%' % c) if c is not None else '  n/a'}")
                table.setdefault(cond, {}).setdefault(key, {})[f] = {"mean": m, "cv_pct": c, "values": vals}
            print(f"{cond:<16}{key:<20}{len(rows):>3} " + " ".join(f"{x:>15}" for x in cells))
        if inside.get(cond):
            print(f"  {cond}: vCPU busy fraction per {args.sample_ms} ms inside a window: sd within windows "
                  f"{statistics.fmean(inside[cond]):.3f}; window means {min(inside[cond + ':mean']):.2f}-"
                  f"{max(inside[cond + ':mean']):.2f}")
    if args.json:
        args.json.write_text(json.dumps({"table": table, "inside": inside, "order": order}, indent=1))
    print(f"runs kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
