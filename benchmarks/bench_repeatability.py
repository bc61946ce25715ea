#!/usr/bin/env python3
"""Are cells repeatable? The ``make demo`` matrix, run several times in one go, on the local QEMU backend.

For every configuration (controller x aio; the demo matrix measures each with three repeats) it
reports, over the runs, the coefficient of variation (sample standard deviation / mean) of the Answer page's
verdict figure (I/O-path switches per I/O) and of the two numbers the method scores (context switches and CPU
per MiB), over every repeat of every run, within each run (what that run's cv_limit_pct and the workbook's CV
flag see), and of the runs' means; and, per controller and per run, whether aio=threads costs more than
aio=native on the verdict figure (the runs' means), and whether that run's repeats make it significant (Welch's
t at 95 %, as the Answer page tests it). Goals: the verdict figure's CV <= 5 % for every configuration, and the
threads-vs-native order the same in every run for every controller.

Without ``--pin`` the matrix runs with its own placement (the demo's ``[host] scope = "cpus"``: under TCG
QEMU's I/O path alone on the measured CPU, the vCPU beside the harness); ``--pin`` measures the placement
before that scope (``[host] scope = "process"`` with ``[qemu] pin_threads``).

This is a benchmark, not a test: the numbers depend on the machine and on what else runs on it (other
QEMU processes, other users, the machine's own hypervisor). Run it on a quiet machine and say what else ran.

Measured with ``--runs 2`` on the 2-CPU development machine, nothing else of ours running (2026-12-04
03:13-03:25; 44 cells and 365 s per run, load average 1.2 at the end of each):

- Verdict figure (I/O-path switches per I/O), CV over every repeat of both runs: 0.3-9.3 %, 7 of 10
  configurations within 5 %; aio=threads above aio=native, significant in each run, for 5 of 5 controllers.
- The three above 5 % (ide, sata, virtio-blk native) each hold a window with /proc/stat steal on the measured
  CPU of 1.16-1.57 s (the machine is itself a VM; 12 of the 88 windows had more than 0.5 s): aio=native's figure
  fell by up to 0.65 there. Without those windows the per-run CV is 0.1-4.7 % and 0.2-5.3 %.
- The scored CPU-set figures: ctx/MiB CV 0.6-9.2 %, CPU/MiB 12-61 % (the steal counts as the set's work).

    .venv/bin/python benchmarks/bench_repeatability.py [--runs 3] [--pin auto|off|A/B] [--out DIR]
    # without --pin: the matrix's own placement (the demo's: [host] scope = "cpus")
        [--matrix M.toml] [--measure-seconds S] [--json FILE]
    # default matrix: harness/matrices/demo.toml, 30 cells, ~7 minutes per run
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stormatrix import guestimage
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.score.roles import per_io_frame
from stormatrix.analysis.score.stats import welch
from stormatrix.analysis.write.rolesheet import with_config
from stormatrix.commands.run import execute
from stormatrix.core.errors import DataFileError
from stormatrix.core.recordtypes import CellRecord, record_from_json

DEMO_MATRIX = Path(guestimage.__file__).parent / "matrices" / "demo.toml"
GOAL_CV_PCT = 5.0


def matrix_text(base: str, pin: str | None, measure_s: float | None) -> str:
    """The matrix as it is (the backend's own placement: ``[host] scope = "cpus"``), or with ``pin`` the placement
    before that scope, ``[host] scope = "process"`` with ``[qemu] pin_threads = pin``; optionally another window
    length."""
    text = base
    if measure_s is not None:
        text = re.sub(r"(?m)^measure_seconds\s*=.*$", f"measure_seconds = {measure_s:g}", text)
    if pin is None:
        return text
    text = re.sub(r"(?m)^\s*pin_threads\s*=.*$", "", text)
    if re.search(r"(?m)^\[qemu\]\s*$", text):
        text = re.sub(r"(?m)^\[qemu\]\s*$", f'[qemu]\npin_threads = "{pin}"', text, count=1)
    else:
        text += f'\n[qemu]\npin_threads = "{pin}"\n'
    if re.search(r"(?m)^\[host\]\s*$", text):
        return re.sub(r"(?m)^\[host\]\s*$", '[host]\nscope = "process"', text, count=1)
    return text + '\n[host]\nscope = "process"\n'


def cells(run_dir: Path) -> dict[tuple[str, str], list[CellRecord]]:
    """(controller, aio) -> the configuration's cell records, one per repeat (the last one of a retried
    repeat), in repeat order: the demo matrix runs every configuration several times."""
    out: dict[tuple[str, str], dict[int, CellRecord]] = {}
    path = run_dir / "journal.ndjson"
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:  # read as the report reads it: a record it refuses counts here neither
            rec = record_from_json(json.loads(line), f"{path}:{number}")
        except DataFileError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
            continue
        if isinstance(rec, CellRecord):
            disk = rec.cell.disk  # required of a cell record (the reader refuses one without it)
            out.setdefault((str(disk.controller), str(disk.aio)), {})[rec.cell.repeat] = rec
    return {k: [v[r] for r in sorted(v)] for k, v in out.items()}


def verdict_figure(run_dir: Path) -> dict[tuple[str, str], list[float]]:
    """(controller, aio) -> the Answer page's verdict figure (I/O-path switches per I/O: every QEMU thread but
    the vCPUs, analysis/score/roles.py) of each repeat, in repeat order, read as ``stormatrix report`` reads the
    journal; empty where the records have no per-thread split."""
    per_io = per_io_frame(with_config(ingest([run_dir / "journal.ndjson"]).frame))
    out: dict[tuple[str, str], list[float]] = {}
    if per_io.empty:
        return out
    for (ctrl, aio), rows in per_io.sort_values("repeat", kind="stable").groupby(["controller", "aio"]):
        out[(str(ctrl), str(aio))] = [float(v) for v in rows["path_ctx_io"]]
    return out


def cv_pct(values: list[float]) -> float | None:
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / statistics.fmean(values) * 100.0


def metric(recs: list[CellRecord], name: str) -> list[float]:
    """``per_mib.<name>`` (cpu or ctx) of each record that has it."""
    values = [getattr(x.per_mib, name) if x.per_mib else None for x in recs]
    return [v for v in values if v is not None]


def pinned(rec: CellRecord) -> bool:
    """Whether the cell's QEMU threads were pinned (the host record's ``placement``)."""
    placement = rec.host.rest.get("placement") if rec.host else None
    return bool(placement.get("pinned")) if isinstance(placement, dict) else False


def summarise(runs: list[dict[tuple[str, str], list[CellRecord]]],
              path: list[dict[tuple[str, str], list[float]]] | None = None) -> dict[str, Any]:
    """Per configuration and metric: the values of every repeat of every run; the CV within each run (over
    its repeats: what the workbook's cv_limit flag and the run's own extra repeats see), over all repeats
    of all runs, and of the runs' means (how far two demo runs' numbers lie apart). The metrics: the scored
    ctx/MiB and CPU/MiB and, where ``path`` gives it (:func:`verdict_figure` per run), the verdict figure
    (I/O-path switches per I/O). Per controller and run: whether aio=threads costs more than aio=native on
    the verdict figure (on ctx/MiB where there is none), and whether that run's repeats make the difference
    significant (Welch's t at 95 %, as the Answer page tests it). The goals are judged on the verdict figure
    where there is one, else on both scored figures."""
    path = path or [{} for _ in runs]
    keys = sorted(set().union(*[set(r) for r in runs], *[set(p) for p in path]))
    per_cell = []
    for key in keys:
        recs = [r.get(key, []) for r in runs]
        entry: dict[str, Any] = {"controller": key[0], "aio": key[1],
                                 "cpu_unit": next((x.per_mib.cpu_unit for rs in recs for x in rs if x.per_mib), None),
                                 "repeats_per_run": [len(rs) for rs in recs],
                                 "pinned": sum(pinned(x) for rs in recs for x in rs)}
        series = {"ctx_per_mib": [metric(rs, "ctx") for rs in recs], "cpu_per_mib": [metric(rs, "cpu") for rs in recs],
                  "path_per_io": [p.get(key, []) for p in path]}
        for name, values in series.items():
            means = [statistics.fmean(v) for v in values if v]
            short = name.partition("_per_")[0]
            entry[name] = values
            entry[f"cv_{short}_within_runs_pct"] = [cv_pct(v) for v in values]
            entry[f"cv_{short}_all_pct"] = cv_pct([x for v in values for x in v])
            entry[f"cv_{short}_of_run_means_pct"] = cv_pct(means)
        per_cell.append(entry)
    on_path = any(p for p in path)
    order = []
    for ctrl in sorted({k[0] for k in keys}):
        per_run: list[bool | None] = []
        significant: list[bool | None] = []
        for r, p in zip(runs, path):
            if on_path:
                t, n = p.get((ctrl, "threads"), []), p.get((ctrl, "native"), [])
            else:
                t, n = metric(r.get((ctrl, "threads"), []), "ctx"), metric(r.get((ctrl, "native"), []), "ctx")
            if t and n:
                per_run.append(statistics.fmean(t) > statistics.fmean(n))
                significant.append(welch(t, n).significant if len(t) > 1 and len(n) > 1 else None)
            else:
                per_run.append(None)
                significant.append(None)
        stable = len(per_run) > 0 and None not in per_run and len(set(per_run)) == 1
        order.append({"controller": ctrl, "threads_costs_more": per_run, "significant": significant,
                      "same_in_every_run": stable})

    def within(cell: dict[str, Any]) -> bool:
        cvs = [cell["cv_path_all_pct"]] if on_path else [cell["cv_ctx_all_pct"], cell["cv_cpu_all_pct"]]
        return all(c is not None and c <= GOAL_CV_PCT for c in cvs)

    return {"cells": per_cell, "order": order, "runs": len(runs),
            "goal_figure": "I/O-path switches per I/O" if on_path else "ctx/MiB and CPU/MiB",
            "goal_cv_met": all(within(c) for c in per_cell),
            "cells_within_goal": sum(within(c) for c in per_cell),
            "goal_order_met": all(o["same_in_every_run"] for o in order)}


def show(summary: dict[str, Any]) -> None:
    def pct(v: float | None) -> str:
        return "  n/a" if v is None else f"{v:4.0f}%" if v >= 10 else f"{v:4.1f}%"

    print(f"\n{'controller':<19} {'aio':<8} {'I/O-path switches/IO, each run':<32} {'CV':>6} {'runs':>5} "
          f"{'CV ctx':>6} {'runs':>5} {'CV cpu':>6} {'runs':>5}  within-run CV path | ctx | cpu")
    for c in summary["cells"]:
        vals = " | ".join(",".join(f"{v:.2f}" for v in run) for run in c["path_per_io"]) or "n/a"
        inner = " | ".join(" ".join(pct(v) for v in c[f"cv_{m}_within_runs_pct"]) for m in ("path", "ctx", "cpu"))
        print(f"{c['controller']:<19} {c['aio']:<8} {vals:<32} {pct(c['cv_path_all_pct']):>6} "
              f"{pct(c['cv_path_of_run_means_pct']):>5} {pct(c['cv_ctx_all_pct']):>6} "
              f"{pct(c['cv_ctx_of_run_means_pct']):>5} {pct(c['cv_cpu_all_pct']):>6} "
              f"{pct(c['cv_cpu_of_run_means_pct']):>5}  {inner}")
    print("  (CV: over every repeat of every run; runs: CV of the runs' means; ctx, cpu: the scored per-MiB figures)")
    print(f"\naio=threads costs more than aio=native on the {summary['goal_figure']} (mean of each run's repeats; "
          "* = significant in that run, Welch 95 %):")
    for o in summary["order"]:
        runs = " ".join("?" if v is None else ("yes" if v else "no") + ("*" if s else "")
                        for v, s in zip(o["threads_costs_more"], o["significant"]))
        print(f"  {o['controller']:<19} {runs:<20} {'same in every run' if o['same_in_every_run'] else 'CHANGES'}")
    print(f"\nconfigurations with the {summary['goal_figure']} CV (all repeats) <= {GOAL_CV_PCT:g} %: "
          f"{summary['cells_within_goal']} of {len(summary['cells'])}; order stable for "
          f"{sum(o['same_in_every_run'] for o in summary['order'])} of {len(summary['order'])} controllers")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrix", type=Path, default=DEMO_MATRIX)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pin", default=None, help="instead of the backend's own placement ([host] scope = \"cpus\"): "
                    "[host] scope = \"process\" with this [qemu] pin_threads (auto, off, on or A/B)")
    ap.add_argument("--measure-seconds", type=float, default=None, help="override the window length")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="also write the summary as JSON")
    args = ap.parse_args(argv)
    if args.runs < 2:
        ap.error("--runs must be at least 2 for a coefficient of variation")
    base = args.matrix.read_text()
    out = args.out or Path(tempfile.mkdtemp(prefix="smx-repeat-"))
    out.mkdir(parents=True, exist_ok=True)
    matrix = out / "matrix.toml"
    matrix.write_text(matrix_text(base, args.pin, args.measure_seconds))
    placement = "the backend's placement" if args.pin is None else f"scope process, pin_threads = {args.pin!r}"
    print(f"{args.runs} runs of {args.matrix} with {placement} into {out}; "
          f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    runs = []
    path: list[dict[tuple[str, str], list[float]]] = []
    for i in range(1, args.runs + 1):
        t0 = time.monotonic()
        summary = execute(matrix, out / f"run-{i}", progress=False)
        print(f"run {i}: {summary.measured} cells, failed: {summary.failed}, "
              f"{time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
        runs.append(cells(out / f"run-{i}"))
        path.append(verdict_figure(out / f"run-{i}"))
    result = summarise(runs, path)
    result.update({"matrix": str(args.matrix), "pin_threads": args.pin, "out": str(out)})
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
