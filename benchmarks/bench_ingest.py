"""Ingest benchmark: 10,000 fio JSON files -> tidy frame -> comparison workbook.

Generates the files in a temporary directory from a real fio 3.33 capture (tests/data/fio), half as
side A and half as side B (5 block sizes x 5 queue depths x 200 repeats each), then measures, on the same
files:

- a bare ``json.load`` loop (the floor: opening, reading and parsing, nothing else);
- ``ingest`` of both sides (parse, validate, summarise, one DataFrame per side) in this process
  (``workers=1``: like with like, one CPU each; worker processes could only shorten the wall time),
  alternating with the bare loop ``--rounds`` times: each round's wall and CPU ratio, and their medians
  (a round's two parts run seconds apart, so a neighbour's load weighs on both alike);
- the same two again as instruction counts (``valgrind --tool=callgrind``, when valgrind is installed;
  ``--no-instructions`` skips it): each in its own process, minus a process that only imports and lists
  the files, ingest with one worker (the work, not how it is spread). On a shared machine wall and CPU
  time move with the neighbours; the instruction count repeats to a fraction of a percent;
- ``compare`` + ``write_comparison_workbook`` + the tidy CSV, and the total.

Goal: ingest <= 1.5 x the bare loop; everything <= 30 s on a 2-core machine. Exit status 0 when the
median of the rounds' wall ratios and the total meet the goal.

    .venv/bin/python benchmarks/bench_ingest.py [--files 10000] [--rounds 5] [--no-instructions]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "tests" / "data" / "fio" / "fio3_randread_bs4k_qd1.json"
BLOCK_SIZES = (4096, 8192, 16384, 65536, 131072)
QUEUE_DEPTHS = (1, 4, 8, 32, 128)


def generate(root: Path, files: int) -> list[Path]:
    template = json.loads(TEMPLATE.read_text())
    rng = random.Random(7)
    per_point = max(1, files // (2 * len(BLOCK_SIZES) * len(QUEUE_DEPTHS)))
    paths = []
    for side, speed in (("A", 1.0), ("B", 1.3)):
        folder = root / side
        folder.mkdir()
        for bs in BLOCK_SIZES:
            for qd in QUEUE_DEPTHS:
                for rep in range(1, per_point + 1):
                    doc = copy.deepcopy(template)
                    job = doc["jobs"][0]
                    job["job options"].update({"bs": str(bs), "iodepth": str(qd)})
                    r = job["read"]
                    iops = 2000.0 * qd ** 0.5 * speed * rng.uniform(0.95, 1.05) * (4096 / bs) ** 0.3
                    # 10 s of I/O, the rates derived from the counts the way fio does (ingest checks that)
                    r["runtime"] = 10000
                    r["total_ios"] = int(iops * 10)
                    r["iops"] = r["total_ios"] / 10.0
                    r["io_bytes"] = r["total_ios"] * bs
                    r["bw_bytes"] = r["io_bytes"] // 10
                    r["lat_ns"]["mean"] = qd / iops * 1e9
                    path = folder / f"read-rand-bs{bs}-qd{qd}-rep{rep}.json"
                    path.write_text(json.dumps(doc, indent=2))
                    paths.append(path)
    return paths


def bare_loop(paths: list[Path]) -> float:
    start = time.perf_counter()
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            json.load(fh)
    return time.perf_counter() - start


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (none, with ``workers=1``)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _child(mode: str, root: Path) -> None:
    """One measured part in a process of its own, for the instruction counts: the imports and the file
    list in every mode (``none`` stops there), then the bare loop or ingest."""
    from stormatrix.analysis.read.ingest import ingest
    paths = sorted(root.glob("*/*.json"))
    if mode == "bare":
        bare_loop(paths)
    elif mode == "ingest":
        ingest([root / "A"], label="A", workers=1)
        ingest([root / "B"], label="B", workers=1)


def instructions(root: Path) -> dict[str, int] | None:
    """Instructions of the bare loop and of ingest (each minus the ``none`` process), or None without
    valgrind. The three processes run at once: counts do not depend on what else runs."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same string hashes, hence the same dict probes, each run
    procs = {mode: subprocess.Popen([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                     sys.executable, __file__, "--child", mode, str(root)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
             for mode in ("none", "bare", "ingest")}
    counts = {}
    for mode, proc in procs.items():
        _, err = proc.communicate()
        found = re.findall(r"Collected : (\d+)", err)
        if proc.returncode != 0 or len(found) != 1:
            print(f"callgrind ({mode}) failed (exit {proc.returncode}): {err.strip()[-1000:]}", file=sys.stderr)
            continue
        counts[mode] = int(found[0])
    if len(counts) != 3:
        return None
    return {"bare": counts["bare"] - counts["none"], "ingest": counts["ingest"] - counts["none"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of bare loop and ingest")
    parser.add_argument("--no-instructions", action="store_true",
                        help="skip the instruction counts (valgrind; about two minutes at 10,000 files)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], Path(args.child[1]))
        return 0
    from stormatrix.analysis.score.compare import compare
    from stormatrix.analysis.score.comparisonfindings import comparison_findings
    from stormatrix.analysis.read.ingest import ingest
    from stormatrix.analysis.write.workbook import write_comparison_workbook, write_tidy_csv

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="stormatrix-bench-") as tmp:
        root = Path(tmp)
        paths = generate(root, args.files)
        t_gen = time.perf_counter() - t0
        # Side by side, alternating, in one process: on a shared machine the best of each is what the code
        # costs, the median what it costs among the neighbours; a single run measures them as much as the code.
        bares, ingests, cpu_ratios = [], [], []
        for _ in range(args.rounds):
            c0 = _cpu()
            bares.append(bare_loop(paths))
            c1 = _cpu()
            start = time.perf_counter()
            a = ingest([root / "A"], label="A", workers=1)
            b = ingest([root / "B"], label="B", workers=1)
            ingests.append(time.perf_counter() - start)
            cpu_ratios.append((_cpu() - c1) / max(c1 - c0, 1e-9))
        assert not a.problems and not b.problems, (a.problems[:3], b.problems[:3])
        assert len(a.frame) + len(b.frame) == len(paths)
        start = time.perf_counter()
        result = compare(a.frame, b.frame, label_a="A", label_b="B")
        write_comparison_workbook(root / "bench.xlsx", a, b, result, comparison_findings(result))
        write_tidy_csv(a.frame, root / "bench.csv")
        t_book = time.perf_counter() - start
        total = time.perf_counter() - t0
        counts = None if args.no_instructions else instructions(root)
    bare, t_ingest = min(bares), min(ingests)
    wall_ratios = [i / b for b, i in zip(bares, ingests)]
    ratio = statistics.median(wall_ratios)

    def listing(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    print(f"files: {len(paths)}  generate: {t_gen:.2f}s  load average: {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"bare json.load loop: best {bare:.2f}s, median {statistics.median(bares):.2f}s "
          f"({args.rounds} rounds: {listing(bares)})")
    print(f"ingest:              best {t_ingest:.2f}s, median {statistics.median(ingests):.2f}s "
          f"({args.rounds} rounds: {listing(ingests)})")
    print(f"compare + workbook:  {t_book:.2f}s")
    print(f"total:               {total:.2f}s (goal <= 30 s)")
    print(f"ratio ingest / bare, wall:         median {ratio:.2f} (rounds: {listing(wall_ratios)}; "
          f"best/best {t_ingest / bare:.2f})")
    print(f"ratio ingest / bare, CPU time:     median {statistics.median(cpu_ratios):.2f} "
          f"(rounds: {listing(cpu_ratios)})")
    if counts is not None:
        print(f"ratio ingest / bare, instructions: {counts['ingest'] / counts['bare']:.2f} "
              f"(bare {counts['bare'] / len(paths) / 1000:.0f}k, ingest {counts['ingest'] / len(paths) / 1000:.0f}k "
              f"per file; callgrind, ingest in one process)")
    else:
        print("ratio ingest / bare, instructions: not measured"
              + ("" if args.no_instructions else " (no valgrind on PATH, or callgrind failed: see above)"))
    print(f"ratio ingest / bare json.load: {ratio:.2f} (wall, median of the rounds; goal <= 1.5)")
    return 0 if ratio <= 1.5 and total <= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
