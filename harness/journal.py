"""The run journal: append-only, newline-delimited JSON, one self-describing record per line.

Each record is written with an exclusive lock, flushed and fsynced before the next cell starts, so a
crash loses at most the cell in flight. A SIGKILL in the middle of a write can leave a torn last line
(no trailing newline): it is detected, reported and cut off before anything new is appended, never
glued to the next record. Resume = skip the keys that already have a ``cell`` record.

Record types (field ``type``):

- ``run``        one per invocation: run id, matrix, environment, backend's original VM config
- ``cell``       one per finished cell x repeat: see :mod:`stormatrix.records` (built) and
  :mod:`stormatrix.core.recordtypes` (defined)
- ``cell-error`` a failed attempt at a cell (the cell is tried again on resume)
- ``restored``   the backend put the VM back (so ``stormatrix restore`` knows there is nothing to do)
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .core import oscompat
from .core.errors import DataFileError, InputError, JournalWriteError
from .core.journalfile import CELL, looks_binary, read_lines
from .core.paths import input_problem
from .core.recordtypes import CellRecord, JournalRecord, Record, resume_record

log = logging.getLogger("stormatrix.journal")

SCHEMA = "stormatrix/record-1"
JOURNAL_NAME = "journal.ndjson"


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _clean(value: Any) -> Any:
    """JSON has no NaN/Infinity: store them as null rather than writing invalid JSON."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


@dataclass
class ReadResult:
    records: list[dict[str, Any]]
    torn_tail: bool
    numbers: list[int] = field(default_factory=list)  # each record's line number

    def typed(self, path: str | Path) -> list[Record]:
        """The records as their types (:func:`~stormatrix.core.recordtypes.resume_record`: a wrong-typed key
        raises DataFileError naming ``path``, the line and the key); a type this stormatrix does not write is
        left out."""
        typed = (resume_record(rec, f"{path}:{number}") for rec, number in zip(self.records, self.numbers))
        return [rec for rec in typed if rec is not None]

    def measured_cells(self, path: str | Path) -> list[CellRecord]:
        """The ``cell`` records as analysis reads them (:meth:`CellRecord.from_json`, with a cell's measurement
        checks), in journal order; a line that fails them is left out: analysis reports it and counts it for
        nothing, so neither does a reader that decides as analysis would (``repeats.py``)."""
        out: list[CellRecord] = []
        for rec, number in zip(self.records, self.numbers):
            if rec.get("type") != CELL:
                continue
            try:
                out.append(CellRecord.from_json(rec, f"{path}:{number}"))
            except DataFileError:
                continue
        return out


def read_journal(path: str | Path) -> ReadResult:
    """Read every record. A torn last line is skipped with a warning; a corrupt line elsewhere is an error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ReadResult([], False)
    except OSError as exc:
        raise DataFileError(str(path), f"cannot be read ({exc.strerror})") from None
    if looks_binary(data):
        raise DataFileError(str(path), "is binary data, not a journal (a journal is text, one JSON record per line)",
                            f"give the run directory whose {JOURNAL_NAME} stormatrix wrote, or move this file "
                            "away to start a new run there")
    records: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    bad: list[tuple[int, str]] = []  # (line number, why): every damaged line is named, not only the first
    torn = False
    for line in read_lines(data):
        if line.error is None and line.record is None:
            error: str | None = f"not a JSON object but {type(line.value).__name__}"
        else:
            error = line.error
        if error is not None:
            if line.last:  # text after the final newline: the write never finished
                torn = True
                log.warning("%s: discarding a torn last line (%d bytes) left by an interrupted write",
                            path, line.size)
                continue
            bad.append((line.number, error))
            continue
        assert line.record is not None
        records.append(line.record)
        line_numbers.append(line.number)
    if bad:
        numbers = ", ".join(str(n) for n, _ in bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        which = f"line {numbers} is" if len(bad) == 1 else f"lines {numbers} are"
        raise DataFileError(str(path), f"{which} not a journal record (line {bad[0][0]}: {bad[0][1]})",
                            "restore the file from a backup or delete "
                            f"{'that line' if len(bad) == 1 else 'those lines'}; "
                            f"the other {len(records)} records are intact")
    return ReadResult(records, torn, line_numbers)


class Journal:
    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / JOURNAL_NAME

    def open(self) -> "Journal":
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file in the way, a path too long, ...: the user's argument
            raise InputError(f"{self.run_dir} cannot be used as the run directory ({exc.strerror}). "
                             "Fix: give -o the path of a directory (it is created if missing)") from None
        self.check_existing()
        self._repair_tail()
        return self

    def check_existing(self) -> None:
        """An existing journal must be a regular file holding journal lines before anything touches it:
        a FIFO would block, a directory fails, and the torn-line repair must never cut into a file that
        is not a journal at all (a disk image, a UTF-16 copy, another program's log)."""
        if not os.path.lexists(self.path):
            return
        problem = input_problem(self.path)
        if problem:
            raise InputError(f"{self.path} {problem}, so it cannot be the run's journal. Fix: move it away, or "
                             "give -o another run directory")
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(4096)
        except OSError as exc:
            raise InputError(f"{self.path} cannot be read ({exc.strerror}). Fix: check its permissions, or give -o "
                             "another run directory") from None
        if head.strip() and (looks_binary(head) or not head.lstrip().startswith(b"{")):
            raise DataFileError(str(self.path), "is not a stormatrix journal (its first line is not a JSON record"
                                f"{'; it holds NUL bytes' if looks_binary(head) else ''}), so nothing was appended "
                                "to it", "give -o a new run directory, or move the file away if it is not needed")

    def _repair_tail(self) -> None:
        """Cut a torn last line so the next append starts on a clean line."""
        if not self.path.exists():
            return
        with open(self.path, "r+b") as fh, oscompat.locked(fh.fileno()):
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            # find the last newline
            pos = size - 1
            chunk = 65536
            keep = 0
            while pos > 0:
                start = max(0, pos - chunk)
                fh.seek(start)
                buf = fh.read(pos - start)
                idx = buf.rfind(b"\n")
                if idx >= 0:
                    keep = start + idx + 1
                    break
                pos = start
            log.warning("%s: cutting a torn last line (%d bytes) left by an interrupted write",
                        self.path, size - keep)
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, record: dict[str, Any] | JournalRecord) -> None:
        """Append one record (a :mod:`stormatrix.core.recordtypes` record is written as its ``to_json()``)."""
        record = {"schema": SCHEMA, **(record.to_json() if isinstance(record, JournalRecord) else record)}
        line = json.dumps(_clean(record), default=_json_default, ensure_ascii=False, allow_nan=False)
        data = (line + "\n").encode("utf-8")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | oscompat.O_BINARY, 0o644)
        except OSError as exc:
            raise JournalWriteError(f"cannot open the journal {self.path}: {exc.strerror}") from None
        try:
            oscompat.lock(fd, wait=True)
            before = os.fstat(fd).st_size
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(28, "short write")
                os.fsync(fd)
            except OSError as exc:
                # Leave no partial line behind: the journal must stay readable.
                try:
                    os.ftruncate(fd, before)
                except OSError:
                    pass
                raise JournalWriteError(
                    f"cannot write to the journal {self.path}: {exc.strerror or exc}. "
                    "Free space or fix permissions, then run the same command again: "
                    "every cell already journaled is kept and will be skipped") from None
        finally:
            oscompat.unlock(fd)
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Every record as the JSON object on its line."""
        return read_journal(self.path).records

    def typed_records(self) -> list[Record]:
        """Every record as its type (:meth:`ReadResult.typed`): what a resume reads."""
        return read_journal(self.path).typed(self.path)

    def measured_cells(self) -> list[CellRecord]:
        """The cell records a report would use (:meth:`ReadResult.measured_cells`): what extra repeats decide on."""
        return read_journal(self.path).measured_cells(self.path)

    def done_keys(self) -> set[str]:
        """The keys of the cells already measured (a ``cell`` record): a resume skips them."""
        return done_keys(self.typed_records())


def done_keys(records: Iterable[Record]) -> set[str]:
    """The keys of the ``cell`` records among ``records``."""
    return {r.key for r in records if isinstance(r, CellRecord)}
