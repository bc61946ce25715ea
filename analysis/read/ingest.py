"""Ingest: journals, fio JSON, DiskSpd XML and perf CSV into one tidy DataFrame.

One row per cell x repeat, typed columns (:data:`COLUMNS`). Every reader returns plain dicts; the
frame is built once at the end, because building one DataFrame per file is what makes ingesting
thousands of result files slow. The stages, one module each:

- :mod:`.discover`: which inputs are journals, fio JSON, DiskSpd XML, and which perf CSV goes with which;
- :mod:`.journalrows`: journal cell records -> rows; :mod:`.plainfiles`: result files -> rows (through
  :mod:`.fiorows`, :mod:`.fio`'s one summary, :mod:`.diskspd`, :mod:`.perfcsv`, :mod:`.params`);
- :mod:`.checks`: the plausibility check every row passes, and the :class:`Problem` record;
- :mod:`.tidy`: the typed frame, repeat numbering and the Environment facts;
- here: the order of it all, and a process pool for many plain files.

A file that cannot be read is reported as a :class:`Problem` (file name and reason) and the rest is
processed; ``strict=True`` raises :class:`~stormatrix.core.errors.DataFileError` instead, naming every
problem. Nothing here prints.

Notebook use::

    from stormatrix.analysis.read.ingest import ingest
    result = ingest(["runs/x"])          # or fio JSON files, DiskSpd XML, directories of them
    df = result.frame                    # tidy: one row per cell x repeat
    result.problems                      # files that could not be read, and why

How inputs are found:

- a directory holding ``journal.ndjson`` is a run directory: only its journal is read;
- any other directory is searched (recursively): every regular file is read for what it holds, by its
  name (``*.json`` fio, ``*.xml`` DiskSpd, ``*.ndjson`` journals) or else by its content (fio JSON and
  json+ with text around it, client/server output, DiskSpd XML); what is not read is named in one note,
  per kind and why (:data:`.discover.UNREAD`);
- host counters for a plain result file come from ``perf stat -x,`` CSV next to it, named
  ``<stem>.perf.csv`` or ``<stem>.csv`` (``read-rand-bs4096-qd32.json`` +
  ``read-rand-bs4096-qd32.perf.csv``);
- controller, aio mode, iothread, cache and repeat number of a plain file come from its path
  (``virtio-blk/aio=native/read-rand-bs65536-qd8-rep2.json``); rw, block size, queue depth and numjobs
  from the file's own ``global options``/``job options``, falling back to the file name.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ...core import oscompat
from ...core.errors import DataFileError
from ...core.recordtypes import RunRecord
from .bulk import no_cyclic_gc
from .checks import Problem
from .discover import JOURNAL_NAME, UNREAD, csv_names, discover, perf_partner, sniff, stem, unread_note
from .journalrows import SCHEMA, read_journal_rows
from .plainfiles import parse_files
from .safe import escape_unencodable
from .tidy import COLUMNS, environment_frame, frame_from_rows, number_repeats

__all__ = ["COLUMNS", "JOURNAL_NAME", "NO_RESULTS_FIX", "SCHEMA", "IngestResult", "Problem", "frame_from_rows",
           "ingest"]

#: what to do about inputs that give no results at all (a report's message), when the caller has nothing more
#: specific to say
NO_RESULTS_FIX = "give run directories, journals, fio JSON or DiskSpd XML that hold measurements"


@dataclass
class IngestResult:
    frame: pd.DataFrame
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["scope", "item", "value"]))
    files: int = 0
    #: every file read: journals, result files and the perf CSVs that went with them (the output planner
    #: refuses to write over any of them)
    inputs: list[str] = field(default_factory=list)


PARALLEL_MIN_FILES = 1000  # below this a process pool costs more than it saves


def _idle_cpus() -> int:
    """CPUs this process may use that are not already busy (up to 4): on a machine whose cores are all
    taken, worker processes only add forking and pickling to the same CPU time (measured: slower)."""
    cpus = len(oscompat.usable_cpus())
    busy = oscompat.load_average() or 0.0  # (Windows keeps none: every CPU counts as idle)
    return max(1, min(4, cpus - int(busy + 0.5)))


def _parse_all(work: list[tuple[str, str, str | None]],
               workers: int | None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """:func:`parse_files`, spread over processes when there are many files and more than one CPU.

    Parsing is CPU-bound Python (JSON decoding, then summing jobs), so threads would not help; forked
    workers return plain row dicts, which pickle cheaply. Order is kept (chunks are contiguous).
    """
    if workers is None:
        workers = _idle_cpus() if len(work) >= PARALLEL_MIN_FILES else 1
    if workers <= 1 or len(work) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return parse_files(work)
    size = -(-len(work) // (workers * 4))
    chunks = [work[i:i + size] for i in range(0, len(work), size)]
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        results = list(pool.map(parse_files, chunks))
    rows = [r for chunk_rows, _ in results for r in chunk_rows]
    problems = [p for _, chunk_problems in results for p in chunk_problems]
    return rows, problems


def _new_cells(rows: list[dict[str, Any]], cells: dict[tuple[str, str], str],
               notes: list[str]) -> list[dict[str, Any]]:
    """A journal's rows minus cells another journal already gave (a copy of a run directory, or the same
    run given twice under different paths): one measurement must never count twice."""
    new: list[dict[str, Any]] = []
    dropped: list[str] = []
    for row in rows:
        run_id, key = row.get("run_id"), row.get("key")
        if run_id is None or key is None:
            new.append(row)
            continue
        first = cells.get((run_id, key))
        if first is None:
            cells[(run_id, key)] = row["source"]
            new.append(row)
        else:
            dropped.append(first)
    if dropped:
        where = rows[0]["source"].rsplit(":", 1)[0]
        notes.append(f"{where}: {len(dropped)} cell(s) of run {rows[0].get('run_id')} were already read from "
                     f"{dropped[0].rsplit(':', 1)[0]}; counted once")
    return new


def ingest(paths: Iterable[str | Path], *, strict: bool = False, label: str | None = None,
           workers: int | None = None) -> IngestResult:
    """Read every input into one tidy frame. See the module docstring for what is found where.

    ``label`` names the data set (the side of a comparison); it overrides the journal's ``side``.
    ``strict`` turns any unreadable file or record into a DataFileError listing all of them.
    ``workers``: processes for parsing plain result files (default: the idle CPUs, up to 4, when there
    are at least :data:`PARALLEL_MIN_FILES` files, else 1).
    """
    with no_cyclic_gc():
        return _ingest(paths, strict=strict, label=label, workers=workers)


def _ingest(paths: Iterable[str | Path], *, strict: bool, label: str | None, workers: int | None) -> IngestResult:
    found = discover(paths)
    csv_names.cache_clear()  # folders may have changed since the last call
    rows: list[dict[str, Any]] = []
    runs: list[RunRecord] = []
    problems: list[Problem] = []
    notes: list[str] = list(found.notes) + found.irregular
    for folder, why in found.unlisted:  # (a path past PATH_MAX is thousands of characters: shown by its ends)
        shown = folder if len(folder) <= 200 else f"{folder[:80]}...{folder[-60:]}"
        problems.append(Problem(shown, f"{shown}: a folder under the inputs: {why}"))
    paired: set[str] = set()
    foreign = {c: kind for c in found.explicit_csv if (kind := sniff(c)) in ("esxtop", "output")}
    explicit_by_stem = {os.path.basename(c)[: -len(".perf.csv")] if c.endswith(".perf.csv") else stem(c): c
                        for c in found.explicit_csv if c not in foreign}
    work: list[tuple[str, str, str | None]] = []
    cells: dict[tuple[str, str], str] = {}  # (run id, cell key) -> the journal line it was read from
    for kind, path in found.files:
        if kind == "journal":
            j_rows, j_runs, j_problems, j_notes = read_journal_rows(path)
            rows += _new_cells(j_rows, cells, notes)
            runs += j_runs
            problems += j_problems
            notes += j_notes
            continue
        partner = (explicit_by_stem.get(stem(path)) if explicit_by_stem else None) or perf_partner(path)
        if partner is not None:
            paired.add(partner)
        work.append((kind, path, partner))
    file_rows, file_problems = _parse_all(work, workers)
    rows += file_rows
    problems += file_problems
    for csv in found.explicit_csv:
        if csv in foreign:
            what, _, why = UNREAD[foreign[csv]]
            problems.append(Problem(csv, f"an {what}, not perf stat -x, output: {why}. Fix: give the perf stat CSV "
                                         "of the run (perf stat -x, -o <stem>.perf.csv)"))
        elif csv not in paired:
            problems.append(Problem(csv, "perf CSV with no result file next to it "
                                         "(expected <stem>.json or <stem>.xml of the same name)"))
    unread = list(found.unread)
    for csv in found.walked_csv:
        if csv not in paired:
            kind = sniff(csv)
            unread.append((csv, "perf-alone" if kind == "perf" else kind if kind in UNREAD else "unknown"))
    note = unread_note(sorted(unread))
    if note:
        notes.append(note)
    if label is not None:
        for row in rows:
            row["side"] = label
    number_repeats(rows)
    if strict and problems:
        listing = "; ".join(str(p) for p in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise DataFileError(escape_unencodable(problems[0].source) if len(problems) == 1 else f"{len(problems)} inputs",
                            f"cannot be used under --strict: {listing}{more}",
                            "fix or remove these files, or run without --strict to skip them")
    frame = frame_from_rows(rows)
    inputs = [path for _, path in found.files] + sorted(paired | set(found.explicit_csv))
    return IngestResult(frame=frame, problems=problems, notes=notes,
                        environment=environment_frame(runs, frame), files=len(found.files), inputs=inputs)
