"""Efficiency scoring, the method of technote 004 (DESIGN.md "The numbers"; keep these exact).

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

``score_basis`` says per row which of the two the score is, and why; ``notes`` says it per group. A
cell counts as having ctx/MiB only when every repeat scored for it has a count (a partial set is not
averaged: its mean would rest on other repeats than its CPU/MiB); ctx/MiB is never taken as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import InputError
from ..core.model import NOT_APPLICABLE

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

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(self.cells["norm_group"])) if len(self.cells) else []


def config_label(controller: object, aio: object, iothread: object, cache: object) -> str:
    """``virtio-blk aio=native iothread`` : how the technotes name a configuration; an ESXi one
    (aio and cache ``n/a``: no such setting) is its controller alone, ``pvscsi``."""
    parts = [str(controller) if _present(controller) else "?"]
    if not (_present(aio) and str(aio) == NOT_APPLICABLE):
        parts.append(f"aio={aio}" if _present(aio) else "aio=?")
    if _present(iothread) and bool(iothread):
        parts.append("iothread")
    if _present(cache) and cache not in ("none", "default", NOT_APPLICABLE):
        parts.append(f"cache={cache}")
    return " ".join(parts)


def _present(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA


def t_975(df: int) -> float:
    """Student t quantile for a two-sided 95 % interval.

    Closed forms for 1 and 2 degrees of freedom (2 and 3 repeats, the usual case): scipy's numerical
    inverse is off by ~2e-11 relative for df = 1, enough to miss a 1e-9 check on a large CI.
    """
    if df == 1:
        return math.tan(math.pi * 0.475)            # Cauchy quantile
    if df == 2:
        return 0.95 / math.sqrt(2 * 0.975 * 0.025)  # (2p - 1) / sqrt(2 p (1 - p))
    return float(stats.t.ppf(0.975, df))


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
        rows.append(rec)
    return pd.DataFrame(rows)


def score_cells(frame: pd.DataFrame, *, cv_limit: float = DEFAULT_CV_LIMIT) -> EfficiencyResult:
    """The efficiency table for every normalization group in ``frame`` (a tidy ingest frame).

    Rows without host metrics (no collector ran) are left out, and said so in ``notes``.
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
    metrics_per_workload = cells.groupby("workload", dropna=False)["cpu_metric"].nunique()
    for wl, count in metrics_per_workload.items():
        if count > 1:
            notes.append(f"workload {wl}: some cells were measured in cycles and some in CPU time; they are "
                         "scored in separate groups, never normalized together")
    cells["config"] = [config_label(*v) for v in cells[["controller", "aio", "iothread", "cache"]].itertuples(index=False)]
    cells["norm_group"] = [f"{wl} [{unit}]" for wl, unit in zip(cells["workload"], cells["cpu_per_mib_unit"])]
    parts = []
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
    out["cv_note"] = flags
    single = int((out["n"] < 2).sum())
    if single:
        notes.append(f"{single} cells have a single repeat: no standard deviation, CV or confidence interval")
    out = out.sort_values(["norm_group", "rank", "config"], kind="stable").reset_index(drop=True)
    return EfficiencyResult(cells=out, notes=notes, cv_limit=cv_limit)
