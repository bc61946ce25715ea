"""``stormatrix compare A B``: the A-versus-B workbook (technotes 000 and 003).

A and B are each a run directory, a journal, a directory of fio JSON / DiskSpd XML files, one file or a
glob; ``-a``/``-b`` add more paths to a side. Exit codes as for ``report``: 0 with skipped inputs named
on stderr, 2 under ``--strict`` or when a side has nothing usable.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from typing import TYPE_CHECKING

from ..core.errors import InputError
from .argtypes import label
from .outputs import real, refuse_inputs
from .report import check_inputs, output_paths, probability, warn

if TYPE_CHECKING:
    from ..analysis.read.ingest import IngestResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="A vs B workbook: IOPS gain %%, latency reduction %%, bandwidth, t-tests",
                       description="Compare two data sets point by point (rw, block size, queue depth): IOPS gain "
                                   "%, latency reduction %, bandwidth, averages by queue depth and block size, "
                                   "wins, peak bandwidth, Welch t-tests over repeats. Writes the workbook and the "
                                   "tidy data of both sides as CSV next to it.")
    p.add_argument("a", metavar="A", help="baseline: run directory, journal, directory or glob of result files")
    p.add_argument("b", metavar="B", help="the other side, same kinds of input")
    p.add_argument("-a", "--add-a", action="append", default=[], metavar="PATH", help="more inputs for A")
    p.add_argument("-b", "--add-b", action="append", default=[], metavar="PATH", help="more inputs for B")
    p.add_argument("--label-a", type=label, help='name of A, e.g. "VMware ESXi 7.0U3c" (default: journal side or path)')
    p.add_argument("--label-b", type=label, help='name of B, e.g. "Proxmox VE 7.2"')
    p.add_argument("-o", "--output", required=True, help="workbook to write (.xlsx)")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 2) if any input cannot be used, or if a measurement is on both sides")
    p.add_argument("--alpha", type=probability, default=0.05, help="significance level of the t-tests (default 0.05)")
    p.add_argument("--csv", help="where to write the tidy CSV (default: next to the workbook, .csv); refused, "
                                 "like -o, if it is any file the command reads (e.g. a perf sidecar)")
    p.set_defaults(func=run)


def _measurements(files: list[str]) -> list[str]:
    """The result files and journals among ``files`` (a perf CSV is read with the result file next to it)."""
    return [f for f in files if not f.lower().endswith(".csv")]


def _same_file_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def shared_files(files_a: list[str], files_b: list[str]) -> list[tuple[str, str]]:
    """(A's file, B's file) pairs that are one measurement: the same file (a link, a hard link, a folder
    given on both sides) or byte-identical copies (fio's output carries its own timestamps, so two runs
    never write the same bytes). Contents are compared only between files of the same size."""
    a, b = _measurements(files_a), _measurements(files_b)
    by_id = {k: f for f in a if (k := _same_file_key(f)) is not None}
    sizes: dict[int, list[str]] = {}
    for f in a:
        try:
            sizes.setdefault(os.path.getsize(f), []).append(f)
        except OSError:
            continue
    digests: dict[str, str] = {}
    out = []
    for f in b:
        key = _same_file_key(f)
        if key in by_id:
            out.append((by_id[key], f))
            continue
        try:
            twins = sizes.get(os.path.getsize(f), [])
        except OSError:
            continue
        if not twins:
            continue
        mine = _digest(f)
        for other in twins:
            if other not in digests:
                digests[other] = _digest(other) or ""
            if mine is not None and digests[other] == mine:
                out.append((other, f))
                break
    return out


def check_shared(files_a: list[str], files_b: list[str], *, strict: bool) -> None:
    """A measurement on both sides (B's folder holds a link to, or a copy of, a file of A) is compared with
    itself: named as a warning, refused under --strict."""
    shared = shared_files(files_a, files_b)
    if not shared:
        return
    first_a, first_b = shared[0]
    also = f" (and {len(shared) - 1} more)" if len(shared) > 1 else ""
    what = (f"{len(shared)} measurement(s) are on both sides: {first_b} (B) is the same as {first_a} (A){also}; "
            "their points compare a measurement with itself")
    if strict:
        raise InputError(f"{what}. Fix: give each side its own measurements (or drop --strict to compare anyway)")
    warn([f"{what}. Give each side its own measurements"])


def run(args: argparse.Namespace) -> int:
    from ..analysis.comparison_report import compare_inputs, write_comparison

    inputs_a, inputs_b = [args.a, *args.add_a], [args.b, *args.add_b]
    check_inputs(inputs_a + inputs_b)
    out, csv = output_paths(args.output, args.csv, inputs_a + inputs_b)
    same = {real(p) for p in inputs_a} == {real(p) for p in inputs_b}
    if same:
        warn(["A and B are the same inputs: every difference will be 0 and no t-test can find one. Give the other "
              "data set as B"])

    def check(a: IngestResult, b: IngestResult) -> None:
        refuse_inputs([("-o", out), ("--csv", csv)], a.inputs + b.inputs)
        if not same:
            check_shared(a.inputs, b.inputs, strict=args.strict)

    comparison = compare_inputs(inputs_a, inputs_b, label_a=args.label_a, label_b=args.label_b, strict=args.strict,
                                alpha=args.alpha, warn=warn, check=check)
    write_comparison(comparison, out, csv)
    s = comparison.result.summary
    print(f"wrote {out} ({s['points']} points; {comparison.label_b} has more IOPS in {s['iops_wins']}, lower "
          f"latency in {s['latency_wins']}) and {csv}")
    return 0
