"""``stormatrix demo``: the whole loop on this machine — local QEMU, the tiny Linux guest, real fio —
then the efficiency workbook.
"""

from __future__ import annotations

import argparse
import shutil
from importlib import resources
from pathlib import Path

from ..core.errors import InputError
from ..demosuite import MAX_GUESTS, MIN_GUESTS, run_demo_suite
from .argtypes import check_run_dir
from .report import output_paths, write_report
from .runlock import hold_run_dir
from .run import execute

DESCRIPTION = """\
Boot the tiny Linux guest under local QEMU (software emulation) for each cell of the demo
matrix, run real fio, measure the QEMU threads' CPU (scope "cpus": QEMU's I/O path - main loop,
aio workers - alone on one CPU, measured system-wide, the vCPU, which under software emulation is
the emulated guest, beside the harness; the process's figures beside the set's), and write the
workbook. Resumable like `run`.

The demo matrix: five controllers x aio=native and aio=threads, three repeats each (30 cells,
2 s warm-up + 6 s window; `plan` says 4 min 44 s for an idle 2-core machine; `make demo` from a
fresh clone took 6 min 54 s there with the workbook, 47 cells). Its Answer page decides,
per controller, whether aio=threads costs more than aio=native, on the I/O-path context switches per
I/O (every QEMU thread but the vCPU, which under software emulation is the emulated guest; Welch's
t-test, 95 %; docs/demo-noise.md). Three repeats are the fewest with which the test has some power.
Extra repeats go first to the controllers still undecided; a configuration whose repeats vary by
more than 10 % (CV of CPU or context switches per MiB) gets one too, up to a 5th repeat, but a round
of them starts only if it ends within 8.5 min ([run] time_budget_minutes): with the workbook the demo
stays within 10 min on an idle machine (on a busy one the planned cells alone can take longer).

--full runs every controller x aio mode with iothread variants and 2 repeats."""


def guests_per_side(text: str) -> int:
    """``--guests``: 2-4 (the bounds the demo suite's configuration holds). Checked when parsed, so that
    no value, 0 included, is replaced by the default or reaches a booted guest."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number: give {MIN_GUESTS} to "
                                         f"{MAX_GUESTS} guests per side, e.g. --guests 2") from None
    if not MIN_GUESTS <= n <= MAX_GUESTS:
        raise argparse.ArgumentTypeError(f"{n}: the demo suite boots {MIN_GUESTS} to {MAX_GUESTS} guests per side "
                                         f"(each a QEMU process under software emulation); give --guests 2 to 4")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the demo matrix on local QEMU and write the efficiency workbook",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", metavar="RUN_DIR",
                   help="run directory (default: runs/demo, with --suite runs/demo-suite holding iscsi/ and nbd/)")
    p.add_argument("--workbook", help="workbook path (default: RUN_DIR/stormatrix-demo.xlsx, "
                                      "with --suite RUN_DIR/stormatrix-demo-suite.xlsx)")
    p.add_argument("--full", action="store_true",
                   help="every controller x aio x iothread, 2 repeats: 66 cells, about 17 min "
                        "(`stormatrix plan` on the matrix prints the ETA)")
    p.add_argument("--matrix", help="use this matrix instead of the built-in demo matrix")
    p.add_argument("--suite", action="store_true",
                   help="the protocol-comparison demo (003 in miniature): fio servers in 2-4 local guests per "
                        "side, each guest's test disk over iSCSI (tgtd, QEMU's libiscsi) then over NBD "
                        "(qemu-storage-daemon) on 127.0.0.1, comparison workbook; the shipped suite file "
                        "(RUN_DIR/suite.toml, [fleet] backend = \"qemu\") run as `stormatrix suite run` runs it")
    p.add_argument("--guests", type=guests_per_side, metavar="N",
                   help="with --suite: guests per side, 2-4 (default 2)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar or ETA on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.output is not None:  # a file, FIFO or loop at -o: exit 2 before anything is created or booted
        check_run_dir("-o", args.output)
    else:
        check_run_dir("the default run directory", "runs/demo-suite" if args.suite else "runs/demo")
    if args.suite:
        with hold_run_dir(args.output or "runs/demo-suite", "demo --suite"):
            return run_demo_suite(args)
    if args.guests is not None:
        raise InputError(f"--guests {args.guests} applies only to the suite demo. Fix: add --suite, or drop "
                         "--guests (the matrix demo boots one guest per cell)")
    run_dir = Path(args.output or "runs/demo")
    matrix = Path(args.matrix) if args.matrix else run_dir / "matrix.toml"
    default_name = "stormatrix-demo-full.xlsx" if args.full else "stormatrix-demo.xlsx"
    workbook = Path(args.workbook) if args.workbook else run_dir / default_name
    # the workbook is written after minutes of measuring: what would refuse it then is refused now
    output_paths(str(workbook), None, [str(matrix), str(run_dir / "journal.ndjson")],
                 flag="--workbook" if args.workbook else "-o")
    with hold_run_dir(run_dir, "demo"):  # (before the matrix is copied in: another demo may be reading it)
        if not args.matrix:
            name = "demo-full.toml" if args.full else "demo.toml"
            with resources.as_file(resources.files("stormatrix").joinpath("matrices", name)) as src:
                shutil.copyfile(src, matrix)
        summary = execute(matrix, run_dir, progress=not args.no_progress)
        write_report([str(run_dir)], str(workbook))
    print(f"workbook: {workbook.resolve()}")
    if summary.failed:
        print(f"{len(summary.failed)} cells failed; see the cell-error records in {run_dir / 'journal.ndjson'}")
        return 1
    return 0
