"""``stormatrix report``: the efficiency workbook (technote 004) from run directories or result files.

Exit codes: 0 when the workbook was written, even if some inputs were skipped (each skipped file is
named on stderr with the reason, and listed on the workbook's Summary sheet); 2 under ``--strict`` when
any input could not be used, and 2 when no input was usable at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..core.errors import InputError
from ..core.paths import input_problem
from ..core.journalfile import JOURNAL_NAME
from .argtypes import label, positive_number
from .outputs import plan_outputs, real, refuse_inputs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="efficiency workbook: raw, normalized, scores, ranks, charts, findings",
                       description="Read run directories (journal.ndjson), journals, fio JSON and DiskSpd XML "
                                   "(with perf stat -x, CSV next to them as <stem>.perf.csv) and write the "
                                   "efficiency workbook plus the tidy data as CSV next to it. Unreadable files "
                                   "are skipped and named (exit 0); --strict makes them an error (exit 2).")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="run directory, journal, result file or directory")
    p.add_argument("-o", "--output", required=True, help="workbook to write (.xlsx)")
    p.add_argument("--strict", action="store_true", help="fail (exit 2) if any input cannot be used")
    p.add_argument("--cv-limit", type=cv_limit, default=0.10,
                   help="flag a configuration whose CV across repeats exceeds this: a fraction (default "
                        "0.10) or a percentage (10%%, as the matrix's cv_limit_pct)")
    p.add_argument("--label", type=label,
                   help="name of this data set, shown in the workbook (default: the journal's side)")
    p.add_argument("--csv", help="where to write the tidy CSV (default: next to the workbook, .csv); refused, "
                                 "like -o, if it is any file the command reads (e.g. a perf sidecar)")
    p.set_defaults(func=run)


def cv_limit(text: str) -> float:
    """argparse type: a CV limit as a fraction (``0.10``) or a percentage (``10%``).

    A bare number above 1 is refused rather than guessed: ``10`` would be 1000 % as a fraction, while
    the matrix's ``cv_limit_pct = 10`` means 10 %.
    """
    stripped = text.strip()
    if stripped.endswith("%"):
        value = positive_number(stripped[:-1])
        if value > 1000:
            raise argparse.ArgumentTypeError(f"{text!r}: a CV limit above 1000 % flags nothing; e.g. 10%")
        return value / 100.0
    value = positive_number(stripped)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} would be {value * 100:g} % as a fraction. Give a fraction "
                                         f"(0.10) or a percentage ({value:g}%), as the matrix's cv_limit_pct")
    return value


def probability(text: str) -> float:
    """argparse type: a significance level strictly between 0 and 1."""
    value = positive_number(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1, e.g. 0.05")
    return value


def check_inputs(inputs: list[str]) -> None:
    """Refuse, before ingest walks anything, an empty input (Path("") would be the current directory)
    and a run directory whose journal.ndjson is not a file (a directory, a FIFO, a link loop): the
    message names the journal, not "no usable results" for the whole directory."""
    for given in inputs:
        if not given.strip():
            raise InputError("an INPUT is an empty string. Fix: give a run directory, a journal, a result file or "
                             "a directory of them (an empty argument would mean the current directory)")
        journal = os.path.join(given, JOURNAL_NAME)
        if os.path.isdir(given) and os.path.lexists(journal):
            problem = input_problem(journal)
            if problem:
                raise InputError(f"{journal} {problem}, so the run in {given} cannot be read. Fix: give a run "
                                 f"directory whose {JOURNAL_NAME} is the journal file 'stormatrix run' wrote")


def output_paths(output: str, csv: str | None, inputs: list[str] | None = None,
                 flag: str = "-o") -> tuple[Path, Path]:
    """The workbook and CSV paths, refused before anything is read if writing them could destroy an input
    given on the command line or is impossible (:func:`.outputs.plan_outputs`); ``flag`` is the option that
    named the workbook, as the messages say it."""
    out = Path(output)
    if out.suffix.lower() != ".xlsx":
        raise InputError(f"{flag} {output!r}: the workbook must end in .xlsx. Fix: give {flag} a name like "
                         "report.xlsx")
    if csv is not None and not csv.strip():
        raise InputError("--csv is empty. Fix: give the CSV's file name, or leave --csv out (it goes next to the "
                         "workbook)")
    csv_path = Path(csv) if csv else out.with_suffix(".csv")
    if real(csv_path) == real(out):
        raise InputError(f"--csv {csv} is the workbook itself. Fix: give the CSV its own name (or leave --csv out)")
    plan_outputs([(flag, out), ("--csv", csv_path)], inputs or [])
    return out, csv_path


def warn(lines: list[str]) -> None:
    for line in lines:
        print(f"stormatrix: warning: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    return write_report(args.inputs, args.output, csv=args.csv, strict=args.strict, cv_limit=args.cv_limit,
                        label=args.label)


def write_report(inputs: list[str], output: str, *, csv: str | None = None, strict: bool = False,
                 cv_limit: float = 0.10, label: str | None = None) -> int:
    """Check the inputs and outputs, then ingest, score, write the workbook and the tidy CSV (one call of
    :func:`stormatrix.analysis.efficiency_report.efficiency_report`); used by ``report`` and ``demo``."""
    from ..analysis.efficiency_report import efficiency_report

    check_inputs(inputs)
    out, csv_path = output_paths(output, csv, inputs)
    report = efficiency_report(inputs, out, csv_path, warn=warn, strict=strict, cv_limit=cv_limit, label=label,
                               check=lambda data: refuse_inputs([("-o", out), ("--csv", csv_path)], data.inputs))
    print(f"wrote {out} ({len(report.data.frame)} measurements, {len(report.result.cells)} configurations scored, "
          f"{len(report.findings)} findings) and {csv_path}")
    return 0
