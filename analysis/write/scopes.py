"""What the host figures are of (issue 33), and the Scopes sheet: a CPU set's figures beside the QEMU process's.

A record's ``host.scope`` is ``cpus`` (a set of host CPUs measured system-wide: QEMU's threads, the guest's vCPUs
where they ran there (``vcpu_on_set``; under software emulation they run beside the harness),
the kernel's work, interrupts and softirqs there, and any other process that ran there), ``qemu-process``
(the QEMU process alone) or an ESXi VM's own source. Scores and the Answer page use the record's own
figures (the set's, under ``cpus``: the matrix's scope); this module says which scope that was on the Method
sheet (:func:`method_lines`) and, where the set was measured, shows per configuration the set's and the
process's costs, the share of the set's CPU and switches outside QEMU's threads, the storage path's interrupts
and softirqs that escaped the set, and the ranking under each scope (:func:`write_scopes_sheet`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from openpyxl import Workbook

from ..read.byrole import vcpu_places
from ..score.efficiency import CELL_KEYS, EfficiencyResult, score_cells
from ..score.labels import config_label
from .sheets import Column, write_table

SCOPES_SHEET = "Scopes"
CPUS, PROCESS = "cpus", "qemu-process"
ESXI_SOURCES = ("esxtop", "vsphere")


def _scopes(frame: pd.DataFrame) -> list[str]:
    return sorted({str(s) for s in frame["host_scope"].dropna()}) if "host_scope" in frame else []


def _is_esxi(frame: pd.DataFrame) -> pd.Series:
    """The rows measured by an ESXi CPU source (vSphere realtime statistics, esxtop: host.scope esxi-vm)."""
    empty = pd.Series("", index=frame.index, dtype="string")
    src = frame["host_source"].astype("string").str.lower().fillna("") if "host_source" in frame else empty
    scope = frame["host_scope"].astype("string").fillna("") if "host_scope" in frame else empty
    return src.str.contains("|".join(ESXI_SOURCES)) | scope.str.startswith("esxi")


def _mixed_workloads(frame: pd.DataFrame) -> list[str]:
    """The workloads whose scored rows were measured under both a CPU set and the QEMU process."""
    if "host_scope" not in frame or "workload" not in frame or not len(frame):
        return []
    scored = frame[frame["cpu_per_mib"].notna()] if "cpu_per_mib" in frame else frame
    kinds = scored.assign(_cpus=scored["host_scope"] == CPUS).groupby("workload", dropna=False)["_cpus"].nunique()
    return sorted(str(w) for w, n in kinds.items() if n > 1)


def scope_text(frame: pd.DataFrame) -> str:
    """The Method sheet's 'Collector scope' line: which scope the scored figures are of, and what it includes."""
    scopes = _scopes(frame)
    parts: list[str] = []
    if CPUS in scopes:
        sets = sorted({str(c) for c in frame.loc[frame["host_scope"] == CPUS, "host_cpus"].dropna()}) \
            if "host_cpus" in frame else []
        if False in vcpu_places(frame):
            parts.append(f"cpus: the host CPU set {', '.join(sets) or '(not recorded)'} measured system-wide (technote "
                         "004's scope, on software emulation): QEMU's I/O path (main loop, iothreads, aio workers) "
                         "confined to it, and its vCPU threads kept off it with the harness for the window, because "
                         "under software emulation (accel = tcg) a vCPU thread is the emulated guest itself (it "
                         "translates and runs the guest's instructions), not the host's I/O path. Counted: QEMU's "
                         "I/O-path threads, the kernel's work, interrupts and softirqs on the set, and any other "
                         "process that ran there (the Scopes sheet names them). Not counted: the emulated guest (its "
                         "vCPU role is on the I/O path sheet) and work that escaped to other CPUs (the Scopes sheet's "
                         "leak columns). On a KVM host the vCPU threads run on the set too: there they are the guest "
                         "and its device exits, which 004's scope includes")
        else:
            parts.append(f"cpus: the host CPU set {', '.join(sets) or '(not recorded)'} measured system-wide (technote "
                         "004's scope), every QEMU thread of the VM confined to it and the harness kept off it for "
                         "the window. Counted: the guest (under TCG the vCPU thread is the emulated guest), every QEMU "
                         "thread, the kernel's work, interrupts and softirqs on the set, and any other process that "
                         "ran there (the Scopes sheet names them). Not counted: work that escaped to other CPUs (the "
                         "Scopes sheet's leak columns)")
    if PROCESS in scopes or any(s.endswith("qemu processes") for s in scopes):
        parts.append("qemu-process: the QEMU process alone (perf stat -p and /proc per thread). Not counted: the "
                     "kernel's work for the guest's I/O outside QEMU's threads (block completions in interrupt and "
                     "softirq context, an iSCSI or NVMe/TCP initiator's work queues, the storage interrupts)")
    esxi = frame[_is_esxi(frame)] if len(frame) else frame
    if len(esxi):
        srcs = sorted({str(s) for s in esxi["host_source"].dropna()})
        parts.append(f"ESXi: {', '.join(srcs)}, the VM's own CPU figures on the host (its worlds), ESXi's own CPU "
                     "source; no CPU set is measured there")
    others = [s for s in scopes if s not in (CPUS, PROCESS) and not s.endswith("qemu processes")
              and not s.startswith("esxi")]
    if others:
        parts.append(", ".join(others))
    if not parts:
        return "(not recorded)"
    mixed = _mixed_workloads(frame)
    if mixed:
        parts.append(f"WARNING: workload {', '.join(mixed)} holds measurements of a CPU set and of the QEMU process "
                     "(a run resumed across the change of scope, or data sets read together): their figures are "
                     "not of the same thing and their configurations should not be ranked together; score one "
                     "scope at a time")
    scored = "Scores, ranks and the Answer page use the figures of the scope each measurement was taken in"
    if scopes == [CPUS]:
        scored = "Scores, ranks and the Answer page use the CPU set's figures (the matrix's scope); the QEMU " \
                 "process's are beside them on the Scopes sheet"
    return "; ".join(parts) + f". {scored}."


SCOPE_COLUMNS: list[Column] = [
    ("Configuration", "config", "@"), ("Workload", "workload", "@"), ("Repeats", "n", "0"),
    ("CPU/MiB, set (scored)", "set_cpu_per_mib", "cpu"), ("CPU/MiB, QEMU process", "proc_cpu_per_mib", "cpu"),
    ("vCPU threads ran", "vcpu_place", "@"), ("Set CPU outside QEMU", "cpu_outside_share", "0.0%"),
    ("ctx/MiB, set (scored)", "set_ctx_per_mib", "0.00"), ("ctx/MiB, QEMU process", "proc_ctx_per_mib", "0.00"),
    ("Set ctx outside QEMU", "ctx_outside_share", "0.0%"),
    ("Storage IRQs outside set", "irq_leak_share", "0.0%"),
    ("Storage softirqs outside set", "softirq_leak_share", "0.0%"),
    ("Others' CPU s on set (mean)", "on_set_cpu_s", "0.00"),
    ("Largest others on set (last repeat)", "on_set_top", "@"),
    ("Rank, set", "rank_set", "0"), ("Rank, QEMU process", "rank_process", "0"),
    ("Ranks differ", "ranks_differ", "@"), ("CPU set", "host_cpus", "@"), ("CPU unit", "cpu_per_mib_unit", "@"),
]


def _share(part: float, whole: float) -> float | None:
    return 1.0 - part / whole if whole and whole > 0 else None


def _vcpu_place(grp: pd.DataFrame) -> str | None:
    """Where a configuration's vCPU threads ran in its windows: on the set, or beside the harness (accel = tcg)."""
    kinds = vcpu_places(grp)
    if not kinds:
        return None
    if kinds == {True}:
        return "on the set"
    return "beside the harness" if kinds == {False} else "mixed"


def _leak(outside: pd.Series, on_set: pd.Series) -> float | None:
    total = float(outside.sum()) + float(on_set.sum())
    return float(outside.sum()) / total if outside.notna().any() and total > 0 else None


def _process_ranks(measured: pd.DataFrame, cv_limit: float) -> dict[tuple[Any, ...], int]:
    """The efficiency ranks the configurations get when scored on the QEMU process's figures instead."""
    proc = measured.copy()
    proc["cpu_per_mib"] = proc["proc_cpu_per_mib"]
    proc["ctx_per_mib"] = proc["proc_ctx_per_mib"]
    proc["cpu_total_source"] = "the QEMU process's (host.process)"
    proc = proc[proc["cpu_per_mib"].notna()]
    if proc.empty:
        return {}
    cells = score_cells(proc, cv_limit=cv_limit, with_iopath=False).cells
    if cells.empty or "rank" not in cells:
        return {}
    return {tuple(r[k] for k in CELL_KEYS): int(r["rank"]) for _, r in cells.iterrows()}


def scope_table(frame: pd.DataFrame, result: EfficiencyResult) -> pd.DataFrame:
    """Per configuration measured with a CPU set: the set's and the process's figures, the shares outside
    QEMU's threads, the leak, the other tasks on the set, and the rank under each scope."""
    if "host_scope" not in frame or "proc_cpu_per_mib" not in frame:
        return pd.DataFrame()
    measured = frame[(frame["host_scope"] == CPUS) & frame["cpu_per_mib"].notna()]
    if measured.empty:
        return pd.DataFrame()
    set_ranks: dict[tuple[Any, ...], int] = {}
    if len(result.cells) and "rank" in result.cells:
        set_ranks = {tuple(r[k] for k in CELL_KEYS): int(r["rank"]) for _, r in result.cells.iterrows()}
    proc_ranks = _process_ranks(measured, result.cv_limit)
    rows = []
    for key, grp in measured.groupby(CELL_KEYS, dropna=False, sort=False):
        rec: dict[str, Any] = dict(zip(CELL_KEYS, key))
        rec["config"] = config_label(rec["controller"], rec["aio"], rec["iothread"], rec["cache"])
        rec["n"] = len(grp)
        rec["host_cpus"] = ", ".join(sorted({str(c) for c in grp["host_cpus"].dropna()})) or None
        rec["cpu_per_mib_unit"] = grp["cpu_per_mib_unit"].iloc[0]
        rec["set_cpu_per_mib"] = float(grp["cpu_per_mib"].mean())
        rec["proc_cpu_per_mib"] = float(grp["proc_cpu_per_mib"].mean()) if grp["proc_cpu_per_mib"].notna().all() \
            else None
        both_ctx = grp["ctx_per_mib"].notna().all() and grp["proc_ctx_per_mib"].notna().all()
        rec["set_ctx_per_mib"] = float(grp["ctx_per_mib"].mean()) if grp["ctx_per_mib"].notna().all() else None
        rec["proc_ctx_per_mib"] = float(grp["proc_ctx_per_mib"].mean()) if grp["proc_ctx_per_mib"].notna().all() \
            else None
        cpu_in, ctx_in = (grp[c] if c in grp else grp[c.replace("proc_set_", "proc_")]
                          for c in ("proc_set_cpu_total", "proc_set_ctx_switches"))
        rec["cpu_outside_share"] = _share(float(cpu_in.sum()), float(grp["cpu_total"].sum())) \
            if cpu_in.notna().all() else None
        rec["ctx_outside_share"] = _share(float(ctx_in.sum()), float(grp["ctx_switches"].sum())) \
            if both_ctx and ctx_in.notna().all() else None
        rec["vcpu_place"] = _vcpu_place(grp)
        rec["irq_leak_share"] = _leak(grp["leak_irq_outside"], grp["leak_irq_on_set"])
        rec["softirq_leak_share"] = _leak(grp["leak_softirq_outside"], grp["leak_softirq_on_set"])
        rec["on_set_cpu_s"] = float(grp["on_set_cpu_s"].mean()) if grp["on_set_cpu_s"].notna().any() else None
        tops = grp["on_set_top"].dropna()
        rec["on_set_top"] = str(tops.iloc[-1]) if len(tops) else None
        rec["rank_set"] = set_ranks.get(tuple(key))
        rec["rank_process"] = proc_ranks.get(tuple(key))
        differ = rec["rank_set"] is not None and rec["rank_process"] is not None and \
            rec["rank_set"] != rec["rank_process"]
        rec["ranks_differ"] = "yes" if differ else None
        rows.append(rec)
    out = pd.DataFrame(rows)
    return out.sort_values(["workload", "rank_set", "config"], kind="stable", na_position="last").reset_index(drop=True)


def _ranking_lines(table: pd.DataFrame) -> list[str | tuple[str, str]]:
    lines: list[str | tuple[str, str]] = []
    for (wl, metric), grp in table.groupby(["workload", "cpu_metric"], dropna=False, sort=False):
        ranked = grp.dropna(subset=["rank_set", "rank_process"])
        if len(ranked) < 2:
            continue
        by_set = ", ".join(f"{c} ({int(r)})" for c, r in ranked.sort_values(["rank_set", "config"])[
            ["config", "rank_set"]].itertuples(index=False))
        by_proc = ", ".join(f"{c} ({int(r)})" for c, r in ranked.sort_values(["rank_process", "config"])[
            ["config", "rank_process"]].itertuples(index=False))
        if ranked["ranks_differ"].notna().any():
            lines.append((f"{wl} ({metric})", f"the scopes rank the configurations differently (rank in brackets). "
                                              f"Set (scored): {by_set}. QEMU process: {by_proc}."))
        else:
            lines.append((f"{wl} ({metric})", f"both scopes rank the configurations alike (rank in brackets): "
                                              f"{by_set}."))
    return lines


def method_lines(frame: pd.DataFrame, table: pd.DataFrame) -> list[str | tuple[str, str]]:
    """Method lines on the CPU set's figures and the ranking under each scope, where a set was measured."""
    if CPUS not in _scopes(frame):
        return []
    sets = ", ".join(sorted({str(s) for s in table["host_cpus"].dropna()})) if len(table) else ""
    return [
        "# The CPU set (host scope cpus) and the QEMU process",
        ("Scored", f"the CPU set {sets or '(not recorded)'} (the matrix's scope): its figures are the Scores sheet's "
                   "and the Answer page's. The QEMU process was measured in the same windows; the Scopes sheet shows "
                   "both per configuration."),
        ("Set CPU figure", "without hardware cycles: the set's busy time, its elapsed time over the window (/proc/"
                           "uptime) times its CPU count minus /proc/stat's idle and iowait of its CPUs; user + nice "
                           "and system + irq + softirq are the split (clock ticks), steal is counted as work. With "
                           "hardware counters: perf stat -a -C <set> cycles:u + cycles:k."),
        ("Set context switches", "perf stat -a -C <set> context-switches: every switch on the set, to and from idle "
                                 "included; the set's window holds the process's, so it is never below the count "
                                 "of the process's threads that ran on the set."),
        ("vCPU threads ran", "on the set (KVM: the guest is part of the set) or beside the harness (software "
                             "emulation: the vCPU thread is the emulated guest, kept off the set). The QEMU process's "
                             "columns are the whole process either way (the scope \"process\" would measure)."),
        ("Outside QEMU's threads", "1 - the CPU (or switches) of the QEMU threads that ran on the set / the set's, "
                                   "summed over the repeats (the threads on the set: the process's figures, minus "
                                   "its vCPU role's where the vCPUs ran beside the harness): what the set carried "
                                   "besides QEMU's own threads (the kernel's work in interrupt and softirq context, "
                                   "kernel threads, and other processes that ran there)."),
        ("Leak", "the storage path's interrupts (numbered device lines of /proc/interrupts) and softirqs (BLOCK, "
                 "IRQ_POLL, NET_RX, NET_TX, TASKLET) taken on CPUs outside the set, as a share of all of them in the "
                 "window: the part of the I/O path the set's figures miss."),
        ("Other tasks on the set", "processes other than the measured QEMU seen running on the set (every task read "
                                   "once a second; approximate): their CPU seconds are in the set's figures. On a "
                                   "shared machine they can be most of the set's time."),
        ("Rank under each scope", "'Rank, set' is the Scores sheet's rank; 'Rank, QEMU process' is the rank the same "
                                  "scoring gives the process's figures."),
        *_ranking_lines(table),
    ]


def write_scopes_sheet(wb: Workbook, table: pd.DataFrame) -> bool:
    """The Scopes sheet (the :func:`scope_table`), where a CPU set was measured; returns whether it was written."""
    if table.empty:
        return False
    write_table(wb.create_sheet(SCOPES_SHEET), table, SCOPE_COLUMNS, drop_empty=True, title_cols=2)
    return True
