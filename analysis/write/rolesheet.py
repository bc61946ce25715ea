"""The per-role sheet ('Roles'), the Answer page's native-vs-threads rows, and their Method lines
(:mod:`.roles` computes; this module writes)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

from ..score.labels import config_label
from ..score.roles import (VERDICT_FIGURE, VERDICT_WHY, AioVerdict, aio_verdicts, per_io_frame, role_table,
                           verdict_sentence)
from ..read.byrole import vcpu_places
from ..read.safe import safe_value
from .sheets import WRAP, fit_height, header, print_setup

ROLES_SHEET = "Roles"


def with_config(frame: pd.DataFrame) -> pd.DataFrame:
    if "config" in frame.columns or frame.empty:
        return frame
    f = frame.copy()
    f["config"] = [config_label(c, a, i, k) for c, a, i, k in
                   f[["controller", "aio", "iothread", "cache"]].itertuples(index=False)]
    return f


def verdicts_of(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[AioVerdict]]:
    per_io = per_io_frame(with_config(frame))
    return per_io, aio_verdicts(per_io)


def _num(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def answer_rows(frame: pd.DataFrame) -> list[tuple[str, str, float | None, float | None, str, str]]:
    """(topic, sentence, threads - native, native mean, unit, evidence) per controller: the Answer page's rows."""
    _, verdicts = verdicts_of(frame)
    rows = []
    for v in verdicts:
        evidence = ("decided at 95 %" if v.decided else "within noise" if math.isfinite(v.p) else "indicative") + \
            (f": Welch p = {v.p:.2g}, CV {v.cv_native:.1%} / {v.cv_threads:.1%}" if math.isfinite(v.p) else "")
        topic = v.controller + (f" ({v.group})" if len({x.group for x in verdicts}) > 1 else "")
        rows.append((topic, verdict_sentence(v, named=False), _num(v.diff), _num(sum(v.native) / len(v.native)),
                     "I/O-path switches per I/O: threads - native vs native", evidence))
    return rows


def headline(frame: pd.DataFrame) -> str:
    """The Answer sentence's native-vs-threads half: how many controllers each way, at 95 % (empty: none compared)."""
    _, verdicts = verdicts_of(frame)
    if not verdicts:
        return ""
    more = [v for v in verdicts if v.decided and v.diff > 0]
    less = [v for v in verdicts if v.decided and v.diff < 0]
    open_ = [v for v in verdicts if not v.decided]
    n = len(verdicts)
    parts = []
    if more:
        lo, hi = min(v.diff for v in more), max(v.diff for v in more)
        span = f"{lo:.2f}" if len(more) == 1 else f"{lo:.2f}-{hi:.2f}"
        parts.append(f"aio=threads costs more than aio=native for {len(more)} of {n} controllers "
                     f"({span} more I/O-path switches per I/O, 95 %)")
    if less:
        parts.append(f"aio=threads costs less for {len(less)} of {n}")
    if open_:
        parts.append(f"undecided (within noise) for {len(open_)} of {n}: " + ", ".join(v.controller for v in open_))
    return "; ".join(parts) + "."


def method_lines(frame: pd.DataFrame) -> list[str | tuple[str, str]]:
    per_io, verdicts = verdicts_of(frame)
    if per_io.empty:
        return []
    lines: list[str | tuple[str, str]] = [
        "# aio=threads against aio=native (Answer page, sheet 'Roles')",
        ("Verdict figure", f"{VERDICT_FIGURE}: {VERDICT_WHY}"),
        ("Verdict test", "per controller (same iothread, cache and workload): the repeats of aio=threads against "
                         "those of aio=native on the verdict figure, Welch's t-test, two-sided, 95 %; 'decided' "
                         "where p < 0.05. The difference (threads - native) is given with its 95 % interval "
                         "(Welch-Satterthwaite), per I/O and per MiB (x I/Os per MiB = 1 MiB / block size)."),
        ("Per-role table", "sheet 'Roles': per configuration, every thread role's switches (voluntary + "
                           "involuntary) and CPU time per I/O, mean and standard deviation over the repeats. CPU is "
                           "the threads' own run time (schedstat, ns) where the collector read it, else user + "
                           "system (/proc ticks). The roles add up to the process's per-thread totals; aio-worker "
                           "is about 0 with aio=native (no I/O goes through the thread pool; an idle worker left "
                           "from the VM's start may end in the window)."),
        ("Whole-process noise", _noise_line(role_table(per_io), vcpu_places(frame) == {False}, per_io, frame)
         + _handoff_line(per_io)),
    ]
    pacing = _pacing_line(frame)
    if pacing:
        lines.append(("Guest pacing", pacing))
    steal = _steal_line(per_io, frame)
    if steal:
        lines.append(("Steal", steal))
    return lines


#: seconds of a window the machine's hypervisor took from the set above which the Method sheet names it
STEAL_LOUD_S = 0.5


def _steal_line(per_io: pd.DataFrame, frame: pd.DataFrame) -> str:
    """Windows in which the machine running the VMs (itself a VM) lost the measured CPU to its hypervisor
    (/proc/stat steal on the set, column set_steal_s), and the verdict figure's spread with and without them.
    Empty where no window lost more than :data:`STEAL_LOUD_S`."""
    if "set_steal_s" not in frame or per_io.empty or "path_ctx_io" not in per_io:
        return ""
    steal = frame["set_steal_s"]
    loud = steal > STEAL_LOUD_S
    if not loud.fillna(False).any():
        return ""
    keys = [c for c in ("workload", "controller", "aio", "iothread", "cache") if c in per_io.columns]
    flagged = per_io.assign(_loud=loud.reindex(per_io.index).fillna(False).astype(bool))

    def cv_range(f: pd.DataFrame) -> str:
        cvs = _cvs(f.groupby(keys, dropna=False)["path_ctx_io"])
        return f"{cvs.min():.1%}-{cvs.max():.1%}" if len(cvs) else "n/a"

    quiet = flagged[~flagged["_loud"]]
    medians = quiet.groupby(keys)["path_ctx_io"].median().rename("_median")
    stolen = flagged[flagged["_loud"]].join(medians, on=keys)
    shifts = (stolen["path_ctx_io"] - stolen["_median"]).dropna()
    shift = (f" Those windows' verdict figure lies {shifts.min():+.2f} to {shifts.max():+.2f} switches per I/O from "
             "the median of their configuration's other windows." if len(shifts) else "")
    return (f"the machine that ran these VMs is itself a virtual machine: its hypervisor took the measured CPU "
            f"away for more than {STEAL_LOUD_S:g} s in {int(loud.sum())} of {int(steal.notna().sum())} windows (up "
            f"to {steal.max():.2f} s; /proc/stat steal of the set, column set_steal_s)." + shift +
            " The verdict figure's CV over a configuration's repeats is "
            f"{cv_range(flagged)} with those windows and {cv_range(quiet)} without them; the "
            "verdicts use every window. Run on a machine of your own (or with the neighbours quiet) to avoid it.")


def _pacing_line(frame: pd.DataFrame) -> str:
    """How the local guest's fio paced its rate, where the records say (``guest.fio_timerslack_ns``)."""
    col = frame["guest_fio_timerslack_ns"] if "guest_fio_timerslack_ns" in frame else pd.Series(dtype=float)
    slack = col.dropna()
    if slack.empty:
        return ""
    lo, hi = slack.min() / 1e6, slack.max() / 1e6
    span = f"{lo:g} ms" if lo == hi else f"{lo:g}-{hi:g} ms"
    return (f"the guest's fio ran with a {span} timer slack in {len(slack)} of {len(frame)} measurements (their "
            "records, guest.fio_timerslack_ns): fio waits out a rate gap shorter than the nanosleep granularity it "
            "measured at its start by spinning, and the slack makes that granularity at least the slack, so every "
            "gap below it is spun in every window. A sleeping fio would arm a guest timer per I/O, which under "
            "software emulation is a QEMU timer the main loop runs, counted in the I/O path's figures, and only in "
            "the windows where fio happened to sleep; on KVM the guest's timers are the kernel's.")


def _cv_range(table: pd.DataFrame, col: str) -> str:
    v = table[f"{col}_cv"].dropna() if f"{col}_cv" in table else pd.Series(dtype=float)
    return f"{v.min():.0%}-{v.max():.0%}" if len(v) else "n/a (single repeats)"


def _noise_line(table: pd.DataFrame, vcpu_off_set: bool = False, per_io: pd.DataFrame | None = None,
                frame: pd.DataFrame | None = None) -> str:
    """Why the whole-process figures can be noisier than the verdict figure, with this data set's numbers: the
    vCPU's share of the process's switches and CPU, the spreads, and the other tasks' CPU on the set."""
    carry = ("The whole-process figures carry the vCPU's spread; the CPU set's do not (the vCPUs ran beside the "
             "harness, off the set) but carry the I/O path's spread and the other tasks that ran on the set."
             if vcpu_off_set else
             "The whole-process (and CPU-set) figures carry the vCPU's spread, and the CPU set's also other tasks "
             "that ran on it.")
    share = ""
    if per_io is not None and not per_io.empty and {"vcpu_ctx_io", "roles_ctx_io"} <= set(per_io.columns):
        ctx = per_io["vcpu_ctx_io"].sum() / per_io["roles_ctx_io"].sum() if per_io["roles_ctx_io"].sum() else None
        cpu = (per_io["vcpu_cpu_us_io"].sum() / per_io["roles_cpu_us_io"].sum()
               if per_io["roles_cpu_us_io"].sum() else None)
        if ctx is not None and cpu is not None:
            share = f"it holds {cpu:.0%} of the QEMU threads' CPU and {ctx:.0%} of their switches in this data set; "
    others = ""
    if frame is not None and "on_set_cpu_s" in frame and frame["on_set_cpu_s"].notna().any():
        busy = frame["on_set_cpu_s"].dropna()
        loud = busy[busy > OTHERS_LOUD_S]
        if len(loud):
            others = (f" Other tasks ran on the set for more than {OTHERS_LOUD_S:g} CPU-s in {len(loud)} of "
                      f"{len(busy)} windows (up to {busy.max():.1f} s: column on_set_cpu_s, sheet 'Measurements'): "
                      "those windows' CPU-set figures hold their work.")
    return ("the vCPU thread (under software emulation: the emulated guest) runs the guest, not the I/O path: "
            + share + f"its switches per I/O vary by CV {_cv_range(table, 'vcpu_ctx_io')} and its CPU per I/O by "
            f"{_cv_range(table, 'vcpu_cpu_us_io')} over a configuration's repeats, the I/O path's switches per I/O "
            f"by {_cv_range(table, 'path_ctx_io')} and its CPU per I/O by {_cv_range(table, 'path_cpu_us_io')} "
            "(sheet 'Roles'). " + carry + others + (_set_cpu_line(frame) if vcpu_off_set else ""))


def _cvs(groups: Any) -> pd.Series:
    """Each group's CV (sample sd / mean) of a grouped column; groups of one value, or a mean of 0, left out."""
    return groups.agg(lambda v: v.std() / v.mean() if len(v) > 1 and v.mean() else math.nan).dropna()


def _set_cpu_line(frame: pd.DataFrame | None) -> str:
    """Where the CPU set's CPU per MiB (the scored figure) spreads, measured: per window the set's CPU time is
    QEMU's threads that ran on it (``proc_set_cpu_total``) plus the rest (the kernel's work, interrupts, other
    processes); their spreads within a configuration (pooled over the configurations) say which one moves it."""
    need = {"cpu_per_mib", "cpu_total", "proc_set_cpu_total", "on_set_cpu_s"}
    if frame is None or not need <= set(frame.columns):
        return ""
    keys = [c for c in ("workload", "controller", "aio", "iothread", "cache", "cpu_metric") if c in frame.columns]
    f = frame.dropna(subset=["cpu_per_mib", "cpu_total", "proc_set_cpu_total"])
    if not keys or f.empty:
        return ""
    f = f.assign(rest=f["cpu_total"] - f["proc_set_cpu_total"])
    groups = f.groupby(keys, dropna=False)
    sizes = groups.size()
    if not (sizes > 1).any():
        return ""
    cvs = _cvs(groups["cpu_per_mib"])

    def pooled(col: str) -> float:
        var = groups[col].var().fillna(0.0)
        dof = (sizes - 1).clip(lower=0)
        return math.sqrt(float((var * dof).sum() / dof.sum()))

    busy = f["on_set_cpu_s"].dropna()
    seen = (f" The processes seen on the set (sampled once a second, so short-lived ones escape it) took up to "
            f"{busy.max():.2f} CPU-s of a window (column on_set_cpu_s).") if len(busy) else ""
    qemu, rest = pooled("proc_set_cpu_total"), pooled("rest")
    moves = ("the set's spread is mostly QEMU's own threads'" if qemu > 2 * rest else
             "the set's spread is mostly the rest's" if rest > 2 * qemu else
             "the two spread alike (neither sd is twice the other)")
    return (f" Over a configuration's repeats the CPU set's CPU per MiB (the scored figure) varies by CV "
            f"{cvs.min():.0%}-{cvs.max():.0%}. Per window the set's CPU time is QEMU's threads that ran on it "
            f"({f['proc_set_cpu_total'].min():.2f}-{f['proc_set_cpu_total'].max():.2f} s) plus the rest, the "
            f"kernel's work, interrupts and other processes ({f['rest'].min():.2f}-{f['rest'].max():.2f} s); "
            f"within a configuration the first spreads by a pooled sd of {qemu:.3f} s and the rest by {rest:.3f} s: "
            f"{moves}." + seen)


#: other tasks' CPU on the measured set in one window above which the Method sheet names them as a cause
OTHERS_LOUD_S = 0.5

HANDOFF_TOLERANCE = 0.10  # main-loop vs vCPU switches: closer than this in every aio=native window reads as hand-offs


def _handoff_line(per_io: pd.DataFrame) -> str:
    """The I/O path's own spread named where this data set shows its cause: with aio=native the main loop's
    switches equal the vCPU's window by window (the two threads hand the CPU and QEMU's big lock to each other),
    so the main loop's count is that of the hand-offs. Empty where the data does not show it."""
    if per_io.empty or "aio" not in per_io:
        return ""
    n = per_io[(per_io["aio"] == "native") & (per_io["vcpu_ctx_io"] > 0)]
    if len(n) < 2:
        return ""
    ratio = n["main_loop_ctx_io"] / n["vcpu_ctx_io"]
    if not ((ratio - 1).abs() <= HANDOFF_TOLERANCE).all():
        return ""
    ml = n["main_loop_ctx_io"]
    return (f" The I/O path's own spread: in every aio=native window of this data set ({len(n)}) the main loop's "
            f"switches equal the vCPU's to within {(ratio - 1).abs().max():.1%} (the two threads hand the CPU and "
            f"QEMU's big lock to each other), and that count varies from window to window, {ml.min():.2f}-"
            f"{ml.max():.2f} main-loop switches per I/O: it is the emulator's hand-offs, not the aio mode's.")


#: the Workload column's text, set off from the CV figures right-aligned beside it
_WORKLOAD = Alignment(horizontal="left", indent=1)

#: the Roles sheet's rows per configuration: (column stem, label)
ROLE_ROWS = [("vcpu", "vcpu"), ("main_loop", "main-loop"), ("iothread", "iothread"), ("aio_worker", "aio-worker"),
             ("other", "other"), ("path", "I/O path (all but vcpu)")]


def write_roles_sheet(wb: Workbook, frame: pd.DataFrame) -> None:
    """The verdicts per controller, then per configuration and role the switches and CPU-µs per I/O (mean, sd,
    CV over the repeats): one row per configuration x role, so that the page prints readable."""
    per_io, verdicts = verdicts_of(frame)
    if per_io.empty:
        return
    ws = wb.create_sheet(ROLES_SHEET)
    print_setup(ws)
    for col, w in zip("ABCDEFGHIJKLM", (30, 24, 10, 10, 10, 10, 10, 10, 10, 18, 10, 10, 10)):
        ws.column_dimensions[col].width = w
    r = 1
    ws.cell(row=r, column=1, value=f"aio=threads against aio=native on the {VERDICT_FIGURE}").font = \
        Font(bold=True, size=12)
    r += 1
    heads2 = ["Controller", "Verdict", "native mean", "threads mean", "threads - native", "95 % low", "95 % high",
              "per MiB", "Welch p", "CPU µs per I/O diff", "CPU 95 % low", "CPU 95 % high", "CPU p"]
    header(ws, r, heads2)
    fit_height(ws, r, [(h, 9.0) for h in heads2])
    groups = {v.group for v in verdicts}
    for v in verdicts:
        r += 1
        name = v.controller + (f" ({v.group})" if len(groups) > 1 else "")
        vals = [name, v.words, sum(v.native) / len(v.native), sum(v.threads) / len(v.threads), v.diff, v.low,
                v.high, v.per_mib, v.p, v.cpu_diff_us, v.cpu_low, v.cpu_high, v.cpu_p]
        for j, x in enumerate(vals, start=1):
            c = ws.cell(row=r, column=j, value=safe_value(_num(x) if isinstance(x, float) else x))
            c.alignment = WRAP
            if isinstance(x, float):
                c.number_format = "0.0000" if j in (9, 13) else "0.000"
        fit_height(ws, r, [(name, 30.0), (v.words, 24.0)])
    r += 2
    ws.cell(row=r, column=1, value="Per thread role, per I/O (mean, standard deviation and CV over the repeats)"
            ).font = Font(bold=True, size=12)
    r += 1
    heads = ["Configuration", "Role", "Repeats", "Switches per I/O", "sd", "CV", "CPU µs per I/O", "sd", "CV",
             "Workload"]
    header(ws, r, heads)
    fit_height(ws, r, [(h, 9.0) for h in heads])
    table = role_table(per_io)
    table = table.sort_values([c for c in ("workload", "controller", "aio") if c in table.columns], kind="stable")
    for row in table.itertuples(index=False):
        d = row._asdict()
        for stem, label in ROLE_ROWS:
            r += 1
            line: list[Any] = [d["config"], label, d["n"]]
            for fig in ("ctx_io", "cpu_us_io"):
                col = f"{stem}_{fig}"
                line += [_num(d[f"{col}_mean"]), _num(d[f"{col}_sd"]), _num(d[f"{col}_cv"])]
            line.append(d.get("workload"))
            for j, x in enumerate(line, start=1):
                c = ws.cell(row=r, column=j, value=safe_value(x))
                if j in (4, 5, 7, 8):
                    c.number_format = "0.000" if j in (4, 5) else "0.0"
                elif j in (6, 9):
                    c.number_format = "0.0%"
                elif j == len(line):
                    c.alignment = _WORKLOAD
                if stem == "path":
                    c.font = Font(bold=True)
    r += 2
    note = ("Roles: vcpu = the vCPU thread(s) (under software emulation: the emulated guest); main-loop = QEMU's "
            "main thread; iothread = iothreads; aio-worker = thread-pool workers (aio=threads only); other = the "
            "rest (e.g. the monitor's thread). The I/O path is every role but vcpu. Switches are voluntary + "
            "involuntary; CPU is the threads' run time in µs per I/O.")
    ws.cell(row=r, column=1, value=safe_value(note)).alignment = WRAP
    ws.merge_cells(start_row=r, start_column=1, end_row=r, end_column=10)
    fit_height(ws, r, [(note, 120.0)])
