"""The efficiency report, once: ingest the inputs, score every configuration, write the findings, the workbook
and the tidy CSV (technote 004).

``stormatrix report`` and ``stormatrix demo`` (through :func:`stormatrix.commands.report.write_report`) call
:func:`efficiency_report`, as ``stormatrix compare`` and a suite call :mod:`.comparison_report`. What is the
caller's own is passed in, not copied: where warnings go (stderr, a log), what the outputs are called in a
failure's message, and a check of the ingested inputs before anything is scored (the command refuses an output
that is one of the files it read).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..core.errors import InputError
from .score.efficiency import DEFAULT_CV_LIMIT, EfficiencyResult, score_cells
from .score.findings import Finding, efficiency_findings
from .read.ingest import NO_RESULTS_FIX, IngestResult, ingest
from .write.savefiles import write_all
from .write.workbook import write_efficiency_workbook, write_tidy_csv


@dataclass
class EfficiencyReport:
    """The inputs ingested, their scores and findings, and the two files written from them."""

    data: IngestResult
    result: EfficiencyResult
    findings: list[Finding]
    workbook: Path
    csv: Path


def efficiency_report(inputs: Sequence[str], workbook: Path, csv: Path, *, warn: Callable[[list[str]], Any],
                      strict: bool = False, cv_limit: float = DEFAULT_CV_LIMIT, label: str | None = None,
                      check: Callable[[IngestResult], Any] | None = None,
                      flags: tuple[str, str] = ("-o", "--csv")) -> EfficiencyReport:
    """Ingest ``inputs``, score them and write the efficiency workbook and the tidy CSV, replaced together or
    not at all (:func:`.write.savefiles.write_all`).

    ``check`` sees the ingested inputs first (it raises to refuse them); ``warn`` then receives every line a
    user should read (skipped inputs, ingest's notes, the scoring's notes). No usable result at all is an
    :class:`InputError` naming the inputs. ``label`` names the data set (default: the journals' side);
    ``flags`` name the two outputs in a failure's message.
    """
    inputs = [str(p) for p in inputs]
    data = ingest(inputs, strict=strict, label=label)
    if check is not None:
        check(data)
    warn([str(p) for p in data.problems] + data.notes)
    if data.frame.empty:
        raise InputError("no usable results in " + ", ".join(inputs)
                         + (f" ({len(data.problems)} inputs could not be read)" if data.problems else "")
                         + f". Fix: {NO_RESULTS_FIX}")
    result = score_cells(data.frame, cv_limit=cv_limit)
    warn(result.notes)
    findings = efficiency_findings(result)

    def book(path: Path) -> None:
        write_efficiency_workbook(path, data, result, findings, label=label, inputs=inputs)

    write_all([(flags[0], workbook, book), (flags[1], csv, lambda p: write_tidy_csv(data.frame, p))])
    return EfficiencyReport(data, result, findings, workbook, csv)
