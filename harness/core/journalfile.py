"""The run journal's file format (docs/journal.md), read line by line: the part both readers share.

A journal is UTF-8 text, one JSON object per line, each with ``"schema": SCHEMA``. Text after the final
newline is a line whose write never finished (the harness was killed mid-append): a *torn* last line.

Two readers use this with different policies, which stay theirs: the runner's (``stormatrix.journal``)
must stop at a corrupt line before it appends anything, and analysis (``stormatrix.analysis.read.journalrows``)
reports a bad line and goes on with the rest. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

JOURNAL_NAME = "journal.ndjson"
SCHEMA = "stormatrix/record-1"

# The record types (``"type"``), the one list the writer (stormatrix.records builds every record) and the
# readers (the runner's resume, analysis.read.journalrows) name them by.
RUN = "run"                    # a run started: environment, matrix, the VM's original configuration
CELL = "cell"                  # one measured cell
CELL_ERROR = "cell-error"      # one failed attempt of a cell
CELL_SKIPPED = "cell-skipped"  # a cell not run, with the reason (a Windows guest without the driver)
RESTORED = "restored"          # the VM was put back as the run found it
RECORD_TYPES = frozenset({RUN, CELL, CELL_ERROR, CELL_SKIPPED, RESTORED})


@dataclass(frozen=True)
class Line:
    """One non-blank line: its decoded JSON value, or why it could not be decoded."""

    number: int            # 1-based
    value: Any             # the decoded JSON (any type) when ``error`` is None
    error: str | None      # why the line is not JSON (decoder message)
    last: bool             # text after the final newline: a torn write when ``error`` is set
    size: int              # bytes on the line

    @property
    def record(self) -> dict[str, Any] | None:
        """The line's record, or None when it is not a JSON object."""
        return self.value if self.error is None and isinstance(self.value, dict) else None


def read_lines(data: bytes) -> Iterator[Line]:
    """Every non-blank line of a journal's bytes, decoded."""
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)
        try:
            value = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            yield Line(number, None, str(exc) or type(exc).__name__, last, len(raw))
            continue
        yield Line(number, value, None, last, len(raw))


def looks_binary(data: bytes) -> bool:
    """NUL bytes near the start: not text at all (a disk image, a copied binary), not a damaged journal."""
    return b"\x00" in data[:4096]
