"""The efficiency workbook's evidence: how findings are tested (Method), and the I/O-path lens (its sheet).

:func:`add_evidence_sheets` adds both to a workbook whose Method sheet is written; it is
idempotent (called once per workbook).
"""

from __future__ import annotations


import pandas as pd
from openpyxl import Workbook
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from ..score.efficiency import EfficiencyResult
from ..score.findings import efficiency_findings
from ..score.iopath import UNIT, IOPathResult
from ..read.safe import safe_value
from .sheets import WRAP, Column, fit_height, header, header_letter, write_lines, write_table
from ..score.bootstrap import RESAMPLES
from ..score.stats import TEST_NAME

IOPATH_SHEET = "IO path"

IOPATH_COLUMNS: list[Column] = [
    ("Rank", "rank", "0"), ("Configuration", "config", "@"), ("Workload", "workload", "@"), ("Repeats", "n", "0"),
    (f"I/O-path CPU/MiB mean ({UNIT})", "cpu_per_mib_mean", "0.000"),
    ("I/O-path CPU/MiB CI95 low", "cpu_per_mib_ci_low", "0.000"),
    ("I/O-path CPU/MiB CI95 high", "cpu_per_mib_ci_high", "0.000"),
    ("I/O-path CPU/MiB CV", "cpu_per_mib_cv", "0.0%"),
    ("I/O-path ctx/MiB mean", "ctx_per_mib_mean", "0.00"),
    ("I/O-path ctx/MiB CI95 low", "ctx_per_mib_ci_low", "0.00"),
    ("I/O-path ctx/MiB CI95 high", "ctx_per_mib_ci_high", "0.00"),
    ("I/O-path ctx/MiB CV", "ctx_per_mib_cv", "0.0%"),
    ("Normalized CPU", "norm_cpu", "0.000"), ("Normalized ctx", "norm_ctx", "0.000"),
    ("I/O-path score", "score", "0.000"), ("Score 95 % low (bootstrap)", "score_ci_low", "0.000"),
    ("Score 95 % high (bootstrap)", "score_ci_high", "0.000"),
    ("Evidence vs next rank", "evidence", "@"), ("Test vs next rank", "vs_next", "@"),
    ("Whole-process rank", "process_rank", "0"),
    ("Why blank", "io_note", "@"), ("Group", "norm_group", "@"),
]


def method_lines(result: EfficiencyResult) -> list[str | tuple[str, str]]:
    """What the Method sheet adds: the significance test, what 'indicative' means, the I/O-path lens."""
    io: IOPathResult | None = result.iopath
    lines: list[str | tuple[str, str]] = [
        "# When a difference counts (findings)",
        ("Significance test", f"{TEST_NAME}, over the repeats of the two configurations compared. A finding says "
                              "that one configuration is better, more or less CPU intensive, or generates more or "
                              "fewer context switches only where p < 0.05; otherwise it says the difference is "
                              "within noise and gives both means with their 95 % confidence intervals and p."),
        ("Score interval", f"a score depends on every configuration's mean (the min and max of the normalization "
                           f"come from all of them), so its uncertainty is found by redrawing all the means together "
                           f"and scoring again, {RESAMPLES:,} times (fixed seed: the same data gives the same "
                           "interval): each configuration's CPU/MiB and ctx/MiB means are drawn as mean + t(n - 1) x "
                           "standard error (jointly, with the repeats' own covariance), min-max normalized within "
                           "the group and scored exactly as the plotted score. 'Score 95 % low/high' is the 2.5th "
                           "to 97.5th percentile of a configuration's resampled scores, widened where needed to "
                           "contain the plotted score, never below 0: the error bars of the score chart."),
        ("Why not resample the repeats", "with 2-3 repeats, resampling them with replacement gives only 3-10 "
                                         "distinct means, none outside the repeats' range: two configurations whose "
                                         "repeats overlap would still be 'lower in 100 % of resamples'. The t draw "
                                         "has the spread the repeats imply for their mean (the same t as the 95 % "
                                         "CI of the mean)."),
        ("Ranks above", "configuration A 'ranks above' B where A's resampled score is lower than B's in at least "
                        "95 % of the resamples, 'below' where in at most 5 %, and they are 'tied within noise' "
                        "between. The words and the Evidence column come from the same verdict. The ranks stay as "
                        "the method computes them from the means; 'Evidence vs next rank' on the Scores sheet gives "
                        "every rank against the next, the best-score finding claims rank 1 only where it ranks "
                        "above rank 2. Per-metric claims (more or less CPU, more or fewer context switches) are "
                        "Welch's t-test on the repeats, as above."),
        ("Indicative", "a comparison with a configuration measured once has no variance and cannot be tested: its "
                       "finding starts 'Indicative (single repeat, not tested)', its Evidence is 'indicative', and "
                       "charts of such data say so in their titles. Run at least 2 repeats (3 or more to separate "
                       "differences of a few percent)."),
    ]
    if io is None:
        return lines
    lines += [
        "# The I/O path alone (sheet 'IO path')",
        ("What it counts", "QEMU's threads other than its vCPU threads: the main loop, iothreads, aio workers and any "
                           "other helper thread, from the per-thread split every journal record carries "
                           "(host.by_role). "
                           "The whole-process figures (Scores) include the vCPU threads, which run the guest itself."),
        ("I/O-path CPU per MiB", f"(user + system CPU seconds of those threads x 1000) / MiB, in {UNIT}: the "
                                 "per-thread split is /proc CPU time, so this lens is in CPU time even where the whole "
                                 "process was counted in cycles."),
        ("I/O-path context switches per MiB", "(voluntary + involuntary context switches of those threads) / MiB, "
                                              "from /proc."),
        ("I/O-path score", "the method's score on these two figures: normalized within the group, sqrt of the sum "
                           "of squares, ranked and tested the same way."),
        ("Blank I/O-path values", "a measurement whose record has no per-thread split (ESXi, a plain result file, an "
                                  "older record, or a split without a vCPU or main-loop thread) has no I/O-path "
                                  "figures: blank with the reason in 'Why blank', never 0."),
    ]
    if io.emulated:
        lines.append(("Software emulation", "these runs used software emulation (accel = tcg, CPU metric "
                                            "cpu_time): the vCPU thread's CPU is mostly the emulated guest "
                                            "(instruction translation), not storage work, so the whole-process "
                                            "figures are dominated by it; the I/O-path lens leaves it out."))
    return lines


def write_iopath_sheet(wb: Workbook, result: EfficiencyResult) -> None:
    io: IOPathResult | None = result.iopath
    if io is None:
        return
    ws = wb.create_sheet(IOPATH_SHEET)
    cells: pd.DataFrame = io.scored.cells.copy() if len(io.scored.cells) else pd.DataFrame()
    ranks = {(str(g), str(c)): int(r) for g, c, r in zip(result.cells["workload"], result.cells["config"],
                                                         result.cells["rank"])} if len(result.cells) else {}
    if len(cells):
        cells["process_rank"] = [ranks.get((str(w), str(c))) for w, c in zip(cells["workload"], cells["config"])]
        cells["io_note"] = None
    blank = io.missing.assign(rank=None) if len(io.missing) else pd.DataFrame()
    table = pd.concat([f for f in (cells, blank) if len(f)], ignore_index=True) if len(cells) or len(blank) \
        else pd.DataFrame(columns=[c[1] for c in IOPATH_COLUMNS])
    last = write_table(ws, table, IOPATH_COLUMNS, drop_empty=True, title_cols=2)
    col = header_letter(ws, "I/O-path score")
    if len(cells) and col:
        ws.conditional_formatting.add(f"{col}2:{col}{1 + len(cells)}", ColorScaleRule(
            start_type="min", start_color="63BE7B", mid_type="percentile", mid_value=50, mid_color="FFEB84",
            end_type="max", end_color="F8696B"))
    r = last + 2
    ws.cell(row=r, column=1, value="Findings on the I/O path alone").font = Font(bold=True, size=12)
    r += 1
    header(ws, r, ["#", "Evidence", "Finding"])
    # the finding spans the columns from C to the table's width (or 100 units), wrapped in a row tall enough
    ncols = max(3, ws.max_column)
    span = sum(ws.column_dimensions[get_column_letter(j)].width or 10.0 for j in range(3, ncols + 1))
    last_col = 3
    while last_col < ncols and sum(ws.column_dimensions[get_column_letter(j)].width or 10.0
                                   for j in range(3, last_col + 1)) < min(span, 100.0):
        last_col += 1
    width = sum(ws.column_dimensions[get_column_letter(j)].width or 10.0 for j in range(3, last_col + 1))
    for i, f in enumerate(efficiency_findings(io.scored, what="I/O-path score"), start=1):
        r += 1
        # the number at the top of its row, beside its evidence and finding (as on the Summary sheet)
        ws.cell(row=r, column=1, value=i).alignment = Alignment(horizontal="center", vertical="top")
        ws.cell(row=r, column=2, value=safe_value(f.status or None)).alignment = WRAP
        ws.cell(row=r, column=3, value=safe_value(f.text)).alignment = WRAP
        ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=last_col)
        fit_height(ws, r, [(f.text, width), (f.status, ws.column_dimensions["B"].width or 10.0)])
    for note in io.notes + (["No measurement has the per-thread split: nothing to score."] if not len(cells) else []):
        r += 2
        ws.cell(row=r, column=2, value=safe_value(note)).alignment = WRAP
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=last_col)
        fit_height(ws, r, [(note, width + (ws.column_dimensions["B"].width or 10.0))])
    ws.print_area = f"A1:{get_column_letter(ncols)}{r}"


def add_evidence_sheets(wb: Workbook, result: EfficiencyResult) -> None:
    """Method lines on significance and the I/O path, and the I/O path sheet (once per workbook)."""
    if IOPATH_SHEET in wb.sheetnames or getattr(wb, "_stormatrix_evidence", False):
        return
    wb._stormatrix_evidence = True
    if "Method" in wb.sheetnames:
        method = wb["Method"]
        write_lines(method, method_lines(result), start_row=method.max_row + 2)
    write_iopath_sheet(wb, result)
