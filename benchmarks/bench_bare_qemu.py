#!/usr/bin/env python3
"""The harness's share of the demo's I/O-path figures: a bare QEMU against the harness's own cells, side by side.

- ``bare``: this script starts QEMU itself (:class:`QemuVm`, the spec the qemu backend builds from the demo
  matrix's ``[qemu]`` values: 1 vCPU, 512 MiB, TCG, the same guest image and test disk), waits for the guest,
  places QEMU's threads as the backend does under TCG (the I/O path on CPU 1, the vCPU and this script on
  CPU 0), sends the guest the demo's fio job (randread 64k, QD 8, 32 MiB/s, 2 s warm-up + 6 s, no markers)
  and reads every QEMU thread's switches and run time from /proc every 0.1 s. The window is cut from outside:
  from 2 s after QEMU sees fio's first read, for 5.5 s; its I/Os are QEMU's own count (``query-blockstats``
  rd_operations). No runner, collector, perf, journal or VM booting ahead runs on the host.
- ``harness``: ``stormatrix run`` of the same configurations (one repeat each per block, the demo's matrix
  otherwise: ``[host] scope = "cpus"``, 2 s + 6 s), per I/O from each journal record's ``host.by_role`` and
  fio's I/Os.

Both sides classify threads alike (the collector's rule: the process's main thread is the main loop,
``CPU n/TCG`` the vCPU, ``worker`` an aio worker). Blocks alternate the order (bare first, then harness first,
...) so that the machine's drift falls on both. Per configuration it prints the main loop's, the aio workers',
the I/O path's (every thread but the vCPU) and the vCPU's switches per I/O, mean (CV) per side, and the
harness minus bare: what the harness adds to the figure the Answer page decides on.

    .venv/bin/python benchmarks/bench_bare_qemu.py [--blocks 3] [--controllers sata,virtio-blk] [--json F]

This is a benchmark, not a test: run it on a quiet machine. Measured 2026-12-04 03:06-03:11, idle 2-core machine
(load average 0.16-1.00), ``--blocks 3``; switches per I/O, mean (CV) of 3 windows each (the full table, with the
vCPU's, is in docs/demo-noise.md, "The harness's share"):

    configuration       figure       bare         harness      harness - bare
    sata native         I/O path     2.61 (4%)    2.66 (2%)    +0.05
    sata threads        I/O path     4.03 (0%)    4.02 (0%)    -0.02
    virtio-blk native   I/O path     2.96 (1%)    2.91 (0%)    -0.05
    virtio-blk threads  I/O path     5.05 (1%)    5.06 (0%)    +0.01

The harness adds -0.05 to +0.05 switches per I/O to the verdict figure, within the windows' own spread.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_cell_overhead import first_io, started, wait_for
from bench_demo_modes import per_io, read_thread, records

from stormatrix import guestimage
from stormatrix.backends.qemu.testdisks import ensure_test_disk
from stormatrix.backends.qemu.vm import VmSpec
from stormatrix.core.model import DiskConfig, Timing, Workload
from stormatrix.executors.localagent import fio_job

DEMO_MATRIX = Path(guestimage.__file__).parent / "matrices" / "demo.toml"
WORKLOAD = Workload("randread-64k-32m", "randread", 65536, 8, 1, 32.0)
RAMP_S, MEASURE_S = 2, 6
WINDOW_DELAY_S, WINDOW_S = 2.0, 5.5  # the bare window, cut from outside: after fio's warm-up, inside its run
IO_CPU, VCPU_CPU = 1, 0  # the backend's placement under TCG: the I/O path on the set, the vCPU beside the harness
ALL_CPUS = os.sched_getaffinity(0)
FIGURES = (("main-loop", "main loop"), ("aio-worker", "aio workers"), ("path", "I/O path"), ("vcpu", "vCPU"))


def role(pid: int, tid: int, comm: str) -> str:
    """The collector's rule (linux-host/collector.py), read from the thread's name."""
    if tid == pid:
        return "main-loop"
    if comm.startswith("CPU "):
        return "vcpu"
    if comm == "worker":
        return "aio-worker"
    if comm.startswith("IO "):
        return "iothread"
    return "other"


class Threads(threading.Thread):
    """Every 0.1 s: each thread of ``pid`` (comm, run ns, voluntary, involuntary), placed once when first seen."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.last: dict[int, tuple[str, int, int, int]] = {}
        self.placed: set[int] = set()
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def sample(self) -> None:
        try:
            tids = [int(x) for x in os.listdir(f"/proc/{self.pid}/task")]
        except OSError:
            return
        for tid in tids:
            row = read_thread(self.pid, tid)
            if row is None:
                continue
            with self.lock:
                self.last[tid] = row
            if tid not in self.placed:
                try:
                    os.sched_setaffinity(tid, {VCPU_CPU if row[0].startswith("CPU ") else IO_CPU})
                    self.placed.add(tid)
                except OSError:
                    pass

    def snapshot(self) -> dict[int, tuple[str, int, int, int]]:
        self.sample()
        with self.lock:
            return dict(self.last)

    def run(self) -> None:
        while not self.stop_event.wait(0.1):
            self.sample()


def bare_window(spec: VmSpec) -> dict[str, float]:
    """One bare window: switches per I/O by role (and the I/O path), from /proc and QEMU's own I/O count."""
    with started(spec) as (vm, chan, drive, t0):
        wait_for(chan, "READY", t0 + 120)
        deadline = time.monotonic() + 120  # for the job's whole run
        pid = vm.pid
        threads = Threads(pid)
        threads.start()
        try:
            time.sleep(0.5)  # every thread placed before the job starts
            before = vm.blockstats(drive).rd_operations  # the guest's own disk check
            job = fio_job(WORKLOAD, Timing(RAMP_S, MEASURE_S), "@DISK@", markers=False)
            chan.send("RUN " + base64.b64encode(job.encode()).decode())
            first_io(vm, drive, t0, before)
            time.sleep(WINDOW_DELAY_S)
            s0, io0 = threads.snapshot(), vm.blockstats(drive).rd_operations
            time.sleep(WINDOW_S)
            s1, io1 = threads.snapshot(), vm.blockstats(drive).rd_operations
            wait_for(chan, "END", deadline)
        finally:
            threads.stop_event.set()
    ios = io1 - io0
    out: dict[str, float] = {"ios": float(ios)}
    for tid, (comm, _run, vol, invol) in s1.items():
        _, _, vol0, invol0 = s0.get(tid, (comm, 0, 0, 0))  # born in the window: its whole life is in it
        r = role(pid, tid, comm)
        out[r] = out.get(r, 0.0) + (vol - vol0 + invol - invol0) / ios
    out["path"] = sum(v for k, v in out.items() if k not in ("ios", "vcpu"))
    return out


def harness_matrix(controllers: list[str]) -> str:
    """The demo matrix with these controllers, one repeat each and no extra repeats."""
    text = DEMO_MATRIX.read_text()
    text = re.sub(r"(?m)^controllers\s*=.*$", "controllers = " + json.dumps(controllers), text)
    text = re.sub(r"(?m)^repeats\s*=.*$", "repeats = 1", text)
    text = re.sub(r"(?m)^max_repeats\s*=.*$", "max_repeats = 1", text)
    return text


def harness_windows(out: Path, controllers: list[str]) -> list[tuple[tuple[str, str], dict[str, float]]]:
    out.mkdir(parents=True, exist_ok=True)
    matrix = out / "matrix.toml"
    matrix.write_text(harness_matrix(controllers))
    # the harness as `make demo` runs it: on every CPU this script was given (it places QEMU's threads itself)
    proc = subprocess.run([sys.executable, "-m", "stormatrix", "run", str(matrix), "-o", str(out / "run"),
                           "--no-progress"], capture_output=True, text=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, ALL_CPUS))
    if proc.returncode != 0:
        raise SystemExit(f"stormatrix run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    rows = []
    for rec in records(out / "run"):
        disk = rec["cell"]["disk"]
        fig = per_io(rec)
        rows.append(((disk["controller"], disk["aio"]),
                     {"ios": fig["ios"], "main-loop": fig["main-loop.ctx"], "aio-worker": fig["aio-worker.ctx"],
                      "iothread": fig["iothread.ctx"], "path": fig["path.ctx"], "vcpu": fig["vcpu.ctx"]}))
    return rows


def cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 and statistics.fmean(values) else None


def summary(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration and figure: each side's mean and CV, and harness - bare."""
    out = []
    for key in sorted({(w["controller"], w["aio"]) for w in windows}):
        row: dict[str, Any] = {"controller": key[0], "aio": key[1]}
        for side in ("bare", "harness"):
            ws = [w for w in windows if (w["controller"], w["aio"]) == key and w["side"] == side]
            row[f"{side}_n"] = len(ws)
            for fig, _ in FIGURES:
                vals = [w["figures"].get(fig, 0.0) for w in ws]
                row[f"{side}_{fig}"] = statistics.fmean(vals) if vals else None
                row[f"{side}_{fig}_cv"] = cv(vals)
        for fig, _ in FIGURES:
            b, h = row[f"bare_{fig}"], row[f"harness_{fig}"]
            row[f"diff_{fig}"] = h - b if b is not None and h is not None else None
        out.append(row)
    return out


def show(rows: list[dict[str, Any]]) -> None:
    def cell(mean: float | None, c: float | None) -> str:
        return "n/a" if mean is None else f"{mean:.2f}" + ("" if c is None else f" ({c:.0%})")

    print(f"{'configuration':<22} {'figure':<12} {'bare':>14} {'harness':>14} {'harness - bare':>15}")
    for r in rows:
        for fig, label in FIGURES:
            d = r[f"diff_{fig}"]
            name = r["controller"] + " " + r["aio"]
            print(f"{name:<22} {label:<12} {cell(r[f'bare_{fig}'], r[f'bare_{fig}_cv']):>14} "
                  f"{cell(r[f'harness_{fig}'], r[f'harness_{fig}_cv']):>14} "
                  f"{'n/a' if d is None else f'{d:+.2f}':>15}")
    print("  (switches per I/O, voluntary + involuntary; mean (CV) over the windows of each side)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=3, help="bare + harness windows per configuration (alternating)")
    ap.add_argument("--controllers", default="sata,virtio-blk")
    ap.add_argument("--out", type=Path, default=None, help="keep the harness runs here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    controllers = [c for c in args.controllers.split(",") if c]
    os.sched_setaffinity(0, {VCPU_CPU})  # this script beside the vCPU, off the I/O path's CPU
    image = guestimage.build()
    disk = ensure_test_disk(guestimage.cache_root() / "disks" / "test-256m.raw", 256)
    out = args.out or Path(tempfile.mkdtemp(prefix="smx-bare-"))
    windows: list[dict[str, Any]] = []
    load0 = os.getloadavg()[0]
    for block in range(args.blocks):
        sides = ["bare", "harness"] if block % 2 == 0 else ["harness", "bare"]
        for side in sides:
            if side == "harness":
                for (ctrl, aio), fig in harness_windows(out / f"block{block}", controllers):
                    windows.append({"block": block, "side": side, "controller": ctrl, "aio": aio, "figures": fig})
                continue
            for ctrl in controllers:
                for aio in ("native", "threads"):
                    spec = VmSpec(name=f"bare-{block}", disk=DiskConfig(ctrl, aio, False, "none"), disk_image=disk,
                                  run_dir=out / f"bare{block}", image=image, slot=0)
                    fig = bare_window(spec)
                    windows.append({"block": block, "side": side, "controller": ctrl, "aio": aio, "figures": fig})
            print(f"block {block + 1}: {side} done, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    rows = summary(windows)
    print(f"{args.blocks} blocks, load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    show(rows)
    if args.json:
        args.json.write_text(json.dumps({"windows": windows, "summary": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
