"""Which inputs are what: run directories, fio JSON, DiskSpd XML, journals, and perf CSV partners.

- a directory holding ``journal.ndjson`` is a run directory: only its journal is read;
- any other directory is searched (recursively) for ``*.json`` (fio), ``*.xml`` (DiskSpd) and
  ``*.ndjson`` (journals);
- host counters for a plain result file come from ``perf stat -x,`` CSV next to it, named
  ``<stem>.perf.csv`` or ``<stem>.csv``.
"""

from __future__ import annotations

import glob
import os
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from ..core.errors import InputError

JOURNAL_NAME = "journal.ndjson"


def _sniff(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(512).lstrip()
    except OSError:
        return "fio"
    if head.startswith(b"<?xml") or head.startswith(b"<Results"):
        return "diskspd"
    if head.startswith(b"{") and b'"schema"' in head.split(b"\n", 1)[0] and b"stormatrix/" in head:
        return "journal"
    return "fio"


def _kind_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".ndjson" or path.name == JOURNAL_NAME:
        return "journal"
    if suffix == ".xml":
        return "diskspd"
    if suffix == ".csv":
        return "perf"
    if suffix == ".json":
        return "fio"
    return _sniff(path)


def discover(paths: Iterable[str | Path]) -> tuple[list[tuple[str, Path]], list[Path]]:
    """(kind, path) for every input, and the perf CSVs given explicitly.

    A path that does not exist is the user's typo, not a damaged file: InputError at once.
    """
    found: list[tuple[str, Path]] = []
    explicit_csv: list[Path] = []
    for p in paths:
        path = Path(p)
        try:
            exists = path.exists()
        except OSError as exc:  # a name too long for the filesystem, ...
            raise InputError(f"{str(p)[:120]}...: cannot be used as an input ({exc.strerror}). "
                             "Fix: give the path of a run directory or a result file") from None
        if not exists:
            matches = sorted(glob.glob(str(p))) if any(ch in str(p) for ch in "*?[") else []
            if not matches:
                raise InputError(f"{p}: no such file or directory")
            sub, csvs = discover(matches)
            found += sub
            explicit_csv += csvs
            continue
        if path.is_dir():
            if (path / JOURNAL_NAME).is_file():
                found.append(("journal", path / JOURNAL_NAME))
                continue
            names: list[str] = []
            for folder, dirs, files in os.walk(path):
                dirs.sort()
                names += [os.path.join(folder, f) for f in files if f.lower().endswith((".json", ".xml", ".ndjson"))]
            for name in sorted(names):
                child = Path(name)
                found.append((_kind_of(child), child))
            continue
        kind = _kind_of(path)
        if kind == "perf":
            explicit_csv.append(path)
        else:
            found.append((kind, path))
    return found, explicit_csv


@lru_cache(maxsize=1024)
def csv_names(folder: str) -> frozenset[str]:
    """CSV file names in a folder, listed once: a stat per result file is slow with 10,000 files."""
    try:
        return frozenset(e.name for e in os.scandir(folder) if e.name.lower().endswith(".csv") and e.is_file())
    except OSError:
        return frozenset()


def perf_partner(path: Path) -> Path | None:
    names = csv_names(str(path.parent))
    if not names:
        return None
    for candidate in (path.stem + ".perf.csv", path.stem + ".csv"):
        if candidate in names:
            return path.with_name(candidate)
    return None

