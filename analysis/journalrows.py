"""Analysis's reader of the run journal (docs/journal.md): cell records -> tidy row dicts.

Unlike the runner's reader, which must stop at a corrupt line before appending, analysis reports
the bad line and goes on with the rest: one damaged line must not hide a night of measurements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import metrics
from ..core.errors import DataFileError
from ..core.journalfile import CELL, CELL_SKIPPED, RUN, SCHEMA, looks_binary, read_lines
from ..core.model import NOT_APPLICABLE, disk_options_apply
from .checks import Problem, check_row, is_number
from .discover import MAX_JOURNAL_BYTES, read_capped
from .iopath import split_of
from .params import normalize_rw
from .tidy import CPU_PER_MIB_UNIT, reasons_text

OLDER_P99 = "older record: lat p99 where fio reported it, else clat p99"


def _extra_basis(record: dict[str, Any]) -> str | None:
    """Why the harness ran this repeat beyond the planned ones (its journal's ``extra_repeat.basis``)."""
    basis = _get(record, "extra_repeat.basis")
    return basis if isinstance(basis, str) and basis else None


def _get(record: dict[str, Any], dotted: str) -> Any:
    node: Any = record
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


# How a wrong-typed field is described (keyed by object: a kind may also be a tuple of types)
_KIND_NAMES: dict[object, str] = {dict: "an object", str: "a string"}


def _need(record: dict[str, Any], dotted: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = _get(record, dotted)
    if value is None:
        raise DataFileError(where, f"cell record has no '{dotted}'")
    if kind is float or kind == (int, float):
        ok, what = is_number(value), "a number"
    elif kind is int:
        ok, what = isinstance(value, int) and not isinstance(value, bool), "an integer"
    else:
        ok, what = isinstance(value, kind), _KIND_NAMES.get(kind, str(kind))
    if not ok:
        raise DataFileError(where, f"'{dotted}' is {value!r}, not {what}")
    return value


def _opt_num(record: dict[str, Any], dotted: str, where: str) -> float | None:
    value = _get(record, dotted)
    if value is None:
        return None
    if not is_number(value):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not a number")
    return float(value)


_EDITED_FIX = "use the unedited journal of the run, or remove this line (the other lines stay usable)"


def _positive_opt(record: dict[str, Any], dotted: str, where: str) -> float | None:
    """An optional quantity that is above 0 whenever it is written (a window length, MiB moved)."""
    value = _opt_num(record, dotted, where)
    if value is not None and value <= 0:
        raise DataFileError(where, f"'{dotted}' is {value!r}: it is above 0 in every record a run writes",
                            _EDITED_FIX)
    return value


ENGINES = ("fio", "diskspd")


def _engine(rec: dict[str, Any], where: str) -> str:
    """The engine that measured the cell: the record's ``engine`` (docs/journal.md), else ``raw.engine``.

    fio and DiskSpd cells share the record's ``fio`` summary shape, so they report and compare alike;
    records written before the key existed were fio's. Two keys that disagree mean an edited record.
    """
    given = {k: v for k, v in (("engine", rec.get("engine")), ("raw.engine", _get(rec, "raw.engine")))
             if v is not None}
    for key, engine in given.items():
        if engine not in ENGINES:
            raise DataFileError(where, f"'{key}' is {engine!r}; expected one of {', '.join(ENGINES)}",
                                "use the unedited journal of the run, or remove this line")
    if len(set(given.values())) > 1:
        raise DataFileError(where, f"'engine' is {given['engine']!r} but 'raw.engine' is {given['raw.engine']!r}",
                            "use the unedited journal of the run, or remove this line")
    return str(next(iter(given.values()), "fio"))


def journal_cell_row(rec: dict[str, Any], where: str) -> dict[str, Any]:
    """A tidy row from one ``cell`` record (docs/journal.md). Raises DataFileError naming the field."""
    key = _need(rec, "key", str, where)
    controller = _need(rec, "cell.disk.controller", str, where)
    if not controller.strip():
        raise DataFileError(where, "'cell.disk.controller' is empty", _EDITED_FIX)
    if not disk_options_apply(controller, rec.get("backend")):  # the harness's own rule, as it planned the cell
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
    if repeat < 1:
        raise DataFileError(where, f"'cell.repeat' is {repeat}: repeats count from 1", _EDITED_FIX)
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
        "rw": normalize_rw(rw) or rw,
        "bs": bs,
        "iodepth": iodepth,
        "numjobs": _get(rec, "cell.workload.numjobs"),
        "rwmixread": _get(rec, "cell.workload.rwmixread"),
        "rate_mib_s": _opt_num(rec, "cell.workload.rate_mib_s", where),
        "repeat": repeat,
        "extra_repeat": _extra_basis(rec),
        "engine": _engine(rec, where),
        "engine_version": _get(rec, "fio.version"),
        "iops": float(total["iops"]),
        "read_iops": _opt_num(rec, "fio.read.iops", where),
        "write_iops": _opt_num(rec, "fio.write.iops", where),
        "bw_mib_s": _mib(_opt_num(rec, "fio.total.bw_bytes", where)),
        "io_bytes": int(io_bytes),
        "mib": io_bytes / 2**20,
        "total_ios": _opt_num(rec, "fio.total.total_ios", where),
        "runtime_ms": _opt_num(rec, "fio.total.runtime_ms", where),
        "lat_mean_us": _us(_opt_num(rec, "fio.total.lat_mean_ns", where)),
        "read_lat_mean_us": _us(_opt_num(rec, "fio.read.lat_mean_ns", where)),
        "write_lat_mean_us": _us(_opt_num(rec, "fio.write.lat_mean_ns", where)),
        "lat_p99_us": _us(_opt_num(rec, "fio.total.lat_p99_ns", where)),
        "clat_p99_us": _us(_opt_num(rec, "fio.total.clat_p99_ns", where)),
        "guest_usr_cpu": _opt_num(rec, "fio.usr_cpu", where),
        "guest_sys_cpu": _opt_num(rec, "fio.sys_cpu", where),
        "rate_target_mib_s": _opt_num(rec, "rate.target_mib_s", where),
        "rate_achieved_mib_s": _opt_num(rec, "rate.achieved_mib_s", where),
        "rate_missed": _get(rec, "rate.missed"),
        "crosscheck_flag": _get(rec, "crosscheck.flag"),
        "window_s": _positive_opt(rec, "times.window_s", where),
    }
    _explain_blanks(rec, total, row)
    io_cpu, io_ctx, io_note = split_of(rec)
    row.update({"io_path_cpu_s": io_cpu, "io_path_ctx": io_ctx, "io_path_note": io_note})
    if host is not None:
        metric = host.get("cpu_metric")
        if metric not in CPU_PER_MIB_UNIT:
            raise DataFileError(where, f"host.cpu_metric is {metric!r}; expected 'cycles' or 'cpu_time'")
        cpu_total = _need(rec, "host.cpu_total", (int, float), where)
        ctx, ctx_note = _ctx_switches(rec, host, key, where)
        mib = _positive_opt(rec, "per_mib.mib", where) or row["mib"]
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
        cycles = host.get("cycles")
        if not isinstance(cycles, dict):
            cycles = {}
        row.update({
            "cpu_metric": metric,
            "cpu_unit": host.get("cpu_unit") or ("cycles" if metric == "cycles" else "s"),
            "cpu_total": float(cpu_total),
            "cpu_user": _opt_num(rec, "host.cpu_user", where) if metric == "cpu_time" else cycles.get("user"),
            "cpu_system": _opt_num(rec, "host.cpu_system", where) if metric == "cpu_time" else cycles.get("kernel"),
            "ctx_switches": float(ctx) if ctx is not None else None,
            "ctx_note": ctx_note,
            "window_s": _positive_opt(rec, "host.window_s", where) or row["window_s"],
            "cpu_per_mib": cpu_per_mib,
            "cpu_per_mib_unit": CPU_PER_MIB_UNIT[metric],
            "ctx_per_mib": ctx_per_mib,
            "host_source": host.get("source"),
            "host_scope": host.get("scope"),
            "cpu_total_source": _total_source(host, metric),
            "cpu_split_note": host.get("cpu_split_note") if isinstance(host.get("cpu_split_note"), str) else None,
        })
    return row


def _total_source(host: dict[str, Any], metric: str) -> str | None:
    """What ``cpu_total`` is: the collector's ``cpu_total_source``, or for an older record what its
    collector (``source``) counted it with."""
    named = host.get("cpu_total_source")
    if isinstance(named, str):
        return named
    source = str(host.get("source") or "")
    if metric == "cycles":
        return "perf cycles:u + cycles:k" if "perf" in source else None
    return "perf task-clock (ns)" if source == "perf+proc" else \
        "/proc/PID/stat utime + stime (clock ticks)" if source == "proc" else None


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
        if not is_number(value):
            raise DataFileError(where, f"'host.ctx_switches' is {value!r}, not a number")
        if not float(value).is_integer():
            raise DataFileError(where, f"cell {key}: 'host.ctx_switches' is {value!r}: a count of context switches "
                                       "is a whole number", _CTX_FIX)
        return float(value), None
    reason = metrics.host_reason(host, "ctx_switches")
    if reason is None:
        raise DataFileError(where, f"cell {key}: 'host.ctx_switches' is null and 'host.unmatched.ctx_switches' "
                                   "gives no reason (nor 'host.null_reasons.ctx_switches'; a collector without a "
                                   "context-switch count must say why)", _CTX_FIX)
    return None, reason


def _us(ns: float | None) -> float | None:
    return ns / 1000.0 if ns is not None else None


def _mib(nbytes: float | None) -> float | None:
    return nbytes / 2**20 if nbytes is not None else None


# measured columns whose blank a record explains itself (fio.null_reasons), else by the key it lacks
_RECORD_KEYS = {"bw_mib_s": "fio.total.bw_bytes", "runtime_ms": "fio.total.runtime_ms",
                "lat_mean_us": "fio.total.lat_mean_ns", "lat_p99_us": "fio.total.lat_p99_ns",
                "clat_p99_us": "fio.total.clat_p99_ns", "numjobs": "cell.workload.numjobs",
                "guest_usr_cpu": "fio.usr_cpu", "guest_sys_cpu": "fio.sys_cpu"}


def _explain_blanks(rec: dict[str, Any], total: dict[str, Any], row: dict[str, Any]) -> None:
    """``null_reasons`` (and ``lat_p99_us_note``) of a journal row: the record's own ``fio.null_reasons``
    where the summary wrote them, else the key the record lacks. A record from before ``clat_p99_ns`` was
    kept apart (no such key in ``fio.total``) holds in ``lat_p99_ns`` the total latency's p99 where fio
    reported it and the completion latency's otherwise: kept, and labelled so, never relabelled."""
    extra: dict[str, str] = {}
    if row.get("engine") == "diskspd":  # DiskSpd's percentile is its total latency: not a mix
        extra["clat_p99_us"] = "DiskSpd reports no completion-latency percentile (its p99 is total latency)"
    elif "clat_p99_ns" not in total and row.get("lat_p99_us") is not None:
        row["lat_p99_us_note"] = OLDER_P99
        extra["clat_p99_us"] = "older record: its only p99 is in lat_p99_us (lat where fio reported it, else clat)"
    host = rec.get("host")
    if isinstance(host, dict):  # the collector's own reasons for what it could not measure
        for col in ("cpu_user", "cpu_system", "ctx_switches"):
            why = metrics.host_reason(host, col) if host.get(col) is None else None
            if why is not None:
                extra.setdefault(col, why)
    for col, key in _RECORD_KEYS.items():
        if row.get(col) is None:
            extra.setdefault(col, f"not in the result (the record has no {key})")
    row["null_reasons"] = reasons_text(_get(rec, "fio.null_reasons"), extra)  # the record's own reason first


def read_journal_rows(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Problem], list[str]]:
    """Cell rows, run records, problems and notes from one journal.

    Unlike the runner's reader, which must stop at a corrupt line before appending, analysis reports
    the bad line and goes on with the rest: one damaged line must not hide a night of measurements.
    """
    source = str(path)
    try:
        data = read_capped(source, MAX_JOURNAL_BYTES)
    except OSError as exc:
        return [], [], [Problem(source, f"cannot be read ({exc.strerror})")], []
    except DataFileError as exc:
        return [], [], [Problem(source, exc.problem + f". Fix: {exc.fix}")], []
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    problems: list[Problem] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    if not data.strip():
        return [], [], [Problem(source, "the journal is empty")], []
    if looks_binary(data):
        return [], [], [Problem(source, "binary data, not a journal (a journal is text, one JSON record per "
                                        "line). Fix: give the run directory's own journal.ndjson")], []
    schemas: dict[Any, list[int]] = {}  # unknown schema -> its line numbers: one problem per file, not per line
    skipped: dict[str, str] = {}  # cell key -> why it was not booted (the latest cell-skipped record's reason)
    for line in read_lines(data):
        number = line.number
        where = f"{source}:{number}"
        if line.error is not None:
            if line.last:
                notes.append(f"{where}: torn last line discarded (an interrupted write)")
            else:
                problems.append(Problem(where, f"line {number} is not a JSON record ({line.error})"))
            continue
        rec = line.record
        if rec is None:
            problems.append(Problem(where, f"line {number} is a JSON {type(line.value).__name__}, not a record"))
            continue
        if rec.get("schema") != SCHEMA:
            schemas.setdefault(rec.get("schema"), []).append(number)
            continue
        kind = rec.get("type")
        if kind == RUN:
            runs.append(rec)
        elif kind == CELL_SKIPPED and isinstance(rec.get("key"), str):
            reason = rec.get("reason")
            skipped[rec["key"]] = str(reason) if isinstance(reason, str) and reason.strip() else "no reason recorded"
        elif kind == CELL:
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
    for schema, numbers in schemas.items():
        first = numbers[0]
        where = f"{source}:{first}"
        if len(numbers) == 1:
            problems.append(Problem(where, f"line {first} has schema {schema!r}, expected {SCHEMA!r}"))
            continue
        problems.append(Problem(where, f"{len(numbers)} lines (from line {first}) have schema {schema!r}; this "
                                       f"stormatrix reads {SCHEMA!r}. Fix: read the journal with the stormatrix "
                                       "version that wrote it, or upgrade stormatrix"
                                if schema is not None else
                                f"{len(numbers)} lines (from line {first}) have no 'schema': not a stormatrix "
                                "journal, or one from before schemas. Fix: give the run directory's own "
                                "journal.ndjson"))
    accel = {r.get("run_id"): r["environment"].get("accel") for r in runs if isinstance(r.get("environment"), dict)}
    for row in rows:  # how the guest ran (kvm, tcg): the I/O-path lens says when the vCPU was the emulated guest
        a = accel.get(row.get("run_id"))
        row["accel"] = str(a) if a is not None else None
    notes += skipped_notes(source, {k: r for k, r in skipped.items() if k not in seen})
    if not rows and not problems:
        notes.append(f"{source}: no finished cells in the journal")
    return rows, runs, problems, notes


def skipped_notes(source: str, skipped: dict[str, str], shown: int = 12) -> list[str]:
    """One note per reason for the cells a run skipped and never measured (``cell-skipped`` records: the
    guest lacked the controller's virtio-win driver), naming their keys. Without it a controller would
    just be missing from the workbook, as if it had never been planned. A cell measured later (a resumed
    run found the driver) is not listed."""
    by_reason: dict[str, list[str]] = {}
    for key, reason in skipped.items():
        by_reason.setdefault(reason, []).append(key)
    out = []
    for reason, keys in by_reason.items():
        more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
        out.append(f"{source}: {len(keys)} cell{'s' if len(keys) != 1 else ''} skipped, not measured "
                   f"(cell-skipped records): {reason} — cells: {', '.join(keys[:shown])}{more}")
    return out
