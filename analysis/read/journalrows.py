"""Analysis's reader of the run journal (docs/journal.md): cell records -> tidy row dicts.

Unlike the runner's reader, which must stop at a corrupt line before appending, analysis reports
the bad line and goes on with the rest: one damaged line must not hide a night of measurements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import DataFileError
from ...core.journalfile import CELL, CELL_SKIPPED, RUN, SCHEMA, looks_binary, read_lines
from ...core.metrics import per_mib
from ...core.model import NOT_APPLICABLE, disk_options_apply
from ...core.cellparts import Direction, RateCheck, Times
from ...core.recordtypes import CellRecord, CellSkippedRecord, RunRecord, record_from_json
from .byrole import role_split, split_of
from .checks import Problem, check_row
from .discover import MAX_JOURNAL_BYTES, read_capped
from .fiorows import WORST_P99
from .params import normalize_rw
from .tidy import CPU_PER_MIB_UNIT, reasons_text

OLDER_P99 = "older record: lat p99 where fio reported it, else clat p99"


def journal_cell_row(rec: dict[str, Any], where: str) -> dict[str, Any]:
    """A tidy row from one ``cell`` record (docs/journal.md). Raises DataFileError naming the field."""
    return cell_row(CellRecord.from_json(rec, where), where)


def cell_row(rec: CellRecord, where: str) -> dict[str, Any]:
    """A tidy row from one typed cell record: the record's figures under the tidy frame's columns."""
    disk, work, total = rec.cell.disk, rec.cell.workload, rec.fio.total
    assert total.io_bytes is not None and total.iops is not None  # CellRecord.from_json's measurement check
    aio: str | None = disk.aio
    iothread, cache = bool(disk.iothread) if disk.iothread is not None else None, disk.cache
    if not disk_options_apply(disk.controller, rec.backend):  # the harness's own rule, as it planned the cell
        # ESXi has no aio, iothread or cache setting: null in the record (older records carried the
        # matrix's default aio, which ESXi never had); "n/a" here, so that it is neither unknown nor a mode
        aio, iothread, cache = NOT_APPLICABLE, None, NOT_APPLICABLE
    read, write, times = rec.fio.read or Direction(), rec.fio.write or Direction(), rec.times or Times()
    rate = rec.rate or RateCheck()
    extra = rec.extra_repeat.get("basis") if isinstance(rec.extra_repeat, dict) else None
    row: dict[str, Any] = {
        "side": rec.side if isinstance(rec.side, str) else None,
        "source": where,
        "source_format": "journal",
        "run_id": rec.run_id,
        "key": rec.key,
        "vm": rec.vm,
        "clients": len(rec.clients) if isinstance(rec.clients, list) else None,
        "started": times.measure_start or times.started,
        "controller": disk.controller,
        "aio": aio,
        "iothread": iothread,
        "cache": cache,
        "workload": work.name,
        "job": None,
        "rw": normalize_rw(work.rw) or work.rw,
        "bs": work.bs,
        "iodepth": work.iodepth,
        "numjobs": work.numjobs,
        "rwmixread": work.rwmixread,
        "rate_mib_s": _float(work.rate_mib_s),
        "repeat": rec.cell.repeat,
        "extra_repeat": extra if isinstance(extra, str) and extra else None,
        "engine": rec.engine,
        "engine_version": rec.fio.version,
        "iops": float(total.iops),
        "read_iops": _float(read.iops),
        "write_iops": _float(write.iops),
        "bw_mib_s": _mib(_float(total.bw_bytes)),
        "io_bytes": int(total.io_bytes),
        "mib": total.io_bytes / 2**20,
        "total_ios": _float(total.total_ios),
        "runtime_ms": _float(total.runtime_ms),
        "lat_mean_us": _us(total.lat_mean_ns),
        "read_lat_mean_us": _us(read.lat_mean_ns),
        "write_lat_mean_us": _us(write.lat_mean_ns),
        "lat_p99_us": _us(total.lat_p99_ns),
        "clat_p99_us": _us(total.clat_p99_ns),
        "read_clat_p99_us": _us(read.clat_p99_ns),
        "write_clat_p99_us": _us(write.clat_p99_ns),
        "p99_basis": _p99_basis(rec, read, write, total),
        "guest_usr_cpu": _float(rec.fio.usr_cpu),
        "guest_sys_cpu": _float(rec.fio.sys_cpu),
        "guest_fio_timerslack_ns": _slack_ns(rec.guest),
        "rate_target_mib_s": _float(rate.target_mib_s),
        "rate_achieved_mib_s": _float(rate.achieved_mib_s),
        "rate_missed": rate.missed,
        "crosscheck_flag": rec.crosscheck.flag if rec.crosscheck else None,
        "window_s": _float(times.window_s),
    }
    _explain_blanks(rec, row)
    io_cpu, io_ctx, io_note = split_of(rec)
    row.update({"io_path_cpu_s": io_cpu, "io_path_ctx": io_ctx, "io_path_note": io_note})
    row.update(role_split(rec))
    host = rec.host
    if host is not None:
        metric = host.cpu_metric
        assert metric is not None and host.cpu_total is not None
        cpu_per_mib, ctx_per_mib = rec.cost_per_mib()
        cycles = host.cycles if isinstance(host.cycles, dict) else {}
        row.update({
            "cpu_metric": metric,
            "cpu_unit": host.cpu_unit or ("cycles" if metric == "cycles" else "s"),
            "cpu_total": float(host.cpu_total),
            "cpu_user": _float(host.cpu_user) if metric == "cpu_time" else cycles.get("user"),
            "cpu_system": _float(host.cpu_system) if metric == "cpu_time" else cycles.get("kernel"),
            "ctx_switches": float(host.ctx_switches) if host.ctx_switches is not None else None,
            "ctx_note": host.reason("ctx_switches") if host.ctx_switches is None else None,
            "window_s": _float(host.window_s) or row["window_s"],
            "cpu_per_mib": cpu_per_mib,
            "cpu_per_mib_unit": CPU_PER_MIB_UNIT[metric],
            "ctx_per_mib": ctx_per_mib,
            "host_source": host.source,
            "host_scope": host.scope,
            "cpu_total_source": host.cpu_total_source,
            "cpu_split_note": host.cpu_split_note if isinstance(host.cpu_split_note, str) else None,
        })
        row.update(_cpu_set_columns(rec))
    return row


def _cpu_set_columns(rec: CellRecord) -> dict[str, Any]:
    """A CPU-set record's extra columns (issue 33): the QEMU process's figures and per-MiB costs beside the
    set's, the storage-path interrupts and softirqs outside and on the set, the other tasks on it."""
    host = rec.host
    if host is None or not host.measured_cpus:
        return {}
    out: dict[str, Any] = {"host_cpus": host.cpus}
    proc = host.process
    if proc is not None and proc.cpu_metric in CPU_PER_MIB_UNIT and rec.fio is not None and rec.fio.total is not None:
        cost = per_mib(rec.fio.total.io_bytes, proc.to_json())
        out.update({"proc_cpu_total": _float(proc.cpu_total), "proc_ctx_switches": _float(proc.ctx_switches),
                    "proc_cpu_per_mib": cost["cpu"], "proc_ctx_per_mib": cost["ctx"]})
        out.update(_process_on_set(rec, host, proc))
    leak = host.leak
    if leak is not None:
        for name, counts in (("irq", leak.io_interrupts), ("softirq", leak.io_softirqs)):
            if isinstance(counts, dict):
                out[f"leak_{name}_outside"] = _float(counts.get("outside"))
                out[f"leak_{name}_on_set"] = _float(counts.get("on_set"))
    stat = host.rest.get("cpu_stat")  # the set's /proc/stat columns over the window
    steal = stat.get("steal") if isinstance(stat, dict) else None
    if isinstance(steal, (int, float)) and not isinstance(steal, bool):
        out["set_steal_s"] = float(steal)
    if host.on_set is not None:
        rest = host.rest.get("on_set_rest")
        extra = rest.get("cpu_s") if isinstance(rest, dict) else None
        extra = extra if isinstance(extra, (int, float)) else 0.0
        out["on_set_cpu_s"] = float(sum(t.cpu_s or 0.0 for t in host.on_set) + extra)
        out["on_set_top"] = "; ".join(f"{t.comm} ({t.pid}) {t.cpu_s or 0:.2f} s" for t in host.on_set[:3]) or None
    return out


def _process_on_set(rec: CellRecord, host: Any, proc: Any) -> dict[str, Any]:
    """``vcpu_on_set`` and the QEMU process's figures of its threads that ran on the set (``proc_set_cpu_total``,
    ``proc_set_ctx_switches``): the whole process's where its vCPUs ran there too (KVM, or a record from before
    the vCPUs' place was recorded); the process's minus its vCPU role's where they ran beside the harness
    (``host.placement.vcpu_on_set`` false, accel = tcg). The CPU is left blank when the process's figure is
    not in seconds (cycles: the per-thread split is CPU time) or the split is missing."""
    placement = host.rest.get("placement")
    on_set = placement.get("vcpu_on_set") if isinstance(placement, dict) else None
    on_set = on_set if isinstance(on_set, bool) else True
    out: dict[str, Any] = {"vcpu_on_set": on_set}
    if on_set:
        out.update({"proc_set_cpu_total": _float(proc.cpu_total), "proc_set_ctx_switches": _float(proc.ctx_switches)})
        return out
    vcpu = role_split(rec)  # the vCPU role's run time and switches, as the per-role columns read them
    run, switches = vcpu["vcpu_cpu_s"], vcpu["vcpu_ctx"]
    total, ctx = _float(proc.cpu_total), _float(proc.ctx_switches)
    out["proc_set_cpu_total"] = max(total - run, 0.0) if proc.cpu_metric == "cpu_time" and total is not None \
        and run is not None else None
    out["proc_set_ctx_switches"] = max(ctx - switches, 0.0) if ctx is not None and switches is not None else None
    return out


def _float(value: float | None) -> float | None:
    return float(value) if value is not None else None


def _slack_ns(guest: Any) -> float | None:
    """The local guest's fio's timer slack, as its READY line gave it (a string of ns; absent before it was
    reported, empty where no fio waited)."""
    value = guest.get("fio_timerslack_ns") if isinstance(guest, dict) else None
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _us(ns: float | None) -> float | None:
    return ns / 1000.0 if ns is not None else None


def _mib(nbytes: float | None) -> float | None:
    return nbytes / 2**20 if nbytes is not None else None


def _p99_basis(rec: Any, read: Direction, write: Direction, total: Direction) -> str | None:
    """What the p99 of a record of several directions or jobs is: the summary keeps each job's and
    direction's p99 and takes the worst (a journal holds no json+ bins to merge)."""
    both = bool(read.io_bytes or read.total_ios) and bool(write.io_bytes or write.total_ios)
    jobs = rec.fio.jobs if isinstance(rec.fio.jobs, int) and not isinstance(rec.fio.jobs, bool) else 1
    if total.clat_p99_ns is None or (not both and jobs <= 1):
        return None
    return WORST_P99.format(what="job and direction" if both and jobs > 1 else "direction" if both else "job")


# measured columns whose blank a record explains itself (fio.null_reasons), else by the key it lacks
_RECORD_KEYS = {"bw_mib_s": "fio.total.bw_bytes", "runtime_ms": "fio.total.runtime_ms",
                "lat_mean_us": "fio.total.lat_mean_ns", "lat_p99_us": "fio.total.lat_p99_ns",
                "clat_p99_us": "fio.total.clat_p99_ns", "numjobs": "cell.workload.numjobs",
                "guest_usr_cpu": "fio.usr_cpu", "guest_sys_cpu": "fio.sys_cpu"}


def _explain_blanks(rec: CellRecord, row: dict[str, Any]) -> None:
    """``null_reasons`` (and ``lat_p99_us_note``) of a journal row: the record's own ``fio.null_reasons``
    where the summary wrote them, else the key the record lacks. A record from before ``clat_p99_ns`` was
    kept apart (no such key in ``fio.total``) holds in ``lat_p99_ns`` the total latency's p99 where fio
    reported it and the completion latency's otherwise: kept, and labelled so, never relabelled."""
    extra: dict[str, str] = {}
    if row.get("engine") == "diskspd":  # DiskSpd's percentile is its total latency: not a mix
        extra["clat_p99_us"] = "DiskSpd reports no completion-latency percentile (its p99 is total latency)"
    elif not rec.fio.total.given("clat_p99_ns") and row.get("lat_p99_us") is not None:
        row["lat_p99_us_note"] = OLDER_P99
        extra["clat_p99_us"] = "older record: its only p99 is in lat_p99_us (lat where fio reported it, else clat)"
    host = rec.host
    if host is not None:  # the collector's own reasons for what it could not measure
        for col, value in (("cpu_user", host.cpu_user), ("cpu_system", host.cpu_system),
                           ("ctx_switches", host.ctx_switches)):
            why = host.reason(col) if value is None else None
            if why is not None:
                extra.setdefault(col, why)
    for col, key in _RECORD_KEYS.items():
        if row.get(col) is None:
            extra.setdefault(col, f"not in the result (the record has no {key})")
    row["null_reasons"] = reasons_text(rec.fio.null_reasons, extra)  # the record's own reason first


def read_journal_rows(path: str | Path) -> tuple[list[dict[str, Any]], list[RunRecord], list[Problem], list[str]]:
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
    runs: list[RunRecord] = []
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
    accel: dict[str | None, Any] = {}  # run id -> how its guests ran (the run record's environment.accel)
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
        try:
            if kind == RUN:
                run = RunRecord.from_json(rec, where)
                runs.append(run)
                if isinstance(run.environment, dict):  # how the guest ran (kvm, tcg)
                    accel[run.run_id] = run.environment.get("accel")
            elif kind == CELL_SKIPPED:
                skip = CellSkippedRecord.from_json(rec, where)
                if skip.key is not None:
                    skipped[skip.key] = skip.reason if skip.reason and skip.reason.strip() else "no reason recorded"
            elif kind == CELL:
                row = journal_cell_row(rec, where)
                check_row(row, where)
                if row["key"] in seen:
                    notes.append(f"{where}: cell {row['key']} recorded again; the later record is used")
                    rows[seen[row["key"]]] = row
                else:
                    seen[row["key"]] = len(rows)
                    rows.append(row)
        except DataFileError as exc:
            problems.append(Problem(where, exc.problem + (f". Fix: {exc.fix}" if exc.fix else "")))
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


def journal_records(sources: list[str]) -> tuple[dict[str, CellRecord], list[RunRecord]]:
    """Cell records by ``path:line`` and the run records, from the journals the sources name (a line that is
    no record of its type is left out: ingest has reported it). The I/O-path lens reads a frame's split back
    with it when the frame does not carry it (:func:`stormatrix.analysis.score.iopath.iopath_frame`)."""
    by_source: dict[str, CellRecord] = {}
    runs: list[RunRecord] = []
    for path in sorted({s.rsplit(":", 1)[0] for s in sources if ":" in s}):
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        for line in read_lines(data):
            rec, where = line.record, f"{path}:{line.number}"
            if rec is None or rec.get("schema") != SCHEMA:
                continue
            try:
                typed = record_from_json(rec, where)
            except DataFileError:
                continue
            if isinstance(typed, RunRecord):
                runs.append(typed)
            elif isinstance(typed, CellRecord):
                by_source[where] = typed
    return by_source, runs
