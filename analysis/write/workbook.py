"""The two customer workbooks (openpyxl, native Excel charts), assembled sheet by sheet.

- efficiency (``stormatrix report``): Summary (findings), Method, Measurements, Scores, Charts,
  Environment, Chart data;
- comparison (``stormatrix compare``): Summary, Method, Measurements, Comparison, Averages, Charts,
  Environment, Chart data.

The pieces live next door: :mod:`.sheets` (styles, columns, table and text writers), :mod:`.charts`
(charts and their *Chart data*), :mod:`.output` (the tidy CSV and the atomic replace every output goes
through). Every string that came from outside goes through :func:`stormatrix.analysis.read.safe.safe_value`
so that it can never become a formula.
"""


from __future__ import annotations

import math

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
from openpyxl import Workbook
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Font

from ...core import __version__
from ...core.model import NOT_APPLICABLE, format_size
from ..score.answer import QUESTION, answer_rows, answer_sentence, conditions, cpu_figure, main_group
from ..read.bulk import no_cyclic_gc
from .charts import comparison_charts, efficiency_charts
from ..score.compare import ComparisonResult
from ..score.efficiency import EfficiencyResult
from ..score.findings import Finding
from ..read.ingest import IngestResult
from .savefiles import save_workbook, write_tidy_csv
from ..read.safe import safe_value
from .measurements import MEASUREMENT_FORMATS, write_frame
from .sheets import (HOST_POINT_COLUMNS, POINT_COLUMNS, SCORE_COLUMNS, TITLE_FONT, WRAP, Column, fit_height, header,
                     header_letter, print_setup, run_dates, write_environment, write_lines, write_summary, write_table)
from .evidencesheets import IOPATH_SHEET, add_evidence_sheets
from .rolesheet import ROLES_SHEET, write_roles_sheet
from .rolesheet import answer_rows as aio_answer_rows
from .rolesheet import headline as aio_headline
from .rolesheet import method_lines as roles_method_lines
from .scopes import SCOPES_SHEET, scope_table, scope_text, write_scopes_sheet
from .scopes import method_lines as scope_method_lines

ANSWER_SHEET = "Answer"

__all__ = ["write_comparison_workbook", "write_efficiency_workbook", "write_tidy_csv"]


#: What each engine did with its I/O, so fio and DiskSpd cells side by side measure the same thing
#: (the flags come from the guest module's Get-StormatrixEngineFlag and are recorded with every result).
ENGINE_METHOD = {
    "fio": "fio with direct=1 (O_DIRECT / FILE_FLAG_NO_BUFFERING: no guest page cache, no forced write-through), "
           "ioengine windowsaio on Windows and libaio on Linux; buffers filled with random data; threads left to "
           "the guest's scheduler.",
    "diskspd": "DiskSpd with -Su (the guest's software cache off, like fio's direct=1 - not -Sh, which would add "
               "write-through to every write), -n (no thread affinity, as fio) and -Z1M (writes from a 1 MiB "
               "random buffer, as fio's random data); -L latency, -Rxml output.",
}


def _engine_lines(frame: pd.DataFrame) -> list[str | tuple[str, str]]:
    if "engine" not in frame.columns:
        return []
    engines = sorted({str(e).lower() for e in frame["engine"].dropna()})
    return [(f"Engine: {'DiskSpd' if e == 'diskspd' else e}", ENGINE_METHOD[e]) for e in engines
            if e in ENGINE_METHOD]


def _method_efficiency(result: EfficiencyResult, frame: pd.DataFrame) -> list[str | tuple[str, str]]:
    sources = sorted({str(s) for s in frame["host_source"].dropna()}) or ["(not recorded)"]
    metrics = sorted({str(m) for m in frame["cpu_metric"].dropna()}) or ["(none)"]
    esxi: list[str | tuple[str, str]] = [
        ("aio n/a", "ESXi has no aio, iothread or cache setting for a virtual disk: an ESXi configuration is its "
                    "controller alone (aio and cache n/a, iothread blank) and is named by it, e.g. 'pvscsi'.")
    ] if (frame["aio"] == NOT_APPLICABLE).any() else []
    return [
        "# What was measured",
        "For each storage configuration (controller x aio mode x iothread x cache) and workload, the guest ran "
        "fio (or DiskSpd) while the host collector counted CPU and context switches over the measurement "
        "window. Each configuration was measured one or more times (repeats); one Measurements row is one repeat.",
        *esxi,
        *_engine_lines(frame),
        ("CPU metric", ", ".join(metrics) + ". cycles = user + kernel hardware CPU cycles (perf); cpu_time = CPU "
                       "time, used where hardware cycles are not available (VMs, CI machines). The unit of every CPU "
                       "figure is in the 'CPU unit' column: cycles/MiB or CPU-ms/MiB."),
        ("CPU figure scored", _cpu_figure_text(frame)),
        ("Collector", ", ".join(sources)),
        ("Collector scope", scope_text(frame)),
        ("MiB", "bytes the guest's engine transferred in the window / 2^20."),
        "# Formulas",
        ("CPU per MiB", "cpu_total / MiB: (user + kernel cycles) / MiB, or (CPU seconds of the CPU figure above "
                        "x 1000) / MiB."),
        ("Context switches per MiB", "context switches in the window / MiB."),
        ("Mean, std, CV", "mean over the repeats of a configuration; sample standard deviation (n - 1); "
                          "CV = std / mean."),
        ("95 % confidence interval", "mean +/- t(0.975, n - 1) x std / sqrt(n); empty for a single repeat."),
        ("Normalized value", "(value - min) / (max - min) over the configuration means being compared. When "
                             "max = min (all configurations equal, or only one) every normalized value is 0: "
                             "the metric does not separate them and adds nothing to the score."),
        ("Efficiency score", "sqrt(normalized CPU per MiB^2 + normalized context switches per MiB^2): the "
                             "distance from the best possible point (0, 0). Lower is better; 0 is best, "
                             "sqrt(2) = 1.414 is worst."),
        ("Score without context switches", "a host without a context-switch count for a VM (ESXi) leaves ctx/MiB "
                                           "blank, never 0; the 'ctx/MiB note' column says why. A group in which any "
                                           "configuration lacks ctx/MiB is scored on the metric all of them have: "
                                           "score = normalized CPU per MiB (0 best, 1 worst), normalized ctx blank; "
                                           "Rank by ctx then ranks only the configurations that have ctx/MiB. The "
                                           "'Score basis' column says which score each row holds."),
        ("Ranks", "1 = best; ties share the lower rank. Overall by score; within each controller (which aio "
                  "mode is best for it); within each aio mode; and by each metric alone."),
        ("Groups", "Configurations are compared (normalized and ranked) within one workload and one CPU metric. "
                   "Cycles and CPU time are never normalized together: a data set holding both is split into "
                   "groups, named in the 'Group' column."),
        ("CV flag", f"a configuration whose CV of CPU or context switches per MiB exceeds {result.cv_limit:.0%} "
                    "is flagged: its repeats disagree, so its rank is uncertain. Re-run it on a quiet host."),
        "# Reading the results",
        "Scores are normalized within this data set only and cannot be compared with another workbook's scores "
        "(technote 004, Important Considerations). Measurements without host figures are listed but not scored.",
    ]


# 120 units (a unit prints about 0.25 cm wide in LibreOffice), printed on A4 portrait at the scale that fits the page:
# with the per-controller verdicts and the score chart the page is taller than wide, so portrait prints it about
# 25 % larger than landscape did (which filled half the paper's width)
ANSWER_WIDTHS = {"A": 14.0, "B": 50.0, "C": 9.0, "D": 10.0, "E": 15.0, "F": 22.0}
ANSWER_SPAN = sum(ANSWER_WIDTHS.values())
CM_PER_UNIT = 0.25


def _answer_sheet(ws: Any, data: IngestResult, result: EfficiencyResult, score_chart: Any | None) -> None:
    """The Answer page (:mod:`.answer`): question, answer, conditions, findings with their numbers in their
    own columns, and the score chart, on one A4 portrait page."""
    for col, w in ANSWER_WIDTHS.items():
        ws.column_dimensions[col].width = w
    print_setup(ws, landscape=False, one_page=True)
    group = main_group(result)
    ws.cell(row=1, column=1, value=safe_value(QUESTION)).font = TITLE_FONT
    r = 2
    if group is None:
        ws.cell(row=r, column=1, value="No configuration could be scored: see the Summary sheet's notes.")
        return
    sentence = answer_sentence(result, group)
    aio_head = aio_headline(data.frame)
    if aio_head:
        sentence += " Native against threads on the I/O-path switches per I/O: " + aio_head  # aio=... stays lower case
    others = [g for g in result.groups if g != group]
    if others:
        sentence += f" (Workload {group}; {len(others)} other group(s) on the Summary and Scores sheets.)"
    cell = ws.cell(row=r, column=1, value=safe_value(sentence))
    cell.font, cell.alignment = Font(bold=True, size=11), WRAP
    ws.merge_cells(start_row=r, start_column=1, end_row=r, end_column=6)
    fit_height(ws, r, [(sentence, ANSWER_SPAN)])
    r += 2
    ws.cell(row=r, column=1, value="Conditions").font = Font(bold=True, size=12)
    for label, text in conditions(data, result):
        r += 1
        ws.cell(row=r, column=1, value=safe_value(label)).font = Font(bold=True)
        ws.cell(row=r, column=1).alignment = WRAP
        ws.cell(row=r, column=2, value=safe_value(text)).alignment = WRAP
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=6)
        fit_height(ws, r, [(text, ANSWER_SPAN - ANSWER_WIDTHS["A"])])
    r += 2
    ws.cell(row=r, column=1, value="Findings").font = Font(bold=True, size=12)
    r += 1
    header(ws, r, ["Topic", "Finding", "Value", "Compared with", "Unit", "Evidence"])
    fit_height(ws, r, [("Compared with", ANSWER_WIDTHS["D"])])
    for row in answer_rows(result, group):
        r += 1
        values = [row.topic, row.text, row.value, row.of, row.unit, row.evidence or None]
        for j, v in enumerate(values, start=1):
            c = ws.cell(row=r, column=j, value=safe_value(v))
            c.alignment = WRAP
            if j in (3, 4) and v is not None:
                c.number_format = row.fmt
        fit_height(ws, r, [(row.topic, ANSWER_WIDTHS["A"]), (row.text, ANSWER_WIDTHS["B"]),
                           (row.unit, ANSWER_WIDTHS["E"]), (row.evidence, ANSWER_WIDTHS["F"])])
    aio_rows = aio_answer_rows(data.frame)
    if aio_rows:
        r += 2
        title = "aio=threads against aio=native, per controller"
        ws.cell(row=r, column=1, value=title).font = Font(bold=True, size=12)
        r += 1
        header(ws, r, ["Controller", "Answer", "threads - native", "native", "Unit", "Evidence"])
        fit_height(ws, r, [("threads - native", ANSWER_WIDTHS["C"])])
        for topic, text, value, of, unit, evidence in aio_rows:
            r += 1
            for j, v in enumerate([topic, text, value, of, unit, evidence], start=1):
                c = ws.cell(row=r, column=j, value=safe_value(v))
                c.alignment = WRAP
                if j in (3, 4) and v is not None:
                    c.number_format = "0.00"
            fit_height(ws, r, [(topic, ANSWER_WIDTHS["A"]), (text, ANSWER_WIDTHS["B"]),
                               (unit, ANSWER_WIDTHS["E"]), (evidence, ANSWER_WIDTHS["F"])])
    r += 2
    if score_chart is not None:
        chart = score_chart()
        # 0.75 cm a bar: a configuration's name wrapped on two lines still fits beside its bar, else LibreOffice
        # leaves every other label out (seen with 10 bars on 7.5 cm)
        bars = int((result.cells["norm_group"] == group).sum())
        chart.width, chart.height = ANSWER_SPAN * CM_PER_UNIT, max(7.5, 2.0 + 0.75 * bars)
        ws.add_chart(chart, f"A{r}")
        r += math.ceil(chart.height / 0.45)  # rows of the default height the chart covers: the print area holds it
    ws.print_area = f"A1:F{r}"


# ctx columns blank for every configuration (ESXi counts no context switches for a VM) stay, saying why
NO_CTX = {f: "no configuration has context-switch counts; the 'ctx/MiB note' column says why" for f in
          ("ctx_per_mib_mean", "ctx_per_mib_std", "ctx_per_mib_cv", "ctx_per_mib_ci_low", "ctx_per_mib_ci_high",
           "norm_ctx", "rank_ctx")}


def _cpu_figure_text(frame: pd.DataFrame) -> str:
    """What cpu_total is, and what the collector recorded where user + system disagrees with it."""
    text = (f"{cpu_figure(frame)}. Every CPU/MiB, normalized CPU and score uses this one figure (cpu_total on "
            "the Measurements sheet). perf's task-clock is the time the process's threads ran, accounted in "
            "nanoseconds; user + system (cpu_user, cpu_system) is the kernel's split of it, sampled in clock ticks.")
    notes = frame["cpu_split_note"].dropna() if "cpu_split_note" in frame else pd.Series(dtype=object)
    if len(notes):
        text += (f" The collector noted a difference of more than 3 % for {len(notes)} of {len(frame)} measurements "
                 f"(cpu_split_note), e.g.: {notes.iloc[0]}.")
    return text


def write_efficiency_workbook(path: str | Path, data: IngestResult, result: EfficiencyResult,
                              findings: list[Finding], *, label: str | None = None,
                              inputs: Sequence[str] = ()) -> Path:
    """The ``stormatrix report`` workbook. Returns the path written."""
    with no_cyclic_gc():
        return _efficiency_workbook(path, data, result, findings, label=label, inputs=inputs)


def _efficiency_workbook(path: str | Path, data: IngestResult, result: EfficiencyResult,
                         findings: list[Finding], *, label: str | None, inputs: Sequence[str]) -> Path:
    wb = Workbook()
    answer = wb.active
    answer.title = ANSWER_SHEET
    ws = wb.create_sheet("Summary")
    frame = data.frame
    metrics = sorted({str(m) for m in result.cells["cpu_metric"].dropna()}) if len(result.cells) else []
    units = sorted({str(u) for u in result.cells["cpu_per_mib_unit"].dropna()}) if len(result.cells) else []
    facts = [("Data set", label or ", ".join(sorted({str(s) for s in frame["side"].dropna()})) or "(not named)"),
             ("CPU metric", ", ".join(metrics) or "none (no host figures)"),
             ("CPU unit", ", ".join(units) or "(none)"),
             ("Configurations scored", len(result.cells)),
             ("Measurements (repeats)", len(frame)),
             ("CV limit", f"{result.cv_limit:.0%}"),
             ("Significance", "Welch's t-test, 95 %; single repeats are indicative"),
             ("Run dates", run_dates(frame)),
             ("Generated", datetime.now(timezone.utc).isoformat(timespec="seconds"))]
    notes = [str(p) for p in data.problems] + data.notes + result.notes
    write_summary(ws, "stormatrix efficiency report", facts, findings, notes)
    write_lines(wb.create_sheet("Method"), _method_efficiency(result, frame))
    write_frame(wb.create_sheet("Measurements"), frame, MEASUREMENT_FORMATS)
    scores = wb.create_sheet("Scores")
    last = write_table(scores, result.cells, SCORE_COLUMNS, drop_empty=True, title_cols=2, explain=NO_CTX)
    col = header_letter(scores, "Efficiency score")
    if len(result.cells) and col:
        scores.conditional_formatting.add(f"{col}2:{col}{last}", ColorScaleRule(
            start_type="min", start_color="63BE7B", mid_type="percentile", mid_value=50, mid_color="FFEB84",
            end_type="max", end_color="F8696B"))
        score_charts = efficiency_charts(wb, result)
    group = main_group(result)
    _answer_sheet(answer, data, result, score_charts.get(group) if group and len(result.cells) else None)
    write_environment(wb.create_sheet("Environment"), data.environment, _report_facts(frame, inputs))
    add_evidence_sheets(wb, result)  # the significance Method lines and the I/O-path sheet
    role_lines = roles_method_lines(frame)  # the native-vs-threads verdict figure, and the per-role sheet
    if role_lines:
        method = wb["Method"]
        write_lines(method, role_lines, start_row=method.max_row + 2)
    write_roles_sheet(wb, frame)
    scopes = scope_table(frame, result)  # a CPU set's figures beside the QEMU process's (issue 33)
    scope_lines = scope_method_lines(frame, scopes)
    if scope_lines:
        method = wb["Method"]
        write_lines(method, scope_lines, start_row=method.max_row + 2)
    write_scopes_sheet(wb, scopes)
    _order(wb, [ANSWER_SHEET, "Summary", "Method", "Scores", SCOPES_SHEET, ROLES_SHEET, IOPATH_SHEET, "Charts",
                "Measurements", "Environment", "Chart data"])
    return save_workbook(wb, path)


def _report_facts(frame: pd.DataFrame, inputs: Sequence[str], side: str = "report") -> list[tuple[str, str, str]]:
    return [(side, "stormatrix version", __version__),
            (side, "generated", datetime.now(timezone.utc).isoformat(timespec="seconds")),
            (side, "inputs", ", ".join(str(i) for i in inputs) or "(not given)"),
            (side, "run dates", run_dates(frame)),
            (side, "measurements", str(len(frame)))]


def write_comparison_workbook(path: str | Path, a: IngestResult, b: IngestResult, result: ComparisonResult,
                              findings: list[Finding], *, inputs_a: Sequence[str] = (),
                              inputs_b: Sequence[str] = ()) -> Path:
    """The ``stormatrix compare`` workbook. Returns the path written."""
    with no_cyclic_gc():
        return _comparison_workbook(path, a, b, result, findings, inputs_a=inputs_a, inputs_b=inputs_b)


def _comparison_workbook(path: str | Path, a: IngestResult, b: IngestResult, result: ComparisonResult,
                         findings: list[Finding], *, inputs_a: Sequence[str], inputs_b: Sequence[str]) -> Path:
    wb = Workbook()
    ws = wb.active
    ws.title = "Summary"
    la, lb = result.label_a, result.label_b
    s = result.summary
    facts = [("A (baseline)", la), ("B", lb), ("Points compared", s["points"]),
             (f"Points where {lb} has more IOPS", s["iops_wins"]),
             (f"Points where {lb} has lower latency", s["latency_wins"]),
             ("Significance level (alpha)", result.alpha),
             ("Host CPU metric A / B", f"{s.get('host_metric_a') or 'none'} / {s.get('host_metric_b') or 'none'}"),
             (f"Points where {lb} needs less host CPU/MiB",
              f"{s.get('host_cpu_wins', 0)} of {s.get('host_cpu_points', 0)} comparable"),
             ("Run dates A", run_dates(a.frame)), ("Run dates B", run_dates(b.frame)),
             ("Generated", datetime.now(timezone.utc).isoformat(timespec="seconds"))]
    notes = ([f"A: {p}" for p in a.problems] + [f"B: {p}" for p in b.problems] + a.notes + b.notes
             + result.notes)
    write_summary(ws, f"stormatrix comparison: {lb} vs {la}", facts, findings, notes)
    write_lines(wb.create_sheet("Method"), _method_comparison(result))
    both = pd.concat([a.frame.assign(side=la), b.frame.assign(side=lb)], ignore_index=True)
    write_frame(wb.create_sheet("Measurements"), both, MEASUREMENT_FORMATS)
    points = result.points.copy()
    points["bs_label"] = [format_size(int(v)) for v in points["bs"]]
    cols = [(h.replace(" A", f" {la}") if h.endswith(" A") or " A (" in h else h, f, fmt) for h, f, fmt in
            POINT_COLUMNS + _host_columns(points)]
    cols = [(h.replace(" A (", f" {la} (").replace(" B (", f" {lb} (") if h.endswith(")") else
             (h[:-2] + f" {lb}" if h.endswith(" B") else h), f, fmt) for h, f, fmt in cols]
    cws = wb.create_sheet("Comparison")
    last = write_table(cws, points, cols, title_cols=4)  # a blank side is explained in its host note
    for field, good in (("iops_gain_pct", True), ("lat_reduction_pct", True), ("cpu_reduction_pct", True),
                        ("ctx_reduction_pct", True)):
        col = header_letter(cws, next(h for h, f, _ in cols if f == field))
        if col is None:
            continue  # left out: no point has a value for it
        cws.conditional_formatting.add(f"{col}2:{col}{last}", ColorScaleRule(
            start_type="min", start_color="F8696B", mid_type="num", mid_value=0, mid_color="FFFFFF",
            end_type="max", end_color="63BE7B"))
    avg = wb.create_sheet("Averages")
    by_qd = result.by_qd.copy()
    by_bs = result.by_bs.copy()
    by_bs["bs_label"] = [format_size(int(v)) for v in by_bs["bs"]]
    end = write_table(avg, by_qd, [("rw", "rw", "@"), ("QD", "iodepth", "0"),
                                   ("Mean IOPS gain % (across block sizes)", "iops_gain_pct", "0.0"),
                                   ("Mean latency reduction % (across block sizes)", "lat_reduction_pct", "0.0"),
                                   ("Points", "points", "0")], autofilter=False)
    write_table(avg, by_bs, [("rw", "rw", "@"), ("Block size", "bs_label", "@"), ("Block size (bytes)", "bs", "0"),
                             ("Mean IOPS gain % (across queue depths)", "iops_gain_pct", "0.0"),
                             ("Mean latency reduction % (across queue depths)", "lat_reduction_pct", "0.0"),
                             ("Points", "points", "0")], start_row=end + 3, autofilter=False, freeze=False)
    avg.column_dimensions["C"].width = avg.column_dimensions["D"].width = 24
    comparison_charts(wb, result)
    env = wb.create_sheet("Environment")
    env_a = a.environment.assign(scope=[f"A: {x}" for x in a.environment["scope"]])
    env_b = b.environment.assign(scope=[f"B: {x}" for x in b.environment["scope"]])
    write_environment(env, pd.concat([env_a, env_b], ignore_index=True),
                      _report_facts(a.frame, inputs_a, f"A: {la}") + _report_facts(b.frame, inputs_b, f"B: {lb}"))
    _order(wb, ["Summary", "Method", "Measurements", "Comparison", "Averages", "Charts", "Environment",
                "Chart data"])
    return save_workbook(wb, path)


def _host_columns(points: pd.DataFrame) -> list[Column]:
    """:data:`HOST_POINT_COLUMNS` with the CPU unit in the headers when one unit holds for every point."""
    units = sorted({str(u) for col in ("cpu_unit_a", "cpu_unit_b") if col in points for u in points[col].dropna()})
    unit = units[0] if len(units) == 1 else ("no host metrics" if not units else "unit per row: see Host CPU metric")
    if "cpu_per_mib_unit" in points:  # the per-row "cpu" number format: cycles or CPU-ms
        points["cpu_per_mib_unit"] = [u if u is not None else (ua or ub) for u, ua, ub in
                                      zip(points["cpu_per_mib_unit"], points["cpu_unit_a"], points["cpu_unit_b"])]
    return [(h.format(unit=unit), f, fmt) for h, f, fmt in HOST_POINT_COLUMNS]


def _method_comparison(result: ComparisonResult) -> list[str | tuple[str, str]]:
    a, b = result.label_a, result.label_b
    return [
        "# What is compared",
        f"A = {a} (the baseline), B = {b}. A point is one (rw, block size, queue depth). Repeats of a point are "
        "averaged first; every percentage below is computed from those means.",
        "# Formulas",
        ("IOPS gain %", "(IOPS_B / IOPS_A - 1) x 100. Positive: B delivers more IOPS."),
        ("Latency reduction %", "(1 - latency_B / latency_A) x 100, on mean total I/O latency (submission + "
                                "completion). Positive: B has lower latency."),
        ("Bandwidth gain %", "(MiB/s_B / MiB/s_A - 1) x 100."),
        ("Wins", "B wins a point in IOPS when IOPS_B > IOPS_A, in latency when latency_B < latency_A."),
        ("Averages", "by queue depth: the mean of a percentage over the block sizes at that queue depth; by "
                     "block size: the mean over the queue depths. Per rw mode."),
        ("Peak bandwidth", "the highest point mean of each side (at whatever point it occurs)."),
        ("Significance", f"where both sides have >= 2 repeats of a point: Welch's t-test (unequal variances) of B "
                         f"against A, for IOPS and for latency; p >= {result.alpha:g} is marked n.s. (not "
                         "significant): the difference is within the repeat-to-repeat noise. 'no repeats' = not "
                         "tested; 'no variance' = both sides repeated identical values, the test is undefined."),
        ("Host CPU per MiB", "per point and side: the mean over the repeats of the host CPU the measured QEMU "
                             "processes used in the window per MiB moved: (user + kernel cycles) / MiB where perf "
                             "counted hardware cycles, else (CPU seconds x 1000) / MiB (CPU-ms/MiB), the CPU seconds "
                             "being perf's task-clock where perf ran (host.cpu_total_source names it; user + system "
                             "from /proc, sampled in clock ticks, can differ from it: host.cpu_split_note). "
                             "The 'Host CPU metric' column says which. A suite point counts all the side's VMs' "
                             "QEMU processes over the bytes all its guests moved."),
        ("Host CPU/MiB reduction %", "(1 - CPU/MiB_B / CPU/MiB_A) x 100; ratio B/A = CPU/MiB_B / CPU/MiB_A. "
                                     "Positive reduction (ratio below 1): B needs less host CPU per MiB. Only "
                                     "where both sides measured the same metric: cycles and CPU time are never "
                                     "compared with each other."),
        ("ctx/MiB reduction %", "(1 - ctx/MiB_B / ctx/MiB_A) x 100, ctx/MiB = context switches in the window / MiB."),
        ("Blank host columns", "a side without host metrics at a point (no host collector could reach its "
                               "QEMU processes) leaves its host columns and the comparison blank; 'Host metrics "
                               "note' says why, and the Environment sheet's host_collector says what ran."),
        "# Units",
        ("IOPS", "I/O operations per second, all directions."), ("Latency", "microseconds (us)."),
        ("Bandwidth", "MiB/s (2^20 bytes per second)."),
        ("Host CPU/MiB", "cycles/MiB (metric cycles) or CPU-ms/MiB (metric cpu_time), as in the headers."),
    ]


def _order(wb: Workbook, names: list[str]) -> None:
    # openpyxl's only public reordering is move_sheet (one sheet by an offset); the stable sort of its
    # sheet list does the whole order at once and keeps unnamed sheets in their order at the end
    wb._sheets.sort(key=lambda s: names.index(s.title) if s.title in names else len(names))
