"""The Answer page: the first sheet of the efficiency workbook, one A4 portrait page.

What a customer reads first: the question, the answer in one sentence (the best configuration and how
sure), the conditions that qualify it (platform and accelerator, guest, host CPUs, workload with its rate,
window, repeats, what was not tested, the CV-limit outcome, the CPU figure scored), the technote's
roll-ups as short sentences with their numbers in their own columns, and the score chart. Every sentence
is built from the numbers on the same row or on the sheets behind it; every condition is read from the run
records (``IngestResult.environment``) and the measurements, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from ...core.model import NOT_APPLICABLE, format_size
from ..read.byrole import vcpu_places
from .bootstrap import RESAMPLES
from .efficiency import EfficiencyResult
from .stats import INDICATIVE, LOWER, SIGNIFICANT, TIED, UNTESTED, Verdict

QUESTION = "Which storage configuration moves the guest's I/O with the least host CPU and context switches?"
ALL_AIO = ("native", "io_uring", "threads")


@dataclass
class Row:
    """One finding of the Answer page: a short sentence and the numbers behind it in their own columns."""

    topic: str
    text: str
    value: float | None
    of: float | None
    unit: str
    evidence: str
    fmt: str = "0.000"  # the number format of value and of: counts "0", scores "0.000", shares "0.0%"


def environment_items(env: pd.DataFrame) -> dict[str, list[str]]:
    """item -> the distinct values the run records give for it (one per run, in order)."""
    out: dict[str, list[str]] = {}
    for _, item, value in env[["scope", "item", "value"]].itertuples(index=False):
        if str(value) not in out.setdefault(str(item), []):
            out[str(item)].append(str(value))
    return out


def _one(items: dict[str, list[str]], key: str) -> str | None:
    vals = [v for v in items.get(key, []) if v not in ("", "None", "null")]
    return ", ".join(vals) if vals else None


def _platform(items: dict[str, list[str]], frame: pd.DataFrame) -> str:
    backend = _one(items, "backend") or "not recorded"
    accel = _one(items, "environment.accel")
    qemu = _one(items, "environment.qemu")
    text = {"qemu": "local QEMU", "proxmox": "Proxmox VE", "vmware": "VMware ESXi"}.get(backend, backend)
    if qemu:
        text += f" {qemu.split(' ')[0]}"
    if accel == "tcg":
        text += ("; accelerator tcg: software emulation, no KVM. The vCPU thread's CPU is mostly the emulated "
                 "guest, so absolute figures are far above a KVM host's; the ranking is what carries over")
    elif accel:
        text += f"; accelerator {accel}"
    elif backend != "vmware":
        text += "; accelerator not recorded"
    return text


def _guest(items: dict[str, list[str]], frame: pd.DataFrame) -> str:
    kernel = _one(items, "environment.guest_kernel")
    guest_os = _one(items, "environment.guest_os") or _one(items, "environment.guest.os")
    parts = [guest_os or (f"Linux {kernel}" if kernel else "not recorded in the run record")]
    vcpus, mem = _one(items, "environment.vcpus"), _one(items, "environment.memory_mib")
    if vcpus:
        parts.append(f"{vcpus} vCPU")
    if mem:
        parts.append(f"{mem} MiB")
    engines = sorted({str(e) for e in frame["engine"].dropna()}) if "engine" in frame else []
    if engines:
        parts.append("engine " + ", ".join(engines))
    return ", ".join(parts)


def _host(items: dict[str, list[str]]) -> str:
    cpus, model = _one(items, "environment.cpus"), _one(items, "environment.cpu_model")
    kernel = _one(items, "environment.kernel")
    if not (cpus or model):
        return "not recorded in the run record"
    text = f"{cpus or '?'} CPUs ({model or 'model not recorded'})"
    return text + (f", kernel {kernel}" if kernel else "")


def _workloads(frame: pd.DataFrame) -> str:
    out = []
    for wl, g in frame.groupby("workload", sort=False, dropna=False):
        r = g.iloc[0]
        bits = [str(r["rw"]) if pd.notna(r.get("rw")) else str(wl)]
        if pd.notna(r.get("bs")):
            bits.append(format_size(int(r["bs"])))
        if pd.notna(r.get("iodepth")):
            bits.append(f"QD {int(r['iodepth'])}")
        if pd.notna(r.get("numjobs")):
            bits.append(f"{int(r['numjobs'])} job{'s' if int(r['numjobs']) != 1 else ''}")
        rate = r.get("rate_target_mib_s") if pd.notna(r.get("rate_target_mib_s")) else r.get("rate_mib_s")
        bits.append(f"fixed rate {float(rate):g} MiB/s" if rate is not None and pd.notna(rate) else "unthrottled")
        out.append(" ".join(bits[:2]) + ", " + ", ".join(bits[2:]))
    return "; ".join(out)


def _window(items: dict[str, list[str]], frame: pd.DataFrame) -> str:
    ramp, measure = _one(items, "matrix.run.ramp_seconds"), _one(items, "matrix.run.measure_seconds")
    win = frame["window_s"].dropna() if "window_s" in frame else pd.Series(dtype=float)
    measured = f" (measured windows {win.min():.1f}-{win.max():.1f} s)" if len(win) else ""
    if ramp and measure:
        return f"{ramp} s warm-up, then {measure} s measured per repeat{measured}"
    return f"not in the run record{measured}"


def _not_tested(items: dict[str, list[str]], frame: pd.DataFrame) -> str:
    aio = {str(a) for a in frame["aio"].dropna()}
    if aio <= {NOT_APPLICABLE}:
        return "ESXi has no aio, iothread or cache setting: only controllers are compared"
    missing = [f"aio={a}" for a in ALL_AIO if a not in aio]
    if not frame["iothread"].fillna(False).astype(bool).any():
        missing.append("iothreads")
    caches = {str(c) for c in frame["cache"].dropna()}
    if caches <= {"none"}:
        missing.append("host caches other than cache=none")
    return ", ".join(missing) if missing else "every aio mode, with and without iothreads"


def _elapsed_min(items: dict[str, list[str]], frame: pd.DataFrame) -> float | None:
    """Minutes from the first run start to the end of the last measurement window (journal times)."""
    starts = [s for s in items.get("started", []) if s]
    if not starts or "started" not in frame or not frame["started"].notna().any():
        return None
    try:
        t0 = min(datetime.fromisoformat(s) for s in starts)
        ends = [datetime.fromisoformat(str(s)).timestamp() + (float(w) if pd.notna(w) else 0.0)
                for s, w in zip(frame["started"], frame["window_s"]) if pd.notna(s)]
    except ValueError:
        return None
    return (max(ends) - t0.timestamp()) / 60.0 if ends else None


EXTRA_WHY = {"open verdict": "for verdicts still open", "cv_limit_pct": "for the CV limit"}


def _extra_why(frame: pd.DataFrame) -> str:
    """What the extra repeats were for, counted from each record's own reason (none journaled: nothing said)."""
    if "extra_repeat" not in frame or not frame["extra_repeat"].notna().any():
        return ""
    counts = frame["extra_repeat"].dropna().astype(str).value_counts()
    why = {str(basis): EXTRA_WHY.get(str(basis), f"for {basis}") for basis in counts.index}
    if len(why) == 1:
        return " " + next(iter(why.values()))
    return " (" + ", ".join(f"{n} {why[str(basis)]}" for basis, n in counts.items()) + ")"


def _repeats(items: dict[str, list[str]], frame: pd.DataFrame, result: EfficiencyResult) -> tuple[str, str]:
    """(the Repeats condition, the CV-limit outcome with why extra repeats did or did not run)."""
    cells = result.cells
    n = cells["n"].astype(int)
    planned = _one(items, "matrix.run.repeats")
    per = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    extra = int((frame["repeat"].dropna().astype(int) > int(planned)).sum()) if planned and planned.isdigit() else 0
    repeats = (f"{per} per configuration: {len(frame)} measurements of {len(cells)} configurations"
               + (f", {extra} of them extra repeats{_extra_why(frame)}" if extra else ""))
    over = int(cells["cv_flag"].sum())
    limit = result.cv_limit
    if not over:
        return repeats, f"all {len(cells)} configurations repeat within the {limit:.0%} CV limit"
    cvs = cells[["cpu_per_mib_cv", "ctx_per_mib_cv"]].to_numpy(dtype=float)
    text = (f"{over} of {len(cells)} configurations vary by more than the {limit:.0%} CV limit "
            f"(highest CV {np.nanmax(cvs):.1%}): their ranks are less certain (intervals on the score chart)")
    max_rep, budget = _one(items, "matrix.run.max_repeats"), _one(items, "matrix.run.time_budget_minutes")
    if extra:
        return repeats, text + f"; {extra} extra repeats ran"
    if max_rep is not None and planned is not None and (max_rep == "0" or max_rep <= planned):
        return repeats, text + f"; no extra repeats: [run] max_repeats = {max_rep} allows none"
    elapsed = _elapsed_min(items, frame)
    if budget and elapsed is not None and float(budget) > 0 and elapsed >= 0.8 * float(budget):
        return repeats, (text + f"; no extra repeats ran: the planned repeats ended {elapsed:.1f} min into the run, "
                                f"leaving too little of its {float(budget):g}-min time budget for a round "
                                "([run] time_budget_minutes)")
    if max_rep is None:
        return repeats, text + "; extra repeats were not configured ([run] max_repeats)"
    return repeats, text + "; no extra repeats ran (the journal does not say why)"


def cpu_figure(frame: pd.DataFrame) -> str:
    """The one CPU figure the scores use, and how far user + system is from it where it is the task-clock."""
    sources = sorted({str(s) for s in frame["cpu_total_source"].dropna()}) if "cpu_total_source" in frame else []
    name = ", ".join(sources) if sources else ", ".join(sorted({str(m) for m in frame["cpu_metric"].dropna()}))
    scopes = sorted({str(s) for s in frame["host_scope"].dropna()}) if "host_scope" in frame else []
    if scopes == ["cpus"]:  # [host] scope = "cpus" (issue 33): the figures are a CPU set's, system-wide
        sets = sorted({str(c) for c in frame["host_cpus"].dropna()}) if "host_cpus" in frame else []
        placed = ("QEMU's I/O-path threads confined to it, its vCPU threads (the emulated guest) beside the harness"
                  if False in vcpu_places(frame) else "every QEMU thread confined to it, the guest's too")
        return (f"{name or 'none'} of the host CPU set {', '.join(sets) or '(not recorded)'}, measured system-wide "
                f"({placed}: QEMU's threads, the kernel's work and anything else that ran there); the QEMU "
                "process's own figures are on the Scopes sheet")
    text = f"{name or 'none'} of the whole QEMU process"
    if "cpus" in scopes:
        text += " where the host scope was the process, of the host CPU set where it was cpus"
    if "perf task-clock (ns)" in sources:
        tc = frame[frame["cpu_total_source"] == "perf task-clock (ns)"]
        gap = ((tc["cpu_user"] + tc["cpu_system"]) / tc["cpu_total"] - 1).dropna() * 100
        if len(gap) and gap.abs().max() > 3:
            med = gap.median()
            text += (f"; user + system (/proc ticks) is {abs(med):.1f} % {'above' if med >= 0 else 'below'} it "
                     f"(median over the measurements), {gap.abs().max():.1f} % apart at most: the scores use the "
                     "task-clock (Method sheet)")
    return text


def conditions(data: Any, result: EfficiencyResult) -> list[tuple[str, str]]:
    """(label, text) for the Answer page, every one read from the run records and the measurements."""
    items = environment_items(data.environment)
    frame = data.frame
    repeats, cv = _repeats(items, frame, result)
    return [("Platform", _platform(items, frame)), ("Guest", _guest(items, frame)), ("Host", _host(items)),
            ("Workload", _workloads(frame)), ("Window", _window(items, frame)), ("Repeats", repeats),
            ("Repeatability", cv), ("Not tested", _not_tested(items, frame)), ("CPU figure", cpu_figure(frame))]


def _share_words(v: Verdict) -> str:
    return f"lower in {v.number:.1%} of {RESAMPLES:,} resamples" if v.direction != UNTESTED else "single repeat"


def answer_sentence(result: EfficiencyResult, group: str) -> str:
    """The best configuration of a group and how sure: ranks above all others, or tied within noise with
    which, from the bootstrap (the same verdicts as the Scores sheet)."""
    g = result.cells[result.cells["norm_group"] == group].sort_values(["score", "config"], kind="stable")
    best = g.iloc[0]
    head = (f"{best['config']} has the lowest efficiency score, {best['score']:.3f} (95 % interval "
            f"{best['score_ci_low']:.3f}-{best['score_ci_high']:.3f}; 0 is best)")
    if len(g) < 2:
        return head + "; it is the only configuration measured."
    draws = result.draws.groups[group]
    verdicts = [(str(c), draws.verdict(str(best["config"]), str(c))) for c in g["config"].iloc[1:]]
    if any(v.direction == UNTESTED for _, v in verdicts):
        return head + ": indicative only, single repeats are not tested."
    tied = [c for c, v in verdicts if v.direction != LOWER]
    if not tied:
        worst_share = min(v.number for _, v in verdicts)
        return head + (f" and ranks above every other configuration (below each in at least {worst_share:.1%} of "
                       f"{RESAMPLES:,} resamples).")
    runner = verdicts[0]
    names = ", ".join(tied[:3]) + (f" and {len(tied) - 3} more" if len(tied) > 3 else "")
    return head + (f", but it is tied within noise with {len(tied)} other configuration{'s' if len(tied) > 1 else ''} "
                   f"({names}; against {runner[0]}: {_share_words(runner[1])}): the data does not single out one "
                   "best configuration.")


def _status(v: Verdict) -> str:
    return {LOWER: f"{SIGNIFICANT}: {_share_words(v)}", TIED: f"within noise: {_share_words(v)}",
            UNTESTED: INDICATIVE}.get(v.direction, f"{SIGNIFICANT}: {_share_words(v)}")


def answer_rows(result: EfficiencyResult, group: str) -> list[Row]:
    """Technote 004's roll-ups for one group, 3-6 rows: the best configuration, the aio mode that is best for
    most controllers (and the least efficient one), the best controller per aio mode, what drives the worst
    score, and how well the configurations repeat."""
    g = result.cells[result.cells["norm_group"] == group].sort_values(["score", "config"], kind="stable")
    draws = result.draws.groups[group]
    rows: list[Row] = []
    best = g.iloc[0]
    if len(g) >= 2:
        second = g.iloc[1]
        v = draws.verdict(str(best["config"]), str(second["config"]))
        word = v.words("ranks above", "ranks below", "is tied within noise with", "is not tested against")
        rows.append(Row("Best", f"{best['config']} {word} the runner-up, {second['config']}.",
                        float(best["score"]), float(second["score"]), "score vs runner-up", _status(v)))
    aio_rows = _aio_rows(g, draws)
    rows += aio_rows
    rows += _controller_rows(g, draws)[: max(1, 5 - len(rows))]
    if len(g) >= 3:
        worst = g.iloc[-1]
        if pd.notna(worst["norm_ctx"]):
            ctx_driven = float(worst["norm_ctx"]) >= float(worst["norm_cpu"])
            cause = "context switches" if ctx_driven else "CPU per MiB"
            rows.append(Row("Worst", f"{worst['config']} scores worst, driven mainly by its {cause}.",
                            float(worst["norm_ctx"] if ctx_driven else worst["norm_cpu"]),
                            float(worst["norm_cpu"] if ctx_driven else worst["norm_ctx"]),
                            "normalized: " + ("ctx vs CPU" if ctx_driven else "CPU vs ctx"), ""))
        else:
            rows.append(Row("Worst", f"{worst['config']} scores worst (on CPU/MiB alone).", float(worst["score"]),
                            None, "score", ""))
    over = int(g["cv_flag"].sum())
    rows.append(Row("Repeatability", f"{over} of {len(g)} configurations vary by more than the "
                                     f"{result.cv_limit:.0%} CV limit." if over else
                    f"All {len(g)} configurations repeat within the {result.cv_limit:.0%} CV limit.",
                    float(over), float(len(g)), "configurations", "", "0"))
    return rows[:6]


def _aio_rows(g: pd.DataFrame, draws: Any) -> list[Row]:
    """"aio=native is the most efficient aio mode for 3 of 5 controllers (beyond noise for 2)" and the least
    efficient mode the same way: counted per controller that was measured with two or more aio modes."""
    best: dict[str, tuple[str, Verdict]] = {}
    worst: dict[str, tuple[str, Verdict]] = {}
    for c, gc in g[g["aio"] != NOT_APPLICABLE].groupby("controller", sort=False):
        gc = gc[gc["iothread"].fillna(False) == gc["iothread"].fillna(False).iloc[0]]
        if gc["aio"].nunique() < 2:
            continue
        gc = gc.sort_values(["score", "config"], kind="stable")
        best[str(c)] = (str(gc.iloc[0]["aio"]), draws.verdict(str(gc.iloc[0]["config"]), str(gc.iloc[1]["config"])))
        worst[str(c)] = (str(gc.iloc[-1]["aio"]),
                         draws.verdict(str(gc.iloc[-2]["config"]), str(gc.iloc[-1]["config"])))
    if len(best) < 2:
        return []
    out = []
    for which, table, word in (("most", best, "Best aio mode"), ("least", worst, "Worst aio mode")):
        counts: dict[str, int] = {}
        for aio, _ in table.values():
            counts[aio] = counts.get(aio, 0) + 1
        top = max(counts, key=lambda a: counts[a])
        sure = sum(1 for aio, v in table.values() if aio == top and v.direction == LOWER)
        untested = all(v.direction == UNTESTED for _, v in table.values())
        k, n = counts[top], len(table)
        scope = f"each of the {n} controllers" if k == n else f"{k} of {n} controllers"
        evidence = INDICATIVE if untested else f"beyond noise for {sure} of {k}"
        out.append(Row(word, f"aio={top} is the {which} efficient aio mode for {scope}.", float(k), float(n),
                       "controllers", evidence, "0"))
    return out


def _controller_rows(g: pd.DataFrame, draws: Any) -> list[Row]:
    """The best controller under each aio mode (technote 004 compares controllers under one aio mode)."""
    out = []
    for aio, ga in g.groupby("aio", sort=False):
        if aio == NOT_APPLICABLE or ga["controller"].nunique() < 2:
            continue
        ga = ga.sort_values(["score", "config"], kind="stable")
        a, b = ga.iloc[0], ga.iloc[1]
        v = draws.verdict(str(a["config"]), str(b["config"]))
        word = v.words("ranks above", "ranks below", "is tied within noise with", "is not tested against")
        out.append(Row(f"aio={aio}", f"With aio={aio}, {a['controller']} {word} {b['controller']}.",
                       float(a["score"]), float(b["score"]), "score vs next controller", _status(v)))
    return out


def main_group(result: EfficiencyResult) -> str | None:
    """The group the Answer page answers for: the one with the most configurations (the first of equals)."""
    if result.cells.empty:
        return None
    sizes = result.cells.groupby("norm_group", sort=False).size()
    return str(sizes.idxmax())
