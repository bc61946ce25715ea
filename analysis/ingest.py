"""Ingest: journals, fio JSON, DiskSpd XML and perf CSV into one tidy DataFrame.

One row per cell x repeat, typed columns (:data:`COLUMNS`). Every parser below returns plain dicts;
the frame is built once at the end, because building one DataFrame per file is what makes ingesting
thousands of result files slow.

A file that cannot be read is reported as a :class:`Problem` (file name and reason) and the rest is
processed; ``strict=True`` raises :class:`~stormatrix.core.errors.DataFileError` instead, naming every
problem. Nothing here prints.

Notebook use::

    from stormatrix.analysis.ingest import ingest
    result = ingest(["runs/x"])          # or fio JSON files, DiskSpd XML, directories of them
    df = result.frame                    # tidy: one row per cell x repeat
    result.problems                      # files that could not be read, and why

How inputs are found:

- a directory holding ``journal.ndjson`` is a run directory: only its journal is read;
- any other directory is searched (recursively) for ``*.json`` (fio), ``*.xml`` (DiskSpd) and
  ``*.ndjson`` (journals);
- host counters for a plain result file come from ``perf stat -x,`` CSV next to it, named
  ``<stem>.perf.csv`` or ``<stem>.csv`` (``read-rand-bs4096-qd32.json`` +
  ``read-rand-bs4096-qd32.perf.csv``);
- controller, aio mode, iothread, cache and repeat number of a plain file come from its path
  (``virtio-blk/aio=native/read-rand-bs65536-qd8-rep2.json``); rw, block size, queue depth and numjobs
  from the file's own ``global options``/``job options``, falling back to the file name.
"""

from __future__ import annotations

import codecs
import glob
import json
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..core import metrics
from ..core.errors import DataFileError, InputError
from ..core.model import BACKENDS_WITHOUT_DISK_OPTIONS, CONTROLLERS, NOT_APPLICABLE, format_size
from . import diskspd, fio, perfcsv

JOURNAL_NAME = "journal.ndjson"
SCHEMA = "stormatrix/record-1"

# name -> pandas dtype. Nullable dtypes: a plain fio file has no controller, a journal without a host
# collector has no CPU figures, and neither may turn into 0.
COLUMNS: dict[str, str] = {
    "side": "string",            # the label of this data set (A/B side in a comparison)
    "source": "string",          # file the row came from (journal: path:line)
    "source_format": "string",   # journal | fio | fio-client | diskspd
    "run_id": "string",
    "key": "string",             # the journal's cell key
    "vm": "string",
    "clients": "Int64",          # fio client/server: number of clients summed into this row
    "started": "string",         # ISO time the measurement started (as recorded)
    "controller": "string",
    "aio": "string",
    "iothread": "boolean",
    "cache": "string",
    "workload": "string",
    "job": "string",             # fio job name
    "rw": "string",
    "bs": "Int64",               # bytes
    "iodepth": "Int64",
    "numjobs": "Int64",
    "rwmixread": "Int64",
    "rate_mib_s": "float64",     # target rate, if the workload was throttled
    "repeat": "Int64",           # 1-based
    "engine": "string",          # fio | diskspd
    "engine_version": "string",
    "iops": "float64",
    "read_iops": "float64",
    "write_iops": "float64",
    "bw_mib_s": "float64",
    "io_bytes": "Int64",
    "mib": "float64",            # io_bytes / 2**20
    "total_ios": "Int64",
    "runtime_ms": "float64",
    "lat_mean_us": "float64",    # total (completion + submission) latency, I/O-weighted over directions
    "read_lat_mean_us": "float64",
    "write_lat_mean_us": "float64",
    "lat_p99_us": "float64",
    "guest_usr_cpu": "float64",  # % as the guest's engine reported it (not the host measurement)
    "guest_sys_cpu": "float64",
    "cpu_metric": "string",      # cycles | cpu_time: what cpu_total really holds
    "cpu_unit": "string",        # cycles | s
    "cpu_total": "float64",
    "cpu_user": "float64",
    "cpu_system": "float64",
    "ctx_switches": "float64",
    "window_s": "float64",
    "cpu_per_mib": "float64",    # cycles/MiB or CPU-ms/MiB: see cpu_per_mib_unit
    "cpu_per_mib_unit": "string",
    "ctx_per_mib": "float64",
    "ctx_note": "string",        # why ctx_switches/ctx_per_mib are empty: the collector's host.unmatched.ctx_switches
    "host_source": "string",
    "host_scope": "string",
    "rate_target_mib_s": "float64",
    "rate_achieved_mib_s": "float64",
    "rate_missed": "boolean",
    "crosscheck_flag": "boolean",
}

CPU_PER_MIB_UNIT = metrics.CPU_PER_MIB_UNIT


@dataclass(frozen=True)
class Problem:
    """A file (or a journal line) that could not be used, and why."""

    source: str
    reason: str

    def __str__(self) -> str:
        return self.reason if self.reason.startswith(self.source) else f"{self.source}: {self.reason}"


@dataclass
class IngestResult:
    frame: pd.DataFrame
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["scope", "item", "value"]))
    files: int = 0


# --- helpers ---------------------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _get(record: dict[str, Any], dotted: str) -> Any:
    node: Any = record
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _need(record: dict[str, Any], dotted: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = _get(record, dotted)
    if value is None:
        raise DataFileError(where, f"cell record has no '{dotted}'")
    if kind is float or kind == (int, float):
        ok, what = _is_number(value), "a number"
    elif kind is int:
        ok, what = isinstance(value, int) and not isinstance(value, bool), "an integer"
    else:
        ok, what = isinstance(value, kind), {dict: "an object", str: "a string"}.get(kind, str(kind))  # type: ignore[call-overload]
    if not ok:
        raise DataFileError(where, f"'{dotted}' is {value!r}, not {what}")
    return value


def _opt_num(record: dict[str, Any], dotted: str, where: str) -> float | None:
    value = _get(record, dotted)
    if value is None:
        return None
    if not _is_number(value):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not a number")
    return float(value)


def workload_label(rw: Any, bs: Any, iodepth: Any) -> str | None:
    """``randread-4k-qd32``: a workload name for files that do not carry one."""
    if rw is None and bs is None and iodepth is None:
        return None
    parts = [str(rw) if rw else "?", format_size(int(bs)) if bs else "?", f"qd{iodepth}" if iodepth else "qd?"]
    return "-".join(parts)


# --- journal ---------------------------------------------------------------------------------------

def _esxi_disk(rec: dict[str, Any], controller: str) -> bool:
    """A cell on a platform whose disks have no aio, iothread or cache setting: the vmware backend's, or a
    controller that exists only on ESXi (harness/core/model.py, disk_options_apply)."""
    if rec.get("backend") in BACKENDS_WITHOUT_DISK_OPTIONS:
        return True
    return CONTROLLERS.get(controller, ("",))[0] == "esxi"


def journal_cell_row(rec: dict[str, Any], where: str) -> dict[str, Any]:
    """A tidy row from one ``cell`` record (docs/journal.md). Raises DataFileError naming the field."""
    key = _need(rec, "key", str, where)
    controller = _need(rec, "cell.disk.controller", str, where)
    if _esxi_disk(rec, controller):
        # ESXi has no aio, iothread or cache setting: null in the record (older records carried the
        # matrix's default aio, which ESXi never had); "n/a" here, so that it is neither unknown nor a mode
        aio, iothread, cache = NOT_APPLICABLE, None, NOT_APPLICABLE
    else:
        # a suite point whose side does not name its disk configuration has controller "unknown" and aio
        # null (docs/journal.md, suite points); every other cell names its aio mode
        aio = _need(rec, "cell.disk.aio", str, where) \
            if controller != "unknown" or _get(rec, "cell.disk.aio") is not None else None
        iothread = bool(_get(rec, "cell.disk.iothread")) if _get(rec, "cell.disk.iothread") is not None else None
        cache = _get(rec, "cell.disk.cache")
    rw = _need(rec, "cell.workload.rw", str, where)
    bs = _need(rec, "cell.workload.bs", int, where)
    iodepth = _need(rec, "cell.workload.iodepth", int, where)
    repeat = _need(rec, "cell.repeat", int, where)
    total = _need(rec, "fio.total", dict, where)
    io_bytes = _need(rec, "fio.total.io_bytes", (int, float), where)
    _need(rec, "fio.total.iops", (int, float), where)
    host = rec.get("host")
    if host is not None and not isinstance(host, dict):
        raise DataFileError(where, f"'host' is {type(host).__name__}, not an object or null")
    row: dict[str, Any] = {
        "side": rec.get("side") if isinstance(rec.get("side"), str) else None,
        "source": where,
        "source_format": "journal",
        "run_id": rec.get("run_id"),
        "key": key,
        "vm": rec.get("vm"),
        "clients": len(rec["clients"]) if isinstance(rec.get("clients"), list) else None,
        "started": _get(rec, "times.measure_start") or _get(rec, "times.started"),
        "controller": controller,
        "aio": aio,
        "iothread": iothread,
        "cache": cache,
        "workload": _get(rec, "cell.workload.name"),
        "job": None,
        "rw": fio.normalize_rw(rw) or rw,
        "bs": bs,
        "iodepth": iodepth,
        "numjobs": _get(rec, "cell.workload.numjobs") or 1,
        "rwmixread": _get(rec, "cell.workload.rwmixread"),
        "rate_mib_s": _opt_num(rec, "cell.workload.rate_mib_s", where),
        "repeat": repeat,
        "engine": "fio",
        "engine_version": _get(rec, "fio.version"),
        "iops": float(total["iops"]),
        "read_iops": _opt_num(rec, "fio.read.iops", where),
        "write_iops": _opt_num(rec, "fio.write.iops", where),
        "bw_mib_s": (_opt_num(rec, "fio.total.bw_bytes", where) or 0.0) / 2**20,
        "io_bytes": int(io_bytes),
        "mib": io_bytes / 2**20,
        "total_ios": _opt_num(rec, "fio.total.total_ios", where),
        "runtime_ms": _opt_num(rec, "fio.total.runtime_ms", where),
        "lat_mean_us": _us(_opt_num(rec, "fio.total.lat_mean_ns", where)),
        "read_lat_mean_us": _us(_opt_num(rec, "fio.read.lat_mean_ns", where)),
        "write_lat_mean_us": _us(_opt_num(rec, "fio.write.lat_mean_ns", where)),
        "lat_p99_us": _us(_opt_num(rec, "fio.total.lat_p99_ns", where)),
        "guest_usr_cpu": _opt_num(rec, "fio.usr_cpu", where),
        "guest_sys_cpu": _opt_num(rec, "fio.sys_cpu", where),
        "rate_target_mib_s": _opt_num(rec, "rate.target_mib_s", where),
        "rate_achieved_mib_s": _opt_num(rec, "rate.achieved_mib_s", where),
        "rate_missed": _get(rec, "rate.missed"),
        "crosscheck_flag": _get(rec, "crosscheck.flag"),
        "window_s": _opt_num(rec, "times.window_s", where),
    }
    if host is not None:
        metric = host.get("cpu_metric")
        if metric not in CPU_PER_MIB_UNIT:
            raise DataFileError(where, f"host.cpu_metric is {metric!r}; expected 'cycles' or 'cpu_time'")
        cpu_total = _need(rec, "host.cpu_total", (int, float), where)
        ctx, ctx_note = _ctx_switches(rec, host, key, where)
        mib = _opt_num(rec, "per_mib.mib", where) or row["mib"]
        cpu_per_mib = _opt_num(rec, "per_mib.cpu", where)
        ctx_per_mib = _opt_num(rec, "per_mib.ctx", where)
        if ctx is None and ctx_per_mib is not None:
            raise DataFileError(where, f"cell {key}: 'per_mib.ctx' is {ctx_per_mib!r} but 'host.ctx_switches' is "
                                       "null: a ctx/MiB without context switches", _CTX_FIX)
        unit = _get(rec, "per_mib.cpu_unit")
        if unit is not None and unit != CPU_PER_MIB_UNIT[metric]:
            raise DataFileError(where, f"per_mib.cpu_unit is {unit!r} but host.cpu_metric is {metric!r} "
                                       f"(expected {CPU_PER_MIB_UNIT[metric]!r})")
        if cpu_per_mib is None or ctx_per_mib is None:  # an older record without per_mib: the one definition
            computed = metrics.per_mib(mib * metrics.MIB, host)
            cpu_per_mib = computed["cpu"] if cpu_per_mib is None else cpu_per_mib
            ctx_per_mib = computed["ctx"] if ctx_per_mib is None else ctx_per_mib
        cycles = host.get("cycles") if isinstance(host.get("cycles"), dict) else {}
        row.update({
            "cpu_metric": metric,
            "cpu_unit": host.get("cpu_unit") or ("cycles" if metric == "cycles" else "s"),
            "cpu_total": float(cpu_total),
            "cpu_user": _opt_num(rec, "host.cpu_user", where) if metric == "cpu_time" else cycles.get("user"),
            "cpu_system": _opt_num(rec, "host.cpu_system", where) if metric == "cpu_time" else cycles.get("kernel"),
            "ctx_switches": float(ctx) if ctx is not None else None,
            "ctx_note": ctx_note,
            "window_s": _opt_num(rec, "host.window_s", where) or row["window_s"],
            "cpu_per_mib": cpu_per_mib,
            "cpu_per_mib_unit": CPU_PER_MIB_UNIT[metric],
            "ctx_per_mib": ctx_per_mib,
            "host_source": host.get("source"),
            "host_scope": host.get("scope"),
        })
    return row


_CTX_FIX = ("a host collector that counted context switches writes the number in host.ctx_switches; one that has "
            "no such counter (the ESXi collectors) writes null and the reason in host.unmatched.ctx_switches. Use "
            "the unedited journal of the run, or remove this line")


def _ctx_switches(rec: dict[str, Any], host: dict[str, Any], key: str, where: str) -> tuple[float | None, str | None]:
    """``host.ctx_switches`` and, when it is null, the reason the collector gave for it.

    ESXi has no context-switch counter for a VM: both vmware collectors (vSphere statistics,
    ``Get-StormatrixVMwareCpuUsage``; esxtop, :func:`stormatrix.analysis.esxtop.vm_cpu_record`) write
    ``ctx_switches: null`` with the reason in ``host.unmatched.ctx_switches`` (docs/esxi.md). That is a
    measurement without a ctx metric, and ctx/MiB stays empty (never 0). A null with no reason is not
    something any collector writes: a damaged or edited record, refused naming the key and the fix.
    """
    value = host.get("ctx_switches")
    if value is not None:
        if not _is_number(value):
            raise DataFileError(where, f"'host.ctx_switches' is {value!r}, not a number")
        return float(value), None
    unmatched = host.get("unmatched")
    reason = unmatched.get("ctx_switches") if isinstance(unmatched, dict) else None
    if not isinstance(reason, str) or not reason.strip():
        raise DataFileError(where, f"cell {key}: 'host.ctx_switches' is null and 'host.unmatched.ctx_switches' "
                                   "gives no reason (a collector without a context-switch count must say why)",
                            _CTX_FIX)
    return None, reason.strip()


# Measured quantities: none of them can be negative or infinite in a real measurement. A NaN/Infinity
# literal, an overflowed 1e999 or a negative count means the file was damaged or edited.
MEASURED = ("iops", "read_iops", "write_iops", "bw_mib_s", "io_bytes", "mib", "total_ios", "runtime_ms",
            "lat_mean_us", "read_lat_mean_us", "write_lat_mean_us", "lat_p99_us", "cpu_total", "cpu_user",
            "cpu_system", "ctx_switches", "window_s", "cpu_per_mib", "ctx_per_mib", "rate_mib_s",
            "rate_target_mib_s", "rate_achieved_mib_s")
SHAPE = ("bs", "iodepth", "numjobs")  # the workload's shape: whole numbers above 0


def check_row(row: dict[str, Any], where: str) -> None:
    """Refuse a row whose numbers cannot come from a real measurement (raises DataFileError)."""
    fix = "use the unedited output of the run, or remove the file"
    for name in MEASURED:
        value = row.get(name)
        if _is_number(value) and (not math.isfinite(value) or value < 0):
            raise DataFileError(where, f"'{name}' is {value!r}: a measurement cannot be negative, NaN or infinite", fix)
    for name in SHAPE:
        value = row.get(name)
        if value is not None and (not _is_number(value) or not math.isfinite(value) or value <= 0 or value > 2**40):
            raise DataFileError(where, f"'{name}' is {value!r}: not a workload {name}", fix)
    if _is_number(row.get("io_bytes")) and row["io_bytes"] == 0:
        raise DataFileError(where, "no I/O was measured (0 bytes)", fix)
    if _is_number(row.get("io_bytes")) and row["io_bytes"] > 0 and _is_number(row.get("runtime_ms")) \
            and row["runtime_ms"] <= 0:
        raise DataFileError(where, f"{row['io_bytes']} bytes in a runtime of {row['runtime_ms']} ms: no rate "
                            "can be computed", fix)


def _us(ns: float | None) -> float | None:
    return ns / 1000.0 if ns is not None else None


def read_journal_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Problem], list[str]]:
    """Cell rows, run records, problems and notes from one journal.

    Unlike the runner's reader, which must stop at a corrupt line before appending, analysis reports
    the bad line and goes on with the rest: one damaged line must not hide a night of measurements.
    """
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [], [Problem(source, f"cannot be read ({exc.strerror})")], []
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    problems: list[Problem] = []
    notes: list[str] = []
    lines = data.split(b"\n")
    seen: dict[str, int] = {}
    if not data.strip():
        return [], [], [Problem(source, "the journal is empty")], []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{source}:{number}"
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            if number == len(lines):
                notes.append(f"{where}: torn last line discarded (an interrupted write)")
            else:
                problems.append(Problem(where, f"line {number} is not a JSON record ({exc})"))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem(where, f"line {number} is a JSON {type(rec).__name__}, not a record"))
            continue
        if rec.get("schema") != SCHEMA:
            problems.append(Problem(where, f"line {number} has schema {rec.get('schema')!r}, expected {SCHEMA!r}"))
            continue
        kind = rec.get("type")
        if kind == "run":
            runs.append(rec)
        elif kind == "cell":
            try:
                row = journal_cell_row(rec, where)
                check_row(row, where)
            except DataFileError as exc:
                problems.append(Problem(where, exc.problem + (f". Fix: {exc.fix}" if exc.fix else "")))
                continue
            if row["key"] in seen:
                notes.append(f"{where}: cell {row['key']} recorded again; the later record is used")
                rows[seen[row["key"]]] = row
            else:
                seen[row["key"]] = len(rows)
                rows.append(row)
    if not rows and not problems:
        notes.append(f"{source}: no finished cells in the journal")
    return rows, runs, problems, notes


# --- plain result files ----------------------------------------------------------------------------

def read_fio_bytes(raw: bytes, source: str) -> list[dict[str, Any]]:
    """Rows from the bytes of a fio output file.

    Fast path: ``json.loads`` straight from bytes (it detects UTF-8/16/32 and BOMs itself), which is as
    fast as a bare ``json.load``. Anything else (noise lines, Windows encodings, damage) goes through
    :func:`read_fio_file`, which explains what is wrong.
    """
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return read_fio_file(decode(raw), source)
    return fio.fio_rows(doc, source)


def read_fio_file(text: str, source: str) -> list[dict[str, Any]]:
    """Rows from one fio output file: clean JSON on the fast path, noisy client/server output otherwise."""
    head = text[:1024]
    if head.startswith("\x1f\ufffd\x08") or head.startswith("\x1f\x8b"):
        raise DataFileError(source, "gzip-compressed data, not fio output", "gunzip it first")
    if "\x00" in head or head.count("\ufffd") > len(head) // 10 + 1:
        raise DataFileError(source, "binary data, not fio's text output")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise DataFileError(source, "JSON nested too deeply to be fio output") from None
    except ValueError as first:
        try:
            doc = fio.parse_fio_json(text, source)
        except DataFileError:
            if text.lstrip().startswith("{"):
                raise DataFileError(source, f"invalid or truncated JSON ({first})",
                                    "re-run fio or copy the complete file") from None
            raise
    return fio.fio_rows(doc, source)


def decode(raw: bytes) -> str:
    """Text of a result file. UTF-16 with a BOM is what Windows PowerShell 5.1's ``>`` writes."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8-sig", errors="replace")


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
def _csv_names(folder: str) -> frozenset[str]:
    """CSV file names in a folder, listed once: a stat per result file is slow with 10,000 files."""
    try:
        return frozenset(e.name for e in os.scandir(folder) if e.name.lower().endswith(".csv") and e.is_file())
    except OSError:
        return frozenset()


def _perf_partner(path: Path) -> Path | None:
    names = _csv_names(str(path.parent))
    if not names:
        return None
    for candidate in (path.stem + ".perf.csv", path.stem + ".csv"):
        if candidate in names:
            return path.with_name(candidate)
    return None


def _attach_perf(row: dict[str, Any], csv_path: Path) -> None:
    text = csv_path.read_text(encoding="utf-8", errors="replace")
    host = perfcsv.host_metrics(perfcsv.parse_perf_csv(text, str(csv_path)))
    row.update(host)
    computed = metrics.per_mib(row.get("io_bytes"), host)
    row["cpu_per_mib"] = computed["cpu"]
    row["ctx_per_mib"] = computed["ctx"]
    row["cpu_per_mib_unit"] = CPU_PER_MIB_UNIT[host["cpu_metric"]]
    row["host_scope"] = f"perf stat: {csv_path.name}"


def _number_repeats(rows: list[dict[str, Any]]) -> None:
    """Repeat numbers for plain files that do not name them: order of appearance per identical cell."""
    counters: dict[tuple[Any, ...], int] = {}
    taken: dict[tuple[Any, ...], set[int]] = {}
    ident = ("side", "controller", "aio", "iothread", "cache", "rw", "bs", "iodepth", "numjobs", "rate_mib_s")
    for row in rows:
        if row.get("repeat") is not None:
            taken.setdefault(tuple(row.get(k) for k in ident), set()).add(row["repeat"])
    for row in rows:
        if row.get("repeat") is None:
            key = tuple(row.get(k) for k in ident)
            used = taken.setdefault(key, set())
            n = counters.get(key, 0) + 1
            while n in used:
                n += 1
            counters[key] = n
            used.add(n)
            row["repeat"] = n


def _epochs_to_iso(rows: list[dict[str, Any]]) -> None:
    """fio's epoch ``timestamp`` -> ISO text, vectorised (a datetime per file is measurable at 10,000)."""
    idx = [i for i, r in enumerate(rows) if r.get("started") is None and r.get("_epoch") is not None]
    if not idx:
        return
    values = pd.to_numeric(pd.Series([rows[i]["_epoch"] for i in idx]), errors="coerce")
    ok = values.notna() & (values > 0) & (values < 4e10)
    text = pd.to_datetime(values.where(ok), unit="s", utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    for i, t, good in zip(idx, text, ok):
        rows[i]["started"] = t if good else None


def frame_from_rows(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The tidy frame with every column of :data:`COLUMNS`, typed, in that order."""
    _epochs_to_iso(rows)
    df = pd.DataFrame.from_records(rows, columns=list(COLUMNS)) if rows else pd.DataFrame(columns=list(COLUMNS))
    for col, dtype in COLUMNS.items():
        if dtype in ("float64",):
            df[col] = pd.to_numeric(df[col], errors="raise").astype("float64")
        elif dtype == "Int64":
            df[col] = pd.to_numeric(df[col], errors="raise").astype("Int64")
        else:
            df[col] = df[col].astype(dtype)
    return df


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out.append((prefix, json.dumps(value, ensure_ascii=False)))
    elif value is not None:
        out.append((prefix, str(value)))


def environment_frame(runs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> pd.DataFrame:
    """(scope, item, value) rows for the Environment sheet: every run record, then plain-file facts."""
    items: list[tuple[str, str, str]] = []
    for run in runs:
        scope = f"run {run.get('run_id', '?')}"
        flat: list[tuple[str, str]] = []
        for key in ("run_id", "started", "backend", "side", "matrix_path"):
            if run.get(key) is not None:
                flat.append((key, str(run[key])))
        _flatten("environment", run.get("environment") or {}, flat)
        _flatten("matrix", run.get("matrix") or {}, flat)
        items += [(scope, k, v) for k, v in flat]
    plain = [r for r in rows if r.get("source_format") != "journal"]
    if plain:
        def distinct(col: str) -> str:
            return ", ".join(sorted({str(r[col]) for r in plain if r.get(col) is not None})) or "(none)"
        starts = sorted(str(r["started"]) for r in plain if r.get("started"))
        items += [("result files", "files", str(len({r['source'] for r in plain}))),
                  ("result files", "formats", distinct("source_format")),
                  ("result files", "engine versions", distinct("engine_version")),
                  ("result files", "hosts / clients", distinct("vm")),
                  ("result files", "first result", starts[0] if starts else "(none)"),
                  ("result files", "last result", starts[-1] if starts else "(none)")]
    return pd.DataFrame(items, columns=["scope", "item", "value"])


PARALLEL_MIN_FILES = 1000  # below this a process pool costs more than it saves


def parse_files(work: list[tuple[str, str, str | None]]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Rows and problems for (kind, path, perf CSV or None) items. Pure: runs in a worker process too."""
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for kind, source, partner in work:
        try:
            with open(source, "rb") as fh:
                raw = fh.read()
            if kind == "diskspd":
                file_rows = [diskspd.parse_diskspd_xml(decode(raw), source)]
            else:
                if not raw.strip():
                    raise DataFileError(source, "the file is empty")
                file_rows = read_fio_bytes(raw, source)
            if partner is not None:
                for row in file_rows:
                    _attach_perf(row, Path(partner))
            for row in file_rows:
                check_row(row, str(partner) if partner is not None and any(
                    _is_number(row.get(k)) and (not math.isfinite(row[k]) or row[k] < 0)
                    for k in ("cpu_total", "ctx_switches", "cpu_user", "cpu_system")) else source)
        except DataFileError as exc:
            problems.append(Problem(exc.path, exc.problem))
            continue
        except OSError as exc:
            problems.append(Problem(source, f"cannot be read ({exc.strerror})"))
            continue
        for row in file_rows:
            row["job"] = row.get("workload")
            row["workload"] = workload_label(row.get("rw"), row.get("bs"), row.get("iodepth"))
        rows += file_rows
    return rows, problems


def _parse_all(work: list[tuple[str, str, str | None]], workers: int | None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """:func:`parse_files`, spread over processes when there are many files and more than one CPU.

    Parsing is CPU-bound Python (JSON decoding, then summing jobs), so threads would not help; forked
    workers return plain row dicts, which pickle cheaply. Order is kept (chunks are contiguous).
    """
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if len(work) >= PARALLEL_MIN_FILES else 1
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


def ingest(paths: Iterable[str | Path], *, strict: bool = False, label: str | None = None,
           workers: int | None = None) -> IngestResult:
    """Read every input into one tidy frame. See the module docstring for what is found where.

    ``label`` names the data set (the side of a comparison); it overrides the journal's ``side``.
    ``strict`` turns any unreadable file or record into a DataFileError listing all of them.
    ``workers``: processes for parsing plain result files (default: up to 4 when there are at least
    :data:`PARALLEL_MIN_FILES` files, else 1).
    """
    found, explicit_csv = discover(paths)
    _csv_names.cache_clear()  # folders may have changed since the last call
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    problems: list[Problem] = []
    notes: list[str] = []
    paired: set[Path] = set()
    explicit_by_stem = {c.name[: -len(".perf.csv")] if c.name.endswith(".perf.csv") else c.stem: c
                        for c in explicit_csv}
    work: list[tuple[str, str, str | None]] = []
    for kind, path in found:
        if kind == "journal":
            j_rows, j_runs, j_problems, j_notes = read_journal_rows(path)
            rows += j_rows
            runs += j_runs
            problems += j_problems
            notes += j_notes
            continue
        partner = explicit_by_stem.get(path.stem) or _perf_partner(path)
        if partner is not None:
            paired.add(partner)
        work.append((kind, str(path), str(partner) if partner is not None else None))
    file_rows, file_problems = _parse_all(work, workers)
    rows += file_rows
    problems += file_problems
    for csv in explicit_csv:
        if csv not in paired:
            problems.append(Problem(str(csv), "perf CSV with no result file next to it "
                                              "(expected <stem>.json or <stem>.xml of the same name)"))
    if label is not None:
        for row in rows:
            row["side"] = label
    _number_repeats(rows)
    if strict and problems:
        listing = "; ".join(str(p) for p in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise DataFileError(problems[0].source if len(problems) == 1 else f"{len(problems)} inputs",
                            f"cannot be used under --strict: {listing}{more}",
                            "fix or remove these files, or run without --strict to skip them")
    frame = frame_from_rows(rows)
    return IngestResult(frame=frame, problems=problems, notes=notes,
                        environment=environment_frame(runs, rows), files=len(found))
