"""Efficiency scoring, the method of Blockbridge's technote 004 (Windows on Proxmox, part 3: controller
efficiency); the formulas below are that method's, keep them exact.

Per cell (one disk configuration under one workload), across its repeats:

- ``cpu_per_mib``: host cycles per MiB (user + kernel), or CPU-ms per MiB where hardware cycles were
  not available; ``ctx_per_mib``: host context switches per MiB;
- mean, sample standard deviation (n - 1), coefficient of variation (std / mean) and the 95 %
  confidence interval of the mean, ``mean +- t(0.975, n - 1) * std / sqrt(n)`` (undefined for n = 1);
- ``normalized = (v - min) / (max - min)`` over the cell means being compared;
- ``efficiency_score = sqrt(norm_cpu ** 2 + norm_ctx ** 2)``; lower is better;
- ranks (1 = best, ties share the lower rank): overall by score, by score within each controller and
  within each aio mode, and by each metric alone;
- a cell whose CV of either metric exceeds ``cv_limit`` is flagged.

Which cells are compared: the cells of one workload measured with one CPU metric (a *normalization
group*). Cycles and CPU time are different quantities: a min-max over a mix of them would be
meaningless, so a data set holding both is split into one group per metric, and every output row says
which metric it holds. Different workloads (e.g. 64k reads at 1 GiB/s vs 4k writes) are not comparable
either and are normalized separately, as the technote normalizes one workload.

When every cell of a group has the same mean (max == min, including a group of one cell), the metric
does not separate the cells: every normalized value is 0 and the score is carried by the other metric
alone. This is stated on the Method sheet.

Cells without a context-switch count (ESXi: neither vSphere statistics nor esxtop count a VM's context
switches; the record says so in ``host.unmatched.ctx_switches``, carried as ``ctx_note``): the score of a
group rests on the dimensions *every* cell of the group has, so that no ranking mixes cells scored on two
metrics with cells scored on one:

- every cell has ctx/MiB: ``score = sqrt(norm_cpu ** 2 + norm_ctx ** 2)``, as above;
- any cell lacks it (all of them, or a mix such as QEMU and ESXi cells of one workload in CPU time): the
  whole group is scored on CPU/MiB alone, ``score = sqrt(norm_cpu ** 2) = norm_cpu``, ``norm_ctx`` is
  empty for every cell of the group, ctx/MiB means are still shown where measured and ``rank_ctx``
  ranks only the cells that have them (empty for the others).

Evidence: how sure a score and a rank are comes from :mod:`.bootstrap`: every configuration's means are
redrawn together (fixed seed, 2,000 resamples) and pushed through the whole min-max normalization and
scoring, since a score depends on every configuration's mean. Per cell, ``score_ci_low``/``score_ci_high``
is the 95 % percentile interval of its resampled scores (containing the plotted score, never below 0: the
score chart's error bars), and ``evidence``/``vs_next`` compare it with the next-ranked cell: it "ranks
above" where its score is lower in >= 95 % of the resamples (:class:`.stats.Verdict`, the one object
both the words and the Evidence column are read from). ``EfficiencyResult.repeats`` keeps each repeat's
CPU/MiB and ctx/MiB: the per-metric findings test those (Welch). ``EfficiencyResult.draws`` keeps the
resampled scores, so findings test their rank claims the same way.
The I/O path alone (:mod:`.iopath`) is scored by this same function, in ``EfficiencyResult.iopath``.

``score_basis`` says per row which of the two the score is, and why; ``notes`` says it per group. A
cell counts as having ctx/MiB only when every repeat scored for it has a count (a partial set is not
averaged: its mean would rest on other repeats than its CPU/MiB); ctx/MiB is never taken as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.errors import InputError
from .bootstrap import ScoreDraws, score_draws
from .iopath import IOPathResult, score_iopath
from .labels import config_label
from .stats import INDICATIVE, Verdict, t_975

CELL_KEYS = ["workload", "cpu_metric", "controller", "aio", "iothread", "cache"]
METRICS = ("cpu_per_mib", "ctx_per_mib")
DEFAULT_CV_LIMIT = 0.10
BASIS_BOTH = "CPU/MiB and ctx/MiB"
BASIS_CPU = "CPU/MiB alone"


@dataclass
class EfficiencyResult:
    """``cells``: one row per cell with statistics, normalized values, score, ranks and flags."""

    cells: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    cv_limit: float = DEFAULT_CV_LIMIT
    # one row per scored repeat: norm_group, config, repeat, cpu_per_mib, ctx_per_mib (the values the
    # per-metric Welch tests and the bootstrap rest on)
    repeats: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the I/O-path lens (main loop, iothreads, aio workers: everything but the vCPUs), scored the same way;
    # None when it was not asked for (its ``scored`` is itself an EfficiencyResult of the I/O-path figures)
    iopath: IOPathResult | None = None
    # the resampled scores of every group (module docstring, :mod:`.bootstrap`)
    draws: ScoreDraws = field(default_factory=ScoreDraws)

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(self.cells["norm_group"])) if len(self.cells) else []


def ci95_half_width(std: float, n: int) -> float:
    """Half-width of the 95 % confidence interval of a mean from n samples (Student t)."""
    if n < 2 or not np.isfinite(std):
        return float("nan")
    return t_975(n - 1) * std / math.sqrt(n)


def min_max(values: pd.Series) -> pd.Series:
    """``(v - min) / (max - min)``; all 0 when max == min (the metric does not separate the cells)."""
    lo, hi = values.min(), values.max()
    if not np.isfinite(hi - lo) or hi == lo:
        return pd.Series(0.0, index=values.index)
    return (values - lo) / (hi - lo)


def _ctx_reason(grp: pd.DataFrame) -> str:
    """Why a cell has no ctx/MiB: the collector's own words, or how many repeats lack a count."""
    missing = grp[grp["ctx_per_mib"].isna()]
    reasons = list(dict.fromkeys(str(r) for r in missing["ctx_note"].dropna())) if "ctx_note" in grp else []
    text = "; ".join(reasons) or "no context-switch count recorded"
    if len(missing) < len(grp):
        return f"{len(missing)} of {len(grp)} repeats have no context-switch count ({text})"
    return text


def _engines(group: pd.DataFrame) -> str | None:
    """The engine(s) that measured a set of rows, e.g. ``fio`` or ``diskspd`` (``fio, diskspd`` if mixed)."""
    if "engine" not in group:
        return None
    return ", ".join(sorted({str(e) for e in group["engine"].dropna()})) or None


def cell_statistics(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, std, CV and 95 % CI of cpu_per_mib and ctx_per_mib per cell (repeats collapsed).

    Every repeat with CPU figures counts. ctx/MiB statistics are empty (NaN), with the reason in
    ``ctx_note``, unless every one of those repeats has a context-switch count.
    """
    rows = []
    usable = frame.dropna(subset=["cpu_per_mib", "cpu_metric"])
    for key, grp in usable.groupby(CELL_KEYS, dropna=False, sort=False):
        rec = dict(zip(CELL_KEYS, key))
        rec["n"] = len(grp)
        rec["cpu_per_mib_unit"] = grp["cpu_per_mib_unit"].iloc[0]
        has_ctx = bool(grp["ctx_per_mib"].notna().all())
        rec["ctx_note"] = None if has_ctx else _ctx_reason(grp)
        for m in METRICS:
            if m == "ctx_per_mib" and not has_ctx:
                for stat in ("mean", "std", "cv", "ci_low", "ci_high"):
                    rec[f"{m}_{stat}"] = float("nan")
                continue
            vals = grp[m].astype(float).to_numpy()
            mean = float(vals.mean())
            std = float(vals.std(ddof=1)) if len(vals) > 1 else float("nan")
            half = ci95_half_width(std, len(vals))
            rec[f"{m}_mean"] = mean
            rec[f"{m}_std"] = std
            rec[f"{m}_cv"] = std / mean if mean and np.isfinite(std) else float("nan")
            rec[f"{m}_ci_low"] = mean - half
            rec[f"{m}_ci_high"] = mean + half
        rec["repeats"] = ", ".join(str(r) for r in grp["repeat"].dropna().astype(int).tolist())
        rec["engine"] = _engines(grp)
        # the one CPU figure its CPU/MiB is (perf task-clock, cycles, /proc ticks): named on every sheet
        rec["cpu_total_source"] = ", ".join(sorted({str(v) for v in grp["cpu_total_source"].dropna()})) or None \
            if "cpu_total_source" in grp else None
        rec["_rows"] = list(grp.index)  # its repeats, for the tests and the bootstrap
        rows.append(rec)
    return pd.DataFrame(rows)


def score_cells(frame: pd.DataFrame, *, cv_limit: float = DEFAULT_CV_LIMIT,
                with_iopath: bool = True) -> EfficiencyResult:
    """The efficiency table for every normalization group in ``frame`` (a tidy ingest frame).

    Rows without host metrics (no collector ran) are left out, and said so in ``notes``. ``with_iopath``:
    also score the I/O path alone (:mod:`.iopath`, ``result.iopath``), read from the journals the rows
    came from.
    """
    if cv_limit <= 0:
        raise InputError(f"--cv-limit must be positive, got {cv_limit}")
    notes: list[str] = []
    missing = frame[frame["cpu_per_mib"].isna()]
    if len(missing):
        notes.append(f"{len(missing)} of {len(frame)} measurements have no host CPU/context-switch figures "
                     "(no collector, or no perf CSV next to the result file) and are not scored")
    no_ctx = frame[frame["cpu_per_mib"].notna() & frame["ctx_per_mib"].isna()]
    if len(no_ctx):
        reasons = list(dict.fromkeys(str(r) for r in no_ctx["ctx_note"].dropna()))
        notes.append(f"{len(no_ctx)} of {len(frame)} measurements have host CPU but no context-switch counts"
                     + (f" ({'; '.join(reasons)})" if reasons else "")
                     + ": their ctx/MiB is left empty, and the configurations of their groups are scored on "
                       "CPU/MiB alone (Score basis column)")
    no_cell = frame["controller"].isna() | frame["aio"].isna()
    if (no_cell & frame["cpu_per_mib"].notna()).any():
        notes.append(f"{int((no_cell & frame['cpu_per_mib'].notna()).sum())} measurements do not name "
                     "their controller or aio mode (put them in the path, e.g. virtio-blk/aio=native/...)")
    cells = cell_statistics(frame)
    if cells.empty:
        return EfficiencyResult(cells=cells, notes=notes, cv_limit=cv_limit)
    iopath = None
    if with_iopath:
        iopath = score_iopath(frame, lambda io: score_cells(io, cv_limit=cv_limit, with_iopath=False))
    metrics_per_workload = cells.groupby("workload", dropna=False)["cpu_metric"].nunique()
    for wl, count in metrics_per_workload.items():
        if count > 1:
            notes.append(f"workload {wl}: some cells were measured in cycles and some in CPU time; they are "
                         "scored in separate groups, never normalized together")
    disk_keys = cells[["controller", "aio", "iothread", "cache"]]
    cells["config"] = [config_label(*v) for v in disk_keys.itertuples(index=False)]
    cells["norm_group"] = [f"{wl} [{unit}]" for wl, unit in zip(cells["workload"], cells["cpu_per_mib_unit"])]
    parts = []
    rep_parts: list[pd.DataFrame] = []
    for group, grp in cells.groupby("norm_group", sort=False):
        grp = grp.copy()
        with_ctx = int(grp["ctx_per_mib_mean"].notna().sum())
        grp["norm_cpu"] = min_max(grp["cpu_per_mib_mean"])
        if with_ctx == len(grp):
            grp["norm_ctx"] = min_max(grp["ctx_per_mib_mean"])
            grp["score_basis"] = BASIS_BOTH
        else:
            # the dimensions every cell has: CPU/MiB alone, for every cell of the group (module docstring)
            grp["norm_ctx"] = float("nan")
            if with_ctx:
                why = (f"{len(grp) - with_ctx} of {len(grp)} configurations in this group have no context-switch "
                       f"counts, so all {len(grp)} are scored on CPU/MiB alone; Rank by ctx ranks the {with_ctx} "
                       "that have them")
            else:
                why = "no configuration in this group has context-switch counts"
            grp["score_basis"] = f"{BASIS_CPU}: {why}"
            notes.append(f"group {group}: scored and ranked on CPU/MiB alone: {why}")
        grp["score"] = np.sqrt(grp["norm_cpu"] ** 2 + grp["norm_ctx"].fillna(0.0) ** 2)
        rep_parts.append(_repeat_values(frame, grp))
        grp["rank"] = grp["score"].rank(method="min").astype(int)
        grp["rank_in_controller"] = grp.groupby("controller", dropna=False)["score"].rank(method="min").astype(int)
        grp["rank_in_aio"] = grp.groupby("aio", dropna=False)["score"].rank(method="min").astype(int)
        grp["rank_cpu"] = grp["cpu_per_mib_mean"].rank(method="min").astype(int)
        grp["rank_ctx"] = grp["ctx_per_mib_mean"].rank(method="min").astype("Int64")  # empty without ctx
        grp["cells_in_group"] = len(grp)
        parts.append(grp)
    out = pd.concat(parts, ignore_index=True)
    flags = []
    for cpu_cv, ctx_cv in zip(out["cpu_per_mib_cv"], out["ctx_per_mib_cv"]):
        over = [name for name, cv in (("CPU", cpu_cv), ("ctx", ctx_cv)) if np.isfinite(cv) and cv > cv_limit]
        flags.append(", ".join(f"{name} CV > {cv_limit:.0%}" for name in over))
    out["cv_flag"] = [bool(f) for f in flags]
    # "" where it repeats within the limit would leave an empty column: say so, where there were repeats to tell
    out["cv_note"] = [f or (f"within {cv_limit:.0%}" if n >= 2 else "single repeat") for f, n in zip(flags, out["n"])]
    single = int((out["n"] < 2).sum())
    if single:
        notes.append(f"{single} cells have a single repeat: no standard deviation, CV or confidence interval, "
                     "and every finding comparing them is indicative (not tested)")
    out = out.sort_values(["norm_group", "rank", "config"], kind="stable").reset_index(drop=True)
    repeats = pd.concat(rep_parts, ignore_index=True)
    both = {str(k): bool((v == BASIS_BOTH).all()) for k, v in out.groupby("norm_group", sort=False)["score_basis"]}
    draws = score_draws(out, repeats, both=both)
    _evidence(out, draws)
    out = out.drop(columns=["_rows"])
    return EfficiencyResult(cells=out, notes=notes, cv_limit=cv_limit, repeats=repeats, iopath=iopath, draws=draws)


def _repeat_values(frame: pd.DataFrame, grp: pd.DataFrame) -> pd.DataFrame:
    """Each scored repeat's CPU/MiB and ctx/MiB, by group and configuration."""
    rows = []
    for _, cell in grp.iterrows():
        for i in cell["_rows"]:
            ctx = frame.at[i, "ctx_per_mib"]
            rows.append({"norm_group": cell["norm_group"], "config": cell["config"], "repeat": frame.at[i, "repeat"],
                         "cpu_per_mib": float(frame.at[i, "cpu_per_mib"]),
                         "ctx_per_mib": float(ctx) if pd.notna(ctx) else np.nan})
    return pd.DataFrame(rows)


def _evidence(out: pd.DataFrame, draws: ScoreDraws) -> None:
    """Per cell: the bootstrap interval of its score, and its rank against the next-ranked cell's
    (``evidence``: the verdict's status; ``vs_next``: its words and number). A rank-1 claim rests on the
    rank-1 row's verdict."""
    low, high, verdict, text = {}, {}, {}, {}
    for group, g in out.groupby("norm_group", sort=False):
        order = list(g.index)
        for pos, i in enumerate(order):
            config = str(out.at[i, "config"])
            low[i], high[i] = draws.intervals[(str(group), config)]
            if pos + 1 == len(order):
                single = int(out.at[i, "n"]) < 2
                verdict[i] = INDICATIVE if single else ""
                text[i] = "single repeat: indicative only" if single else "last in its group"
                continue
            nxt = str(out.at[order[pos + 1], "config"])
            v = draws.verdict(str(group), config, nxt)
            verdict[i] = v.status
            text[i] = vs_next(v, nxt, float(out.at[order[pos + 1], "score"]))
    out["score_ci_low"] = pd.Series(low, dtype=float)
    out["score_ci_high"] = pd.Series(high, dtype=float)
    out["evidence"] = pd.Series(verdict, dtype=object)
    out["vs_next"] = pd.Series(text, dtype=object)


def vs_next(v: Verdict, nxt: str, score: float) -> str:
    """"ranks above virtio-blk aio=threads: score lower in 98.1 % of 2,000 resamples": the direction and the
    number from one verdict."""
    if v.direction == "untested":
        return f"indicative: single repeat, not tested against {nxt} (score {score:.3f})"
    word = v.words("ranks above", "ranks below", "tied within noise with")
    return f"{word} {nxt}: score {v.test}"
