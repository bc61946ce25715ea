#!/usr/bin/env python3
"""How many threads-vs-native verdicts does the demo decide: shuffled rounds + open-verdict repeats against
grouped order + CV-only repeats (issue 25), the demo matrix with its own time budget, run after run.

The ``make demo`` matrix (harness/matrices/demo.toml: 5 controllers x aio native/threads x 3 repeats,
``time_budget_minutes`` 8.5, ``max_repeats`` 5) runs ``--pairs`` times per strategy, alternating so that
the machine's drift lands on both (pair 1: new then old, pair 2: old then new, ...):

- new: ``[run] order = "rounds"`` (every configuration once per round, seeded shuffle) and
  ``repeat_policy = "verdicts"`` (extra repeats first for both sides of each open comparison);
- old: ``order = "grouped"`` (a configuration's repeats back to back) and ``repeat_policy = "cv"``.

Per run it counts the threads-vs-native verdicts the workbook calls decided: where the records carry the
per-thread split (every local QEMU run), the Answer page's (analysis/score/roles.py: Welch's t on the I/O-path
switches per I/O, p < 0.05), else the findings' "aio modes of <controller>" comparisons (the bootstrap share of
the scores, ``analysis.score.bootstrap.LEVEL``), each through the same ingest as ``stormatrix report``. It also
reports the extra repeats run and not run (and why: each record's ``extra_repeat.basis``), the run time, the
load average at start and end, and from the runner's timeline the matrix overhead as
benchmarks/bench_cell_overhead.py defines it: (span - sum of warm-up + window) / sum of warm-up + window.

This is a benchmark, not a test: the numbers depend on the machine and on what else runs on it.

Measured with 1 pair on the 2-core development machine, nothing else running (2026-12-04 02:19-02:30):

    run  strategy  time    load     cells  decided  verdict figure's CV   extra run / wanted, not run     overhead
    1    new       363 s   0.2-1.2   42    5 of 5   0.4-4.2 %             4 open verdict + 8 cv / 0        7.9 %
    2    old       281 s   1.2-1.4   34    5 of 5   0.5-3.1 %             4 cv / 0                         3.2 %

- Both decided every controller (Welch p <= 0.002), aio=native ahead everywhere: the I/O-path switches per I/O
  separate the aio modes by 1.3-2.2 per I/O against a spread of a few percent, so the policy no longer decides
  how many verdicts a run reaches; it decides the run's time and its extra cells.
- Before the verdict figure was the I/O path's (2026-11-28, whole-process scores, 3 pairs, load 0.2-7.4) new
  decided 8 of 15 and old 9 of 15: more repeats did not make a small difference against a large spread large.

    .venv/bin/python benchmarks/bench_verdicts.py [--pairs 3] [--out DIR] [--json FILE] [--matrix M.toml]
    .venv/bin/python benchmarks/bench_verdicts.py --from DIR [--json FILE]   # count the runs kept in DIR again
    # up to ~8.5 minutes per run (the demo's budget): 1 pair took 11 minutes here
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench_cell_overhead import breakdown

from stormatrix import guestimage
from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.score.findings import INDICATIVE_LEAD, Finding, efficiency_findings
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.score.roles import verdict_sentence
from stormatrix.analysis.score.stats import SIGNIFICANT
from stormatrix.analysis.write.rolesheet import verdicts_of
from stormatrix.core.journalfile import CELL
from stormatrix.journal import read_journal
from stormatrix.registry import load_spec
from stormatrix.registry import check_executor_spec
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.spec import check_guest_backend

DEMO_MATRIX = Path(guestimage.__file__).parent / "matrices" / "demo.toml"
STRATEGIES: dict[str, dict[str, str]] = {
    "new": {"order": '"rounds"', "repeat_policy": '"verdicts"'},
    "old": {"order": '"grouped"', "repeat_policy": '"cv"'},
}
RUN_META = "bench-run.json"  # per run directory: strategy, times, load averages, the runner's summary and timeline


def with_run_settings(matrix_text: str, settings: dict[str, str]) -> str:
    """The matrix with ``settings`` (key -> TOML value) set in its ``[run]`` table, replacing what it had."""
    head, sep, rest = matrix_text.partition("[run]")
    if not sep:
        raise SystemExit("the matrix has no [run] table")
    body, nxt, tail = rest.partition("\n[")
    for key in settings:
        body = re.sub(rf"(?m)^\s*{key}\s*=.*\n?", "", body)
    lines = "".join(f"\n{k} = {v}" for k, v in settings.items())
    return head + sep + lines + body + nxt + tail


def schedule(pairs: int) -> list[str]:
    """The strategies in run order: alternating, each pair starting with the other one (ABBA...)."""
    out: list[str] = []
    for i in range(pairs):
        out += ["new", "old"] if i % 2 == 0 else ["old", "new"]
    return out


def run_one(out: Path, index: int, strategy: str, base: str) -> Path:
    """One run of the matrix with the strategy's settings; its facts in ``RUN_META`` in the run directory."""
    run_dir = out / f"run-{index:02d}-{strategy}"
    matrix = out / f"matrix-{strategy}.toml"
    matrix.write_text(with_run_settings(base, STRATEGIES[strategy]))
    spec = load_spec(matrix)
    check_guest_backend(spec)
    check_executor_spec(spec)
    load0, t0, wall0 = os.getloadavg(), time.monotonic(), time.time()
    runner = Runner(spec, run_dir, RunOptions(progress=False))
    summary = runner.run()
    meta = {"index": index, "strategy": strategy, "settings": STRATEGIES[strategy], "started": wall0,
            "seconds": time.monotonic() - t0, "load_start": list(load0), "load_end": list(os.getloadavg()),
            "summary": dataclasses.asdict(summary), "timeline": runner.timeline,
            "ramp_s": spec.timing.ramp_s, "measure_s": spec.timing.measure_s}
    (run_dir / RUN_META).write_text(json.dumps(meta, indent=1, default=str))
    return run_dir


def _body(text: str) -> str:
    """A finding's sentence without its ``[group] `` prefix and its indicative lead."""
    if text.startswith("["):
        text = text.partition("] ")[2]
    return text.removeprefix(INDICATIVE_LEAD)


def aio_verdicts(journal: Path) -> dict[str, dict[str, Any]]:
    """Per controller, its threads-vs-native verdict as the workbook states it, the journal read by the same
    ingest as ``stormatrix report``.

    Where the records carry the per-thread split (host.by_role: every local QEMU and Proxmox record), the Answer
    page's verdict (analysis/score/roles.py): Welch's t on the I/O-path switches per I/O, ``decided`` at p < 0.05
    in every group of the controller (``basis`` "io-path"). Elsewhere the findings' "For <controller>, aio=X is
    the most efficient aio mode" (the bootstrap of the scores: lower in >= 95 % of the resamples), with
    ``welch`` the status of the findings comparing its two aio modes' CPU and context switches per MiB
    (``basis`` "score")."""
    data = ingest([journal])
    if data.frame.empty:
        return {}
    _, answer = verdicts_of(data.frame)
    out: dict[str, dict[str, Any]] = {}
    if answer:
        for c in dict.fromkeys(v.controller for v in answer):
            vs = [v for v in answer if v.controller == c]
            out[c] = {"basis": "io-path", "decided": all(v.decided for v in vs),
                      "status": [SIGNIFICANT if v.decided else "within noise" for v in vs], "welch": [],
                      "best_aio": "native" if all(v.diff > 0 for v in vs) else "threads",
                      "repeats": [len(v.native) for v in vs] + [len(v.threads) for v in vs],
                      "p": [v.p for v in vs], "cv": [max(v.cv_native, v.cv_threads) for v in vs],
                      "finding": [verdict_sentence(v) for v in vs]}
        return out
    result = score_cells(data.frame, with_iopath=False)
    findings: list[Finding] = efficiency_findings(result)
    for c in dict.fromkeys(str(x) for x in result.cells["controller"]):
        score = [f for f in findings if _body(f.text).startswith(f"For {c}, ")]
        welch = [f for f in findings if _body(f.text).startswith(f"{c} with aio=")]
        ranked = result.cells[result.cells["controller"] == c].sort_values(["score", "config"], kind="stable")
        out[c] = {"basis": "score", "decided": bool(score) and all(f.status == SIGNIFICANT for f in score),
                  "status": [f.status for f in score], "welch": [f.status for f in welch],
                  "best_aio": str(ranked.iloc[0]["aio"]), "repeats": [int(n) for n in ranked["n"]],
                  "finding": [f.text for f in score]}
    return out


def extra_repeats(journal: Path) -> dict[str, int]:
    """How many extra repeats ran, per reason (each cell record's ``extra_repeat.basis``)."""
    out: dict[str, int] = {}
    for rec in read_journal(journal).records:
        why = rec.get("extra_repeat") if rec.get("type") == CELL else None
        if isinstance(why, dict):
            out[str(why.get("basis"))] = out.get(str(why.get("basis")), 0) + 1
    return out


def count_run(run_dir: Path) -> dict[str, Any]:
    """One kept run: its strategy and facts (``RUN_META``), verdicts, extra repeats and matrix overhead."""
    meta = json.loads((run_dir / RUN_META).read_text())
    summary = meta["summary"]
    verdicts = aio_verdicts(run_dir / "journal.ndjson")
    over = breakdown(SimpleNamespace(timeline=meta["timeline"],
                                     summary=SimpleNamespace(measured_keys=summary["measured_keys"])),
                     meta["ramp_s"], meta["measure_s"])
    return {"run": run_dir.name, "strategy": meta["strategy"], "seconds": meta["seconds"],
            "load_start": meta["load_start"], "load_end": meta["load_end"], "measured": len(summary["measured_keys"]),
            "failed": len(summary["failed"]), "verdicts": verdicts,
            "decided": sum(v["decided"] for v in verdicts.values()), "controllers": len(verdicts),
            "extra_run": extra_repeats(run_dir / "journal.ndjson"),
            "extra_not_run": len(summary.get("extra_not_run_keys") or []),
            "extra_not_run_why": summary.get("extra_not_run", ""),
            "overhead_pct": over["overhead_pct"], "span_s": over["span_s"], "active_s": over["active_s"],
            "stages": over["stages"]}


def totals(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per strategy over its runs: verdicts decided of those stated, extra repeats, time, overhead."""
    out: dict[str, dict[str, Any]] = {}
    for strategy in STRATEGIES:
        rs = [r for r in runs if r["strategy"] == strategy]
        if not rs:
            continue
        basis: dict[str, int] = {}
        for r in rs:
            for k, n in r["extra_run"].items():
                basis[k] = basis.get(k, 0) + n
        out[strategy] = {"runs": len(rs), "decided": sum(r["decided"] for r in rs),
                         "verdicts": sum(r["controllers"] for r in rs), "extra_run": basis,
                         "extra_not_run": sum(r["extra_not_run"] for r in rs),
                         "mean_seconds": statistics.fmean(r["seconds"] for r in rs),
                         "mean_overhead_pct": statistics.fmean(r["overhead_pct"] for r in rs),
                         "load_start": [r["load_start"][0] for r in rs], "load_end": [r["load_end"][0] for r in rs],
                         "decided_by_controller": {c: sum(r["verdicts"].get(c, {}).get("decided", False) for r in rs)
                                                   for c in dict.fromkeys(c for r in rs for c in r["verdicts"])}}
    return out


def show(runs: list[dict[str, Any]], total: dict[str, dict[str, Any]]) -> None:
    print(f"{'run':<14} {'strategy':<8} {'time':>6} {'load start-end':>14} {'cells':>5} {'decided':>7}  "
          f"{'per controller (best aio; * decided)':<58} {'extra run / not run':<30} {'overhead':>8}")
    for r in runs:
        per = " ".join(f"{c}:{v['best_aio'][:3]}{'*' if v['decided'] else ''}" for c, v in r["verdicts"].items())
        extra = (", ".join(f"{n} {k}" for k, n in r["extra_run"].items()) or "0") + f" / {r['extra_not_run']}"
        load = f"{r['load_start'][0]:.1f}-{r['load_end'][0]:.1f}"
        print(f"{r['run']:<14} {r['strategy']:<8} {r['seconds']:5.0f}s {load:>14} {r['measured']:>5} "
              f"{r['decided']:>3} of {r['controllers']}  {per:<58} {extra:<30} {r['overhead_pct']:7.1f}%")
        st = r["stages"]
        print(f"{'':<24}span {r['span_s']:.0f} s for {r['active_s']:.0f} s of warm-up + window; medians: VM ready "
              f"{st.get('ready', {}).get('median_s', float('nan')):.1f} s, window closed -> next job sent "
              f"{st.get('window closed -> next job sent', {}).get('median_s', float('nan')):.1f} s, result back "
              f"{st.get('result back', {}).get('median_s', float('nan')):.1f} s")
    print()
    for strategy, t in total.items():
        extra = ", ".join(f"{n} for {k}" for k, n in t["extra_run"].items()) or "none"
        print(f"{strategy} ({', '.join(f'{k} = {v}' for k, v in STRATEGIES[strategy].items())}): {t['decided']} of "
              f"{t['verdicts']} threads-vs-native verdicts decided over {t['runs']} runs "
              f"({', '.join(f'{c} {n}' for c, n in t['decided_by_controller'].items())}); extra repeats run: {extra}, "
              f"not run (budget): {t['extra_not_run']}; mean run {t['mean_seconds'] / 60:.1f} min, "
              f"matrix overhead {t['mean_overhead_pct']:.1f} % (load average "
              f"{min(t['load_start'] + t['load_end']):.1f}-{max(t['load_start'] + t['load_end']):.1f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrix", type=Path, default=DEMO_MATRIX)
    ap.add_argument("--pairs", type=int, default=3, help="runs per strategy (alternating); at least 1")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--from", dest="from_dir", type=Path, default=None,
                    help="count the runs kept in this folder (an earlier --out) instead of running")
    ap.add_argument("--json", type=Path, default=None, help="also write the result as JSON")
    args = ap.parse_args(argv)
    if args.from_dir is None:
        if args.pairs < 1:
            ap.error("--pairs must be at least 1")
        out = args.out or Path(tempfile.mkdtemp(prefix="smx-verdicts-"))
        out.mkdir(parents=True, exist_ok=True)
        base = args.matrix.read_text()
        guestimage.build()
        for i, strategy in enumerate(schedule(args.pairs), 1):
            print(f"run {i} ({strategy}) starting, load average {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
            run_dir = run_one(out, i, strategy, base)
            print(f"run {i} ({strategy}) done in {run_dir}", file=sys.stderr, flush=True)
    else:
        out = args.from_dir
    runs = [count_run(d) for d in sorted(out.glob("run-*")) if (d / RUN_META).is_file()]
    if not runs:
        raise SystemExit(f"{out}: no finished runs (run directories with {RUN_META}); fix: give an --out folder of "
                         "this benchmark")
    total = totals(runs)
    show(runs, total)
    if args.json:
        args.json.write_text(json.dumps({"out": str(out), "runs": runs, "totals": total}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
