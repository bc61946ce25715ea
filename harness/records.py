"""Build the two records every later stage consumes (docs/journal.md): ``cell`` and ``cell-error``.

Pure functions: given what the stages measured, summarise the engine's output (fio or DiskSpd, by the
result's ``engine``), compute per-MiB values, the fixed-rate check and the fio-versus-QEMU byte
cross-check, and assemble the record. Per-MiB cost is the one definition in
:func:`stormatrix.core.metrics.per_mib`, which analysis uses too. Nothing here talks to a VM. A matrix
cell and a suite point (many guests at once) are built by the same two functions; what only a suite
point has (per-guest results, skew, the fio client process) comes from the executor as
``WorkloadResult.record``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .analysis.diskspd import parse_diskspd_xml
from .analysis.fio import jobs_named, summarize_jobs
from .backends.base import BlockStats
from .core.errors import DataFileError, StormatrixError, WorkloadFailed
from .core.metrics import MIB, per_mib
from .core.model import Cell
from .executors.base import WorkloadResult

# fio rw modes that change the disk's contents
WRITE_MODES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim"})
MIXED_MODES = frozenset({"rw", "readwrite", "randrw"})

__all__ = ["MIB", "WRITE_MODES", "MIXED_MODES", "now_iso", "summarize", "fio_summary", "diskspd_summary",
           "per_mib", "rate_check", "crosscheck", "clock_check", "cell_record", "error_record"]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


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


def _direction(ios: float, nbytes: float, runtime_ms: float) -> dict[str, Any]:
    s = runtime_ms / 1000.0
    return {"io_bytes": int(nbytes), "bw_bytes": nbytes / s if s else 0.0, "iops": ios / s if s else 0.0,
            "total_ios": int(ios), "runtime_ms": runtime_ms, "lat_mean_ns": None, "lat_p99_ns": None}


def diskspd_summary(result: WorkloadResult, cell: Cell) -> dict[str, Any]:
    """A DiskSpd ``-Rxml`` result in the journal's ``fio`` shape, through the analysis parser.

    DiskSpd reports counts per direction and bytes in total; its block size is fixed per target, so
    a direction's bytes are its count times the block size (the total is DiskSpd's own sum).
    """
    try:
        row = parse_diskspd_xml(result.raw, source=f"DiskSpd output for {cell.key}")
    except DataFileError as exc:
        raise WorkloadFailed(f"DiskSpd result unusable: {exc.problem}", cell=cell.key) from None
    runtime_ms = float(row["runtime_ms"])
    bs = row.get("bs") or cell.workload.bs
    out: dict[str, Any] = {}
    for d in ("read", "write"):
        iops = row.get(f"{d}_iops")
        if iops:
            count = round(iops * runtime_ms / 1000.0)  # the parser's rate is count / seconds
            block = _direction(count, count * bs, runtime_ms)
            mean_us = row.get(f"{d}_lat_mean_us")
            block["lat_mean_ns"] = mean_us * 1000.0 if mean_us is not None else None
            out[d] = block
    total = _direction(row["total_ios"], row["io_bytes"], runtime_ms)
    total["lat_mean_ns"] = row["lat_mean_us"] * 1000.0 if row.get("lat_mean_us") is not None else None
    total["lat_p99_ns"] = row["lat_p99_us"] * 1000.0 if row.get("lat_p99_us") is not None else None
    out["total"] = total
    out.update(usr_cpu=row.get("guest_usr_cpu") or 0.0, sys_cpu=row.get("guest_sys_cpu") or 0.0, ctx=0,
               error=0, jobs=row.get("numjobs") or cell.workload.numjobs, version=row.get("engine_version"),
               engine="diskspd")
    return out


def rate_check(cell: Cell, fio: dict[str, Any], tolerance_pct: float) -> dict[str, Any] | None:
    """Did a fixed-rate cell run at its rate? ``missed`` is true when it ran slower OR faster than the
    target by more than the tolerance (``overshot`` says which); a mixed workload is also checked per
    direction against its ``rwmixread`` share, so a rate applied to each direction (twice the target,
    a 50/50 mix) is caught."""
    w = cell.workload
    target = w.rate_mib_s
    if not target:
        return None
    runtime_s = fio["total"]["runtime_ms"] / 1000.0

    def achieved(block: dict[str, Any] | None) -> float:
        return (block["io_bytes"] / MIB / runtime_s) if block and runtime_s > 0 else 0.0

    total = achieved(fio["total"])
    miss = (1.0 - total / target) * 100.0
    out: dict[str, Any] = {"target_mib_s": target, "achieved_mib_s": total, "miss_pct": miss,
                           "missed": abs(miss) > tolerance_pct, "overshot": miss < -tolerance_pct,
                           "tolerance_pct": tolerance_pct}
    if w.rw in MIXED_MODES and w.rwmixread is not None:
        directions = {}
        for d, share in (("read", w.rwmixread), ("write", 100 - w.rwmixread)):
            want = target * share / 100.0
            got = achieved(fio.get(d))
            d_miss = (1.0 - got / want) * 100.0 if want else (0.0 if not got else -100.0)
            directions[d] = {"target_mib_s": want, "achieved_mib_s": got, "miss_pct": d_miss,
                             "missed": abs(d_miss) > tolerance_pct}
        out["directions"] = directions
        if any(v["missed"] for v in directions.values()):
            out["missed"] = True
            out["overshot"] = out["overshot"] or any(v["miss_pct"] < -tolerance_pct for v in directions.values())
    return out


def crosscheck(fio: dict[str, Any], before: BlockStats | None, after: BlockStats | None,
               tolerance_pct: float) -> dict[str, Any] | None:
    """fio's bytes against QEMU's own accounting of the test disk over the same job."""
    if before is None or after is None:
        return None
    d = after.minus(before)
    qemu_bytes = d.rd_bytes + d.wr_bytes
    fio_bytes = fio["total"]["io_bytes"]
    diff = (abs(qemu_bytes - fio_bytes) / fio_bytes * 100.0) if fio_bytes else (0.0 if not qemu_bytes else 100.0)
    return {"fio_bytes": fio_bytes, "qemu_bytes": qemu_bytes, "qemu_read_bytes": d.rd_bytes,
            "qemu_write_bytes": d.wr_bytes, "diff_pct": diff, "flag": diff > tolerance_pct,
            "tolerance_pct": tolerance_pct}


def clock_check(fio: dict[str, Any], host_window_s: float, tolerance_pct: float = 10.0,
                min_abs_s: float = 0.5) -> dict[str, Any]:
    """fio's runtime (guest clock) against the host's window: a guest whose clock runs fast or slow
    (a mis-calibrated TSC under emulation ran ~10x fast) would make every per-second figure wrong.

    The host window also holds fio's job set-up and the marker round trips (tenths of a second on
    a loaded host), so only a difference beyond both ``tolerance_pct`` and ``min_abs_s`` is flagged.
    """
    fio_s = fio["total"]["runtime_ms"] / 1000.0
    delta = abs(fio_s - host_window_s)
    diff = delta / host_window_s * 100.0 if host_window_s > 0 else 100.0
    return {"fio_runtime_s": fio_s, "host_window_s": host_window_s, "diff_pct": diff,
            "flag": diff > tolerance_pct and delta > min_abs_s}


def cell_record(*, run_id: str, cell: Cell, backend: str | None, side: str | None, vm: str | list[str],
                times: dict[str, Any], fio: dict[str, Any], host: dict[str, Any] | None,
                result: WorkloadResult, rate: dict[str, Any] | None, cross: dict[str, Any] | None,
                overlap: dict[str, Any] | None = None) -> dict[str, Any]:
    """One measured cell. ``result.record`` adds (or, for ``vm``/``guest``/``raw``, replaces) what only
    its executor knows: per-guest results of a multi-guest point, its raw output's shape."""
    rec: dict[str, Any] = {
        "type": "cell", "run_id": run_id, "key": cell.key, "cell": cell.to_dict(),
        "backend": backend, "side": side, "vm": vm, "engine": result.engine, "times": times, "fio": fio,
        "host": host, "per_mib": per_mib(fio["total"]["io_bytes"], host), "rate": rate, "crosscheck": cross,
        "clock": clock_check(fio, times["window_s"]) if times.get("window_s") else None,
        "guest": result.guest, "window_source": result.window_source, "clients": None,
        "raw": {"engine": result.engine, "output": result.raw},
        "overlap": overlap,
    }
    extra = dict(result.record)
    rec["times"] = {**times, **extra.pop("times", {})}
    rec.update(extra)
    return rec


def error_record(*, run_id: str, cell: Cell, stage: str, attempt: int, exc: BaseException,
                 side: str | None = None, console_tail: str = "") -> dict[str, Any]:
    """One failed attempt. A multi-guest point's error names the guests that dropped out
    (``error.guests``) and keeps what the others measured (``partial_clients``)."""
    details = exc.details if isinstance(exc, StormatrixError) else {}
    partial = details.get("partial")
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc),
                             "console_tail": console_tail[-800:] if console_tail else None}
    if details.get("guests") is not None:
        error["guests"] = details["guests"]
    rec: dict[str, Any] = {"type": "cell-error", "run_id": run_id, "key": cell.key, "cell": cell.to_dict(),
                           "side": side, "stage": stage, "attempt": attempt, "time": now_iso(), "error": error}
    if partial:
        rec["partial_clients"] = [{"name": c["name"], "fio": c["fio"]} for c in partial]
    return rec
