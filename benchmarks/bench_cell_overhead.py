#!/usr/bin/env python3
"""The harness's start-up and overhead goals, measured side by side in one run (ratios, not absolute timings,
because these machines are shared and noisy):

1. per-cell overhead (QEMU start -> fio running in the guest, i.e. its first I/O reaching QEMU's
   accounting of the test disk) versus a bare boot of the same guest image with the same devices
   that runs fio itself, without the harness (no agent handshake, no disk check, no job transfer:
   the guest's init starts fio the moment the disk is there), goal <= 1.15x. What the harness adds
   is the difference. Also shown: the boot to init alone (no drivers, no fio), for scale;
2. guest boot time (QEMU start -> guest ready with its test disk), goal <= 8 s under emulation;
3. matrix wall time versus the sum of warm-up + measurement time, goal overhead <= 10 %, with the
   next VM booting ahead (the default) and, side by side, without (``[qemu] boot_ahead = false``).

The bare boots and the cell starts alternate, so both see the same machine load; the two matrix
runs follow each other (run it on a quiet machine: other QEMU processes change both).

    .venv/bin/python benchmarks/bench_cell_overhead.py [--samples 3] [--skip-matrix] [--skip-serial]
        [--matrix M.toml]   # default: the make-demo matrix (15 cells; both runs take ~10 minutes)

``--breakdown`` instead splits each cell's wall time into its stages (the runner's timeline) and gives the
matrix overhead (span - sum(warm-up + window)) / sum(warm-up + window), issue 25's goal <= 5 %. The
comparison for ``[qemu] prepare_ahead`` (fio's jobs set up before they are needed: the next configuration's
first job sent ahead to its VM, held at a warm-up gate; the measurement job set up during the warm-up), side
by side in one invocation, every VM restored from a saved state (``--prime`` saves them first, untimed):

    .venv/bin/python benchmarks/bench_cell_overhead.py --breakdown --prime --compare prepare_ahead=false,true \
        --repeats 1        # the demo matrix, 10 cells of 3 s + 8 s; ~3 runs of 2-3 minutes

Measured on the shared 2-core machine (TCG), three invocations, load average at the end of each run (the
last one the quietest, ``--compare prepare_ahead=false,true``):

    | stage (median per cell; in all)    | off, 6.6 | on, 3.2 | off, 3.3 | on, 12.9 | off, 3.0 | on, 2.7 |
    | fio setup (job sent -> warm-up I/O) | 1.105 s  | 0.014 s | 0.395 s  | 0.036 s  | 0.409 s  | 0.013 s |
    | warm-up beyond its 3 s             | +0.44 s  | +0.04 s | +0.34 s  | +0.16 s  | +0.31 s  | +0.03 s |
    | window opening (in all)            | 6.3 s    | 3.9 s   | 0.1 s    | 26.9 s   | 0.1 s    | 0.7 s   |
    | window (8 s nominal)               | 8.43 s   | 8.26 s  | 8.18 s   | 8.29 s   | 8.14 s   | 8.15 s  |
    | first job sent ahead               | 0 of 9   | 8 of 9  | 0 of 9   | 8 of 9   | 0 of 9   | 8 of 9  |
    | matrix overhead                    | 28.4 %   | 13.8 %  | 12.9 %   | 38.0 %   | 10.9 %   | 5.3 %   |

    On the idle machine after CI (load average ~1; the collector probing perf once per process), twice:
    off 7.7 % / on 3.1 % and off 7.7 % / on 2.9 % (span 118.5 s / 113.4 s and 113.1 s for 110 s of warm-up
    + window): the goal is met on a quiet host.

The load moved under both invocations (other jobs' benchmarks and tests): compare the stages, not the
totals across loads. At load 13 the windows waited for the VMs after next to finish restoring (a window
opens only when no restore or save runs): 26.9 s in all.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from stormatrix import guestimage
from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.backends.qemu.testdisks import ensure_test_disk
from stormatrix.backends.qemu.vm import QemuVm, VmSpec
from stormatrix.executors.localagent import AgentChannel, fio_job, parse_event
from stormatrix.core.model import DiskConfig, Timing, Workload

DEMO_MATRIX = Path(guestimage.__file__).parent / "matrices" / "demo.toml"


def wait_for(chan: AgentChannel, kind: str, deadline: float) -> dict[str, str]:
    while True:
        ev = parse_event(chan.readline(deadline))
        if ev and ev[0] == kind:
            return ev[2]


def first_io(vm: QemuVm, drive: str, t0: float, after: int = 0) -> float:
    """Seconds from t0 until QEMU has seen a read on the test disk beyond ``after``."""
    while vm.blockstats(drive).rd_operations <= after:
        if time.monotonic() - t0 > 120:
            raise RuntimeError("fio never issued I/O")
        time.sleep(0.005)
    return time.monotonic() - t0


@contextmanager
def started(spec: VmSpec) -> Iterator[tuple[QemuVm, AgentChannel, str, float]]:
    """A VM started now (t0) with its agent channel connected; stopped afterwards."""
    vm = QemuVm(spec)
    t0 = time.monotonic()
    vm.start()
    chan = AgentChannel(str(vm.agent_path))
    try:
        chan.connect(t0 + 30)
        yield vm, chan, f"drive-{spec.disk.bus}{spec.slot}", t0
    finally:
        chan.close()
        vm.stop()


def bare_boot(spec: VmSpec) -> float:
    """QEMU start -> the guest's init runs (kernel only: no drivers, no fio)."""
    with started(replace(spec, mode="bare")) as (_vm, chan, _drive, t0):
        wait_for(chan, "BOOTED", t0 + 120)
        return time.monotonic() - t0


def bare_fio(spec: VmSpec) -> float:
    """QEMU start -> first I/O of a fio the guest starts by itself."""
    with started(replace(spec, mode="bare-fio")) as (vm, chan, drive, t0):
        # said just before fio starts (fio then needs ~0.4 s to load); reads before it are the
        # kernel's own partition scan of the new disk, not fio's
        wait_for(chan, "BOOTED", t0 + 120)
        return first_io(vm, drive, t0, vm.blockstats(drive).rd_operations)


def cell_start(spec: VmSpec) -> tuple[float, float]:
    """(QEMU start -> guest ready, QEMU start -> fio's first I/O seen by QEMU)."""
    with started(spec) as (vm, chan, drive, t0):
        wait_for(chan, "READY", t0 + 120)
        ready = time.monotonic() - t0
        before = vm.blockstats(drive).rd_operations  # the guest's own disk check
        job = fio_job(Workload("b", "randread", 65536, 8), Timing(1, 1), "@DISK@")
        chan.send("RUN " + base64.b64encode(job.encode()).decode())
        running = first_io(vm, drive, t0, before)
        wait_for(chan, "END", t0 + 120)
        return ready, running


#: (name, from mark, to mark) of the runner's timeline; "sent" is the GO at the cell's start for a job sent ahead
STAGES = (("start or resume", "apply", "applied"), ("ready", "applied", "ready"), ("job sent", "ready", "sent"),
          ("fio setup (sent -> warm-up I/O)", "sent", "warmup_start"),
          ("warm-up (I/O -> measure marker)", "warmup_start", "measure_marker"),
          ("window opening", "measure_marker", "measure_start"), ("window", "measure_start", "measure_end"),
          ("  of it: collectors start", "measure_start", "go"),
          ("result back", "measure_end", "result"), ("cross-check + record", "result", "record"),
          ("journal", "record", "journaled"), ("stop", "journaled", "stopped"))


def with_settings(matrix_text: str, section: str, settings: dict[str, str]) -> str:
    """The matrix with ``settings`` (key -> TOML value) set in ``[section]``, replacing what it had."""
    text = matrix_text
    for key in settings:
        text = re.sub(rf"(?m)^{key}\s*=.*$", "", text)
    lines = "\n".join(f"{k} = {v}" for k, v in settings.items())
    if re.search(rf"(?m)^\[{section}\]", text):
        return re.sub(rf"(?m)^\[{section}\]\s*$", f"[{section}]\n{lines}", text, count=1)
    return text + f"\n[{section}]\n{lines}\n"


def run_matrix(workdir: Path, matrix_text: str, tag: str) -> tuple[Any, dict[str, Any], float]:
    """A whole run of the matrix through the runner: (runner, summary, wall seconds)."""
    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import load_spec
    from stormatrix.spec import check_guest_backend

    matrix = workdir / f"m-{tag}.toml"
    matrix.write_text(matrix_text)
    spec = load_spec(matrix)
    check_guest_backend(spec)
    runner = Runner(spec, workdir / f"run-{tag}", RunOptions(progress=False))
    t0 = time.monotonic()
    summary = runner.run()
    return runner, summary, time.monotonic() - t0


def breakdown(runner: Any, ramp_s: float, measure_s: float) -> dict[str, Any]:
    """Per stage, the median and total seconds over the measured cells; the matrix overhead
    (span - sum(warm-up + window)) / sum(warm-up + window), the span from the first cell's start to the last
    one's stop; and the gap between one cell's stop and the next one's start."""
    cells = [m for k, m in runner.timeline.items() if k in set(runner.summary.measured_keys) and "record" in m]
    cells.sort(key=lambda m: m["apply"] if "apply" in m else m["sent"])
    stages: dict[str, dict[str, float]] = {}
    for name, a, b in STAGES:
        vals = [m[b] - m[a] for m in cells if a in m and b in m]
        if vals:
            stages[name] = {"median_s": statistics.median(vals), "total_s": sum(vals), "cells": len(vals)}
    starts = [m.get("apply", m.get("sent", 0.0)) for m in cells]
    ends = [m.get("stopped", m.get("journaled", 0.0)) for m in cells]
    gaps = [s - e for e, s in zip(ends, starts[1:])]
    if gaps:
        stages["between cells"] = {"median_s": statistics.median(gaps), "total_s": sum(gaps), "cells": len(gaps)}
    # what the next cell waits for after a window closes, whatever runs in parallel (with [qemu] pipeline the
    # previous cell's result, record, journal and stop run after the next job was sent): the critical path
    nxt = [b["sent"] - a["measure_end"] for a, b in zip(cells, cells[1:]) if "sent" in b and "measure_end" in a]
    if nxt:
        stages["window closed -> next job sent"] = {"median_s": statistics.median(nxt), "total_s": sum(nxt),
                                                   "cells": len(nxt)}
    active = len(cells) * (ramp_s + measure_s)
    span = max(ends) - min(starts) if cells else 0.0
    return {"cells": len(cells), "span_s": span, "active_s": active,
            "overhead_pct": (span - active) / active * 100 if active else float("nan"), "stages": stages}


def print_breakdown(title: str, b: dict[str, Any], ramp_s: float) -> None:
    print(f"{title}: {b['cells']} cells, span {b['span_s']:.1f} s vs {b['active_s']:.0f} s of warm-up + window: "
          f"matrix overhead {b['overhead_pct']:.1f} %  goal <= 5 %  {'OK' if b['overhead_pct'] <= 5 else 'MISSED'}")
    for name, st in b["stages"].items():
        extra = (f"  ({st['median_s'] - ramp_s:+.2f} s beyond the {ramp_s:g} s warm-up)" if name.startswith("warm-up")
                 else "")
        print(f"    {name:<31} median {st['median_s']:7.3f} s   total {st['total_s']:7.1f} s{extra}")


def matrix_overhead(workdir: Path, matrix_text: str, boot_ahead: bool) -> tuple[float, float, int]:
    """Wall time of a whole `stormatrix run` of the matrix, against its cells' warm-up + measure time."""
    import tomllib

    from stormatrix.commands.run import execute

    tag = "ahead" if boot_ahead else "serial"
    text = with_settings(matrix_text, "qemu", {"boot_ahead": "true" if boot_ahead else "false"})
    matrix = workdir / f"m-{tag}.toml"
    matrix.write_text(text)
    run = tomllib.loads(text)["run"]
    t0 = time.monotonic()
    summary = execute(matrix, workdir / f"run-{tag}", progress=False)
    wall = time.monotonic() - t0
    n = summary.measured
    return wall, n * (run.get("ramp_seconds", 0) + run["measure_seconds"]), n


def breakdown_main(args: argparse.Namespace) -> int:
    """``--breakdown``: the matrix run twice, one setting each way, each cell's wall time in its stages."""
    import tomllib

    text = args.matrix.read_text()
    if args.repeats:
        text = with_settings(text, "run", {"repeats": str(args.repeats), "max_repeats": "0"})
    run = tomllib.loads(text)["run"]
    ramp_s, measure_s = float(run.get("ramp_seconds", 5)), float(run.get("measure_seconds", 10))
    guestimage.build()
    results = {}
    with tempfile.TemporaryDirectory(prefix="stormatrix-bench-") as tmp:
        key, _, given = (args.compare or "").partition("=")
        values = given.split(",") if given else ["false", "true"]
        runs: list[tuple[str, dict[str, str]]] = [(f"{key}={v}", {key: v}) for v in values] if key else [("now", {})]
        if args.baseline:  # first the baseline's [qemu] settings, then the matrix as configured
            runs = [("baseline", dict(kv.split("=", 1) for kv in args.baseline.split())), ("now", {})]
        if args.restore:
            # the saved states in a folder of this benchmark's own: the second run starts with none (its VMs
            # booting ahead save them), the third finds them all (as a user's second run does)
            states = Path(tmp) / "states"
            QemuBackend.states_root = staticmethod(lambda: states)  # type: ignore[method-assign]
            runs = [("restore off", {"restore": "false"}), ("restore on, no saved states yet", {"restore": "true"}),
                    ("restore on, states saved by the run before", {"restore": "true"})]
        if args.prime:  # every configuration's booted state saved before anything is timed
            run_matrix(Path(tmp), with_settings(text, "qemu", {"restore": "true"}), "prime")
        for i, (tag, settings) in enumerate(runs, 1):
            if sum(t == tag for t, _ in runs) > 1:  # a value given twice (false,true,false,true): one run each
                tag = f"{tag} #{sum(t.startswith(tag) for t in results) + 1}"
            mtext = with_settings(text, "qemu", settings) if settings else text
            runner, _summary, wall = run_matrix(Path(tmp), mtext, f"{i}-{re.sub(r'[^A-Za-z0-9]+', '-', tag)}")
            b = breakdown(runner, ramp_s, measure_s)
            b["wall_s"] = wall
            b["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
            b["vm_starts"] = vm_starts(runner)
            results[tag] = b
            label = ", ".join(f"{k} = {v}" for k, v in settings.items()) or "as configured"
            print_breakdown(f"[{tag}] {label} (load average {' '.join(b['loadavg'])})", b, ramp_s)
            print(f"    VM starts: {', '.join(f'{n} {how}' for how, n in b['vm_starts'].items())}")
    if len(results) > 1:
        print("matrix overhead: " + "; ".join(f"{tag}: {b['overhead_pct']:.1f} %" for tag, b in results.items()))
    print(json.dumps(results), file=sys.stderr)
    return 0


def vm_starts(runner: Any) -> dict[str, int]:
    """How the run's VMs started (the cell records' ``times.vm_start``): booted, restored, states saved."""
    out = {"booted": 0, "restored": 0, "saved a state": 0, "first job sent ahead": 0}
    for rec in runner.journal.records():
        times = (rec.get("times") or {}) if rec.get("type") == "cell" else {}
        how = times.get("vm_start")
        if how:
            out["restored" if how["how"] == "restore" else "booted"] += 1
            out["saved a state"] += 1 if how.get("saved") else 0
        out["first job sent ahead"] += 1 if times.get("job_sent_ahead") else 0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="The harness's start-up and overhead goals (cell start-up vs bare boot, "
                                 "boot time, matrix overhead), measured side by side in one run.")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--skip-matrix", action="store_true")
    ap.add_argument("--matrix", type=Path, default=DEMO_MATRIX,
                    help="matrix for the wall-time measurement (default: the `make demo` matrix, 15 cells)")
    ap.add_argument("--skip-serial", action="store_true",
                    help="do not also run the matrix with boot_ahead = false for comparison")
    ap.add_argument("--breakdown", action="store_true",
                    help="instead: each cell's wall time in its stages (start or resume, ready, job sent, warm-up, "
                         "window, result back, cross-check, journal, stop) and the matrix overhead")
    ap.add_argument("--compare", metavar="QEMU_KEY[=V1,V2,...]",
                    help="with --breakdown: run the matrix once per value of [qemu] QEMU_KEY (default: false, then "
                         "true), side by side, e.g. --compare boot_ahead_depth=1,2")
    ap.add_argument("--baseline", metavar="'KEY=V KEY=V'",
                    help="with --breakdown: run the matrix first with these [qemu] settings, then as configured, e.g. "
                         "--baseline 'boot_ahead_depth=1 pipeline=false' (the harness before two cells in flight)")
    ap.add_argument("--restore", action="store_true",
                    help="with --breakdown: run the matrix three times, [qemu] restore off, then on with no saved "
                         "states (the VMs booting ahead save them), then on with the states the run before saved "
                         "(kept in a temporary folder, not the cache's)")
    ap.add_argument("--prime", action="store_true",
                    help="with --breakdown: first run the matrix once, untimed, so that every configuration's booted "
                         "state is saved (a new guest image has none) and the timed runs all restore")
    ap.add_argument("--repeats", type=int, default=0,
                    help="with --breakdown: override [run] repeats (and no extra repeats), e.g. 1 for 10 cells")
    args = ap.parse_args()
    if args.breakdown:
        return breakdown_main(args)
    image = guestimage.build()  # built before timing anything
    disk = ensure_test_disk(guestimage.cache_root() / "disks" / "test-256m.raw", 256)
    with tempfile.TemporaryDirectory(prefix="stormatrix-bench-") as tmp:
        spec = VmSpec(name="bench", disk=DiskConfig("virtio-scsi-single", "native", False, "none"),
                      disk_image=disk, run_dir=Path(tmp) / "vm", image=image, slot=0)
        bare, barefio, ready, running = [], [], [], []
        for _ in range(args.samples):
            bare.append(bare_boot(spec))
            barefio.append(bare_fio(spec))
            r, f = cell_start(spec)
            ready.append(r)
            running.append(f)
        results = {
            "bare_boot_s": statistics.median(bare), "bare_fio_s": statistics.median(barefio),
            "guest_ready_s": statistics.median(ready), "fio_running_s": statistics.median(running),
            "samples": {"bare": bare, "bare_fio": barefio, "ready": ready, "fio_running": running},
        }
        results["cell_vs_bare_ratio"] = results["fio_running_s"] / results["bare_fio_s"]
        results["cell_vs_init_ratio"] = results["fio_running_s"] / results["bare_boot_s"]
        if not args.skip_matrix:
            matrix_text = args.matrix.read_text()
            for boot_ahead in (True,) if args.skip_serial else (True, False):
                wall, active, n = matrix_overhead(Path(tmp), matrix_text, boot_ahead)
                tag = "" if boot_ahead else "_serial"
                results.update({f"matrix_wall_s{tag}": wall, f"matrix_ramp_measure_s{tag}": active,
                                f"matrix_cells{tag}": n, f"matrix_overhead_pct{tag}": (wall / active - 1) * 100})
    print(f"bare boot (QEMU start -> init)         {results['bare_boot_s']:6.2f} s  (median of {args.samples}; "
          f"kernel only, for scale)")
    print(f"bare boot + fio (no harness)           {results['bare_fio_s']:6.2f} s  (QEMU start -> first I/O of a fio "
          f"the guest's init starts itself)")
    print(f"guest ready (QEMU start -> disk found) {results['guest_ready_s']:6.2f} s  goal <= 8 s  "
          f"{'OK' if results['guest_ready_s'] <= 8 else 'MISSED'}")
    print(f"per-cell overhead (-> fio running)     {results['fio_running_s']:6.2f} s  "
          f"= {results['cell_vs_bare_ratio']:.2f}x bare boot + fio  goal <= 1.15x  "
          f"{'OK' if results['cell_vs_bare_ratio'] <= 1.15 else 'MISSED'}")
    if "matrix_wall_s" in results:
        print(f"matrix wall time (next VM boots ahead) {results['matrix_wall_s']:6.1f} s for {results['matrix_cells']} "
              f"cells with {results['matrix_ramp_measure_s']:.0f} s of warm-up + measurement: overhead "
              f"{results['matrix_overhead_pct']:.1f} %  goal <= 10 %  "
              f"{'OK' if results['matrix_overhead_pct'] <= 10 else 'MISSED'}")
        if "matrix_wall_s_serial" in results:
            print(f"matrix wall time (boot_ahead = false)  {results['matrix_wall_s_serial']:6.1f} s: overhead "
                  f"{results['matrix_overhead_pct_serial']:.1f} %  (the same cells, one VM at a time)")
    print(json.dumps(results), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
