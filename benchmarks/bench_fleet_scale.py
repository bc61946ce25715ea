#!/usr/bin/env python3
"""Scale check of the fleet's bookkeeping: plan, journal and ingest of a W-worker x 56-point suite.

The seeds' comparison runs 32 VMs through 7 block sizes x 8 queue depths = 56 points. What the harness
does per point besides waiting for fio must stay linear in the number of workers, so a 64-worker fleet
costs twice a 32-worker one per point and never more. Measured, for W = 8, 32 and 64 workers:

- **plan**: the suite read from its matrix dict (W guests, 56 points; ``suite_from_dict``), its points
  and its ETA — what ``stormatrix suite plan`` computes (median of ``--repeat`` times);
- **journal**: the real run loop (:func:`stormatrix.suiterun.run_suite`: runner, window, record builders,
  journal append with fsync) over all 56 points, with fio's client output for W guests generated here and
  split by the real parser (``parse_client_output``) in place of a fio client process (no servers, no
  sleeping: ramp and window take no time). The output is a real fio 3.33 client-mode capture of 8 guests
  (tests/data/fio-server) whose per-guest entries are repeated, renamed, for W guests; fio's own
  ``All clients`` entry is left out (it sums the guests; here it would only have to be recomputed);
- **ingest**: ``analysis.read.ingest`` of the run directory into the tidy frame (median of ``--repeat``).

Each is reported per point and, per point and worker, relative to 8 workers (1.0 = linear; above 1 grows
faster than the fleet). The journals are generated in a temporary directory and removed afterwards.

    .venv/bin/python benchmarks/bench_fleet_scale.py [--workers 8 32 64] [--repeat 5] [--json]

Exit status 0 when every per-point-per-worker ratio against 8 workers is at most ``--limit`` (1.5).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from stormatrix.analysis.read.ingest import ingest
from stormatrix.executors.fioserver import executor as fioserver
from stormatrix.executors.fioserver.executor import PointResult
from stormatrix.executors.fioserver.inputs import FioGuest
from stormatrix.executors.fioserver.parse import noise_lines, parse_client_output, window_skew
from stormatrix.executors.fioserver.probe import ProbeResult
from stormatrix.registry import suite_from_dict
from stormatrix.suite import eta
from stormatrix.suiteguests import AddressGuests
from stormatrix.suiterun import run_suite

CAPTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / "fio-server" / \
    "fio333-client-8guests-runtimes-differ.stdout.txt"
BLOCK_SIZES = ["512", "4k", "8k", "16k", "32k", "64k", "128k"]  # the seeds' grid: 7 x 8 = 56 points
QUEUE_DEPTHS = [1, 2, 4, 8, 16, 32, 64, 128]


def guests(workers: int) -> list[FioGuest]:
    return [FioGuest(f"w{i:03d}", f"10.0.{i // 200}.{i % 200 + 1}", 8765) for i in range(workers)]


def client_output(fleet: Sequence[FioGuest]) -> str:
    """fio's client-mode stdout for ``fleet``: the capture's per-guest lines and entries, repeated and renamed."""
    text = CAPTURE.read_text()
    start = text.index("\n{") + 1
    head = [line for line in text[:start].splitlines() if line.startswith("<")]
    doc = json.loads(text[start:])
    entries = [e for e in doc["client_stats"] if e.get("jobname") != "All clients"]
    stats = []
    for i, g in enumerate(fleet):
        entry = json.loads(json.dumps(entries[i % len(entries)]))
        entry.update(hostname=g.host, port=g.port)
        stats.append(entry)
    doc["client_stats"] = stats
    lines = [re.sub(r"^<[^>]*>", f"<{g.host}>", head[k % len(head)]) for g in fleet for k in range(0, len(head), 8)]
    return "\n".join(lines) + "\n" + json.dumps(doc, indent=2) + "\n"


class Collector:
    """The host collector of a suite window (start/stop/abort), answering at once."""

    def start(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 1.0, "cpu_user": 0.6, "cpu_system": 0.4,
                "cycles": None, "ctx_switches": 1000, "source": "bench", "scope": "host", "window_s": 0.5,
                "threads": [], "by_role": {}}

    def abort(self) -> None:
        pass


def suite_raw(workers: int) -> dict[str, Any]:
    return {"run": {"name": f"fleet{workers}"},
            "suite": {"side": "A", "rw": ["randread"], "block_sizes": BLOCK_SIZES, "queue_depths": QUEUE_DEPTHS,
                      "ramp_seconds": 0, "measure_seconds": 0.5, "filename": "/dev/sdb",
                      "guests": [f"{g.name}={g.host}:{g.port}" for g in guests(workers)]}}


def timed_plan(workers: int, repeat: int) -> float:
    raw = suite_raw(workers)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        suite = suite_from_dict(raw, "<bench>")
        points = suite.points()
        eta(suite).describe()
        times.append(time.perf_counter() - t0)
    assert len(points) == 56, len(points)
    return statistics.median(times)


def timed_journal(workers: int, run_dir: Path) -> tuple[float, int]:
    """The run loop over every point with W guests' output parsed by the real parser; seconds and points."""
    text = client_output(guests(workers))

    def run_point(fleet: Sequence[FioGuest], job: Any, workdir: Path, *, window: Any = None, point: str | None = None,
                  **_: Any) -> PointResult:
        parsed = parse_client_output(text, fleet, f"synthetic client output of point {point}")
        if window is not None:
            window.measure_started()
            window.measure_ended()
        assert parsed.aggregate is not None and not parsed.missing
        clients = [{"name": g.name, "host": g.host, "port": g.port, "fio": parsed.per_guest[g.name], "window": None}
                   for g in fleet]
        return PointResult(point=point or job.name, clients=clients, aggregate=parsed.aggregate,
                           fio_all_clients=parsed.fio_all_clients, aggregate_check=parsed.check,
                           skew=window_skew({g.name: None for g in fleet}),
                           controller={"args": [], "returncode": 0, "timed_out": False, "elapsed_s": 0.0},
                           window={"opened": None, "closed": None}, noise=noise_lines(text), raw=text, stderr="")

    def probe(self: Any, timeout_s: float, point: str | None = None) -> list[ProbeResult]:
        return [ProbeResult(g, True, "answered") for g in self.guests]

    saved = fioserver.run_point, fioserver.FioServerExecutor._probe
    fioserver.run_point, fioserver.FioServerExecutor._probe = run_point, probe  # type: ignore[method-assign]
    try:
        suite = suite_from_dict(suite_raw(workers), "<bench>")
        t0 = time.perf_counter()
        outcome = run_suite(suite, run_dir, AddressGuests(suite.settings(), suite.guests, collector=Collector()))
        seconds = time.perf_counter() - t0
    finally:
        fioserver.run_point, fioserver.FioServerExecutor._probe = saved  # type: ignore[method-assign]
    if outcome.failed:
        raise SystemExit(f"the synthetic suite failed: {outcome.failed[:2]}")
    return seconds, len(outcome.measured)


def timed_ingest(run_dir: Path, repeat: int) -> tuple[float, int]:
    """Median of ``repeat`` ingests (the first one also reads the file into the page cache)."""
    times, rows = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = ingest([run_dir], strict=True)
        times.append(time.perf_counter() - t0)
        rows = len(result.frame)
    return statistics.median(times), rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Plan, journal and ingest time per suite point at 8, 32 and 64 "
                                 "workers x 56 points (synthetic journals, generated and removed here).")
    ap.add_argument("--workers", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--repeat", type=int, default=5, help="plan and ingest timings per fleet size (median)")
    ap.add_argument("--limit", type=float, default=1.5,
                    help="largest allowed per-point-per-worker time relative to the smallest fleet")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="stormatrix-fleet-") as tmp:
        for w in args.workers:
            run_dir = Path(tmp) / f"w{w}"
            plan_s = timed_plan(w, args.repeat)
            journal_s, points = timed_journal(w, run_dir)
            journal_bytes = (run_dir / "journal.ndjson").stat().st_size
            ingest_s, frame_rows = timed_ingest(run_dir, args.repeat)
            rows.append({"workers": w, "points": points, "plan_ms_per_point": plan_s / 56 * 1000,
                         "journal_ms_per_point": journal_s / points * 1000,
                         "ingest_ms_per_point": ingest_s / points * 1000,
                         "journal_kib_per_point": journal_bytes / points / 1024, "tidy_rows": frame_rows})
    base = rows[0]
    worst = 0.0
    print(f"{'workers':>7} {'points':>6} {'plan ms/pt':>11} {'journal ms/pt':>14} {'ingest ms/pt':>13} "
          f"{'KiB/pt':>8}   per point and worker vs {base['workers']} workers (plan / journal / ingest)")
    for r in rows:
        scale = r["workers"] / base["workers"]
        rel = [r[k] / base[k] / scale for k in ("plan_ms_per_point", "journal_ms_per_point", "ingest_ms_per_point")]
        r["relative_per_worker"] = rel
        worst = max(worst, *rel)
        print(f"{r['workers']:>7} {r['points']:>6} {r['plan_ms_per_point']:>11.3f} {r['journal_ms_per_point']:>14.1f} "
              f"{r['ingest_ms_per_point']:>13.2f} {r['journal_kib_per_point']:>8.0f}   "
              + " / ".join(f"{x:.2f}" for x in rel))
    ok = worst <= args.limit
    print(f"largest per-point-per-worker ratio {worst:.2f} (1.0 = linear): goal <= {args.limit:g}  "
          f"{'OK' if ok else 'MISSED'}")
    if args.json:
        print(json.dumps(rows), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
