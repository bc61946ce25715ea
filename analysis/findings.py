"""Findings: the sentences of a technote's CONCLUSIONS / FINDINGS, generated from the numbers.

Every :class:`Finding` carries its headline number (``value``, ``unit``) and the inputs it was computed
from (``numbers``, labelled as they appear on the Scores or Comparison sheet), so the workbook can show
the number next to the sentence and a reader can check it. No finding is made without its number.

A group scored on CPU/MiB alone (some or all of its cells have no context-switch counts, e.g. ESXi; see
:mod:`stormatrix.analysis.efficiency`) says so in its own finding, right after its best score, and its
sentences compare CPU only where a cell has no ctx/MiB, naming that cell.

Wording follows technote 004 ("virtio-scsi is 4% more CPU intensive than virtio-blk but generates 25%
fewer context switches") and 000 ("Proxmox VE beat VMware ESXi in 56 of 57 tests").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.model import NOT_APPLICABLE, format_size
from .compare import ComparisonResult
from .efficiency import EfficiencyResult


@dataclass
class Finding:
    text: str
    value: float
    unit: str
    numbers: dict[str, float] = field(default_factory=dict)
    group: str = ""

    @property
    def basis(self) -> str:
        return "; ".join(f"{k} = {_fmt(v)}" for k, v in self.numbers.items())


def _fmt(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v:.4g}"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.4g}" if abs(v) < 1 else f"{v:.2f}"


def pct_more(a: float, b: float) -> float:
    """How much more ``a`` is than ``b``, in percent of ``b``: ``(a / b - 1) * 100``."""
    return (a / b - 1.0) * 100.0


def _more_less(pct: float, more: str, less: str) -> str:
    return f"{abs(pct):.1f}% {more if pct >= 0 else less}"


def _has_ctx(*rows: pd.Series) -> bool:
    """Whether every one of these cells has a ctx/MiB mean (ESXi cells have none: docs/esxi.md)."""
    return all(np.isfinite(float(r["ctx_per_mib_mean"])) for r in rows)


def _no_ctx(a: pd.Series, b: pd.Series) -> str:
    """" (no context-switch counts for X)": what replaces the ctx half of a sentence without them."""
    names = [str(r["config"]) for r in (a, b) if not _has_ctx(r)]
    return f" (no context-switch counts for {' and '.join(names)})"


def _pair(a: pd.Series, b: pd.Series, name_a: str, name_b: str, group: str, lead: str = "") -> Finding:
    """"A is x% more CPU intensive than B but generates y% fewer context switches"; the CPU half alone
    when either cell has no context-switch counts."""
    cpu = pct_more(a["cpu_per_mib_mean"], b["cpu_per_mib_mean"])
    unit = a["cpu_per_mib_unit"]
    numbers = {f"{a['config']} CPU/MiB mean ({unit})": float(a["cpu_per_mib_mean"]),
               f"{b['config']} CPU/MiB mean ({unit})": float(b["cpu_per_mib_mean"])}
    if not _has_ctx(a, b):
        text = f"{lead}{name_a} is {_more_less(cpu, 'more', 'less')} CPU intensive than {name_b}{_no_ctx(a, b)}."
        return Finding(text, cpu, "% CPU/MiB", numbers, group)
    ctx = pct_more(a["ctx_per_mib_mean"], b["ctx_per_mib_mean"])
    joiner = "but" if (cpu >= 0) != (ctx >= 0) else "and"
    text = (f"{lead}{name_a} is {_more_less(cpu, 'more', 'less')} CPU intensive than {name_b} {joiner} "
            f"generates {_more_less(ctx, 'more', 'fewer')} context switches.")
    return Finding(text, cpu, "% CPU/MiB", {
        **numbers,
        f"{a['config']} ctx/MiB mean": float(a["ctx_per_mib_mean"]),
        f"{b['config']} ctx/MiB mean": float(b["ctx_per_mib_mean"]),
        "context switch difference %": ctx}, group)


def _name(row: pd.Series) -> str:
    """The controller as the technote names it, with its iothread when it has one."""
    it = row.get("iothread")
    return f"{row['controller']} with iothread" if isinstance(it, (bool, np.bool_)) and it else str(row["controller"])


def _iothread(on: pd.Series, off: pd.Series, controller: str, aio: str, group: str, prefix: str) -> Finding:
    """004: "With virtio-scsi and aio=native, an iothread introduces a CPU overhead of 1.5%, but ..."."""
    cpu = pct_more(on["cpu_per_mib_mean"], off["cpu_per_mib_mean"])
    cpu_txt = f"a CPU overhead of {cpu:.1f}%" if cpu >= 0 else f"a CPU saving of {-cpu:.1f}%"
    if not _has_ctx(on, off):
        return Finding(f"{prefix}With {controller} and aio={aio}, an iothread introduces {cpu_txt}"
                       f"{_no_ctx(on, off)}.", cpu, "% CPU/MiB",
                       {f"{on['config']} CPU/MiB mean": float(on["cpu_per_mib_mean"]),
                        f"{off['config']} CPU/MiB mean": float(off["cpu_per_mib_mean"])}, group)
    ctx = pct_more(on["ctx_per_mib_mean"], off["ctx_per_mib_mean"])
    ctx_txt = f"reduces context switches by {-ctx:.1f}%" if ctx < 0 else f"adds {ctx:.1f}% context switches"
    joiner = "but" if (cpu >= 0) != (ctx >= 0) else "and"
    return Finding(f"{prefix}With {controller} and aio={aio}, an iothread introduces {cpu_txt}, {joiner} "
                   f"{ctx_txt}.", cpu, "% CPU/MiB",
                   {f"{on['config']} CPU/MiB mean": float(on["cpu_per_mib_mean"]),
                    f"{off['config']} CPU/MiB mean": float(off["cpu_per_mib_mean"]),
                    f"{on['config']} ctx/MiB mean": float(on["ctx_per_mib_mean"]),
                    f"{off['config']} ctx/MiB mean": float(off["ctx_per_mib_mean"]),
                    "context switch difference %": ctx}, group)


def _cpu_only(g: pd.DataFrame, group: str, prefix: str) -> Finding:
    """Why a group's scores rest on CPU/MiB alone (some or all of its cells have no context-switch counts)."""
    lacking = g[~np.isfinite(g["ctx_per_mib_mean"].astype(float))]
    reasons = list(dict.fromkeys(str(r) for r in lacking["ctx_note"].dropna())) if "ctx_note" in g else []
    why = f" ({'; '.join(reasons)})" if reasons else ""
    n, k = len(g), len(lacking)
    if k == n:
        who = "the one configuration has no" if n == 1 else f"none of the {n} configurations has"
        text = f"{prefix}The efficiency scores rest on CPU/MiB alone: {who} context-switch counts{why}."
    else:
        names = ", ".join(lacking["config"].astype(str).tolist()[:5]) + (" ..." if k > 5 else "")
        text = (f"{prefix}The efficiency scores rest on CPU/MiB alone: {k} of {n} configurations ({names}) have no "
                f"context-switch counts{why}, so all {n} are ranked on the one metric they all have; ctx/MiB is "
                f"compared only among the other {n - k}.")
    return Finding(text, float(k), "configurations without ctx/MiB",
                   {"configurations without ctx/MiB": float(k), "configurations": float(n)}, group)


def efficiency_findings(result: EfficiencyResult) -> list[Finding]:
    """Conclusions for each normalization group, in the order of technote 004's CONCLUSIONS."""
    out: list[Finding] = []
    cells = result.cells
    if cells.empty:
        return out
    many = len(result.groups) > 1
    for group, g in cells.groupby("norm_group", sort=False):
        prefix = f"[{group}] " if many else ""
        g = g.sort_values(["score", "config"], kind="stable")
        best = g.iloc[0]
        tied = g[g["score"] == best["score"]]["config"].tolist()
        who = f"{best['config']} achieves" if len(tied) == 1 else " and ".join(tied) + " share"
        # efficiency.py's rule: a group with any cell lacking ctx/MiB is scored on CPU/MiB alone
        cpu_only = not bool(np.isfinite(g["ctx_per_mib_mean"].astype(float)).all())
        out.append(Finding(f"{prefix}{who} the best overall efficiency score "
                           f"({best['score']:.3f}; lower is better)"
                           + (", scored on CPU/MiB alone." if cpu_only else "."), float(best["score"]), "score",
                           {f"{best['config']} score": float(best["score"])}, group))
        if cpu_only:
            out.append(_cpu_only(g, group, prefix))
        controllers = [c for c in dict.fromkeys(g["controller"]) if isinstance(c, str)]
        best_aio: dict[str, pd.Series] = {}
        worst_aio: dict[str, pd.Series] = {}
        for c in controllers:
            gc = g[(g["controller"] == c) & (g["aio"] != NOT_APPLICABLE).fillna(True)]  # ESXi has no aio mode
            if gc.empty:
                continue
            gc = gc[gc["iothread"].fillna(False) == gc["iothread"].fillna(False).iloc[0]] \
                if gc["iothread"].nunique(dropna=False) > 1 else gc
            if gc["aio"].nunique() >= 2:
                best_aio[c] = gc.sort_values("score", kind="stable").iloc[0]
                worst_aio[c] = gc.sort_values("score", kind="stable").iloc[-1]
        if best_aio:
            winners = {r["aio"] for r in best_aio.values()}
            losers = {r["aio"] for r in worst_aio.values()}
            if len(best_aio) >= 2 and len(winners) == 1:
                w = winners.pop()
                text = f"{prefix}aio={w} is the most efficient aio mode for each controller type"
                if len(losers) == 1:
                    text += f"; aio={losers.pop()} is the least efficient"
                out.append(Finding(text + ".", float(len(best_aio)), "controllers",
                                   {f"{c} aio={r['aio']} score": float(r["score"]) for c, r in best_aio.items()},
                                   group))
            else:
                for c, r in best_aio.items():
                    wr = worst_aio[c]
                    out.append(Finding(f"{prefix}For {c}, aio={r['aio']} is the most efficient aio mode (score "
                                       f"{r['score']:.3f}); aio={wr['aio']} is the least efficient "
                                       f"({wr['score']:.3f}).", float(r["score"]), "score",
                                       {f"{r['config']} score": float(r["score"]),
                                        f"{wr['config']} score": float(wr["score"])}, group))
        # the two best controllers under the best aio mode, as 004 compares virtio-scsi with virtio-blk
        top_aio = best["aio"]
        same_aio = g[g["aio"] == top_aio].drop_duplicates("controller")
        if len(same_aio) >= 2:
            a, b = same_aio.iloc[1], same_aio.iloc[0]
            # ESXi configurations (aio n/a) are compared as they are named: by controller alone
            lead = prefix if top_aio == NOT_APPLICABLE else f"{prefix}With aio={top_aio}, "
            out.append(_pair(a, b, _name(a), _name(b), group, lead))
        # iothread on/off for the same controller and aio
        for (c, aio), gp in g.groupby(["controller", "aio"], sort=False):
            on = gp[gp["iothread"].fillna(False).astype(bool)]
            off = gp[~gp["iothread"].fillna(False).astype(bool)]
            if len(on) and len(off):
                out.append(_iothread(on.iloc[0], off.iloc[0], c, aio, group, prefix))
        # best vs worst aio mode for each controller, as 004 does for vmware-pvscsi
        for c, r in best_aio.items():
            wr = worst_aio[c]
            if wr["aio"] == r["aio"]:
                continue
            out.append(_pair(r, wr, f"{c} with aio={r['aio']}", f"{c} with aio={wr['aio']}", group, prefix))
        worst = g.iloc[-1]
        if len(g) >= 2 and worst["score"] > best["score"] and cpu_only:
            out.append(Finding(f"{prefix}{worst['config']} achieves the worst efficiency score "
                               f"({worst['score']:.3f}), on CPU/MiB alone (normalized CPU {worst['norm_cpu']:.3f}).",
                               float(worst["score"]), "score",
                               {f"{worst['config']} score": float(worst["score"]),
                                f"{worst['config']} normalized CPU": float(worst["norm_cpu"])}, group))
        elif len(g) >= 2 and worst["score"] > best["score"]:
            cause = "high context switching rates" if worst["norm_ctx"] >= worst["norm_cpu"] else "high CPU use"
            out.append(Finding(f"{prefix}{worst['config']} achieves the worst efficiency score "
                               f"({worst['score']:.3f}), primarily due to {cause} (normalized CPU "
                               f"{worst['norm_cpu']:.3f}, context switches {worst['norm_ctx']:.3f}).",
                               float(worst["score"]), "score",
                               {f"{worst['config']} score": float(worst["score"]),
                                f"{worst['config']} normalized CPU": float(worst["norm_cpu"]),
                                f"{worst['config']} normalized ctx": float(worst["norm_ctx"])}, group))
        flagged = g[g["cv_flag"]]
        if len(flagged):
            names = ", ".join(flagged["config"].tolist()[:5]) + (" ..." if len(flagged) > 5 else "")
            worst_cv = float(np.nanmax(flagged[["cpu_per_mib_cv", "ctx_per_mib_cv"]].to_numpy()))
            out.append(Finding(f"{prefix}{len(flagged)} of {len(g)} cells vary between repeats by more than the "
                               f"CV limit of {result.cv_limit:.0%} (highest CV {worst_cv:.1%}): {names}. "
                               "Re-run them on a quiet host before relying on their rank.",
                               float(len(flagged)), "cells", {"highest CV": worst_cv}, group))
        else:
            cvs = g[["cpu_per_mib_cv", "ctx_per_mib_cv"]].to_numpy(dtype=float)
            if np.isfinite(cvs).any():
                worst_cv = float(np.nanmax(cvs))
                out.append(Finding(f"{prefix}All {len(g)} cells repeat within the CV limit of "
                                   f"{result.cv_limit:.0%} (highest CV {worst_cv:.1%}).", worst_cv, "CV",
                                   {"highest CV": worst_cv}, group))
    return out


def comparison_findings(result: ComparisonResult) -> list[Finding]:
    """The FINDINGS of technote 000, from B's point of view (B against the baseline A)."""
    s, a, b = result.summary, result.label_a, result.label_b
    n = s["points"]
    out = [
        Finding(f"{b} beat {a} in {s['iops_wins']} of {n} tests in IOPS, with an average IOPS "
                f"{'gain' if s['mean_iops_gain_pct'] >= 0 else 'change'} of {s['mean_iops_gain_pct']:.1f}%.",
                s["mean_iops_gain_pct"], "%", {"points where B has more IOPS": s["iops_wins"], "points": n,
                                               "mean IOPS gain %": s["mean_iops_gain_pct"]}),
        Finding(f"The largest IOPS gain in an individual test is {s['max_iops_gain_pct']:.1f}% "
                f"({s['max_iops_gain_point']}).", s["max_iops_gain_pct"], "%",
                {f"IOPS gain % at {s['max_iops_gain_point']}": s["max_iops_gain_pct"]}),
        Finding(f"{b} had lower latency than {a} in {s['latency_wins']} of {n} tests; the average latency "
                f"{'reduction' if s['mean_lat_reduction_pct'] >= 0 else 'change'} is "
                f"{s['mean_lat_reduction_pct']:.1f}%.", s["mean_lat_reduction_pct"], "%",
                {"points where B has lower latency": s["latency_wins"], "points": n,
                 "mean latency reduction %": s["mean_lat_reduction_pct"]}),
        Finding(f"{b} achieved {_more_less(s['peak_bw_gain_pct'], 'higher', 'lower')} peak bandwidth than {a}: "
                f"{s['peak_bw_b']:.1f} MiB/s for {b} ({s['peak_bw_b_point']}) versus {s['peak_bw_a']:.1f} MiB/s "
                f"for {a} ({s['peak_bw_a_point']}).", s["peak_bw_gain_pct"], "%",
                {f"{b} peak MiB/s": s["peak_bw_b"], f"{a} peak MiB/s": s["peak_bw_a"]}),
    ]
    for rw, g in result.by_qd.groupby("rw", sort=False):
        if len(g) > 1:
            top = g.loc[g["iops_gain_pct"].idxmax()]
            out.append(Finding(f"Averaged across block sizes ({rw}), the largest IOPS gain is at QD={int(top['iodepth'])}: "
                               f"{top['iops_gain_pct']:.1f}%; latency reduction there is "
                               f"{top['lat_reduction_pct']:.1f}%.", float(top["iops_gain_pct"]), "%",
                               {f"{rw} QD{int(top['iodepth'])} mean IOPS gain %": float(top["iops_gain_pct"]),
                                f"{rw} QD{int(top['iodepth'])} mean latency reduction %": float(top["lat_reduction_pct"])}))
    for rw, g in result.by_bs.groupby("rw", sort=False):
        if len(g) > 1:
            top = g.loc[g["iops_gain_pct"].idxmax()]
            bs = format_size(int(top["bs"]))
            out.append(Finding(f"Averaged across queue depths ({rw}), the largest IOPS gain is at block size {bs}: "
                               f"{top['iops_gain_pct']:.1f}%.", float(top["iops_gain_pct"]), "%",
                               {f"{rw} {bs} mean IOPS gain %": float(top["iops_gain_pct"])}))
    tested = s["tested_points"]
    if tested:
        out.append(Finding(f"{s['iops_not_significant']} of {tested} tested points show no statistically significant "
                           f"IOPS difference, and {s['latency_not_significant']} no significant latency difference "
                           f"(Welch t-test over repeats, p >= {result.alpha:g}).",
                           float(s["iops_not_significant"]), "points",
                           {"points tested": tested, "IOPS n.s.": s["iops_not_significant"],
                            "latency n.s.": s["latency_not_significant"]}))
    else:
        out.append(Finding(f"No point has repeats on both sides: none of the {n} differences is tested for "
                           "significance. Repeat each point at least twice to test them.", 0.0, "points tested",
                           {"points tested": 0}))
    return out
