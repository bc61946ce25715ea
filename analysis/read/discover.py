"""Which inputs are what: run directories, fio JSON, DiskSpd XML, journals, and perf CSV partners.

- a directory holding ``journal.ndjson`` is a run directory: only its journal is read;
- any other directory is searched (recursively), and every regular file in it is read for what it holds,
  whatever its name: ``*.json`` (fio), ``*.xml`` (DiskSpd) and ``*.ndjson`` (journals) by their names, any
  other by its content (:func:`sniff`: fio JSON or json+ with text around it, client/server output, DiskSpd
  XML, a journal). What is not read is said, per kind and why (:data:`UNREAD`: a job file, a log, an
  esxtop capture, DiskSpd text, ...), never dropped in silence;
- host counters for a plain result file come from ``perf stat -x,`` CSV next to it, named
  ``<stem>.perf.csv`` or ``<stem>.csv``; a ``<stem>.csv`` that is not perf's (an esxtop capture) is no
  partner, and is named among what was not read.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

from ...core.errors import DataFileError, InputError
from ...core.journalfile import JOURNAL_NAME
from ...core.paths import TooLarge, read_bounded
from ...core.paths import kind as file_type
from ...host import perfstat
from .safe import escape_unencodable

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
    walked_csv: list[str] = field(default_factory=list)  # CSVs inside a folder: perf partners, or said unread
    unread: list[tuple[str, str]] = field(default_factory=list)  # (path, UNREAD kind) inside a folder
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


# What a folder walk does not read, by kind: (what it is, plural, why / the fix).
UNREAD = {
    "jobfile": ("fio job file", "fio job files", "a job file says what to run, not what was measured; give "
                "the output fio wrote when it ran it (--output-format=json)"),
    "log": ("fio log", "fio logs", "samples over time (write_lat_log, write_bw_log, ...), not a run's summary; "
            "give the run's --output-format=json output"),
    "esxtop": ("esxtop batch capture", "esxtop batch captures", "an ESXi host's counters (esxtop -b, PDH-CSV), "
               "not perf stat output; an ESXi run's journal holds them (host_cpu_source = \"esxtop\")"),
    "diskspd-text": ("DiskSpd text output", "DiskSpd text outputs", "DiskSpd's text report holds no per-thread "
                     "counts to read; re-run DiskSpd with -Rxml and give the XML"),
    "fio-text": ("fio text output", "fio text outputs", "fio's normal output; re-run fio with "
                 "--output-format=json (or json+) and give that"),
    "output": ("report output", "report outputs", "a workbook or tidy CSV that a report wrote, not a result"),
    "perf-alone": ("perf stat CSV without a result", "perf stat CSVs without a result",
                   "no result file of the same name (<stem>.json or <stem>.xml) next to it"),
    "empty": ("empty file", "empty files", "nothing in it"),
    "unknown": ("file of unknown kind", "files of unknown kind", "not fio JSON, DiskSpd XML, a journal or perf "
                "stat CSV"),
}
SNIFF_BYTES = 64 * 1024
SNIFF_WHOLE_BYTES = 16 * 2**20  # text this small is searched whole for a fio document (ETA lines before it)
_FIO_MARKS = (b'"fio version"', b'"client_stats"')
_JOB_SECTION = re.compile(r"^\s*\[[^\]\n]+\]\s*$", re.M)
_JOB_OPTION = re.compile(r"^\s*(rw|readwrite|bs|blocksize|ioengine|filename|directory|size|iodepth|numjobs|"
                         r"runtime|time_based)\s*(=|$)", re.M)
_LOG_LINE = re.compile(r"^\s*\d+,\s*-?\d+,\s*\d+,\s*\d+(,\s*\d+)*\s*$")
_FIO_TEXT = re.compile(r"^\S.*: \(groupid=\d+, jobs=\d+\): err=", re.M)


def _text_of(head: bytes) -> str:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return head.decode("utf-16", errors="replace")
    return head.decode("utf-8", errors="replace")


def sniff_text(text: str, name: str = "") -> str:
    """What the start of a file holds: ``fio`` | ``diskspd`` | ``journal`` | ``perf`` or a key of
    :data:`UNREAD` (``esxtop``, ``diskspd-text``, ...). Text only; :func:`sniff` reads the file."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body:
        return "empty"
    if '"fio version"' in text or '"client_stats"' in text or re.search(r'^\s*"jobs"\s*:', text, re.M):
        return "fio"
    if body.startswith("{") and '"schema"' in body.split("\n", 1)[0] and "stormatrix/" in body[:4096]:
        return "journal"
    if body.startswith("<") and "<Results" in text:
        return "diskspd"
    first = body.split("\n", 1)[0]
    if first.startswith('"(PDH-CSV 4.0)'):
        return "esxtop"
    if "Command Line:" in text[:4096] and ("diskspd" in text[:4096].lower() or "Input parameters:" in text):
        return "diskspd-text"
    if _FIO_TEXT.search(text):
        return "fio-text"
    if _JOB_SECTION.search(text) and _JOB_OPTION.search(text):
        return "jobfile"
    lines = [ln for ln in body.splitlines()[:20] if ln.strip()]
    if lines and all(_LOG_LINE.match(ln) for ln in lines):
        return "log"
    if first.startswith("key,") or (first.count(",") > 10 and "cpu_per_mib" in first and "source" in first):
        return "output"
    if name.lower().endswith(".csv") and _perf_lines(text):
        return "perf"
    return "unknown"


def _perf_lines(text: str) -> bool:
    """At least one line in perf stat -x, layout, or written under a decimal-comma locale (the parser says
    what is wrong with the others, and the fix)."""
    parsed = perfstat.parse(text)
    return bool(parsed.events or parsed.decimal_comma_lines)


def sniff(path: str) -> str:
    """What a file holds, whatever its name (:func:`sniff_text` of its first bytes; a text file of up to
    :data:`SNIFF_WHOLE_BYTES` whose start is unknown is searched whole for a fio document, which may follow
    pages of ETA or warning lines). An unreadable file is ``fio``: opening it says what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
            if head.startswith(b"PK\x03\x04"):
                return "output" if path.lower().endswith((".xlsx", ".xlsm")) else "unknown"
            if head.startswith(b"\x1f\x8b") or (b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff"))):
                return "unknown"
            kind = sniff_text(_text_of(head), path)
            if kind == "unknown" and len(head) == SNIFF_BYTES:
                rest = fh.read(SNIFF_WHOLE_BYTES)
                if len(rest) < SNIFF_WHOLE_BYTES and any(mark in rest for mark in _FIO_MARKS):
                    return "fio"
            return kind
    except OSError:
        return "fio"


@lru_cache(maxsize=4096)
def is_perf_partner(csv: str) -> bool:
    """A ``<stem>.csv`` that may be perf's: not another tool's format (an esxtop capture, a report's tidy
    CSV) and not empty. A ``<stem>.perf.csv`` is perf's by its name (its damage is reported as perf's)."""
    if csv.lower().endswith(".perf.csv"):
        return True
    return sniff(csv) == "perf"


def unread_note(unread: list[tuple[str, str]]) -> str | None:
    """The one warning for what a folder walk did not read: how many of each kind, a few names, and why."""
    if not unread:
        return None
    by_kind: dict[str, list[str]] = {}
    for path, kind in unread:
        by_kind.setdefault(kind, []).append(path)
    parts = []
    for kind in UNREAD:
        paths = by_kind.get(kind)
        if not paths:
            continue
        what, many, why = UNREAD[kind]
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        parts.append(f"{len(paths)} {what if len(paths) == 1 else many} ({shown}): {why}")
    return escape_unencodable(f"{len(unread)} file(s) under the inputs were not read: " + "; ".join(parts))


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
            named = lname.endswith(RESULT_SUFFIXES)
            real = os.path.realpath(e.path) if e.is_symlink() else real_prefix + e.name
            if not _followed(e.is_file):
                try:
                    mode = e.stat().st_mode
                except OSError:  # a dangling link: opening it says what is wrong
                    if named:
                        names.append((e.path, real, ""))
                    continue
                if named:
                    out.irregular.append(f"{e.path}: {file_type(mode)}, not a result file; skipped")
                continue
            names.append((e.path, real, "" if named else "?"))
    for name, real, how in sorted(names):
        base = os.path.basename(name).lower()
        if how == "":  # named as a result: its suffix says what it is (kind_of for names all dots before it)
            kind = _KIND_BY_SUFFIX[base[base.rindex("."):]] if not base.startswith(".") else kind_of(name)
        elif base.endswith(".csv"):
            out.walked_csv.append(name)  # a perf partner of a result, or said unread (ingest decides)
            continue
        else:
            kind = sniff(name)
            if kind not in ("fio", "diskspd", "journal"):
                out.unread.append((name, "perf-alone" if kind == "perf" else kind))
                continue
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
    """``<stem>.perf.csv`` or ``<stem>.csv`` next to a result file, if there is one that may be perf's
    (:func:`is_perf_partner`: an esxtop capture under the result's name is none)."""
    folder = os.path.dirname(path)
    names = csv_names(folder or ".")
    if not names:
        return None
    base = stem(path)
    for candidate in (base + ".perf.csv", base + ".csv"):
        if candidate in names and is_perf_partner(os.path.join(folder, candidate)):
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
