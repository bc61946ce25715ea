"""Which inputs are what: run directories, fio JSON, DiskSpd XML, journals, and perf CSV partners.

- a directory holding ``journal.ndjson`` is a run directory: only its journal is read;
- any other directory is searched (recursively) for ``*.json`` (fio), ``*.xml`` (DiskSpd) and
  ``*.ndjson`` (journals);
- host counters for a plain result file come from ``perf stat -x,`` CSV next to it, named
  ``<stem>.perf.csv`` or ``<stem>.csv``.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

from ..core.errors import DataFileError, InputError
from ..core.journalfile import JOURNAL_NAME
from ..core.paths import TooLarge, read_bounded
from ..core.paths import kind as file_type

RESULT_SUFFIXES = (".json", ".xml", ".ndjson")
# Far above any real input (fio JSON of many clients is a few MB; a night's journal with raw outputs a few
# hundred MB), far below what would exhaust memory: anything larger is not what it claims to be.
MAX_RESULT_BYTES = 256 * 2**20
MAX_JOURNAL_BYTES = 2 * 2**30
FIX_INPUT = "give the path of a run directory or of result files (fio JSON, DiskSpd XML, a journal)"


@dataclass
class Found:
    """What :func:`discover` found: (kind, path) per input file, perf CSVs given explicitly, and notes
    (an input given twice is read once, and said so)."""

    files: list[tuple[str, str]] = field(default_factory=list)
    explicit_csv: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    irregular: list[str] = field(default_factory=list)  # inside a directory: not a regular file (FIFO, device)
    unlisted: list[tuple[str, str]] = field(default_factory=list)  # (folder, why): could not be walked into
    repeated: list[tuple[str, str]] = field(default_factory=list)  # (path, the path it was first found as)
    _seen: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, path: str, real: str | None = None) -> bool:
        """Record one file (``real``: its resolved path, when the caller knows it); False, and nothing
        recorded, when the same file is already an input."""
        real = real or os.path.realpath(path)
        if real in self._seen:
            self.repeated.append((path, self._seen[real]))
            return False
        self._seen[real] = path
        if kind == "perf":
            self.explicit_csv.append(path)
        else:
            self.files.append((kind, path))
        return True


def _sniff(path: str) -> str:
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


def kind_of(path: str) -> str:
    """journal | diskspd | perf | fio, by the name's suffix, else by the first bytes."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".ndjson" or os.path.basename(path) == JOURNAL_NAME:
        return "journal"
    if suffix == ".xml":
        return "diskspd"
    if suffix == ".csv":
        return "perf"
    if suffix == ".json":
        return "fio"
    return _sniff(path)


_KIND_BY_SUFFIX = {".json": "fio", ".xml": "diskspd", ".ndjson": "journal"}


def _followed(test: Callable[[], bool]) -> bool:
    """``DirEntry.is_dir``/``is_file`` through a link, False where the link cannot be followed: a loop
    (ELOOP) raises where a dangling link only answers False. Opening it later says what is wrong."""
    try:
        return test()
    except OSError:
        return False


def _walk(root: str, out: Found) -> None:
    """Result files under ``root`` (sorted); a FIFO or device among them is set aside, never opened (reading
    one would block or never end).

    A linked folder is followed once: a link to a folder already walked (a loop back to an ancestor, or a
    second way to the same folder) is said in a note, not walked again. A folder that cannot be listed (no
    permission, a path longer than the system allows) is named in :attr:`Found.unlisted`, never skipped in
    silence: its results would be missing from the workbook without a word.

    The resolved path of each file (to find one given twice) is its folder's, resolved once, plus its
    name: a realpath per file costs more than parsing it. The kind comes from the suffix the name was
    picked by (:func:`kind_of` only for names that are all dots before it, which have no suffix).
    """
    names: list[tuple[str, str, str]] = []
    real_root = os.path.realpath(root)
    walked = {real_root: root}
    stack = [(root, real_root)]
    while stack:
        folder, real_folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            out.unlisted.append((folder, _why_unlisted(folder, exc)))
            continue
        real_prefix = real_folder if real_folder.endswith(os.sep) else real_folder + os.sep  # os.path.join's
        for e in entries:
            if _followed(e.is_dir):
                if not e.is_symlink():
                    if real_prefix + e.name in walked:  # already walked through a link to it
                        continue
                    stack.append((e.path, real_prefix + e.name))
                    walked[real_prefix + e.name] = e.path
                    continue
                target = os.path.realpath(e.path)
                if target in walked or real_prefix.startswith(target + os.sep):
                    out.notes.append(f"{e.path}: a link to the folder {walked.get(target, target)}, which is already "
                                     "read; not walked again (each file counts once)")
                    continue
                walked[target] = e.path
                stack.append((e.path, target))
                continue
            lname = e.name.lower()
            if not lname.endswith(RESULT_SUFFIXES):
                continue
            kind = _KIND_BY_SUFFIX[lname[lname.rindex("."):]] if not lname.startswith(".") else kind_of(e.path)
            real = os.path.realpath(e.path) if e.is_symlink() else real_prefix + e.name
            if not _followed(e.is_file):
                try:
                    mode = e.stat().st_mode
                except OSError:  # a dangling link: opening it says what is wrong
                    names.append((e.path, real, kind))
                    continue
                out.irregular.append(f"{e.path}: {file_type(mode)}, not a result file; skipped")
                continue
            names.append((e.path, real, kind))
    for name, real, kind in sorted(names):
        out.add(kind, name, real)


def _why_unlisted(folder: str, exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return (f"its path is {len(os.fsencode(folder))} bytes long, more than this system allows, so its files "
                "were not read. Fix: move the results to a shorter path")
    return f"cannot be listed ({exc.strerror or exc}), so its files were not read. Fix: make it readable"


def discover(paths: Iterable[str | Path], out: Found | None = None) -> Found:
    """Every input file and its kind. A run directory's journal stands for the directory.

    A path that does not exist, or names a device or pipe, is the user's mistake, not a damaged file:
    InputError at once, naming it and the fix.
    """
    out = out if out is not None else Found()
    for p in paths:
        before = len(out.repeated)
        _discover_one(p, out)
        again = out.repeated[before:]
        if again:
            if len(again) == 1:
                what = "given twice" + (f" (also as {again[0][1]})" if again[0][1] != again[0][0] else "")
            else:
                what = f"{len(again)} of its files are already among the inputs (the first as {again[0][1]})"
            out.notes.append(f"{p}: {what}; each file is read once, so that no measurement counts twice")
    return out


def _discover_one(p: str | Path, out: Found) -> None:
    path = str(Path(p))
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        matches = sorted(glob.glob(path)) if any(ch in path for ch in "*?[") else []
        if not matches:
            raise InputError(f"{p}: no such file or directory") from None
        for match in matches:
            _discover_one(match, out)
        return
    except OSError as exc:  # a name too long for the filesystem, a loop of links, ...
        raise InputError(f"{str(p)[:120]}...: cannot be used as an input ({exc.strerror}). "
                         "Fix: give the path of a run directory or a result file") from None
    if stat.S_ISDIR(st.st_mode):
        journal = os.path.join(path, JOURNAL_NAME)
        if os.path.isfile(journal):
            out.add("journal", journal)
        else:
            _walk(path, out)
        return
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: {file_type(st.st_mode)}, not a result file or run directory. Fix: {FIX_INPUT}")
    out.add(kind_of(path), path)


@lru_cache(maxsize=1024)
def csv_names(folder: str) -> frozenset[str]:
    """CSV file names in a folder, listed once: a stat per result file is slow with 10,000 files."""
    try:
        return frozenset(e.name for e in os.scandir(folder) if e.name.lower().endswith(".csv") and e.is_file())
    except OSError:
        return frozenset()


def stem(path: str) -> str:
    """The file name without its last suffix (``pathlib``'s ``stem``)."""
    name = os.path.basename(path)
    root, ext = os.path.splitext(name)
    return root if ext else name


def perf_partner(path: str) -> str | None:
    """``<stem>.perf.csv`` or ``<stem>.csv`` next to a result file, if there is one."""
    folder = os.path.dirname(path)
    names = csv_names(folder or ".")
    if not names:
        return None
    base = stem(path)
    for candidate in (base + ".perf.csv", base + ".csv"):
        if candidate in names:
            return os.path.join(folder, candidate)
    return None


def read_capped(path: str, limit: int) -> bytes:
    """The bytes of an input file (:func:`~stormatrix.core.paths.read_bounded`), one larger than ``limit``
    refused as a DataFileError naming it. Raises OSError as ``open`` does."""
    try:
        return read_bounded(path, limit)
    except TooLarge:
        raise DataFileError(path, f"larger than {limit // 2**20} MiB: not a result file or journal of this tool",
                            "give the run directory's journal.ndjson or the engine's own output files") from None
