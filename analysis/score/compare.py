"""A-versus-B comparison, the method of Blockbridge's technotes 000 (Proxmox VE vs VMware ESXi over
NVMe/TCP) and 003 (iSCSI vs NVMe/TCP on Proxmox).

A *point* is one (rw, block size, queue depth). For each side and point the repeats are averaged
(IOPS, mean latency, bandwidth), then:

- ``iops_gain_pct = (iops_B / iops_A - 1) * 100``      (positive: B delivers more IOPS)
- ``lat_reduction_pct = (1 - lat_B / lat_A) * 100``    (positive: B has lower latency)
- ``bw_gain_pct = (bw_B / bw_A - 1) * 100``
- B *wins* a point in IOPS when ``iops_B > iops_A``, in latency when ``lat_B < lat_A``;
- averages of the two percentages by queue depth (across block sizes) and by block size (across queue
  depths), per rw, as the technotes' "average IOPS improvement" charts;
- the peak bandwidth of each side (the highest point mean);
- where both sides have at least two repeats, Welch's t-test (``scipy.stats.ttest_ind``,
  ``equal_var=False``) of B against A per point, for IOPS and for latency; a difference with
  ``p >= alpha`` is marked not significant. With no variance on either side the test is undefined and
  the p-value is left empty.
- host cost, where the host collector ran (the per-MiB figures of ``stormatrix.core.metrics``): per side
  and point the mean over repeats of ``cpu_per_mib`` (``(user + kernel cycles) / MiB`` where perf counted cycles, else
  ``(CPU seconds x 1000) / MiB``, i.e. CPU-ms/MiB, the seconds being perf's task-clock where perf ran:
  ``host.cpu_total_source``) and of ``ctx_per_mib`` (context
  switches / MiB); lower is better, so, like latency:
  ``cpu_reduction_pct = (1 - cpu_B / cpu_A) * 100`` (positive: B needs less host CPU per MiB),
  ``cpu_ratio = cpu_B / cpu_A``, and the same for context switches; B *wins* a point in host CPU when
  ``cpu_B < cpu_A``. CPU figures are compared only when both sides measured the same metric (cycles
  and CPU time are different quantities); a side without host metrics at a point leaves its columns
  and the comparison empty, and ``host_note`` says why.

Points present on one side only are listed in ``notes`` and left out of every statistic.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ...core.errors import InputError
from ...core.model import format_size

POINT = ["rw", "bs", "iodepth"]
DEFAULT_ALPHA = 0.05


@dataclass
class ComparisonResult:
    label_a: str
    label_b: str
    points: pd.DataFrame            # one row per point, sorted rw, bs, iodepth
    by_qd: pd.DataFrame             # rw, iodepth, mean gain %, mean latency reduction %, points
    by_bs: pd.DataFrame             # rw, bs, ...
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    alpha: float = DEFAULT_ALPHA


HOST_COLUMNS = ["cpu_metric", "cpu_per_mib_unit", "cpu_per_mib", "ctx_per_mib"]


def _host_means(group: pd.DataFrame) -> dict[str, Any]:
    """One side's host figures at one point: means over the repeats that have them, and the metric.

    ``metric`` is the one CPU metric of those repeats, ``"mixed"`` when they differ (no CPU mean then),
    or None when no repeat has host figures."""
    cols = [c for c in HOST_COLUMNS if c in group.columns]
    g = group[cols] if cols else pd.DataFrame(index=group.index)
    cpu = g["cpu_per_mib"].dropna() if "cpu_per_mib" in g else pd.Series(dtype=float)
    ctx = g["ctx_per_mib"].dropna() if "ctx_per_mib" in g else pd.Series(dtype=float)
    metrics = sorted({str(m) for m in g["cpu_metric"].dropna()}) if "cpu_metric" in g else []
    units = sorted({str(u) for u in g["cpu_per_mib_unit"].dropna()}) if "cpu_per_mib_unit" in g else []
    metric = metrics[0] if len(metrics) == 1 else ("mixed" if metrics else None)
    return {"metric": metric, "unit": units[0] if len(units) == 1 and metric != "mixed" else None,
            "cpu": float(cpu.mean()) if len(cpu) and metric not in (None, "mixed") else float("nan"),
            "ctx": float(ctx.mean()) if len(ctx) else float("nan"),
            "host_n": int(len(cpu)), "n": int(len(group))}


def _reduction(a: float, b: float) -> tuple[float, float]:
    """(ratio B/A, reduction % = (1 - B/A) x 100); NaN where either is missing or A is 0."""
    if not (np.isfinite(a) and np.isfinite(b)) or a == 0:
        return float("nan"), float("nan")
    return b / a, (1.0 - b / a) * 100.0


def host_comparison(ha: dict[str, Any], hb: dict[str, Any], label_a: str, label_b: str) -> dict[str, Any]:
    """The host columns of one point from each side's :func:`_host_means`."""
    notes = []
    for name, h in ((label_a, ha), (label_b, hb)):
        if h["metric"] is None:
            notes.append(f"{name} has no host metrics")
        elif h["metric"] == "mixed":
            notes.append(f"{name} mixes cycles and CPU time over its repeats: no CPU/MiB mean")
        elif h["host_n"] < h["n"]:
            notes.append(f"{name} has host metrics for {h['host_n']} of {h['n']} repeats")
        if h["metric"] is not None and not np.isfinite(h["ctx"]):
            notes.append(f"{name} has no context-switch counts")
    same = ha["metric"] == hb["metric"] and ha["metric"] not in (None, "mixed")
    if ha["metric"] not in (None, "mixed") and hb["metric"] not in (None, "mixed") and not same:
        notes.append(f"{label_a} measured {ha['metric']}, {label_b} {hb['metric']}: CPU/MiB not comparable")
    cpu_ratio, cpu_red = _reduction(ha["cpu"], hb["cpu"]) if same else (float("nan"), float("nan"))
    ctx_ratio, ctx_red = _reduction(ha["ctx"], hb["ctx"])
    if same:
        metric = ha["metric"]
    elif ha["metric"] or hb["metric"]:
        metric = " / ".join(f"{n}: {h['metric'] or 'none'}" for n, h in ((label_a, ha), (label_b, hb)))
    else:
        metric = None
    return {"cpu_metric": metric, "cpu_per_mib_unit": ha["unit"] if same and ha["unit"] == hb["unit"] else None,
            "cpu_unit_a": ha["unit"], "cpu_unit_b": hb["unit"],
            "cpu_per_mib_a": ha["cpu"], "cpu_per_mib_b": hb["cpu"], "cpu_ratio": cpu_ratio,
            "cpu_reduction_pct": cpu_red,
            "b_wins_cpu": bool(hb["cpu"] < ha["cpu"]) if np.isfinite(cpu_red) else None,
            "ctx_per_mib_a": ha["ctx"], "ctx_per_mib_b": hb["ctx"], "ctx_ratio": ctx_ratio,
            "ctx_reduction_pct": ctx_red,
            "b_wins_ctx": bool(hb["ctx"] < ha["ctx"]) if np.isfinite(ctx_red) else None,
            "host_note": "; ".join(notes) or None}


def _side_means(frame: pd.DataFrame) -> pd.DataFrame:
    g = frame.groupby(POINT, sort=True)
    out = g.agg(n=("iops", "size"), iops=("iops", "mean"), iops_std=("iops", "std"),
                lat_us=("lat_mean_us", "mean"), lat_std=("lat_mean_us", "std"), bw_mib_s=("bw_mib_s", "mean"))
    return out


def welch_p(b: np.ndarray, a: np.ndarray) -> float:
    """Welch's t-test p-value of B vs A; NaN when either side has < 2 values or neither varies."""
    b = b[np.isfinite(b)]
    a = a[np.isfinite(a)]
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    if np.var(a, ddof=1) == 0 and np.var(b, ddof=1) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(b, a, equal_var=False).pvalue)


def _engines(group: pd.DataFrame) -> str | None:
    """The engine(s) behind one side of a point: ``fio``, ``diskspd``, or both when mixed."""
    if "engine" not in group:
        return None
    return ", ".join(sorted({str(e) for e in group["engine"].dropna()})) or None


def point_label(rw: Any, bs: Any, qd: Any) -> str:
    return f"{rw} {format_size(int(bs))} QD{int(qd)}"


def compare(a: pd.DataFrame, b: pd.DataFrame, *, label_a: str = "A", label_b: str = "B",
            alpha: float = DEFAULT_ALPHA) -> ComparisonResult:
    """Compare two tidy frames (see :mod:`stormatrix.analysis.read.ingest`) point by point."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    notes: list[str] = []
    for name, side in ((label_a, a), (label_b, b)):
        if side.empty:
            raise InputError(f"side {name!r} has no usable results")
        incomplete = side[side[POINT].isna().any(axis=1)]
        if len(incomplete):
            notes.append(f"{name}: {len(incomplete)} results do not say their rw, block size or queue depth "
                         "and are left out")
    a_ok = a.dropna(subset=POINT)
    b_ok = b.dropna(subset=POINT)
    ma, mb = _side_means(a_ok), _side_means(b_ok)
    only_a = sorted(set(ma.index) - set(mb.index))
    only_b = sorted(set(mb.index) - set(ma.index))
    for name, only in ((label_a, only_a), (label_b, only_b)):
        if only:
            notes.append(f"only {name} has {len(only)} points ({', '.join(point_label(*p) for p in only[:6])}"
                         f"{' ...' if len(only) > 6 else ''}); they are left out")
    common = sorted(set(ma.index) & set(mb.index))
    if not common:
        raise InputError(f"{label_a} and {label_b} have no (rw, block size, queue depth) point in common")
    rows = []
    a_groups = {k: g for k, g in a_ok.groupby(POINT)}
    b_groups = {k: g for k, g in b_ok.groupby(POINT)}
    for key in common:
        ra, rb = ma.loc[key], mb.loc[key]
        ga, gb = a_groups[key], b_groups[key]
        p_iops = welch_p(gb["iops"].to_numpy(float), ga["iops"].to_numpy(float))
        p_lat = welch_p(gb["lat_mean_us"].to_numpy(float), ga["lat_mean_us"].to_numpy(float))
        tested = int(ra["n"]) >= 2 and int(rb["n"]) >= 2
        rows.append({
            "rw": key[0], "bs": int(key[1]), "iodepth": int(key[2]), "point": point_label(*key),
            "n_a": int(ra["n"]), "n_b": int(rb["n"]),
            "iops_a": ra["iops"], "iops_b": rb["iops"],
            "lat_us_a": ra["lat_us"], "lat_us_b": rb["lat_us"],
            "bw_mib_s_a": ra["bw_mib_s"], "bw_mib_s_b": rb["bw_mib_s"],
            "iops_gain_pct": (rb["iops"] / ra["iops"] - 1.0) * 100.0 if ra["iops"] else float("nan"),
            "lat_reduction_pct": (1.0 - rb["lat_us"] / ra["lat_us"]) * 100.0 if ra["lat_us"] else float("nan"),
            "bw_gain_pct": (rb["bw_mib_s"] / ra["bw_mib_s"] - 1.0) * 100.0 if ra["bw_mib_s"] else float("nan"),
            "b_wins_iops": bool(rb["iops"] > ra["iops"]),
            "b_wins_latency": bool(rb["lat_us"] < ra["lat_us"]),
            "p_iops": p_iops, "p_latency": p_lat,
            "iops_significance": _mark(p_iops, alpha, tested),
            "latency_significance": _mark(p_lat, alpha, tested),
            **host_comparison(_host_means(ga), _host_means(gb), label_a, label_b),
            "engine_a": _engines(ga), "engine_b": _engines(gb),
        })
    points = pd.DataFrame(rows).sort_values(POINT, kind="stable").reset_index(drop=True)
    engines = {name: sorted({e for v in points[col].dropna() for e in str(v).split(", ")})
               for name, col in ((label_a, "engine_a"), (label_b, "engine_b"))}
    if engines[label_a] != engines[label_b]:
        notes.append(f"the sides were measured with different engines ({label_a}: "
                     f"{', '.join(engines[label_a]) or 'unknown'}; "
                     f"{label_b}: {', '.join(engines[label_b]) or 'unknown'}); "
                     "each measurement's engine is in the Measurements sheet and the CSV")
    by_qd = (points.groupby(["rw", "iodepth"], sort=True)
             .agg(iops_gain_pct=("iops_gain_pct", "mean"), lat_reduction_pct=("lat_reduction_pct", "mean"),
                  points=("point", "size")).reset_index())
    by_bs = (points.groupby(["rw", "bs"], sort=True)
             .agg(iops_gain_pct=("iops_gain_pct", "mean"), lat_reduction_pct=("lat_reduction_pct", "mean"),
                  points=("point", "size")).reset_index())
    best = points.loc[points["iops_gain_pct"].idxmax()]
    peak_a = points.loc[points["bw_mib_s_a"].idxmax()]
    peak_b = points.loc[points["bw_mib_s_b"].idxmax()]
    summary = {
        "points": len(points),
        "iops_wins": int(points["b_wins_iops"].sum()),
        "latency_wins": int(points["b_wins_latency"].sum()),
        "mean_iops_gain_pct": float(points["iops_gain_pct"].mean()),
        "mean_lat_reduction_pct": float(points["lat_reduction_pct"].mean()),
        "max_iops_gain_pct": float(best["iops_gain_pct"]),
        "max_iops_gain_point": str(best["point"]),
        "peak_bw_a": float(peak_a["bw_mib_s_a"]), "peak_bw_a_point": str(peak_a["point"]),
        "peak_bw_b": float(peak_b["bw_mib_s_b"]), "peak_bw_b_point": str(peak_b["point"]),
        "peak_bw_gain_pct": (float(peak_b["bw_mib_s_b"]) / float(peak_a["bw_mib_s_a"]) - 1.0) * 100.0
        if peak_a["bw_mib_s_a"] else float("nan"),
        "tested_points": int(((points["n_a"] >= 2) & (points["n_b"] >= 2)).sum()),
        "iops_not_significant": int((points["iops_significance"] == "n.s.").sum()),
        "latency_not_significant": int((points["latency_significance"] == "n.s.").sum()),
        "host_cpu_points": int(points["cpu_reduction_pct"].notna().sum()),
        "host_cpu_wins": int((points["b_wins_cpu"] == True).sum()),  # noqa: E712 - object column with None
        "mean_cpu_reduction_pct": float(points["cpu_reduction_pct"].mean()),
        "host_ctx_points": int(points["ctx_reduction_pct"].notna().sum()),
        "mean_ctx_reduction_pct": float(points["ctx_reduction_pct"].mean()),
        "host_metric_a": _metrics(a_ok), "host_metric_b": _metrics(b_ok),
    }
    for name, side in ((label_a, a_ok), (label_b, b_ok)):
        if "cpu_per_mib" not in side.columns or side["cpu_per_mib"].isna().all():
            notes.append(f"{name} has no host metrics (the host collector did not run for it: see its "
                         "host_collector on the Environment sheet); its host CPU/MiB and ctx/MiB columns on "
                         "the Comparison sheet are blank")
    mixed = int(points["host_note"].fillna("").str.contains("not comparable").sum())
    if mixed:
        notes.append(f"{mixed} points have cycles on one side and CPU time on the other: their host CPU/MiB "
                     "is shown per side but not compared")
    return ComparisonResult(label_a, label_b, points, by_qd, by_bs, summary, notes, alpha)


def _metrics(frame: pd.DataFrame) -> str | None:
    """The CPU metric(s) a side's host figures hold: "cycles", "cpu_time", both, or None."""
    if "cpu_metric" not in frame.columns:
        return None
    found = sorted({str(m) for m in frame["cpu_metric"].dropna()})
    return ", ".join(found) or None


def _mark(p: float, alpha: float, tested: bool) -> str:
    """``p < alpha`` -> "significant"; ``n.s.`` otherwise; why not, when no test could run."""
    if not tested:
        return "no repeats"
    if not np.isfinite(p):
        return "no variance"
    return "significant" if p < alpha else "n.s."
