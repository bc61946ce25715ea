"""``stormatrix run``: execute a matrix; resumable (run the same command again to continue)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from ..console import Terminated
from ..registry import check_executor_spec, load_spec
from ..runner import Runner
from ..runsource import RunOptions, RunSummary
from ..spec import check_guest_backend
from .argtypes import check_run_dir, label
from .runlock import hold_run_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="execute a matrix (progress bar, ETA); run it again to resume",
                       description="Execute every cell of MATRIX and journal each one to RUN_DIR/journal.ndjson. "
                                   "Cells already in the journal are skipped, so re-running resumes. One run at a "
                                   "time writes a RUN_DIR: a second one started into it exits 2 naming the first.")
    p.add_argument("matrix", help="matrix file (TOML)")
    p.add_argument("-o", "--output", required=True, metavar="RUN_DIR", help="run directory (journal, logs)")
    p.add_argument("--side", metavar="LABEL", type=label,
                   help="label of this run in A-vs-B comparisons, e.g. 'Proxmox VE 8.2'")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _on_sigterm(signum: int, frame: Any) -> None:
    # Raise inside the main thread so every finally block runs: QEMU is stopped, the VM restored (the CLI
    # installs the same for every command; this covers execute() called as a library, by the demo too).
    raise Terminated(signum)


def execute(matrix: str | Path, run_dir: str | Path, *, side: str | None = None,
            progress: bool = True, hold: str | None = None) -> RunSummary:
    """Run ``matrix`` into ``run_dir``; ``hold`` (the command's name) holds the run directory for this one
    writer (:func:`.runlock.hold_run_dir`) once the matrix is known to be good, so that a bad matrix creates
    nothing."""
    spec = load_spec(matrix)
    check_guest_backend(spec)
    check_executor_spec(spec)
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with hold_run_dir(run_dir, hold) if hold else contextlib.nullcontext():
            return Runner(spec, run_dir, RunOptions(side=side, progress=progress)).run()
    finally:
        signal.signal(signal.SIGTERM, old)


def run(args: argparse.Namespace) -> int:
    check_run_dir("-o", args.output)
    summary = execute(args.matrix, args.output, side=args.side, progress=not args.no_progress, hold="run")
    print(f"{summary.measured} cells measured, {summary.already_done} already in the journal, "
          f"{len(summary.failed)} failed; journal: {Path(args.output) / 'journal.ndjson'}")
    skipped = summary.driver_skipped
    if skipped:  # the runner's driver gate (guestdrivers.DriverGate, the WinRM executor's): not failures, not measured
        print(f"  {len(skipped)} cells skipped: the guest lacks their controller's virtio-win driver (the "
              "cell-skipped records in the journal say which; a resumed run asks the guest again)")
        for reason in dict.fromkeys(r for _, r in skipped):
            print(f"    {sum(r == reason for _, r in skipped)} x {reason}")
    if summary.extra_repeats:
        print(f"  {len(summary.extra_repeats)} of them extra repeats asked for by [run] cv_limit_pct "
              "(each record's extra_repeat says why)")
    if summary.extra_not_run:
        print(f"  {summary.extra_not_run}", file=sys.stderr)
    for key in summary.failed:
        print(f"  failed: {key} (see the cell-error records in the journal)", file=sys.stderr)
    return 1 if summary.failed else 0
