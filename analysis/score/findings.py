"""Findings: the sentences of a technote's CONCLUSIONS / FINDINGS, generated from the numbers.

Every :class:`Finding` carries its headline number (``value``, ``unit``) and the inputs it was computed
from (``numbers``, labelled as they appear on the Scores or Comparison sheet), so the workbook can show
the number next to the sentence and a reader can check it. No finding is made without its number.

A group scored on CPU/MiB alone (some or all of its cells have no context-switch counts, e.g. ESXi; see
:mod:`stormatrix.analysis.score.efficiency`) says so in its own finding, right after its best score, and its
sentences compare CPU only where a cell has no ctx/MiB, naming that cell.

Wording follows technote 004 ("virtio-scsi is 4% more CPU intensive than virtio-blk but generates 25%
fewer context switches"); the A-vs-B findings of technote 000 ("Proxmox VE beat VMware ESXi in 56 of 57
tests") are :mod:`.comparisonfindings`, in the same :class:`Finding`.

Only where the data says so: a sentence that one configuration is more or less CPU intensive, or
generates more or fewer context switches, rests on Welch's t-test at 95 % over the repeats (:mod:`.stats`);
a sentence that one ranks above another by score (the best, the worst, the best aio mode) rests on the
bootstrap of the whole normalization (:mod:`.bootstrap`: lower in >= 95 % of the resamples). Each claim's
words and its Evidence come from one :class:`.stats.Verdict`, so they cannot point different ways; a
finding whose halves differ (CPU within noise, context switches significant) is ``partly significant``
and its Evidence says which half is. A difference that is not significant is said to be within noise,
with the means, CIs and p. A
comparison with a single-repeat side is *indicative*: its sentence starts "Indicative (single repeat,
not tested)" and its ``status`` says so, on the Summary sheet and wherever the finding is shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.model import NOT_APPLICABLE
from .efficiency import EfficiencyResult
from .stats import (INDICATIVE, PARTLY, SIGNIFICANT, WITHIN_NOISE, Test, Verdict, combine, welch,
                    welch_p)


@dataclass
class Finding:
    text: str
    value: float
    unit: str
    numbers: dict[str, float] = field(default_factory=dict)
    group: str = ""
    # for a finding that says one thing beats another: significant, within noise or indicative (stats.py);
    # "" for a finding that compares nothing (a note on the data); PARTLY where one half of it is significant
    status: str = ""
    # what the Evidence column says beside the status, e.g. which half is significant ("" when the status says it)
    detail: str = ""

    @property
    def basis(self) -> str:
        return "; ".join(f"{k} = {_fmt(v)}" for k, v in self.numbers.items())


INDICATIVE_LEAD = "Indicative (single repeat, not tested): "
# the Value of a pair finding: how much more CPU/MiB the first-named needs than the second (negative: less)
PCT_UNIT = "% CPU/MiB, 1st vs 2nd named"


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


class _Tests:
    """Welch's tests between the repeats of two cells of a group (EfficiencyResult.repeats)."""

    def __init__(self, result: EfficiencyResult) -> None:
        reps = result.repeats
        self.values: dict[tuple[str, str, str], list[float]] = {}
        if len(reps):
            for (group, config), g in reps.groupby(["norm_group", "config"], sort=False):
                for col in ("cpu_per_mib", "ctx_per_mib"):
                    self.values[(str(group), str(config), col)] = [float(v) for v in g[col] if pd.notna(v)]

        self.draws = result.draws

    def __call__(self, group: str, a: pd.Series, b: pd.Series, col: str) -> Test:
        va = self.values.get((group, str(a["config"]), col)) or [float(a[f"{col}_mean"])]
        vb = self.values.get((group, str(b["config"]), col)) or [float(b[f"{col}_mean"])]
        return welch(va, vb)

    def score(self, group: str, a: pd.Series, b: pd.Series) -> Verdict:
        """A's score against B's, through the bootstrap of the group's whole normalization."""
        return self.draws.verdict(group, str(a["config"]), str(b["config"]))


def _p(t: Test) -> str:
    return welch_p(t.p)


def _mark(text: str, status: str) -> str:
    """The sentence as the reader sees it: an indicative one says so first (the status column says it too)."""
    if status != INDICATIVE:
        return text
    lead, sep, rest = text.partition("] ") if text.startswith("[") else ("", "", text)
    return f"{lead}{sep}{INDICATIVE_LEAD}{rest}"


def _pair(a: pd.Series, b: pd.Series, name_a: str, name_b: str, group: str, lead: str, tests: _Tests) -> Finding:
    """"A is x% more CPU intensive than B but generates y% fewer context switches" where each difference is
    significant; a difference that is not says so ("within noise") with its means, CIs and p; the CPU half
    alone when either cell has no context-switch counts."""
    cpu = pct_more(a["cpu_per_mib_mean"], b["cpu_per_mib_mean"])
    unit = a["cpu_per_mib_unit"]
    numbers = {f"{a['config']} CPU/MiB mean ({unit})": float(a["cpu_per_mib_mean"]),
               f"{b['config']} CPU/MiB mean ({unit})": float(b["cpu_per_mib_mean"])}
    tc = tests(group, a, b, "cpu_per_mib")
    if math.isfinite(tc.p):
        numbers["CPU/MiB Welch p"] = tc.p
    cpu_sig = f"{name_a} is {_more_less(cpu, 'more', 'less')} CPU intensive than {name_b}"
    cpu_noise = (f"{name_a} and {name_b} need the same CPU per MiB within noise ({abs(cpu):.1f}% apart: "
                 f"{tc.numbers(name_a, name_b, str(unit))})")
    if not _has_ctx(a, b):
        status = tc.verdict
        if status == WITHIN_NOISE:
            text = f"{lead}{cpu_noise}{_no_ctx(a, b)}."
        else:
            text = f"{lead}{cpu_sig}{_no_ctx(a, b)}" + (f" ({_p(tc)})." if status == SIGNIFICANT else ".")
        return Finding(_mark(text, status), cpu, PCT_UNIT, numbers, group, status)
    ctx = pct_more(a["ctx_per_mib_mean"], b["ctx_per_mib_mean"])
    tx = tests(group, a, b, "ctx_per_mib")
    numbers.update({f"{a['config']} ctx/MiB mean": float(a["ctx_per_mib_mean"]),
                    f"{b['config']} ctx/MiB mean": float(b["ctx_per_mib_mean"]),
                    "context switch difference %": ctx})
    if math.isfinite(tx.p):
        numbers["ctx/MiB Welch p"] = tx.p
    status = combine(tc.verdict, tx.verdict)
    if status != WITHIN_NOISE and tc.verdict == tx.verdict:   # both significant, or both untested
        joiner = "but" if (cpu >= 0) != (ctx >= 0) else "and"
        ps = f" (CPU: {_p(tc)}; context switches: {_p(tx)})" if status == SIGNIFICANT else ""
        text = (f"{lead}{cpu_sig} {joiner} generates {_more_less(ctx, 'more', 'fewer')} context switches{ps}.")
        return Finding(_mark(text, status), cpu, PCT_UNIT, numbers, group, status)
    halves = [cpu_sig + f" ({_p(tc)})" if tc.significant else cpu_noise]
    halves.append(f"{name_a} generates {_more_less(ctx, 'more', 'fewer')} context switches ({_p(tx)})" if tx.significant
                  else f"their context switches per MiB are the same within noise ({abs(ctx):.1f}% apart: "
                       f"{tx.numbers(name_a, name_b, 'ctx/MiB')})")
    detail = ""
    if tc.significant != tx.significant and INDICATIVE not in (tc.verdict, tx.verdict):
        status = PARTLY
        sig, noise = ("CPU/MiB", "ctx/MiB") if tc.significant else ("ctx/MiB", "CPU/MiB")
        detail = f"{sig} significant ({_p(tc if tc.significant else tx)}); {noise} within noise"
    return Finding(f"{lead}{halves[0]}; {halves[1]}.", cpu, PCT_UNIT, numbers, group, status, detail)


def _name(row: pd.Series) -> str:
    """The controller as the technote names it, with its iothread when it has one."""
    it = row.get("iothread")
    return f"{row['controller']} with iothread" if isinstance(it, (bool, np.bool_)) and it else str(row["controller"])


def _iothread(on: pd.Series, off: pd.Series, controller: str, aio: str, group: str, prefix: str,
              tests: _Tests) -> Finding:
    """004: "With virtio-scsi and aio=native, an iothread introduces a CPU overhead of 1.5%, but ..."; a
    difference within noise is said to be so, with its numbers."""
    lead = f"{prefix}With {controller} and aio={aio}, "
    f = _pair(on, off, "an iothread", "none", group, lead, tests)
    cpu = f.value
    if f.status in (WITHIN_NOISE, PARTLY):
        return f   # its own words: "an iothread and none need the same CPU per MiB within noise ..."
    cpu_txt = f"a CPU overhead of {cpu:.1f}%" if cpu >= 0 else f"a CPU saving of {-cpu:.1f}%"
    ps = ""
    if f.status == SIGNIFICANT:
        ps = f" (CPU: {welch_p(f.numbers['CPU/MiB Welch p'])}" + (
            f"; context switches: {welch_p(f.numbers['ctx/MiB Welch p'])})" if "ctx/MiB Welch p" in f.numbers else ")")
    if not _has_ctx(on, off):
        text = f"{lead}an iothread introduces {cpu_txt}{_no_ctx(on, off)}{ps}."
    else:
        ctx = f.numbers["context switch difference %"]
        ctx_txt = f"reduces context switches by {-ctx:.1f}%" if ctx < 0 else f"adds {ctx:.1f}% context switches"
        joiner = "but" if (cpu >= 0) != (ctx >= 0) else "and"
        text = f"{lead}an iothread introduces {cpu_txt}, {joiner} {ctx_txt}{ps}."
    return Finding(_mark(text, f.status), cpu, f.unit, f.numbers, group, f.status)


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


def _interval(row: pd.Series) -> str:
    """"0.301 [0.102, 0.655]": a score and its 95 % bootstrap interval."""
    lo, hi = float(row["score_ci_low"]), float(row["score_ci_high"])
    return f"{row['score']:.3f} [{lo:.3f}, {hi:.3f}]"


def _scores(a: pd.Series, b: pd.Series, v: Verdict) -> str:
    """"X 0.000 [0.000, 0.214] vs Y 0.301 [0.102, 0.655] (score, 95 % bootstrap interval); X lower in 97.1 %
    of 2,000 resamples": both scores with their intervals and the verdict's own number."""
    return (f"{a['config']} {_interval(a)} vs {b['config']} {_interval(b)} (score, 95 % "
            f"bootstrap interval); {a['config']} {v.test}")


def _score_numbers(a: pd.Series, b: pd.Series, v: Verdict) -> dict[str, float]:
    numbers = {f"{a['config']} score": float(a["score"]), f"{b['config']} score": float(b["score"])}
    if v.direction != "untested":
        numbers[f"resamples with {a['config']} lower (%)"] = 100.0 * v.number
    return numbers


def _top(g: pd.DataFrame, group: str, tests: _Tests, what: str, prefix: str, tail: str = "") -> Finding:
    """"X achieves the best <what> (score)" where X's score is lower than the runner-up's in >= 95 % of the
    resamples; "X and Y are tied within noise for the best <what>" otherwise, with the numbers."""
    best = g.iloc[0]
    if len(g) < 2:
        status = INDICATIVE if int(best["n"]) < 2 else ""
        text = f"{prefix}{best['config']} achieves the best {what} ({best['score']:.3f}; lower is better){tail}."
        numbers = {f"{best['config']} score": float(best["score"])}
        return Finding(_mark(text, status), float(best["score"]), "score", numbers, group, status)
    second = g.iloc[1]
    v = tests.score(group, best, second)
    numbers = _score_numbers(best, second, v)
    if v.direction == "untested":
        text = f"{prefix}{best['config']} achieves the best {what} ({best['score']:.3f}; lower is better){tail}."
        return Finding(_mark(text, INDICATIVE), float(best["score"]), "score", numbers, group, INDICATIVE)
    if v.direction != "lower" or best["score"] == second["score"]:
        text = (f"{prefix}{best['config']} and {second['config']} are tied within noise for the best {what} "
                f"({best['score']:.3f} and {second['score']:.3f}; lower is better{tail.replace(', ', '; ')}): "
                f"{_scores(best, second, v)}.")
        return Finding(text, float(best["score"]), "score", numbers, group, WITHIN_NOISE)
    text = (f"{prefix}{best['config']} achieves the best {what} ({best['score']:.3f}; lower is better; below "
            f"{second['config']}'s {second['score']:.3f} in {v.number:.1%} of the resamples){tail}.")
    return Finding(text, float(best["score"]), "score", numbers, group, v.status)


def _aio_findings(g: pd.DataFrame, group: str, prefix: str, tests: _Tests) -> tuple[list[Finding], dict, dict]:
    """Which aio mode is best (and worst) for each controller, each claim tested against the runner-up
    (bootstrap of the scores); and the technote's roll-up "aio=X is the most efficient aio mode for each
    controller type" where it holds, or for how many controllers it does (and beyond noise for how many)."""
    best_aio: dict[str, pd.Series] = {}
    worst_aio: dict[str, pd.Series] = {}
    verdicts: dict[str, tuple[Verdict, Verdict]] = {}
    for c in [c for c in dict.fromkeys(g["controller"]) if isinstance(c, str)]:
        gc = g[(g["controller"] == c) & (g["aio"] != NOT_APPLICABLE).fillna(True)]  # ESXi has no aio mode
        if gc.empty:
            continue
        gc = gc[gc["iothread"].fillna(False) == gc["iothread"].fillna(False).iloc[0]] \
            if gc["iothread"].nunique(dropna=False) > 1 else gc
        if gc["aio"].nunique() >= 2:
            gc = gc.sort_values(["score", "config"], kind="stable")
            best_aio[c], worst_aio[c] = gc.iloc[0], gc.iloc[-1]
            verdicts[c] = (tests.score(group, gc.iloc[0], gc.iloc[1]), tests.score(group, gc.iloc[-2], gc.iloc[-1]))
    out: list[Finding] = []
    if not best_aio:
        return out, best_aio, worst_aio
    if len(best_aio) >= 2:
        out.append(_aio_rollup(best_aio, verdicts, group, prefix))
    for c, r in best_aio.items():
        wr = worst_aio[c]
        tb, tw = verdicts[c]
        st = combine(tb.status, tw.status)
        numbers = {f"{r['config']} score": float(r["score"]), f"{wr['config']} score": float(wr["score"])}
        if st == INDICATIVE or (tb.direction == "lower" and tw.direction == "lower"):
            ps = "" if st == INDICATIVE else \
                f" (each below the next in {min(tb.number, tw.number):.1%} or more of the resamples)"
            text = (f"{prefix}For {c}, aio={r['aio']} is the most efficient aio mode (score {r['score']:.3f}); "
                    f"aio={wr['aio']} is the least efficient ({wr['score']:.3f}){ps}.")
        else:
            st = WITHIN_NOISE if tb.direction != "lower" and tw.direction != "lower" else PARTLY
            parts = []
            for v, claim in ((tb, f"aio={r['aio']} as the most efficient"),
                             (tw, f"aio={wr['aio']} as the least efficient")):
                parts.append(f"{claim}: {'beyond noise' if v.direction == 'lower' else 'within noise'} ({v.test})")
            text = (f"{prefix}For {c}, the aio modes are not all separated beyond noise (scores "
                    f"{r['score']:.3f} for aio={r['aio']} to {wr['score']:.3f} for aio={wr['aio']}; "
                    f"{'; '.join(parts)}).")
        detail = "" if st != PARTLY else ("best beyond noise, worst within noise" if tb.direction == "lower"
                                          else "worst beyond noise, best within noise")
        out.append(Finding(_mark(text, st), float(r["score"]), "score", numbers, group, st, detail))
    return out, best_aio, worst_aio


def _aio_rollup(best_aio: dict[str, pd.Series], verdicts: dict[str, tuple[Verdict, Verdict]], group: str,
                prefix: str) -> Finding:
    """Technote 004's "aio=native is the most efficient aio mode for each controller type", counted: for how
    many controllers each aio mode is the best, and for how many of those beyond noise."""
    counts: dict[str, int] = {}
    sure: dict[str, int] = {}
    for c, r in best_aio.items():
        counts[str(r["aio"])] = counts.get(str(r["aio"]), 0) + 1
        sure[str(r["aio"])] = sure.get(str(r["aio"]), 0) + (verdicts[c][0].direction == "lower")
    top = max(counts, key=lambda k: (counts[k], sure[k]))
    n, k, m = len(best_aio), counts[top], sure[top]
    untested = all(verdicts[c][0].direction == "untested" for c in best_aio)
    if k == n:
        text = f"{prefix}aio={top} is the most efficient aio mode for each of the {n} controller types"
    else:
        text = f"{prefix}aio={top} is the most efficient aio mode for {k} of {n} controller types"
    status = INDICATIVE if untested else (SIGNIFICANT if m == k else WITHIN_NOISE if m == 0 else PARTLY)
    if not untested:
        text += (f", beyond noise for {m} of them" if m < k else ", each beyond noise") + \
            " (lower score than the runner-up in >= 95 % of the resamples)"
    numbers = {f"controllers where aio={top} is best": float(k), "controllers": float(n),
               "of them beyond noise": float(m)}
    detail = f"beyond noise for {m} of {k}" if status == PARTLY else ""
    return Finding(_mark(text + ".", status), float(k), "controllers", numbers, group, status, detail)


def _worst(g: pd.DataFrame, group: str, prefix: str, tests: _Tests, cpu_only: bool) -> Finding:
    worst, before = g.iloc[-1], g.iloc[-2]
    v = tests.score(group, before, worst)
    numbers = _score_numbers(before, worst, v)
    numbers[f"{worst['config']} normalized CPU"] = float(worst["norm_cpu"])
    if v.direction in ("tied", "higher"):
        return Finding(f"{prefix}{before['config']} and {worst['config']} are tied within noise for the worst "
                       f"efficiency score ({before['score']:.3f} and {worst['score']:.3f}): "
                       f"{_scores(before, worst, v)}.",
                       float(worst["score"]), "score", numbers, group, WITHIN_NOISE)
    status = v.status
    ps = f"; above {before['config']}'s {before['score']:.3f} in {v.number:.1%} of the resamples" \
        if v.direction == "lower" else ""
    if cpu_only:
        text = (f"{prefix}{worst['config']} achieves the worst efficiency score ({worst['score']:.3f}), on CPU/MiB "
                f"alone (normalized CPU {worst['norm_cpu']:.3f}{ps}).")
    else:
        cause = "high context switching rates" if worst["norm_ctx"] >= worst["norm_cpu"] else "high CPU use"
        numbers[f"{worst['config']} normalized ctx"] = float(worst["norm_ctx"])
        text = (f"{prefix}{worst['config']} achieves the worst efficiency score ({worst['score']:.3f}), primarily "
                f"due to {cause} (normalized CPU {worst['norm_cpu']:.3f}, context switches "
                f"{worst['norm_ctx']:.3f}{ps}).")
    return Finding(_mark(text, status), float(worst["score"]), "score", numbers, group, status)


def efficiency_findings(result: EfficiencyResult, *, what: str = "overall efficiency score") -> list[Finding]:
    """Conclusions for each normalization group, in the order of technote 004's CONCLUSIONS, each claim
    that one configuration beats another tested (Welch, 95 %) on the repeats (module docstring)."""
    out: list[Finding] = []
    cells = result.cells
    if cells.empty:
        return out
    tests = _Tests(result)
    many = len(result.groups) > 1
    for group, g in cells.groupby("norm_group", sort=False):
        group = str(group)
        prefix = f"[{group}] " if many else ""
        g = g.sort_values(["score", "config"], kind="stable")
        best = g.iloc[0]
        # efficiency.py's rule: a group with any cell lacking ctx/MiB is scored on CPU/MiB alone
        cpu_only = not bool(np.isfinite(g["ctx_per_mib_mean"].astype(float)).all())
        out.append(_top(g, group, tests, what, prefix, ", scored on CPU/MiB alone" if cpu_only else ""))
        if cpu_only:
            out.append(_cpu_only(g, group, prefix))
        aio_found, best_aio, worst_aio = _aio_findings(g, group, prefix, tests)
        out += aio_found
        # the two best controllers under the best aio mode, as 004 compares virtio-scsi with virtio-blk
        top_aio = best["aio"]
        same_aio = g[g["aio"] == top_aio].drop_duplicates("controller")
        if len(same_aio) >= 2:
            a, b = same_aio.iloc[1], same_aio.iloc[0]
            # ESXi configurations (aio n/a) are compared as they are named: by controller alone
            lead = prefix if top_aio == NOT_APPLICABLE else f"{prefix}With aio={top_aio}, "
            out.append(_pair(a, b, _name(a), _name(b), group, lead, tests))
        # iothread on/off for the same controller and aio
        for (c, aio), gp in g.groupby(["controller", "aio"], sort=False):
            on = gp[gp["iothread"].fillna(False).astype(bool)]
            off = gp[~gp["iothread"].fillna(False).astype(bool)]
            if len(on) and len(off):
                out.append(_iothread(on.iloc[0], off.iloc[0], c, aio, group, prefix, tests))
        # best vs worst aio mode for each controller, as 004 does for vmware-pvscsi
        for c, r in best_aio.items():
            wr = worst_aio[c]
            if wr["aio"] == r["aio"]:
                continue
            out.append(_pair(r, wr, f"{c} with aio={r['aio']}", f"{c} with aio={wr['aio']}", group, prefix, tests))
        if len(g) >= 2 and g.iloc[-1]["score"] > best["score"]:
            out.append(_worst(g, group, prefix, tests, cpu_only))
        out += _repeatability(g, group, prefix, result.cv_limit)
    return out


def _repeatability(g: pd.DataFrame, group: str, prefix: str, cv_limit: float) -> list[Finding]:
    """How well the cells repeat: CV over the limit, within it, or single repeats (nothing to say it)."""
    single = g[g["n"] < 2]
    out: list[Finding] = []
    if len(single):
        names = ", ".join(single["config"].astype(str).tolist()[:5]) + (" ..." if len(single) > 5 else "")
        out.append(Finding(f"{prefix}{len(single)} of {len(g)} configurations were measured once ({names}): every "
                           "comparison involving them is indicative only. Run at least 2 repeats (3 or more to "
                           "separate differences of a few percent) before relying on a rank.",
                           float(len(single)), "configurations with 1 repeat",
                           {"configurations with 1 repeat": float(len(single)), "configurations": float(len(g))},
                           group, INDICATIVE))
    flagged = g[g["cv_flag"]]
    if len(flagged):
        names = ", ".join(flagged["config"].tolist()[:5]) + (" ..." if len(flagged) > 5 else "")
        worst_cv = float(np.nanmax(flagged[["cpu_per_mib_cv", "ctx_per_mib_cv"]].to_numpy()))
        out.append(Finding(f"{prefix}{len(flagged)} of {len(g)} cells vary between repeats by more than the "
                           f"CV limit of {cv_limit:.0%} (highest CV {worst_cv:.1%}): {names}. "
                           "Re-run them on a quiet host before relying on their rank.",
                           float(len(flagged)), "cells", {"highest CV": worst_cv}, group))
    else:
        cvs = g[["cpu_per_mib_cv", "ctx_per_mib_cv"]].to_numpy(dtype=float)
        if np.isfinite(cvs).any():
            worst_cv = float(np.nanmax(cvs))
            out.append(Finding(f"{prefix}All {len(g)} cells repeat within the CV limit of "
                               f"{cv_limit:.0%} (highest CV {worst_cv:.1%}).", worst_cv, "CV",
                               {"highest CV": worst_cv}, group))
    return out
