"""Build the one record type every later stage consumes (docs/journal.md, ``type: "cell"``).

Pure functions: given what the stages measured, compute per-MiB values, the fixed-rate check and
the fio-versus-QEMU byte cross-check, and assemble the record. Nothing here talks to a VM.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .analysis.fio import jobs_named, summarize_jobs
from .backends.base import BlockStats
from .core.errors import WorkloadFailed
from .executors.base import WorkloadResult
from .core.model import Cell

MIB = 2**20


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


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


def per_mib(fio: dict[str, Any], host: dict[str, Any] | None) -> dict[str, Any]:
    mib = fio["total"]["io_bytes"] / MIB
    if host is None or mib <= 0:
        return {"mib": mib, "cpu": None, "cpu_unit": None, "ctx": None}
    if host["cpu_metric"] == "cycles":
        cpu, unit = host["cpu_total"] / mib, "cycles/MiB"
    else:
        cpu, unit = host["cpu_total"] * 1000.0 / mib, "CPU-ms/MiB"
    ctx = host.get("ctx_switches")  # ESXi's statistics have no context switches: None, not 0
    return {"mib": mib, "cpu": cpu, "cpu_unit": unit, "ctx": (ctx / mib) if ctx is not None else None}


def rate_check(cell: Cell, fio: dict[str, Any], tolerance_pct: float) -> dict[str, Any] | None:
    target = cell.workload.rate_mib_s
    if not target:
        return None
    runtime_s = fio["total"]["runtime_ms"] / 1000.0
    achieved = (fio["total"]["io_bytes"] / MIB / runtime_s) if runtime_s > 0 else 0.0
    miss = (1.0 - achieved / target) * 100.0
    return {"target_mib_s": target, "achieved_mib_s": achieved, "miss_pct": miss,
            "missed": miss > tolerance_pct, "tolerance_pct": tolerance_pct}


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


def cell_record(*, run_id: str, cell: Cell, backend: str, side: str | None, vm: str,
                times: dict[str, Any], fio: dict[str, Any], host: dict[str, Any] | None,
                result: WorkloadResult, rate: dict[str, Any] | None, cross: dict[str, Any] | None,
                clients: list[dict[str, Any]] | None = None,
                overlap: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "cell", "run_id": run_id, "key": cell.key, "cell": cell.to_dict(),
        "backend": backend, "side": side, "vm": vm, "times": times, "fio": fio, "host": host,
        "per_mib": per_mib(fio, host), "rate": rate, "crosscheck": cross,
        "clock": clock_check(fio, times["window_s"]) if times.get("window_s") else None,
        "guest": result.guest, "window_source": result.window_source, "clients": clients,
        "raw": {"engine": result.engine, "output": result.raw},
        "overlap": overlap,
    }
