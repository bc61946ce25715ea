#!/usr/bin/env python3
"""How ``stormatrix plan`` scales with the number of workloads: time per workload at 5,000, 12,500
and 25,000 workloads (one controller, so cells = workloads), and each size's time per workload as a
ratio to the smallest size's. Linear work keeps the ratios near 1; quadratic work grows them with
the size (2.5 and 5 here).

    .venv/bin/python benchmarks/bench_plan.py            # 5k, 12.5k, 25k
    .venv/bin/python benchmarks/bench_plan.py --sizes 1000 2000 --json

The whole command runs in-process (parse, validate, expand, print the plan to a discarded stream),
best of ``--repeat`` runs per size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path


def matrix_text(workloads: int) -> str:
    lines = ['[run]', 'name = "bench-plan"', '', '[matrix]', 'controllers = ["virtio-scsi-single"]', '']
    for i in range(workloads):
        lines += ["[[workload]]", f'name = "w{i}"', 'rw = "randread"', f'bs = "{4 * (1 + i % 16)}k"',
                  f"iodepth = {1 + i % 64}", ""]
    return "\n".join(lines)


def time_plan(path: Path, repeat: int) -> float:
    from stormatrix.cli import main

    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["plan", str(path)])
        best = min(best, time.perf_counter() - t0)
        if rc != 0:
            raise SystemExit(f"stormatrix plan exited {rc} on {path}")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 12500, 25000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"m{n}.toml"
            path.write_text(matrix_text(n))
            seconds = time_plan(path, args.repeat)
            rows.append({"workloads": n, "seconds": seconds, "us_per_workload": seconds / n * 1e6})
    base = rows[0]["us_per_workload"]
    for r in rows:
        r["ratio"] = r["us_per_workload"] / base
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(f"{'workloads':>10} {'seconds':>9} {'us/workload':>12} {'ratio':>6}")
        for r in rows:
            print(f"{r['workloads']:>10} {r['seconds']:>9.2f} {r['us_per_workload']:>12.1f} {r['ratio']:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
