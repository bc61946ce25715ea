"""The tidy frame: one row per cell x repeat, typed columns, built once from plain row dicts.

Every reader (journals, fio JSON, DiskSpd XML) produces plain dicts; this module turns the lot into one
DataFrame with the columns of :data:`COLUMNS`, numbers repeats that files do not name, and collects the
facts for the Environment sheet.
"""

from __future__ import annotations

import json
import math
import operator
import time
from functools import lru_cache
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ...core import metrics
from ...core.recordtypes import RunRecord
from .byrole import role_columns

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
    "extra_repeat": "string",    # why a repeat beyond the planned ones ran (journal: open verdict | cv_limit_pct)
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
    "lat_p99_us": "float64",     # total latency (lat = submission + completion) p99, where the engine gave it
    "clat_p99_us": "float64",    # fio's completion latency (clat) p99, its default percentiles
    "read_clat_p99_us": "float64",   # the same of the reads alone
    "write_clat_p99_us": "float64",  # and of the writes alone
    "p99_basis": "string",       # a row of several directions or jobs: merged json+ bins, or the worst's p99
    "lat_p99_us_note": "string",  # an older journal record's lat_p99_us: lat p99 where fio reported it, else clat p99
    "guest_usr_cpu": "float64",  # % as the guest's engine reported it (not the host measurement)
    "guest_sys_cpu": "float64",
    "guest_fio_timerslack_ns": "float64",  # the local guest's fio's timer slack (it spins out rate gaps below it)
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
    "io_path_cpu_s": "float64",  # CPU seconds of every QEMU thread but the vCPUs' (host.by_role), the I/O path lens
    "io_path_ctx": "float64",    # context switches of those threads
    "io_path_note": "string",    # why the two are blank (no per-thread split, no vCPU role, ...)
    # per thread role (analysis/read/byrole.py): switches and CPU seconds of the vcpu, main-loop, iothread, aio-worker
    # and other threads in the window (0: the role had no thread; blank: no per-thread split)
    **role_columns(),
    "accel": "string",           # the run's environment.accel (kvm, tcg): tcg's vCPU CPU is the emulated guest
    "host_source": "string",
    "cpu_total_source": "string",  # what cpu_total (the scored CPU figure) is: perf task-clock, cycles, /proc
    "cpu_split_note": "string",  # why cpu_user + cpu_system differs from cpu_total by > 3 % (the collector's)
    "host_scope": "string",      # cpus (a CPU set system-wide) | qemu-process | esxi-vm: what the host figures are of
    # [host] scope = "cpus" (issue 33): the set, and the QEMU process's figures beside the set's (the scored ones)
    "host_cpus": "string",       # the measured CPU set, a kernel cpulist
    "proc_cpu_total": "float64",
    "proc_ctx_switches": "float64",
    "proc_cpu_per_mib": "float64",
    "proc_ctx_per_mib": "float64",
    "vcpu_on_set": "boolean",    # whether the vCPU threads ran on the set (KVM) or beside the harness (accel = tcg)
    "proc_set_cpu_total": "float64",     # the QEMU process's threads that ran on the set (without the vCPUs off it)
    "proc_set_ctx_switches": "float64",
    "leak_irq_outside": "float64",      # storage-path (numbered) interrupts on CPUs outside the set in the window
    "leak_irq_on_set": "float64",
    "leak_softirq_outside": "float64",  # BLOCK, IRQ_POLL, NET_RX, NET_TX, TASKLET softirqs outside the set
    "leak_softirq_on_set": "float64",
    "on_set_cpu_s": "float64",   # CPU seconds other processes (not the measured QEMU) used on the set
    "set_steal_s": "float64",    # seconds the machine's own hypervisor took from the set (/proc/stat steal)
    "on_set_top": "string",      # the largest of them: "comm (pid) 0.33 s; ..."
    "rate_target_mib_s": "float64",
    "rate_achieved_mib_s": "float64",
    "rate_missed": "boolean",
    "crosscheck_flag": "boolean",
    "null_reasons": "string",    # "column: why; column: why" for each measured column left blank (never 0)
}

# The fio summary's keys (analysis/read/fio.py summarize_jobs, the journal's ``fio``) -> the frame's columns
SUMMARY_COLUMNS = {
    "total.io_bytes": "io_bytes", "total.total_ios": "total_ios",
    "total.bw_bytes": "bw_mib_s", "total.iops": "iops", "total.runtime_ms": "runtime_ms",
    "total.lat_mean_ns": "lat_mean_us", "total.lat_p99_ns": "lat_p99_us", "total.clat_p99_ns": "clat_p99_us",
    "read.iops": "read_iops", "write.iops": "write_iops", "read.lat_mean_ns": "read_lat_mean_us",
    "write.lat_mean_ns": "write_lat_mean_us", "usr_cpu": "guest_usr_cpu", "sys_cpu": "guest_sys_cpu",
}


def reasons_text(summary_reasons: Any, extra: dict[str, str] | None = None) -> str | None:
    """The ``null_reasons`` cell: the summary's reasons under the frame's column names, plus ``extra``
    (already keyed by column). ``;`` separates entries and ``:`` ends a name, so neither is left in a
    name, and ``;`` not in a reason (the Measurements sheet splits on them).

    Thousands of files lack the same figures for the same reasons: each distinct set is worded once.
    """
    summary = tuple(summary_reasons.items()) if isinstance(summary_reasons, dict) else ()
    more = tuple(extra.items()) if extra else ()
    try:
        return _reasons_text(summary, more)
    except TypeError:  # an unhashable reason (a list in a journal): not worth caching
        return _reasons_text.__wrapped__(summary, more)


@lru_cache(maxsize=1024)
def _reasons_text(summary: tuple[tuple[Any, Any], ...], extra: tuple[tuple[str, str], ...]) -> str | None:
    pairs: dict[str, str] = {}
    for key, why in summary:
        col = SUMMARY_COLUMNS.get(str(key))
        if col is not None and why:
            pairs.setdefault(col, str(why))
    for col, why in extra:
        pairs.setdefault(col, why)
    return "; ".join(f"{c}: {w.replace(';', ',')}" for c, w in pairs.items()) or None


CPU_PER_MIB_UNIT = metrics.CPU_PER_MIB_UNIT


def number_repeats(rows: list[dict[str, Any]]) -> None:
    """Repeat numbers for plain files that do not name them: order of appearance per identical cell."""
    counters: dict[tuple[Any, ...], int] = {}
    taken: dict[tuple[Any, ...], set[int]] = {}
    ident = ("side", "controller", "aio", "iothread", "cache", "rw", "bs", "iodepth", "numjobs", "rate_mib_s")
    if all(row.get("repeat") is not None for row in rows):
        return  # every file named its repeat
    for row in rows:
        if row.get("repeat") is not None:
            taken.setdefault(tuple(map(row.get, ident)), set()).add(row["repeat"])
    for row in rows:
        if row.get("repeat") is None:
            key = tuple(map(row.get, ident))
            used = taken.setdefault(key, set())
            n = counters.get(key, 0) + 1
            while n in used:
                n += 1
            counters[key] = n
            used.add(n)
            row["repeat"] = n


def _epoch_iso(value: Any) -> str | None:
    """fio's epoch ``timestamp`` as ISO text (UTC, whole seconds); None when it is not a plausible time."""
    if value.__class__ is str:
        try:
            value = float(value)
        except ValueError:
            return None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not 0 < value < 4e10:  # NaN fails too
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(math.floor(value)))


def _started(started: Sequence[Any], epochs: Sequence[Any]) -> Sequence[Any]:
    """The ``started`` column: each row's own, else fio's epoch ``timestamp`` as ISO text, worked out once
    per distinct epoch (10,000 files share few seconds)."""
    if None not in started or epochs.count(None) == len(epochs):
        return started
    iso: dict[Any, str | None] = {}
    try:
        for epoch in set(epochs):
            iso[epoch] = _epoch_iso(epoch) if epoch is not None else None
    except TypeError:  # a list or an object where fio writes a number: no time
        return [s if s is not None else _epoch_iso(e) if e is not None else None for s, e in zip(started, epochs)]
    return [s if s is not None else iso[e] for s, e in zip(started, epochs)]


def frame_from_rows(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The tidy frame with every column of :data:`COLUMNS`, typed, in that order.

    Built column by column: the rows are transposed into one list per column and each list becomes its
    typed array in one call, and the frame takes the arrays as they are (no copy). (``DataFrame.from_records``
    followed by a cast per column made an object frame, merged its blocks and converted every cell twice:
    87,000 instructions a row against 41,000, at 10,000 fio files a quarter of what ingest spent beyond
    reading and decoding the JSON.) ``started`` is filled from fio's epoch where a row has no time of its own.
    """
    n = len(rows)
    columns = _columns(rows, (*COLUMNS, "_epoch"))
    columns["started"] = _started(columns["started"], columns["_epoch"])
    return pd.DataFrame({col: _typed(columns[col], dtype, n) for col, dtype in COLUMNS.items()},
                        index=pd.RangeIndex(n) if n else pd.Index([], dtype=object), copy=False)


def _columns(rows: list[dict[str, Any]], names: Iterable[str]) -> dict[str, Sequence[Any]]:
    """One sequence per named column, in row order (None where a row lacks the key).

    The rows of one reader have the same keys in the same order, so each run of such rows is transposed
    at once (``itemgetter`` and ``zip``, in C) rather than cell by cell.
    """
    if not rows:
        return {name: [] for name in names}
    keys: list[tuple[str, ...]] = [tuple(row) for row in rows]
    cuts = [i for i, changed in enumerate(map(operator.ne, keys[1:], keys[:-1]), 1) if changed]
    segments = []
    for start, end in zip([0] + cuts, cuts + [len(rows)]):
        segment, present = rows[start:end], keys[start]
        if len(present) > 1:
            segments.append((end - start, dict(zip(present, zip(*map(operator.itemgetter(*present), segment))))))
        else:
            segments.append((end - start, {k: [row[k] for row in segment] for k in present}))
    if len(segments) == 1:  # rows of one reader: the transposed tuples are the columns
        size, transposed = segments[0]
        return {name: transposed.get(name) or [None] * size for name in names}
    out: dict[str, list[Any]] = {name: [] for name in names}
    for size, transposed in segments:
        for name, values in out.items():
            values.extend(transposed.get(name) or [None] * size)
    return dict(out)


def _typed(values: Sequence[Any], dtype: str, n: int) -> Any:
    """A column's values as an array of ``dtype``: one call for the usual columns (all empty, or every value
    of the column's own kind); anything else is converted as pandas converts an object column of records
    (inferred, then cast: which also names a value no column can hold)."""
    empty = values.count(None)
    if empty == n:
        return _EMPTY[dtype](n)
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds <= _KINDS[dtype]:
        if dtype == "float64":
            return np.array(values, dtype="float64")
        if dtype != "Int64":
            return pd.array(values, dtype=dtype)
        if not empty:
            data = np.array(values)
            if data.dtype == np.int64:  # (not beyond 64 bits)
                return pd.arrays.IntegerArray(data, np.zeros(n, bool))
    column = pd.Series(values)
    if dtype in ("float64", "Int64"):
        return pd.to_numeric(column, errors="raise").astype(dtype).array
    return column.astype(dtype).array


_KINDS: dict[str, set[type]] = {"float64": {float, int}, "Int64": {int}, "boolean": {bool}, "string": {str}}
_EMPTY = {  # dtype -> a column of n missing values
    "float64": lambda n: np.full(n, np.nan),
    "Int64": lambda n: pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, bool)),
    "boolean": lambda n: pd.arrays.BooleanArray(np.zeros(n, bool), np.ones(n, bool)),
    "string": lambda n: pd.arrays.StringArray(np.full(n, pd.NA, dtype=object)),
}


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out.append((prefix, json.dumps(value, ensure_ascii=False)))
    elif value is not None:
        out.append((prefix, str(value)))


def environment_frame(runs: list[RunRecord], frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """(scope, item, value) rows for the Environment sheet: every run record, then the facts of the plain
    result files among the tidy ``frame``'s rows (read from its columns, not row by row)."""
    items: list[tuple[str, str, str]] = []
    for run in runs:
        scope = f"run {run.run_id if run.given('run_id') else '?'}"
        flat: list[tuple[str, str]] = []
        for key, value in (("run_id", run.run_id), ("started", run.started), ("backend", run.backend),
                           ("side", run.side), ("matrix_path", run.matrix_path)):
            if value is not None:
                flat.append((key, str(value)))
        _flatten("environment", run.environment or {}, flat)
        _flatten("matrix", run.matrix or {}, flat)
        items += [(scope, k, v) for k, v in flat]
    if frame is None or not len(frame):
        return pd.DataFrame(items, columns=["scope", "item", "value"])
    keep = frame["source_format"].ne("journal").to_numpy(dtype=bool, na_value=True)
    if keep.any():
        rows = frame if keep.all() else frame[keep]

        def present(col: str) -> set[str]:  # (distinct values found in C, by way of an object array)
            return {str(v) for v in set(rows[col].to_numpy(dtype=object).tolist()) if v is not pd.NA}

        def distinct(col: str) -> str:
            return ", ".join(sorted(present(col))) or "(none)"
        starts = {s for s in present("started") if s}
        items += [("result files", "files", str(len(present("source")))),
                  ("result files", "formats", distinct("source_format")),
                  ("result files", "engine versions", distinct("engine_version")),
                  ("result files", "hosts / clients", distinct("vm")),
                  ("result files", "first result", min(starts) if starts else "(none)"),
                  ("result files", "last result", max(starts) if starts else "(none)")]
    return pd.DataFrame(items, columns=["scope", "item", "value"])
