"""Build every journal record (docs/journal.md): ``run``, ``cell``, ``cell-error``, ``cell-skipped`` and
``restored``, as the types of :mod:`stormatrix.core.recordtypes`, which analysis reads them back through.

Pure functions: given what the stages measured, summarise the engine's output (fio or DiskSpd, by the
result's ``engine``), compute per-MiB values, the fixed-rate check and the fio-versus-QEMU byte
cross-check, and assemble the record. Per-MiB cost is the one definition in
:func:`stormatrix.core.metrics.per_mib`, which analysis uses too. Nothing here talks to a VM. A matrix
cell and a suite point (many guests at once) are built by the same two functions; what only a suite
point has (per-guest results, skew, the fio client process) comes from the executor as
``WorkloadResult.record``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .analysis.read.diskspd import parse_diskspd_xml
from .analysis.read.fio import jobs_named, summarize_jobs
from .backends.base import Target
from .core.errors import DataFileError, ErrorDetails, StormatrixError, WorkloadFailed
from .core.cellparts import (CellPart, ClientPart, ClockCheck, CrossCheck, FioSummary, HostMetrics, NamedCellPart,
                             PerMib, PointInfo, RateCheck, Times)
from .core.jsonpart import JsonPart
from .core.recordtypes import (CellErrorRecord, CellRecord, CellSkippedRecord, ErrorPart, RestoredRecord, RunRecord,
                               SuiteInfo)
from .core.metrics import MIB, per_mib
from .core.model import MIXED_MODES, WRITE_MODES, Cell, now_iso
from .core.scope import BlockStats
from .executors.base import WorkloadResult
from .host.inventory import inventory

__all__ = ["MIB", "WRITE_MODES", "MIXED_MODES", "now_iso", "summarize", "fio_summary", "diskspd_summary",
           "per_mib", "rate_check", "crosscheck", "clock_check", "cell_record", "error_record"]


def summarize(result: WorkloadResult, cell: Cell) -> dict[str, Any]:
    """The measurement's figures in the journal's ``fio`` shape, whichever engine produced them.

    An executor that already summarised (the fio-server executor sums many guests) hands its
    summary in ``result.summary``; otherwise the engine's own document is read here.
    """
    if result.summary is not None:
        return result.summary
    if result.engine == "diskspd":
        return diskspd_summary(result, cell)
    if result.engine == "fio":
        return fio_summary(result, cell)
    raise WorkloadFailed(f"the executor returned an unknown engine {result.engine!r} (fio or diskspd)",
                         cell=cell.key)


def fio_summary(result: WorkloadResult, cell: Cell) -> dict[str, Any]:
    """The measurement job's figures (the warm-up job is discarded)."""
    doc = result.data
    jobs = jobs_named(doc, "measure") or [j for j in doc.get("jobs", []) if j.get("jobname") != "warmup"]
    if not jobs:
        raise WorkloadFailed("fio output has no measurement job", cell=cell.key)
    summary = summarize_jobs(jobs)
    if summary["error"]:
        raise WorkloadFailed(f"fio reported error {summary['error']} for the measurement job", cell=cell.key)
    summary["version"] = doc.get("fio version")
    return summary


def _direction(ios: float, nbytes: float, runtime_ms: float | None, prefix: str,
               why: dict[str, str]) -> dict[str, Any]:
    """One direction block from counts and a runtime; a rate over no (or an unknown) runtime is None, and
    ``why[<prefix>bw_bytes]`` says so, never 0.0 (which would read as a measured stand-still)."""
    s = runtime_ms / 1000.0 if runtime_ms is not None else None
    if not s or s <= 0:
        for key in ("bw_bytes", "iops"):
            why[f"{prefix}{key}"] = (f"the runtime is {runtime_ms!r} ms: no rate over it" if runtime_ms is not None
                                     else "no runtime to compute a rate over")
    ok = s is not None and s > 0
    return {"io_bytes": int(nbytes), "bw_bytes": nbytes / s if ok and s else None,
            "iops": ios / s if ok and s else None, "total_ios": int(ios), "runtime_ms": runtime_ms,
            "lat_mean_ns": None, "lat_p99_ns": None, "clat_p99_ns": None}


_DISKSPD_NO_CLAT = "DiskSpd reports no completion-latency percentile (its p99 is total latency)"


def diskspd_summary(result: WorkloadResult, cell: Cell) -> dict[str, Any]:
    """A DiskSpd ``-Rxml`` result in the journal's ``fio`` shape, through the analysis parser.

    DiskSpd reports counts per direction and bytes in total; its block size is fixed per target, so
    a direction's bytes are its count times the block size (the total is DiskSpd's own sum). What DiskSpd
    does not report (context switches, a completion-latency percentile) or this file lacks (guest CPU
    without ``CpuUtilization``, percentiles without ``-L``) is None, and ``null_reasons`` says why.
    """
    try:
        row = parse_diskspd_xml(result.raw, source=f"DiskSpd output for {cell.key}")
    except DataFileError as exc:
        raise WorkloadFailed(f"DiskSpd result unusable: {exc.problem}", cell=cell.key) from None
    runtime_ms = float(row["runtime_ms"])
    bs = row.get("bs") or cell.workload.bs  # the block size DiskSpd was told (-b), as the cell asked
    why: dict[str, str] = {}
    out: dict[str, Any] = {}
    for d in ("read", "write"):
        iops = row.get(f"{d}_iops")
        if iops:
            count = round(iops * runtime_ms / 1000.0)  # the parser's rate is count / seconds
            block = _direction(count, count * bs, runtime_ms, f"{d}.", why)
            mean_us = row.get(f"{d}_lat_mean_us")
            block["lat_mean_ns"] = mean_us * 1000.0 if mean_us is not None else None
            if mean_us is None:
                why[f"{d}.lat_mean_ns"] = f"the DiskSpd XML has no Latency/Average{d.title()}Milliseconds"
            why[f"{d}.lat_p99_ns"] = "DiskSpd's percentiles are of all I/O together, not per direction"
            why[f"{d}.clat_p99_ns"] = _DISKSPD_NO_CLAT
            out[d] = block
    total = _direction(row["total_ios"], row["io_bytes"], runtime_ms, "total.", why)
    total["lat_mean_ns"] = row["lat_mean_us"] * 1000.0 if row.get("lat_mean_us") is not None else None
    total["lat_p99_ns"] = row["lat_p99_us"] * 1000.0 if row.get("lat_p99_us") is not None else None
    if total["lat_mean_ns"] is None:
        why["total.lat_mean_ns"] = "the DiskSpd XML has no Latency average (AverageTotalMilliseconds)"
    if total["lat_p99_ns"] is None:
        why["total.lat_p99_ns"] = "the DiskSpd XML has no 99th-percentile Latency/Bucket (DiskSpd writes them with -L)"
    why["total.clat_p99_ns"] = _DISKSPD_NO_CLAT
    out["total"] = total
    usr, sys_ = row.get("guest_usr_cpu"), row.get("guest_sys_cpu")
    for key, value, field in (("usr_cpu", usr, "UserPercent"), ("sys_cpu", sys_, "KernelPercent")):
        if value is None:
            why[key] = f"the DiskSpd XML has no TimeSpan/CpuUtilization/Average/{field}"
    why["ctx"] = "DiskSpd reports no context switches"
    numjobs = row.get("numjobs") or cell.workload.numjobs  # DiskSpd's -t, else the threads the cell asked for
    out.update(usr_cpu=usr, sys_cpu=sys_, ctx=None, error=0, jobs=numjobs, version=row.get("engine_version"),
               engine="diskspd", null_reasons=dict(sorted(why.items())))
    return out


def _unchecked(out: dict[str, Any], why: str, *flags: str) -> dict[str, Any]:
    """A check that cannot be made: its verdicts are None and ``unchecked`` says why (never a guess)."""
    for key in flags:
        out[key] = None
    out["unchecked"] = why
    return out


def _known(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def rate_check(cell: Cell, fio: dict[str, Any], tolerance_pct: float) -> dict[str, Any] | None:
    """Did a fixed-rate cell run at its rate? ``missed`` is true when it ran slower OR faster than the
    target by more than the tolerance (``overshot`` says which); a mixed workload is also checked per
    direction against its ``rwmixread`` share, so a rate applied to each direction (twice the target,
    a 50/50 mix) is caught. Without the bytes or the runtime the check is not made: its figures and
    verdicts are None and ``unchecked`` says why."""
    w = cell.workload
    target = w.rate_mib_s
    if not target:
        return None
    runtime_ms = fio["total"].get("runtime_ms")
    out: dict[str, Any] = {"target_mib_s": target, "achieved_mib_s": None, "miss_pct": None,
                           "tolerance_pct": tolerance_pct}
    if not _known(runtime_ms) or runtime_ms <= 0:
        return _unchecked(out, f"fio's runtime is {runtime_ms!r} ms: no achieved rate", "missed", "overshot")
    runtime_s = runtime_ms / 1000.0

    def achieved(block: dict[str, Any] | None) -> float | None:
        if not block:
            return 0.0  # fio wrote no block for a direction that moved nothing
        nbytes: Any = block.get("io_bytes")  # a number or None, told apart by _known()
        return float(nbytes) / MIB / runtime_s if _known(nbytes) else None

    total = achieved(fio["total"])
    if total is None:
        return _unchecked(out, f"fio's byte count is {fio['total'].get('io_bytes')!r}: no achieved rate",
                          "missed", "overshot")
    miss = (1.0 - total / target) * 100.0
    out.update(achieved_mib_s=total, miss_pct=miss, missed=abs(miss) > tolerance_pct, overshot=miss < -tolerance_pct)
    if w.rw in MIXED_MODES and w.rwmixread is not None:
        directions: dict[str, dict[str, Any]] = {}
        for d, share in (("read", w.rwmixread), ("write", 100 - w.rwmixread)):
            want = target * share / 100.0
            got = achieved(fio.get(d))
            if got is None:
                directions[d] = _unchecked({"target_mib_s": want, "achieved_mib_s": None, "miss_pct": None},
                                           f"fio's {d} byte count is unknown", "missed")
                continue
            d_miss = (1.0 - got / want) * 100.0 if want else (0.0 if not got else -100.0)
            directions[d] = {"target_mib_s": want, "achieved_mib_s": got, "miss_pct": d_miss,
                             "missed": abs(d_miss) > tolerance_pct}
        out["directions"] = directions
        if any(v["missed"] for v in directions.values()):
            out["missed"] = True
            out["overshot"] = out["overshot"] or any(
                v["miss_pct"] is not None and v["miss_pct"] < -tolerance_pct for v in directions.values())
    return out


def crosscheck(fio: dict[str, Any], before: BlockStats | None, after: BlockStats | None,
               tolerance_pct: float) -> dict[str, Any] | None:
    """fio's bytes against QEMU's own accounting of the test disk over the same job (not made, and
    ``unchecked`` says why, when fio's byte count is unknown)."""
    if before is None or after is None:
        return None
    d = after.minus(before)
    qemu_bytes = d.rd_bytes + d.wr_bytes
    fio_bytes = fio["total"].get("io_bytes")
    out: dict[str, Any] = {"fio_bytes": fio_bytes, "qemu_bytes": qemu_bytes, "qemu_read_bytes": d.rd_bytes,
                           "qemu_write_bytes": d.wr_bytes, "tolerance_pct": tolerance_pct}
    if not _known(fio_bytes):
        return _unchecked(out, f"fio's byte count is {fio_bytes!r}: nothing to compare QEMU's with",
                          "diff_pct", "flag")
    if not fio_bytes:  # fio moved nothing: any QEMU I/O is a disagreement, but no percentage of 0 exists
        out.update(diff_pct=None, flag=bool(qemu_bytes))
        out["unchecked"] = "fio moved 0 bytes: no percentage" + (f"; QEMU counted {qemu_bytes}" if qemu_bytes else "")
        return out
    diff = abs(qemu_bytes - fio_bytes) / fio_bytes * 100.0
    out.update(diff_pct=diff, flag=diff > tolerance_pct)
    return out


def clock_check(fio: dict[str, Any], host_window_s: float | None, tolerance_pct: float = 10.0,
                min_abs_s: float = 0.5) -> dict[str, Any]:
    """fio's runtime (guest clock) against the host's window: a guest whose clock runs fast or slow
    (a mis-calibrated TSC under emulation ran ~10x fast) would make every per-second figure wrong.

    The host window also holds fio's job set-up and the marker round trips (tenths of a second on
    a loaded host), so only a difference beyond both ``tolerance_pct`` and ``min_abs_s`` is flagged.
    Without either time the check is not made (``diff_pct`` and ``flag`` None, ``unchecked`` says why).
    """
    runtime_ms = fio["total"].get("runtime_ms")
    fio_s = runtime_ms / 1000.0 if _known(runtime_ms) else None
    out: dict[str, Any] = {"fio_runtime_s": fio_s, "host_window_s": host_window_s}
    if fio_s is None:
        return _unchecked(out, f"fio's runtime is {runtime_ms!r}: no guest time to compare", "diff_pct", "flag")
    if not _known(host_window_s) or host_window_s is None or host_window_s <= 0:
        return _unchecked(out, f"the host window is {host_window_s!r} s: no host time to compare",
                          "diff_pct", "flag")
    delta = abs(fio_s - host_window_s)
    diff = delta / host_window_s * 100.0
    out.update(diff_pct=diff, flag=diff > tolerance_pct and delta > min_abs_s)
    return out


def cell_record(*, run_id: str, cell: Cell, backend: str | None, side: str | None, vm: str | list[str],
                times: dict[str, Any], fio: dict[str, Any], host: dict[str, Any] | None,
                result: WorkloadResult, rate: dict[str, Any] | None, cross: dict[str, Any] | None,
                overlap: dict[str, Any] | None = None, fields: dict[str, Any] | None = None) -> CellRecord:
    """One measured cell. ``result.record`` adds (or, for ``vm``/``guest``/``raw``, replaces) what only
    its executor knows: per-guest results of a multi-guest point, its raw output's shape; ``fields`` what
    the run adds to every cell record (a suite's name). What a point on many guests adds is typed
    (:class:`~stormatrix.core.cellparts.PointInfo`); anything else stays in the record's ``rest``."""
    where = f"the record of cell {cell.key}"
    extra = {**result.record, **(fields or {})}
    times = {**times, **extra.pop("times", {})}
    typed = {"vm": vm, "clients": None, "raw": {"engine": result.engine, "output": result.raw}}
    typed.update({k: extra.pop(k) for k in list(extra) if k in typed})
    point = {k: extra.pop(k) for k in list(extra) if k in PointInfo.json_keys()}
    clients = ClientPart.parse_list(typed["clients"], where, "clients") if typed["clients"] is not None else None
    return CellRecord(
        run_id=run_id, key=cell.key, cell=CellPart.of(cell), backend=backend, side=side, vm=typed["vm"],
        engine=result.engine, times=Times.parse(times, where, "times."),
        fio=FioSummary.parse(fio, where, "fio."), host=_part(HostMetrics, host, where, "host."),
        per_mib=PerMib.parse(per_mib(fio["total"]["io_bytes"], host), where, "per_mib."),
        rate=_part(RateCheck, rate, where, "rate."), crosscheck=_part(CrossCheck, cross, where, "crosscheck."),
        clock=ClockCheck.parse(clock_check(fio, times["window_s"]), where, "clock.") if times.get("window_s") else None,
        guest=result.guest, window_source=result.window_source, clients=clients, raw=typed["raw"],
        overlap=overlap, point_info=PointInfo.parse(point, where) if point else None, rest=extra)


P = TypeVar("P", bound=JsonPart)


def _part(cls: type[P], value: dict[str, Any] | None, where: str, prefix: str) -> P | None:
    return cls.parse(value, where, prefix) if value is not None else None


def error_record(*, run_id: str, cell: Cell, stage: str, attempt: int, exc: BaseException,
                 side: str | None = None, console_tail: str = "") -> CellErrorRecord:
    """One failed attempt. A multi-guest point's error names the guests that dropped out
    (``error.guests``) and keeps what the others measured (``partial_clients``)."""
    details = exc.details if isinstance(exc, StormatrixError) else ErrorDetails()
    partial = details.partial
    error = ErrorPart(type=type(exc).__name__, message=str(exc),
                      console_tail=console_tail[-800:] if console_tail else None, guests=details.guests)
    clients = [{"name": c["name"], "fio": c["fio"]} for c in partial] if partial else None
    return CellErrorRecord(run_id=run_id, key=cell.key, cell=NamedCellPart.of(cell), side=side, stage=stage,
                           attempt=attempt, time=now_iso(), error=error,
                           partial_clients=ClientPart.parse_list(clients, f"the error record of cell {cell.key}",
                                                                 "partial_clients") if clients else None)


def run_record(*, run_id: str, matrix_path: str, matrix: dict[str, Any], backend: str, side: str | None,
               environment: dict[str, Any], original_config: dict[str, Any] | None, cells: int, todo: int,
               order: str | None = None, seed: int | None = None, extra: dict[str, Any] | None = None) -> RunRecord:
    """A run starts: where and on what it runs, the matrix as read, what restore will put back, the order its
    cells run in; ``extra`` is what the run's source adds (a suite's name, guests, points: typed as
    :class:`~stormatrix.core.recordtypes.SuiteInfo`; anything else stays in the record's ``rest``)."""
    extra = dict(extra or {})
    suite = {k: extra.pop(k) for k in list(extra) if k in SuiteInfo.json_keys()}
    return RunRecord(run_id=run_id, started=now_iso(), matrix_path=matrix_path, matrix=matrix, backend=backend,
                     side=side, environment=environment, original_config=original_config, cells=cells, todo=todo,
                     order=order, seed=seed, suite_info=SuiteInfo.parse(suite, f"the run record of {run_id}")
                     if suite else None, rest=extra)


def skipped_record(*, run_id: str, cell: Cell, side: str | None, reason: str, drivers: Any,
                   readiness: str = "") -> CellSkippedRecord:
    """A cell not run, and why (``readiness``: what the boot that showed the reason reported)."""
    return CellSkippedRecord(run_id=run_id, key=cell.key, cell=NamedCellPart.of(cell), side=side, time=now_iso(),
                             reason=reason, drivers=drivers, readiness=readiness or None)


def restored_record(*, run_id: str | None, backend: str | None = None, vm: str | None = None,
                    by: str | None = None) -> RestoredRecord:
    """The VM is back as the run found it: at the end of the run (``backend``), or later by ``by``
    (``stormatrix restore``, naming the ``vm``)."""
    return RestoredRecord(run_id=run_id, time=now_iso(), backend=backend, vm=vm, by=by)


def run_environment(backend: Target) -> dict[str, Any]:
    """The run record's environment: the measured host's facts under the keys the Environment sheet shows
    (``cpu_model``, ``kernel``, ``qemu``, ``perf``, ...), and, when the host is not this machine, this
    machine's own under ``workstation`` — never the workstation's facts as the host's. When the backend
    could not read its host, ``host_inventory_error`` says why and no host keys are filled in."""
    here = inventory()
    try:
        host = backend.host_inventory()
    except StormatrixError as exc:  # a backend's own failure: said in the record, the run goes on
        host = {"host_inventory_error": str(exc)}
    if host is None:
        return {**here, "host_inventory_source": "this machine (the measured host)"}
    return {**host, "workstation": here}
