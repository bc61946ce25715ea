"""Worksheet building blocks shared by both workbooks: styles, column lists and table/text writers.

Every string that came from outside (labels, VM names, file names, hostnames, config names) goes
through :func:`stormatrix.analysis.safe.safe_value` so that it can never become a formula.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import pandas as pd
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from .findings import Finding
from .safe import safe_value

HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="305496")
TITLE_FONT = Font(bold=True, size=14)
WRAP = Alignment(wrap_text=True, vertical="top")


LINE_PT = 15.0      # the height of one line of 11-pt text (LibreOffice does not grow the rows of a file it opens)
CHARS_PER_WIDTH = 1.1  # characters of average text per unit of column width (a unit is one '0' of the font)


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

SCORE_COLUMNS: list[Column] = [
    ("Rank", "rank", "0"), ("Configuration", "config", "@"), ("Controller", "controller", "@"),
    ("aio", "aio", "@"), ("iothread", "iothread", "@"), ("cache", "cache", "@"), ("Workload", "workload", "@"),
    ("CPU metric", "cpu_metric", "@"), ("CPU unit", "cpu_per_mib_unit", "@"), ("Repeats", "n", "0"),
    ("CPU/MiB mean", "cpu_per_mib_mean", "cpu"), ("CPU/MiB std", "cpu_per_mib_std", "cpu"),
    ("CPU/MiB CV", "cpu_per_mib_cv", "0.0%"), ("CPU/MiB CI95 low", "cpu_per_mib_ci_low", "cpu"),
    ("CPU/MiB CI95 high", "cpu_per_mib_ci_high", "cpu"),
    ("ctx/MiB mean", "ctx_per_mib_mean", "0.00"), ("ctx/MiB std", "ctx_per_mib_std", "0.00"),
    ("ctx/MiB CV", "ctx_per_mib_cv", "0.0%"), ("ctx/MiB CI95 low", "ctx_per_mib_ci_low", "0.00"),
    ("ctx/MiB CI95 high", "ctx_per_mib_ci_high", "0.00"),
    ("ctx/MiB note", "ctx_note", "@"),          # why the ctx columns are blank (ESXi: no such counter)
    ("Normalized CPU", "norm_cpu", "0.000"), ("Normalized ctx", "norm_ctx", "0.000"),
    ("Efficiency score", "score", "0.000"),
    ("Score 95 % low (bootstrap)", "score_ci_low", "0.000"),   # the interval through the whole normalization
    ("Score 95 % high (bootstrap)", "score_ci_high", "0.000"),
    ("Evidence vs next rank", "evidence", "@"),  # significant | within noise | indicative (bootstrap, 95 %)
    ("Test vs next rank", "vs_next", "@"),       # the words and the share of resamples, from one verdict
    ("Score basis", "score_basis", "@"),         # CPU/MiB and ctx/MiB, or CPU/MiB alone and why
    ("Rank in controller", "rank_in_controller", "0"), ("Rank in aio mode", "rank_in_aio", "0"),
    ("Rank by CPU", "rank_cpu", "0"), ("Rank by ctx", "rank_ctx", "0"),
    ("CV flag", "cv_note", "@"), ("Group", "norm_group", "@"), ("Cells in group", "cells_in_group", "0"),
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

MEASUREMENT_FORMATS = {"iops": "#,##0", "read_iops": "#,##0", "write_iops": "#,##0", "bw_mib_s": "0.00",
                       "mib": "0.00", "lat_mean_us": "0.0", "read_lat_mean_us": "0.0", "write_lat_mean_us": "0.0",
                       "lat_p99_us": "0.0", "clat_p99_us": "0.0", "cpu_per_mib": "0.000", "ctx_per_mib": "0.00",
                       "cpu_total": "0.000",
                       "rate_mib_s": "0.0", "window_s": "0.00"}


def header(ws: Worksheet, row: int, headers: Sequence[str]) -> None:
    for j, h in enumerate(headers, start=1):
        c = ws.cell(row=row, column=j, value=safe_value(h))
        c.font, c.fill = HEADER_FONT, HEADER_FILL
        c.alignment = Alignment(wrap_text=True, vertical="center")


def _cpu_format(unit: Any) -> str:
    return "#,##0" if str(unit).startswith("cycles") else "0.000"


def write_table(ws: Worksheet, frame: pd.DataFrame, columns: Sequence[Column], *, start_row: int = 1,
                autofilter: bool = True, freeze: bool = True, widths: dict[str, float] | None = None) -> int:
    """A header row and one row per frame row; returns the last row written.

    The ``cpu`` format picks cycles (``#,##0``) or CPU-ms (``0.000``) per row from its unit, since one
    column may hold both when a data set was split into groups.
    """
    header(ws, start_row, [c[0] for c in columns])
    units = frame["cpu_per_mib_unit"].tolist() if "cpu_per_mib_unit" in frame.columns else [None] * len(frame)
    data = {f: frame[f].tolist() for _, f, _ in columns if f in frame.columns}
    for i in range(len(frame)):
        r = start_row + 1 + i
        for j, (_, f, fmt) in enumerate(columns, start=1):
            value = data[f][i] if f in data else None
            cell = ws.cell(row=r, column=j, value=safe_value(value))
            if isinstance(cell.value, (int, float)) and not isinstance(cell.value, bool):
                cell.number_format = _cpu_format(units[i]) if fmt == "cpu" else fmt
    last = start_row + len(frame)
    if autofilter and len(frame):
        ws.auto_filter.ref = f"A{start_row}:{get_column_letter(len(columns))}{last}"
    if freeze:
        ws.freeze_panes = ws.cell(row=start_row + 1, column=1)
    for j, (h, f, _) in enumerate(columns, start=1):
        w = (widths or {}).get(f, max(10.0, min(40.0, len(h) + 2.0)))
        ws.column_dimensions[get_column_letter(j)].width = w
    ws.row_dimensions[start_row].height = 30
    return last


def _cell_values(column: pd.Series) -> list[Any]:
    """A column as cell values, the same as :func:`safe_value` per cell but converted column-wise: the
    Measurements sheet of a large data set has hundreds of thousands of cells."""
    if column.dtype == "float64":
        return [v if math.isfinite(v) else None for v in column.to_numpy(dtype=float).tolist()]
    texts: dict[str, Any] = {}  # a column repeats few strings (controllers, workloads, units)
    out: list[Any] = []
    for v in column.tolist():
        if v is None or v.__class__ is int or v.__class__ is bool:
            out.append(v)
        elif v.__class__ is str:
            t = texts.get(v)
            if t is None:
                t = texts[v] = safe_value(v)
            out.append(t)
        else:
            out.append(safe_value(v))
    return out


# What a latency percentile column holds: fio reports completion-latency (clat) percentiles by
# default and total-latency (lat = submission + completion) percentiles only with lat_percentiles=1; DiskSpd's
# percentile is its total. A frame with both columns labels each; one with only lat_p99_us says what it mixes.
P99_LABELS = {
    "clat_p99_us": ("clat_p99_us [completion latency p99]",
                    "99th percentile of fio's completion latency (clat): from submission to the device's completion "
                    "seen by fio, without the submission time. Microseconds."),
    "lat_p99_us": ("lat_p99_us [total latency p99]",
                   "99th percentile of the total latency (lat = submission + completion), where the engine reported "
                   "it (fio with lat_percentiles=1; DiskSpd). Blank where fio gave only completion percentiles."),
}
P99_MIXED = ("lat_p99_us [lat p99, else clat p99]",
             "99th percentile latency as the result file gave it: the total latency (lat = submission + completion) "
             "where the engine reported it (fio with lat_percentiles=1; DiskSpd), otherwise fio's completion latency "
             "(clat, without submission), fio's default. Microseconds.")

# measured columns whose blank cell must say why (never a 0 or a default in its place)
MEASURED = ("iops", "bw_mib_s", "io_bytes", "runtime_ms", "total_ios", "lat_mean_us", "lat_p99_us", "clat_p99_us",
            "numjobs", "cpu_total", "cpu_per_mib", "ctx_switches", "ctx_per_mib", "window_s")
BLANK_HEADER = "blank_reasons"


def blank_reasons(frame: pd.DataFrame) -> list[str | None]:
    """Per row: each measured column left blank and why, from the row's own notes where it has them
    (``ctx_note``; ``<column>_note`` or ``null_reasons`` where ingest gives them), else what is known."""
    cols = [c for c in MEASURED if c in frame.columns]
    if not cols:
        return [None] * len(frame)
    out: list[str | None] = []
    records = frame.to_dict("records")
    for rec in records:
        parts = []
        for c in cols:
            v = rec.get(c)
            if v is not None and v is not pd.NA and not (isinstance(v, float) and math.isnan(v)):
                continue
            why = _text(rec.get(f"{c}_note")) or _from_reasons(rec.get("null_reasons"), c)
            if not why and c in ("ctx_switches", "ctx_per_mib"):
                why = _text(rec.get("ctx_note"))
            if not why and c in ("cpu_total", "cpu_per_mib", "ctx_switches", "ctx_per_mib", "window_s") \
                    and not _present(rec.get("host_source")):
                why = "no host record (no collector ran, or no perf CSV next to the result file)"
            if not why and c == "lat_p99_us" and _present(rec.get("clat_p99_us")):
                why = "fio reported completion (clat) percentiles only"
            parts.append(f"{c}: {why or 'not in the result'}")
        out.append("; ".join(parts) or None)
    return out


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _present(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and math.isnan(v))


def _from_reasons(reasons: Any, column: str) -> str | None:
    if isinstance(reasons, dict):
        return reasons.get(column)
    if isinstance(reasons, str) and reasons:
        for part in reasons.split(";"):
            key, _, why = part.partition(":")
            if key.strip() == column:
                return why.strip()
    return None


def write_frame(ws: Worksheet, frame: pd.DataFrame, formats: dict[str, str] | None = None) -> int:
    """A whole DataFrame with its own column names as headers (the Measurements sheet); latency percentile
    headers say which latency they are (with a note on the header cell), and a last column says why each
    blank measurement is blank."""
    formats = formats or {}
    frame = frame.assign(**{BLANK_HEADER: blank_reasons(frame)})
    header(ws, 1, list(frame.columns))
    # ingest always gives a clat_p99_us column, so only the rows' own note tells whether lat_p99_us holds an
    # older record's mix (lat where fio reported it, else clat): then the header must say so, never "total"
    mixed = "clat_p99_us" not in frame.columns or (
        "lat_p99_us_note" in frame.columns and bool(frame["lat_p99_us_note"].notna().any()))
    for j, c in enumerate(frame.columns, start=1):
        label = P99_MIXED if (mixed and c == "lat_p99_us") else P99_LABELS.get(c)
        if label:
            cell = ws.cell(row=1, column=j, value=label[0])
            cell.comment = Comment(label[1], "stormatrix")
    columns = [_cell_values(frame[c]) for c in frame.columns]
    formatted = [(j, formats[c]) for j, c in enumerate(frame.columns) if formats.get(c, "General") != "General"]
    for i, values in enumerate(zip(*columns), start=2):
        ws.append(values)
        for j, fmt in formatted:
            if values[j].__class__ is float:
                ws._cells[(i, j + 1)].number_format = fmt  # openpyxl's private cell map: the cell append just made
    last = 1 + len(frame)
    if len(frame):
        ws.auto_filter.ref = f"A1:{get_column_letter(len(frame.columns))}{last}"
    ws.freeze_panes = "A2"
    for j, c in enumerate(frame.columns, start=1):
        ws.column_dimensions[get_column_letter(j)].width = max(9.0, min(30.0, len(str(c)) + 2.0))
    ws.column_dimensions[get_column_letter(len(frame.columns))].width = 60
    return last


def write_lines(ws: Worksheet, lines: Iterable[str | tuple[str, str]], *, width: float = 110,
                start_row: int = 1) -> int:
    """Paragraphs in column A (or label/text pairs in A/B); a leading '# ' makes a bold heading.
    Returns the next free row (to add more lines below)."""
    ws.column_dimensions["A"].width = width
    r = start_row
    for line in lines:
        if isinstance(line, tuple):
            ws.cell(row=r, column=1, value=safe_value(line[0])).font = Font(bold=True)
            ws.cell(row=r, column=2, value=safe_value(line[1])).alignment = WRAP
        elif line.startswith("# "):
            ws.cell(row=r, column=1, value=safe_value(line[2:])).font = Font(bold=True, size=12)
        else:
            ws.cell(row=r, column=1, value=safe_value(line)).alignment = WRAP
        r += 1
    return r


def write_summary(ws: Worksheet, title: str, facts: list[tuple[str, Any]], findings: list[Finding],
                  notes: list[str]) -> None:
    ws.cell(row=1, column=1, value=safe_value(title)).font = TITLE_FONT
    r = 3
    for k, v in facts:
        ws.cell(row=r, column=1, value=safe_value(k)).font = Font(bold=True)
        ws.cell(row=r, column=2, value=safe_value(v)).alignment = Alignment(wrap_text=False)
        r += 1
    r += 1
    ws.cell(row=r, column=1, value="Findings").font = Font(bold=True, size=12)
    r += 1
    header(ws, r, ["#", "Finding", "Value", "Unit", "Based on (numbers on the other sheets)",
                   "Evidence (Welch's t-test, 95 %)"])
    for i, f in enumerate(findings, start=1):
        r += 1
        ws.cell(row=r, column=1, value=i)
        ws.cell(row=r, column=2, value=safe_value(f.text)).alignment = WRAP
        vc = ws.cell(row=r, column=3, value=safe_value(f.value))
        vc.number_format = "0.000" if abs(f.value) < 10 else "0.0"
        ws.cell(row=r, column=4, value=safe_value(f.unit))
        ws.cell(row=r, column=5, value=safe_value(f.basis)).alignment = WRAP
        # a row as tall as its wrapped text (LibreOffice does not grow rows of a file it opens: the
        # findings, which carry their test numbers, overprinted each other)
        lines = max(math.ceil(len(f.text) / 95), math.ceil(len(f.basis) / 72), 1)
        ws.row_dimensions[r].height = 15 * lines
        status = getattr(f, "status", "")
        sc = ws.cell(row=r, column=6, value=safe_value(status or None))
        if status == "indicative":
            sc.font = Font(italic=True, color="9C5700")
            sc.fill = PatternFill("solid", fgColor="FFEB9C")
    if notes:
        r += 2
        ws.cell(row=r, column=1, value="Notes and skipped inputs").font = Font(bold=True, size=12)
        for n in notes:
            r += 1
            ws.cell(row=r, column=2, value=safe_value(n)).alignment = WRAP
    for col, w in zip("ABCDEF", (22, 90, 12, 14, 70, 18)):
        ws.column_dimensions[col].width = w


def write_environment(ws: Worksheet, env: pd.DataFrame, extra: list[tuple[str, str, str]]) -> None:
    rows = pd.DataFrame(extra, columns=["scope", "item", "value"])
    frame = pd.concat([rows, env], ignore_index=True) if len(env) else rows
    write_table(ws, frame, [("Scope", "scope", "@"), ("Item", "item", "@"), ("Value", "value", "@")],
                widths={"scope": 30, "item": 34, "value": 90})


def run_dates(frame: pd.DataFrame) -> str:
    started = sorted(str(s) for s in frame["started"].dropna().tolist()) if "started" in frame else []
    return f"{started[0]} .. {started[-1]}" if started else "(not recorded)"
