"""The A-versus-B report, once: ingest both sides, label them, compare point by point, write the findings,
the workbook and the tidy CSV of both sides (technotes 000 and 003).

``stormatrix compare`` and every suite of sides (``demo --suite``, a fleet's storages) call these two
functions. What differs between them is passed in, not copied: where warnings go (stderr, a log),
what a side is called in messages (``A``/``B``, or the suite's side labels), what to do about a side
with no results, and a check of the ingested inputs before anything is compared (the command refuses
an output that is one of its inputs, and names a measurement given on both sides).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from ..core.errors import InputError
from .score.compare import ComparisonResult, compare
from .score.comparisonfindings import comparison_findings
from .score.findings import Finding
from .read.ingest import NO_RESULTS_FIX, IngestResult, ingest
from .write.savefiles import write_all
from .write.workbook import write_comparison_workbook, write_tidy_csv


@dataclass
class Comparison:
    """Both sides ingested and labelled, their point-by-point comparison and its findings."""

    a: IngestResult
    b: IngestResult
    inputs_a: list[str]
    inputs_b: list[str]
    label_a: str
    label_b: str
    result: ComparisonResult
    findings: list[Finding]

    def frame(self) -> pd.DataFrame:
        """The tidy rows of both sides, A first (each with its side's label)."""
        return pd.concat([self.a.frame, self.b.frame], ignore_index=True)


def side_label(given: str | None, frame: pd.DataFrame, first: str) -> str:
    """The label a side is shown under: the one given, else the journals' one side, else the name of its
    first input."""
    if given:
        return given
    sides = sorted({str(s) for s in frame["side"].dropna()})
    return sides[0] if len(sides) == 1 else (Path(first).name or first)


def compare_inputs(inputs_a: Sequence[str], inputs_b: Sequence[str], *, warn: Callable[[list[str]], Any],
                   label_a: str | None = None, label_b: str | None = None, strict: bool = False,
                   alpha: float = 0.05, names: tuple[str, str] = ("A", "B"),
                   no_results_fix: str = NO_RESULTS_FIX,
                   check: Callable[[IngestResult, IngestResult], Any] | None = None) -> Comparison:
    """Ingest each side's inputs and compare them.

    ``warn`` receives every line a user should read (skipped inputs, prefixed by the side's name in
    ``names``; ingest's and the comparison's notes). ``check`` sees both sides' ingested inputs before
    any warning or comparison (it raises to refuse them). A side with no usable results is an
    :class:`InputError` naming the side, its inputs and ``no_results_fix``. Labels default to
    :func:`side_label`; two equal labels are told apart by `` (B)`` on the second.
    """
    inputs_a, inputs_b = [str(p) for p in inputs_a], [str(p) for p in inputs_b]
    a = ingest(inputs_a, strict=strict)
    b = ingest(inputs_b, strict=strict)
    if check is not None:
        check(a, b)
    warn([f"{names[0]}: {p}" for p in a.problems] + [f"{names[1]}: {p}" for p in b.problems] + a.notes + b.notes)
    for name, side, inputs in ((names[0], a, inputs_a), (names[1], b, inputs_b)):
        if side.frame.empty:
            raise InputError(f"side {name} has no usable results in {', '.join(inputs)}. Fix: {no_results_fix}")
    first_label = side_label(label_a, a.frame, inputs_a[0])
    second_label = side_label(label_b, b.frame, inputs_b[0])
    if first_label == second_label:
        second_label = f"{second_label} (B)"
    for side, label in ((a, first_label), (b, second_label)):
        side.frame["side"] = pd.Series(label, index=side.frame.index, dtype="string")
    result = compare(a.frame, b.frame, label_a=first_label, label_b=second_label, alpha=alpha)
    warn(result.notes)
    return Comparison(a, b, inputs_a, inputs_b, first_label, second_label, result, comparison_findings(result))


def write_comparison(comparison: Comparison, workbook: Path, csv: Path, *,
                     flags: tuple[str, str] = ("-o", "--csv")) -> None:
    """The comparison workbook and the tidy CSV of both sides, replaced together or not at all
    (:func:`.output.write_all`); ``flags`` name the two outputs in a failure's message."""
    c = comparison

    def book(path: Path) -> None:
        write_comparison_workbook(path, c.a, c.b, c.result, c.findings, inputs_a=c.inputs_a, inputs_b=c.inputs_b)

    write_all([(flags[0], workbook, book), (flags[1], csv, lambda p: write_tidy_csv(c.frame(), p))])
