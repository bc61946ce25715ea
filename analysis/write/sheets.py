"""Worksheet building blocks shared by both workbooks: styles, column lists and table/text writers (the
Measurements sheet, one column per tidy-frame column, is :mod:`.measurements`).

Every string that came from outside (labels, VM names, file names, hostnames, config names) goes
through :func:`stormatrix.analysis.read.safe.safe_value` so that it can never become a formula.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import pandas as pd
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from ..score.findings import Finding
from ..read.safe import safe_value

HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="305496")
TITLE_FONT = Font(bold=True, size=14)
WRAP = Alignment(wrap_text=True, vertical="top")
# a long value in a table row: wrapped, but at the bottom like the row's other (one-line, bottom-aligned) cells,
# so a printed row's values stay side by side instead of the wrapped one sitting up beside the row before
WRAP_IN_ROW = Alignment(wrap_text=True)


LINE_PT = 15.0      # the height of one line of 11-pt text (LibreOffice does not grow the rows of a file it opens)
CHARS_PER_WIDTH = 1.0  # characters of average text per unit of column width (a unit is one '0' of the font)


def lines_needed(text: Any, width: float) -> int:
    """How many lines ``text`` wraps to in a column ``width`` units wide (each paragraph on its own)."""
    per_line = max(1.0, (width - 1.0) * CHARS_PER_WIDTH)
    return sum(max(1, math.ceil(len(part) / per_line)) for part in str(text).split("\n")) if text else 1


def fit_height(ws: Worksheet, row: int, texts: Iterable[tuple[Any, float]]) -> None:
    """Make ``row`` as tall as the tallest of its wrapped ``(text, width)`` cells."""
    ws.row_dimensions[row].height = LINE_PT * max([1] + [lines_needed(t, w) for t, w in texts])


def print_setup(ws: Worksheet, *, landscape: bool = True, one_page: bool = False) -> None:
    """A4, 1 cm margins, fit to the page width (and height with ``one_page``); a title row repeated on
    every printed page is set by the caller where the sheet has one."""
    ws.page_setup.orientation = "landscape" if landscape else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_margins.left = ws.page_margins.right = ws.page_margins.top = ws.page_margins.bottom = 0.4
    ws.page_margins.header = ws.page_margins.footer = 0.2
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 1 if one_page else 0


# Column = (header, field, number format). Formats: Excel codes, chosen per quantity.
Column = tuple[str, str, str]

# what a reader compares first, then the statistics behind it (a printed page shows Rank and Configuration
# on every page, so the later columns still say whose they are)
SCORE_COLUMNS: list[Column] = [
    ("Rank", "rank", "0"), ("Configuration", "config", "@"), ("Repeats", "n", "0"),
    ("CPU/MiB mean", "cpu_per_mib_mean", "cpu"), ("ctx/MiB mean", "ctx_per_mib_mean", "0.00"),
    ("Normalized CPU", "norm_cpu", "0.000"), ("Normalized ctx", "norm_ctx", "0.000"),
    ("Efficiency score", "score", "0.000"),
    ("Score 95 % low (bootstrap)", "score_ci_low", "0.000"),   # the interval through the whole normalization
    ("Score 95 % high (bootstrap)", "score_ci_high", "0.000"),
    ("Evidence vs next rank", "evidence", "@"),  # significant | within noise | indicative (bootstrap, 95 %)
    ("Test vs next rank", "vs_next", "@"),       # the words and the share of resamples, from one verdict
    ("CV flag", "cv_note", "@"),
    ("CPU/MiB std", "cpu_per_mib_std", "cpu"), ("CPU/MiB CV", "cpu_per_mib_cv", "0.0%"),
    ("CPU/MiB CI95 low", "cpu_per_mib_ci_low", "cpu"), ("CPU/MiB CI95 high", "cpu_per_mib_ci_high", "cpu"),
    ("ctx/MiB std", "ctx_per_mib_std", "0.00"), ("ctx/MiB CV", "ctx_per_mib_cv", "0.0%"),
    ("ctx/MiB CI95 low", "ctx_per_mib_ci_low", "0.00"), ("ctx/MiB CI95 high", "ctx_per_mib_ci_high", "0.00"),
    ("ctx/MiB note", "ctx_note", "@"),          # why the ctx columns are blank (ESXi: no such counter)
    ("Score basis", "score_basis", "@"),         # CPU/MiB and ctx/MiB, or CPU/MiB alone and why
    ("Rank in controller", "rank_in_controller", "0"), ("Rank in aio mode", "rank_in_aio", "0"),
    ("Rank by CPU", "rank_cpu", "0"), ("Rank by ctx", "rank_ctx", "0"),
    ("Controller", "controller", "@"), ("aio", "aio", "@"), ("iothread", "iothread", "@"), ("cache", "cache", "@"),
    ("Workload", "workload", "@"), ("CPU metric", "cpu_metric", "@"), ("CPU unit", "cpu_per_mib_unit", "@"),
    ("CPU figure", "cpu_total_source", "@"),     # what the CPU figure is: perf task-clock, cycles, /proc ticks
    ("Group", "norm_group", "@"), ("Cells in group", "cells_in_group", "0"),
    ("Engine", "engine", "@"),                   # fio or DiskSpd: what measured the configuration
]

POINT_COLUMNS: list[Column] = [
    ("rw", "rw", "@"), ("Block size", "bs_label", "@"), ("Block size (bytes)", "bs", "0"), ("QD", "iodepth", "0"),
    ("Repeats A", "n_a", "0"), ("Repeats B", "n_b", "0"),
    ("IOPS A", "iops_a", "#,##0"), ("IOPS B", "iops_b", "#,##0"), ("IOPS gain %", "iops_gain_pct", "0.0"),
    ("Latency A (us)", "lat_us_a", "0.0"), ("Latency B (us)", "lat_us_b", "0.0"),
    ("Latency reduction %", "lat_reduction_pct", "0.0"),
    ("Bandwidth A (MiB/s)", "bw_mib_s_a", "0.0"), ("Bandwidth B (MiB/s)", "bw_mib_s_b", "0.0"),
    ("Bandwidth gain %", "bw_gain_pct", "0.0"),
    ("B wins IOPS", "b_wins_iops", "@"), ("B wins latency", "b_wins_latency", "@"),
    ("p (IOPS, Welch)", "p_iops", "0.0000"), ("IOPS significance", "iops_significance", "@"),
    ("p (latency, Welch)", "p_latency", "0.0000"), ("Latency significance", "latency_significance", "@"),
]

# Host cost per MiB, after the columns above (their positions stay). "{unit}" is filled in per workbook.
HOST_POINT_COLUMNS: list[Column] = [
    ("Host CPU metric", "cpu_metric", "@"),
    ("Host CPU/MiB A ({unit})", "cpu_per_mib_a", "cpu"), ("Host CPU/MiB B ({unit})", "cpu_per_mib_b", "cpu"),
    ("Host CPU/MiB ratio B/A", "cpu_ratio", "0.000"), ("Host CPU/MiB reduction %", "cpu_reduction_pct", "0.0"),
    ("ctx/MiB A", "ctx_per_mib_a", "0.00"), ("ctx/MiB B", "ctx_per_mib_b", "0.00"),
    ("ctx/MiB ratio B/A", "ctx_ratio", "0.000"), ("ctx/MiB reduction %", "ctx_reduction_pct", "0.0"),
    ("B wins host CPU/MiB", "b_wins_cpu", "@"), ("Host metrics note", "host_note", "@"),
]


def header(ws: Worksheet, row: int, headers: Sequence[str]) -> None:
    for j, h in enumerate(headers, start=1):
        c = ws.cell(row=row, column=j, value=safe_value(h))
        c.font, c.fill = HEADER_FONT, HEADER_FILL
        c.alignment = Alignment(wrap_text=True, vertical="center")


def cpu_format(unit: Any) -> str:
    """The number format of a CPU/MiB figure: whole cycles, or CPU-ms to the microsecond."""
    return "#,##0" if str(unit).startswith("cycles") else "0.000"


MAX_WIDTH = 48.0      # a text column wider than this wraps (its rows grow) instead of running off the page
ONE_PAGE_WIDTH = 150.0  # units of column width that still print legibly fitted to one A4-landscape width


def cell_text(value: Any, fmt: str) -> str:
    """Roughly the text a cell shows: numbers as their format prints them, for the column's width."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if fmt.endswith("%"):
        return f"{value * 100:.1f}%"
    if fmt in ("#,##0", "0"):
        return f"{value:,.0f}"
    decimals = len(fmt.split(".")[1]) if "." in fmt else 3
    return f"{value:,.{decimals}f}"


def content_width(header_text: str, shown: Iterable[str]) -> float:
    """A column as wide as its widest value (a long text wraps at ``MAX_WIDTH``), and at least as wide as
    the longest word of its header (the header wraps over two or three lines)."""
    longest = max([len(v) for v in shown] + [0])
    words = max([len(w) for w in str(header_text).split()] + [4])
    head = max(words, math.ceil(len(str(header_text)) / 3))
    return float(min(MAX_WIDTH, max(longest, head) / CHARS_PER_WIDTH + 2.0))


def autosize(ws: Worksheet, *, max_width: float = MAX_WIDTH) -> None:
    """Size a sheet written cell by cell (Chart data): each column as wide as its widest value, header cells
    (bold on the header fill) wrapped over their words with their rows as tall as they need; a number as
    its format shows it (an unformatted float at up to 10 digits)."""
    widths: dict[int, float] = {}
    heads: list[Any] = []
    for row in ws.iter_rows():
        for c in row:
            if c.value is None:
                continue
            if c.fill is not None and c.fill.fgColor is not None and c.fill.fgColor.rgb == HEADER_FILL.fgColor.rgb:
                heads.append(c)
                continue
            plain = isinstance(c.value, float) and c.number_format == "General"
            shown = f"{c.value:.10g}" if plain else cell_text(c.value, c.number_format)
            widths[c.column] = max(widths.get(c.column, 0.0), min(max_width, len(shown) / CHARS_PER_WIDTH + 2.0))
    for c in heads:
        words = max([len(w) for w in str(c.value).split()] + [4]) / CHARS_PER_WIDTH + 2.0
        widths[c.column] = max(widths.get(c.column, 0.0), min(max_width, words))
    for j, w in widths.items():
        ws.column_dimensions[get_column_letter(j)].width = max(w, 6.0)
    for r in sorted({c.row for c in heads}):
        fit_height(ws, r, [(c.value, widths[c.column]) for c in heads if c.row == r])


def header_letter(ws: Worksheet, text: str, row: int = 1) -> str | None:
    """The column letter of the header cell reading ``text`` (None when the column was left out)."""
    for c in ws[row]:
        if c.value == text:
            return str(c.column_letter)
    return None


def print_table(ws: Worksheet, last_col: int, last_row: int, *, title_cols: int = 1,
                header_row: int | None = 1) -> None:
    """Print a table legibly: fitted to the page width when it is narrow enough to stay readable, else at
    full size across as many pages as it needs, its first column(s) and header repeated on each."""
    total = sum(ws.column_dimensions[get_column_letter(j)].width or 10.0 for j in range(1, last_col + 1))
    print_setup(ws)
    if total > ONE_PAGE_WIDTH:
        ws.page_setup.fitToWidth = 0
        ws.sheet_properties.pageSetUpPr.fitToPage = False
        ws.page_setup.scale = 75  # 8-pt print: about 150 units of columns to a page
        ws.print_title_cols = f"A:{get_column_letter(title_cols)}"
    if header_row is not None:
        ws.print_title_rows = f"{header_row}:{header_row}"
    ws.print_area = f"A1:{get_column_letter(max(last_col, 1))}{max(last_row, header_row or 1)}"


def write_table(ws: Worksheet, frame: pd.DataFrame, columns: Sequence[Column], *, start_row: int = 1,
                autofilter: bool = True, freeze: bool = True, widths: dict[str, float] | None = None,
                drop_empty: bool = False, title_cols: int = 1, explain: dict[str, str] | None = None) -> int:
    """A header row and one row per frame row; returns the last row written.

    The ``cpu`` format picks cycles (``#,##0``) or CPU-ms (``0.000``) per row from its unit, since one
    column may hold both when a data set was split into groups. Columns are as wide as their content (a
    long text wraps, and its row grows to hold it); ``drop_empty`` leaves out the columns no row has a value
    in, and the first header cell's comment names them, except those ``explain`` gives a reason for: they
    stay, with the reason as their header's comment.
    """
    data = {f: frame[f].tolist() for _, f, _ in columns if f in frame.columns}
    explain = explain or {}
    blank = [(h, f) for h, f, _ in columns if not any(cell_text(v, "@") for v in data.get(f, []))] if len(frame) else []
    empty = [h for h, f in blank if f not in explain] if drop_empty else []
    columns = [c for c in columns if c[0] not in empty]
    header(ws, start_row, [c[0] for c in columns])
    if empty:
        ws.cell(row=start_row, column=1).comment = Comment(
            "Left out because no row has a value: " + ", ".join(empty), "stormatrix")
    for j, (h, f, _) in enumerate(columns, start=1):
        if (h, f) in blank and f in explain:
            ws.cell(row=start_row, column=j).comment = Comment(f"Blank in every row: {explain[f]}", "stormatrix")
    units = frame["cpu_per_mib_unit"].tolist() if "cpu_per_mib_unit" in frame.columns else [None] * len(frame)
    shown: dict[int, list[str]] = {j: [] for j in range(1, len(columns) + 1)}
    for i in range(len(frame)):
        r = start_row + 1 + i
        for j, (_, f, fmt) in enumerate(columns, start=1):
            value = data[f][i] if f in data else None
            cell = ws.cell(row=r, column=j, value=safe_value(value))
            if isinstance(cell.value, (int, float)) and not isinstance(cell.value, bool):
                cell.number_format = cpu_format(units[i]) if fmt == "cpu" else fmt
            shown[j].append(cell_text(cell.value, cell.number_format if cell.number_format != "General" else fmt))
    last = start_row + len(frame)
    if autofilter and len(frame):
        ws.auto_filter.ref = f"A{start_row}:{get_column_letter(len(columns))}{last}"
    if freeze:
        ws.freeze_panes = ws.cell(row=start_row + 1, column=1)
    width: dict[int, float] = {}
    for j, (h, f, _) in enumerate(columns, start=1):
        width[j] = (widths or {}).get(f) or content_width(h, shown[j])
        letter = get_column_letter(j)
        current = ws.column_dimensions[letter].width if letter in ws.column_dimensions else None
        # a second table on the same sheet (Averages) keeps a column as wide as the widest of them
        ws.column_dimensions[letter].width = max(width[j], current or 0.0)
    fit_height(ws, start_row, [(h, width[j]) for j, (h, _, _) in enumerate(columns, start=1)])
    for i in range(len(frame)):
        texts = [(shown[j][i], width[j]) for j in shown if len(shown[j][i]) > width[j] * CHARS_PER_WIDTH - 2]
        if texts:
            for j in (j for j in shown if len(shown[j][i]) > width[j] * CHARS_PER_WIDTH - 2):
                ws.cell(row=start_row + 1 + i, column=j).alignment = WRAP_IN_ROW
            fit_height(ws, start_row + 1 + i, texts)
    print_table(ws, len(columns), last, title_cols=title_cols, header_row=start_row)
    return last


LABEL_WIDTH = 30.0   # the label column of the Method sheet
TEXT_WIDTH = 100.0   # the text beside it: 130 units in all print on one A4-landscape width


def write_lines(ws: Worksheet, lines: Iterable[str | tuple[str, str]], *, width: float = TEXT_WIDTH,
                start_row: int = 1) -> int:
    """Paragraphs across columns A and B (merged), or label/text pairs in A/B; a leading '# ' makes a bold
    heading. Every text wraps and its row is as tall as it needs. Returns the next free row (to add more
    lines below)."""
    ws.column_dimensions["A"].width = LABEL_WIDTH
    ws.column_dimensions["B"].width = width
    r = start_row
    for line in lines:
        if isinstance(line, tuple):
            label = ws.cell(row=r, column=1, value=safe_value(line[0]))
            label.font, label.alignment = Font(bold=True), WRAP
            ws.cell(row=r, column=2, value=safe_value(line[1])).alignment = WRAP
            fit_height(ws, r, [(line[0], LABEL_WIDTH), (line[1], width)])
        else:
            heading = line.startswith("# ")
            cell = ws.cell(row=r, column=1, value=safe_value(line[2:] if heading else line))
            cell.font = Font(bold=True, size=12) if heading else Font()
            cell.alignment = WRAP
            ws.merge_cells(start_row=r, start_column=1, end_row=r, end_column=2)
            if heading:
                ws.row_dimensions[r].height = LINE_PT * 1.4
            else:
                fit_height(ws, r, [(line, LABEL_WIDTH + width)])
        r += 1
    print_setup(ws)
    ws.print_area = f"A1:B{max(r - 1, 1)}"
    return r


# the facts' labels (A) hold the finding numbers below them; 165 units print on one A4-landscape width at ~80 %
SUMMARY_WIDTHS = {"A": 24.0, "B": 58.0, "C": 9.0, "D": 12.0, "E": 22.0, "F": 40.0}


def write_summary(ws: Worksheet, title: str, facts: list[tuple[str, Any]], findings: list[Finding],
                  notes: list[str]) -> None:
    """Facts (label in A, value in B), the findings with their numbers and evidence in their own columns,
    and the notes; every text wraps within its column and its row is as tall as it needs."""
    ws.cell(row=1, column=1, value=safe_value(title)).font = TITLE_FONT
    for col, w in SUMMARY_WIDTHS.items():
        ws.column_dimensions[col].width = w
    wide = sum(SUMMARY_WIDTHS.values()) - SUMMARY_WIDTHS["A"]
    r = 3
    for k, v in facts:
        label = ws.cell(row=r, column=1, value=safe_value(k))
        label.font, label.alignment = Font(bold=True), WRAP
        ws.cell(row=r, column=2, value=safe_value(v)).alignment = Alignment(wrap_text=True, horizontal="left",
                                                                            vertical="top")
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=6)
        fit_height(ws, r, [(k, SUMMARY_WIDTHS["A"]), (v, wide)])
        r += 1
    r += 1
    ws.cell(row=r, column=1, value="Findings").font = Font(bold=True, size=12)
    r += 1
    head = ["#", "Finding", "Value", "Unit", "Evidence (Welch's t-test or bootstrap, 95 %)",
            "Based on (numbers on the other sheets)"]
    header(ws, r, head)
    fit_height(ws, r, [(h, SUMMARY_WIDTHS[c]) for h, c in zip(head, "ABCDEF")])
    for i, f in enumerate(findings, start=1):
        r += 1
        status = getattr(f, "status", "")
        evidence = f"{status}: {f.detail}" if getattr(f, "detail", "") else status
        for j, v in enumerate([i, f.text, f.value, f.unit, evidence or None, f.basis], start=1):
            ws.cell(row=r, column=j, value=safe_value(v)).alignment = WRAP if j > 1 else \
                Alignment(horizontal="center", vertical="top")
        ws.cell(row=r, column=3).number_format = "0" if float(f.value).is_integer() and abs(f.value) >= 1 else \
            "0.000" if abs(f.value) < 10 else "0.0"
        fit_height(ws, r, [(f.text, SUMMARY_WIDTHS["B"]), (f.unit, SUMMARY_WIDTHS["D"]),
                           (evidence, SUMMARY_WIDTHS["E"]), (f.basis, SUMMARY_WIDTHS["F"])])
        if status == "indicative":
            sc = ws.cell(row=r, column=5)
            sc.font = Font(italic=True, color="9C5700")
            sc.fill = PatternFill("solid", fgColor="FFEB9C")
    if notes:
        r += 2
        ws.cell(row=r, column=1, value="Notes and skipped inputs").font = Font(bold=True, size=12)
        for n in notes:
            r += 1
            ws.cell(row=r, column=2, value=safe_value(n)).alignment = WRAP
            ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=6)
            fit_height(ws, r, [(n, wide)])
    print_setup(ws)
    ws.print_area = f"A1:F{r}"


def write_environment(ws: Worksheet, env: pd.DataFrame, extra: list[tuple[str, str, str]]) -> None:
    rows = pd.DataFrame(extra, columns=["scope", "item", "value"])
    frame = pd.concat([rows, env], ignore_index=True) if len(env) else rows
    write_table(ws, frame, [("Scope", "scope", "@"), ("Item", "item", "@"), ("Value", "value", "@")],
                widths={"scope": 30, "item": 34, "value": 80})


def run_dates(frame: pd.DataFrame) -> str:
    started = sorted(str(s) for s in frame["started"].dropna().tolist()) if "started" in frame else []
    return f"{started[0]} .. {started[-1]}" if started else "(not recorded)"
