"""The second lens on cost: the I/O path alone, everything of QEMU's but its vCPU threads.

The method scores the whole QEMU process's CPU and context switches per MiB. Most of that can be the
guest itself (its vCPU threads run the guest's kernel and fio; under software emulation, TCG, they run
the *emulated* guest, translated instruction by instruction). The storage stack a configuration chooses
lives in the other threads: the main loop, iothreads and aio workers. Every journal record splits the
process's threads by role (``host.by_role``: ``vcpu``, ``main-loop``, ``iothread``, ``aio-worker``,
``other``; docs/journal.md, linux-host/collector.py), so the I/O path is every role but ``vcpu``:

- I/O-path CPU per MiB = (user + system seconds of those threads) x 1000 / MiB, in CPU-ms/MiB: the per-thread
  split is /proc CPU time, so this lens is in CPU time even where the whole process was counted in cycles;
- I/O-path context switches per MiB = (voluntary + involuntary switches of those threads) / MiB (/proc);

scored exactly like the whole process (:func:`stormatrix.analysis.score.efficiency.score_cells`, which hands
itself to :func:`score_iopath`: normalized,
sqrt of the sum of squares, ranked, tested). A record without the split (an ESXi cell, a plain fio file, a
record from before the split, a split without a ``vcpu`` role to leave out) gets blank I/O-path values and
the reason, never 0.

Ingest carries the split in the tidy frame (``io_path_cpu_s``, ``io_path_ctx``, ``io_path_note``) and each
row's run accelerator (``accel``, the run record's ``environment.accel``), so the journals are not read again.
A frame without those columns (built by other means) has the split read from the journal lines its ``source``
names (``<journal>:<line>``), each journal once, and the accelerator from the run records of the same journals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from ...core.recordtypes import CellRecord, RunRecord
from ..read.byrole import split_of
from ..read.journalrows import journal_records
from .labels import config_label

UNIT = "CPU-ms/MiB"


@dataclass
class IOPathResult:
    """``scored``: an EfficiencyResult of the I/O-path figures; ``missing``: one row per configuration
    without them (config, workload, reason); ``emulated``: the accelerators that were software (tcg)."""

    scored: Any
    missing: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    emulated: list[str] = field(default_factory=list)
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # per measurement: io_cpu_per_mib, io_ctx_per_mib, io_note


def iopath_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The tidy frame with the I/O path in place of the whole process (cpu_per_mib, ctx_per_mib in
    CPU-ms/MiB and switches/MiB, blank with ``io_note`` where the record has no split), and the
    accelerators of the runs that were software emulation."""
    # ingest carries the split (io_path_cpu_s, io_path_ctx, io_path_note) and the run's accel: then the journals,
    # already read once, are not read again (and may be gone); otherwise they are read here
    carried = all(c in frame.columns for c in ("io_path_cpu_s", "io_path_ctx", "io_path_note", "accel"))
    recs: dict[str, CellRecord] = {}
    runs: list[RunRecord] = []
    if not carried:
        journal_rows = frame["source_format"] == "journal" if "source_format" in frame else frame["source"].notna()
        sources = frame.loc[journal_rows.fillna(False).astype(bool), "source"].dropna()
        recs, runs = journal_records([str(s) for s in sources])
    cpu_mib, ctx_mib, notes = [], [], []
    for i, (src, mib) in enumerate(zip(frame["source"], frame["mib"])):
        if carried:
            c, x, n = (frame[k].iloc[i] for k in ("io_path_cpu_s", "io_path_ctx", "io_path_note"))
            ok = pd.notna(c) and pd.notna(x)
            cpu, ctx, why = (float(c), float(x), None) if ok else (None, None, str(n) if pd.notna(n) else
                                                                   "the record has no per-thread split")
        else:
            rec = recs.get(str(src)) if isinstance(src, str) else None
            cpu, ctx, why = split_of(rec)
        if why is None and not (isinstance(mib, float) and mib > 0):
            cpu, ctx, why = None, None, "no MiB moved in the window"
        # split_of gives both figures exactly when it gives no reason
        cpu_mib.append(cpu * 1000.0 / mib if why is None and cpu is not None else math.nan)
        ctx_mib.append(ctx / mib if why is None and ctx is not None else math.nan)
        notes.append(why)
    out = frame.copy()
    out["cpu_per_mib"] = pd.Series(cpu_mib, index=frame.index, dtype="float64")
    out["ctx_per_mib"] = pd.Series(ctx_mib, index=frame.index, dtype="float64")
    out["io_note"] = notes
    has = out["cpu_per_mib"].notna()
    out["cpu_metric"] = out["cpu_metric"].where(~has, "cpu_time").where(has, None)
    out["cpu_per_mib_unit"] = out["cpu_per_mib_unit"].where(~has, UNIT).where(has, None)
    out["ctx_note"] = None
    if carried:
        accels = sorted({str(a) for a in frame["accel"].dropna() if a == "tcg"})
    else:
        accels = sorted({"tcg" for r in runs
                         if isinstance(r.environment, dict) and r.environment.get("accel") == "tcg"})
    return out, accels


def score_iopath(frame: pd.DataFrame, score: Callable[[pd.DataFrame], Any]) -> IOPathResult:
    """The I/O-path lens of a tidy frame, scored by ``score`` (the whole process's own scoring,
    :func:`stormatrix.analysis.score.efficiency.score_cells`, handed in by it: this module is below it)."""
    io, accels = iopath_frame(frame)
    scored = score(io.drop(columns=["io_note"]))
    # configurations (of the whole-process table) the I/O path cannot score, with the reason
    lacking = io[io["cpu_per_mib"].isna() & frame["cpu_per_mib"].notna()]
    rows = []
    for key, grp in lacking.groupby(["workload", "controller", "aio", "iothread", "cache"], dropna=False, sort=False):
        wl, ctrl, aio, it, cache = key
        rows.append({"workload": wl, "config": config_label(ctrl, aio, it, cache), "n": len(grp),
                     "io_note": "; ".join(dict.fromkeys(str(n) for n in grp["io_note"].dropna()))})
    missing = pd.DataFrame(rows, columns=["workload", "config", "n", "io_note"])
    notes = []
    if len(missing):
        notes.append(f"{len(lacking)} of {int(frame['cpu_per_mib'].notna().sum())} scored measurements have no "
                     "per-thread split: their I/O-path values are blank (IO path sheet, 'Why blank' column)")
    return IOPathResult(scored=scored, missing=missing, notes=notes, emulated=accels,
                        rows=io[["source", "cpu_per_mib", "ctx_per_mib", "io_note"]])
