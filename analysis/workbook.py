"""The customer workbooks (openpyxl, native Excel charts) and the tidy CSV next to them.

The only module in :mod:`stormatrix.analysis` that writes files. Two workbooks:

- efficiency (``stormatrix report``): Summary (findings), Method, Measurements, Scores, Charts,
  Environment, Chart data;
- comparison (``stormatrix compare``): Summary, Method, Measurements, Comparison, Averages, Charts,
  Environment, Chart data.

Charts read their numbers from the *Chart data* sheet, never from the tables a reader may sort with the
autofilter: sorting a table that a chart points into would silently re-pair points and labels.

Every string that came from outside (labels, VM names, file names, hostnames, config names) goes
through :func:`stormatrix.analysis.safe.safe_value` so that it can never become a formula.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.chart.marker import Marker
from openpyxl.chart.series import SeriesLabel
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..core.model import NOT_APPLICABLE, format_size
from .compare import ComparisonResult
from .efficiency import EfficiencyResult
from .findings import Finding
from .ingest import IngestResult
from .safe import neutralize, safe_value

HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="305496")
TITLE_FONT = Font(bold=True, size=14)
WRAP = Alignment(wrap_text=True, vertical="top")

# 004: "a symbol correlates with a storage controller; the colour corresponds with the AIO mode"
MARKERS = ["circle", "square", "triangle", "diamond", "x", "star", "plus", "dash", "dot"]
AIO_COLOURS = {"native": "2CA02C", "io_uring": "1F77B4", "threads": "D62728",
               NOT_APPLICABLE: "9467BD"}  # no aio setting (ESXi): its own colour, not the unknown's grey
OTHER_COLOUR = "7F7F7F"
SIDE_COLOURS = ("7F7F7F", "305496")  # A grey (the baseline), B blue

CHART_W, CHART_H = 18.0, 9.5  # cm
CHART_ROWS = 21               # rows one chart occupies on the Charts sheet (default row height)
NOTE_LINES = 4                # rows a note in place of a chart is merged over (it wraps); a blank row follows
NOTE_COLUMNS = 10             # columns a note is merged across: about the chart's width

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
    ("Score basis", "score_basis", "@"),         # CPU/MiB and ctx/MiB, or CPU/MiB alone and why
    ("Rank in controller", "rank_in_controller", "0"), ("Rank in aio mode", "rank_in_aio", "0"),
    ("Rank by CPU", "rank_cpu", "0"), ("Rank by ctx", "rank_ctx", "0"),
    ("CV flag", "cv_note", "@"), ("Group", "norm_group", "@"), ("Cells in group", "cells_in_group", "0"),
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
                       "lat_p99_us": "0.0", "cpu_per_mib": "0.000", "ctx_per_mib": "0.00", "cpu_total": "0.000",
                       "rate_mib_s": "0.0", "window_s": "0.00"}


# --- low-level writers -----------------------------------------------------------------------------

def _header(ws: Worksheet, row: int, headers: Sequence[str]) -> None:
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
    _header(ws, start_row, [c[0] for c in columns])
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


def write_frame(ws: Worksheet, frame: pd.DataFrame, formats: dict[str, str] | None = None) -> int:
    """A whole DataFrame with its own column names as headers (the Measurements sheet)."""
    formats = formats or {}
    cols = [(c, c, formats.get(c, "General")) for c in frame.columns]
    _header(ws, 1, list(frame.columns))
    for i, values in enumerate(frame.itertuples(index=False, name=None), start=2):
        for j, v in enumerate(values, start=1):
            cell = ws.cell(row=i, column=j, value=safe_value(v))
            fmt = cols[j - 1][2]
            if fmt != "General" and isinstance(cell.value, float):
                cell.number_format = fmt
    last = 1 + len(frame)
    if len(frame):
        ws.auto_filter.ref = f"A1:{get_column_letter(len(cols))}{last}"
    ws.freeze_panes = "A2"
    for j, c in enumerate(frame.columns, start=1):
        ws.column_dimensions[get_column_letter(j)].width = max(9.0, min(30.0, len(str(c)) + 2.0))
    return last


def write_lines(ws: Worksheet, lines: Iterable[str | tuple[str, str]], *, width: float = 110) -> None:
    """Paragraphs in column A (or label/text pairs in A/B); a leading '# ' makes a bold heading."""
    ws.column_dimensions["A"].width = width
    r = 1
    for line in lines:
        if isinstance(line, tuple):
            ws.cell(row=r, column=1, value=safe_value(line[0])).font = Font(bold=True)
            ws.cell(row=r, column=2, value=safe_value(line[1])).alignment = WRAP
        elif line.startswith("# "):
            ws.cell(row=r, column=1, value=safe_value(line[2:])).font = Font(bold=True, size=12)
        else:
            ws.cell(row=r, column=1, value=safe_value(line)).alignment = WRAP
        r += 1


def _summary(ws: Worksheet, title: str, facts: list[tuple[str, Any]], findings: list[Finding],
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
    _header(ws, r, ["#", "Finding", "Value", "Unit", "Based on (numbers on the other sheets)"])
    for i, f in enumerate(findings, start=1):
        r += 1
        ws.cell(row=r, column=1, value=i)
        ws.cell(row=r, column=2, value=safe_value(f.text)).alignment = WRAP
        vc = ws.cell(row=r, column=3, value=safe_value(f.value))
        vc.number_format = "0.000" if abs(f.value) < 10 else "0.0"
        ws.cell(row=r, column=4, value=safe_value(f.unit))
        ws.cell(row=r, column=5, value=safe_value(f.basis)).alignment = WRAP
    if notes:
        r += 2
        ws.cell(row=r, column=1, value="Notes and skipped inputs").font = Font(bold=True, size=12)
        for n in notes:
            r += 1
            ws.cell(row=r, column=2, value=safe_value(n)).alignment = WRAP
    for col, w in zip("ABCDE", (22, 90, 12, 14, 70)):
        ws.column_dimensions[col].width = w


def _environment(ws: Worksheet, env: pd.DataFrame, extra: list[tuple[str, str, str]]) -> None:
    rows = pd.DataFrame(extra, columns=["scope", "item", "value"])
    frame = pd.concat([rows, env], ignore_index=True) if len(env) else rows
    write_table(ws, frame, [("Scope", "scope", "@"), ("Item", "item", "@"), ("Value", "value", "@")],
                widths={"scope": 30, "item": 34, "value": 90})


def _run_dates(frame: pd.DataFrame) -> str:
    started = sorted(str(s) for s in frame["started"].dropna().tolist()) if "started" in frame else []
    return f"{started[0]} .. {started[-1]}" if started else "(not recorded)"


def write_tidy_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """The tidy frame as CSV for scripts; text neutralised like the workbook (CSV injection)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) == "string":
            out[col] = out[col].map(lambda v: neutralize(v) if isinstance(v, str) else v)
    path = Path(path)
    _replace_atomically(path, lambda tmp: out.to_csv(tmp, index=False))
    return path


# --- charts ---------------------------------------------------------------------------------------

def _place(ws: Worksheet, chart: Any, index: int) -> None:
    """One chart per printed page, so that no chart is cut by a page break."""
    _place_at(ws, chart, 1 + index * CHART_ROWS)


def _place_at(ws: Worksheet, chart: Any, row: int) -> int:
    """A chart from ``row`` on and a page break after it; returns the first row after it."""
    chart.width, chart.height = CHART_W, CHART_H
    ws.add_chart(chart, f"A{row}")
    ws.row_breaks.append(Break(id=row + CHART_ROWS - 1))
    return row + CHART_ROWS


def _note_at(ws: Worksheet, text: str, row: int) -> int:
    """A one-line note where a chart would have been (it prints on the page of the chart after it).

    Merged over a block of default-height rows as wide as a chart and wrapped, so that it prints whole
    instead of running off the page, and without a row height of its own, which would move every chart
    after it off the row grid the page breaks are set on (LibreOffice then draws the next chart's top edge
    at the foot of the page before it).
    """
    cell = ws.cell(row=row, column=1, value=safe_value(text))
    cell.font, cell.alignment = Font(italic=True), WRAP
    ws.merge_cells(start_row=row, start_column=1, end_row=row + NOTE_LINES - 1, end_column=NOTE_COLUMNS)
    return row + NOTE_LINES + 1


def _marker_series(values: Reference, xvalues: Reference, title: str, symbol: str, colour: str) -> Series:
    s = Series(values, xvalues, title=neutralize(title))
    s.marker = Marker(symbol=symbol, size=9)
    s.marker.graphicalProperties = GraphicalProperties(solidFill=colour)
    s.marker.graphicalProperties.line.solidFill = colour
    s.graphicalProperties = GraphicalProperties()
    s.graphicalProperties.line.noFill = True
    return s


def _efficiency_charts(wb: Workbook, result: EfficiencyResult) -> None:
    charts = wb.create_sheet("Charts")
    data = wb.create_sheet("Chart data")
    data.column_dimensions["A"].width = 44
    cells = result.cells
    controllers = list(dict.fromkeys(cells["controller"].fillna("?")))
    symbol = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(controllers)}
    r = 1
    at = 1  # the next free row on the Charts sheet
    for group, g in cells.groupby("norm_group", sort=False):
        unit = g["cpu_per_mib_unit"].iloc[0]
        has_ctx = g["ctx_per_mib_mean"].notna()
        scatter_notes = _scatter_notes(str(group), g)
        data.cell(row=r, column=1, value=safe_value(f"Group: {group}")).font = Font(bold=True)
        r += 1
        _header(data, r, ["Series (controller / aio)", "Configuration", f"CPU/MiB ({unit})", "ctx/MiB",
                          "Normalized CPU", "Normalized ctx"])
        r += 1
        raw = ScatterChart()
        norm = ScatterChart()
        for ch, what in ((raw, "Measured"), (norm, "Normalized")):
            ch.title = neutralize(f"{what} CPU and context switches per MiB - {group}")
            ch.style = 13
            ch.scatterStyle = "lineMarker"
            ch.x_axis.title = f"CPU per MiB ({unit})" if ch is raw else "Normalized CPU per MiB"
            ch.y_axis.title = "Context switches per MiB" if ch is raw else "Normalized context switches per MiB"
            ch.legend.position = "r"
        norm.x_axis.scaling.min = norm.y_axis.scaling.min = 0
        norm.x_axis.scaling.max = norm.y_axis.scaling.max = 1
        for (ctrl, aio), gs in g.groupby([g["controller"].fillna("?"), g["aio"].fillna("?")], sort=False):
            first = r
            series = ctrl if aio == NOT_APPLICABLE else f"{ctrl} / {aio}"  # ESXi: no aio mode
            for _, row in gs.iterrows():
                for j, v in enumerate([series, row["config"], row["cpu_per_mib_mean"],
                                       row["ctx_per_mib_mean"], row["norm_cpu"], row["norm_ctx"]], start=1):
                    data.cell(row=r, column=j, value=safe_value(v))
                r += 1
            last = r - 1
            if not has_ctx[gs.index].any():
                continue  # no y value anywhere in this series: it would be a legend entry without a point
            colour = AIO_COLOURS.get(str(aio), OTHER_COLOUR)
            title = ctrl if aio == NOT_APPLICABLE else f"{ctrl} / aio={aio}"
            raw.series.append(_marker_series(Reference(data, min_col=4, min_row=first, max_row=last),
                                             Reference(data, min_col=3, min_row=first, max_row=last),
                                             title, symbol[ctrl], colour))
            norm.series.append(_marker_series(Reference(data, min_col=6, min_row=first, max_row=last),
                                              Reference(data, min_col=5, min_row=first, max_row=last),
                                              title, symbol[ctrl], colour))
        r += 1
        # score bars, best first, coloured by aio mode
        _header(data, r, ["Configuration (by score)", "Efficiency score"])
        r += 1
        first = r
        ordered = g.sort_values(["score", "config"], kind="stable")
        for _, row in ordered.iterrows():
            data.cell(row=r, column=1, value=safe_value(row["config"]))
            data.cell(row=r, column=2, value=safe_value(row["score"]))
            r += 1
        last = r - 1
        bar = BarChart()
        bar.type = "bar"
        bar.style = 10
        bar.title = neutralize(f"Efficiency score (lower is better) - {group}")
        bar.y_axis.title = "Efficiency score"
        bar.x_axis.scaling.orientation = "maxMin"  # best at the top
        bar.legend = None
        bar.add_data(Reference(data, min_col=2, min_row=first - 1, max_row=last), titles_from_data=True)
        bar.set_categories(Reference(data, min_col=1, min_row=first, max_row=last))
        from openpyxl.chart.marker import DataPoint
        series = bar.series[0]
        for i, aio in enumerate(ordered["aio"].tolist()):
            pt = DataPoint(idx=i)
            pt.graphicalProperties = GraphicalProperties(solidFill=AIO_COLOURS.get(str(aio), OTHER_COLOUR))
            series.dPt.append(pt)
        r += 2
        if "raw" in scatter_notes:  # above its chart, so that it prints on the same page
            at = _note_at(charts, scatter_notes["raw"], at)
        if has_ctx.any():
            at = _place_at(charts, raw, at)
        if "norm" in scatter_notes:
            at = _note_at(charts, scatter_notes["norm"], at)
        else:
            at = _place_at(charts, norm, at)
        at = _place_at(charts, bar, at)


def _scatter_notes(group: str, g: pd.DataFrame) -> dict[str, str]:
    """Why a group's CPU vs ctx/MiB scatter charts are missing or incomplete, as one line each.

    A group scored on CPU/MiB alone (any configuration without ctx/MiB, e.g. ESXi) has no normalized
    ctx, so its normalized chart would have no point at all; its measured chart has points only for the
    configurations with ctx/MiB: none (left out, one note for both charts), or some (drawn with those,
    the others named). A group with ctx/MiB everywhere gets no note.
    """
    missing = g[g["ctx_per_mib_mean"].isna()]
    if missing.empty:
        return {}
    reasons = "; ".join(dict.fromkeys(str(v) for v in missing["ctx_note"].dropna())) or "no context-switch counts"
    if len(missing) == len(g):
        return {"norm": f"No CPU vs context-switch charts for {group}: no configuration has context-switch counts "
                        f"({reasons}); the group is scored on CPU/MiB alone (score chart below, Scores sheet)."}
    names = ", ".join(str(c) for c in missing["config"])
    return {"raw": f"Not on the measured CPU vs context-switch chart of {group}: {names} (no context-switch "
                   f"counts: {reasons}).",
            "norm": f"No normalized CPU vs context-switch chart for {group}: {len(missing)} of {len(g)} "
                    "configurations have no context-switch counts, so the group is scored on CPU/MiB alone and "
                    "has no normalized ctx/MiB (score chart below, Scores sheet)."}


def _bar(title: str, y_title: str, x_title: str) -> BarChart:
    ch = BarChart()
    ch.type = "col"
    ch.style = 10
    ch.title = neutralize(title)
    ch.y_axis.title = y_title
    ch.x_axis.title = x_title
    ch.legend.position = "b"
    return ch


def _comparison_charts(wb: Workbook, result: ComparisonResult) -> None:
    charts = wb.create_sheet("Charts")
    data = wb.create_sheet("Chart data")
    a, b = result.label_a, result.label_b
    index = 0
    r = 1
    pts = result.points
    for (rw, bs), g in pts.groupby(["rw", "bs"], sort=True):
        bs_label = format_size(int(bs))
        data.cell(row=r, column=1, value=safe_value(f"{rw} {bs_label}")).font = Font(bold=True)
        r += 1
        _header(data, r, ["QD", f"IOPS {a}", f"IOPS {b}", f"Latency us {a}", f"Latency us {b}",
                          f"MiB/s {a}", f"MiB/s {b}"])
        head = r
        for _, p in g.sort_values("iodepth").iterrows():
            r += 1
            for j, v in enumerate([f"QD{int(p['iodepth'])}", p["iops_a"], p["iops_b"], p["lat_us_a"], p["lat_us_b"],
                                   p["bw_mib_s_a"], p["bw_mib_s_b"]], start=1):
                data.cell(row=r, column=j, value=safe_value(v))
        last = r
        cats = Reference(data, min_col=1, min_row=head + 1, max_row=last)
        for col, what, unit in ((2, "IOPS", "IOPS"), (4, "Latency", "Mean latency (us)"), (6, "Bandwidth", "MiB/s")):
            ch = _bar(f"{what} by queue depth - {rw} {bs_label}", unit, "Queue depth")
            ch.add_data(Reference(data, min_col=col, max_col=col + 1, min_row=head, max_row=last),
                        titles_from_data=True)
            ch.set_categories(cats)
            for s, colour in zip(ch.series, SIDE_COLOURS):
                s.graphicalProperties = GraphicalProperties(solidFill=colour)
            _place(charts, ch, index)
            index += 1
        r += 2
    for table, key, label in ((result.by_qd, "iodepth", "queue depth"), (result.by_bs, "bs", "block size")):
        for rw, g in table.groupby("rw", sort=True):
            data.cell(row=r, column=1, value=safe_value(f"Average by {label} - {rw}")).font = Font(bold=True)
            r += 1
            _header(data, r, [label.capitalize(), "IOPS gain %", "Latency reduction %"])
            head = r
            for _, p in g.iterrows():
                r += 1
                k = f"QD{int(p[key])}" if key == "iodepth" else format_size(int(p[key]))
                for j, v in enumerate([k, p["iops_gain_pct"], p["lat_reduction_pct"]], start=1):
                    data.cell(row=r, column=j, value=safe_value(v))
            last = r
            cats = Reference(data, min_col=1, min_row=head + 1, max_row=last)
            across = "block sizes" if key == "iodepth" else "queue depths"
            for col, what in ((2, "IOPS gain %"), (3, "Latency reduction %")):
                ch = _bar(f"Average {what} of {b} vs {a} by {label} ({rw}, across {across})", what,
                          label.capitalize())
                ch.add_data(Reference(data, min_col=col, min_row=head, max_row=last), titles_from_data=True)
                ch.set_categories(cats)
                ch.series[0].graphicalProperties = GraphicalProperties(solidFill=SIDE_COLOURS[1])
                ch.legend = None
                _place(charts, ch, index)
                index += 1
            r += 2
    data.column_dimensions["A"].width = 28


# --- the two workbooks -----------------------------------------------------------------------------

def _method_efficiency(result: EfficiencyResult, frame: pd.DataFrame) -> list[str | tuple[str, str]]:
    scopes = sorted({str(s) for s in frame["host_scope"].dropna()}) or ["(not recorded)"]
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
        ("CPU metric", ", ".join(metrics) + ". cycles = user + kernel hardware CPU cycles (perf); cpu_time = user + "
                       "system CPU time, used where hardware cycles are not available (VMs, CI machines). The unit "
                       "of every CPU figure is in the 'CPU unit' column: cycles/MiB or CPU-ms/MiB."),
        ("Collector", ", ".join(sources)),
        ("Collector scope", ", ".join(scopes) + ". Only work on these CPUs/threads is counted (the guest, QEMU's "
                            "threads and the host I/O path); anything outside is not in the figures."),
        ("MiB", "bytes the guest's engine transferred in the window / 2^20."),
        "# Formulas",
        ("CPU per MiB", "(user + kernel cycles) / MiB, or (user + system CPU seconds x 1000) / MiB."),
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


def write_efficiency_workbook(path: str | Path, data: IngestResult, result: EfficiencyResult,
                              findings: list[Finding], *, label: str | None = None,
                              inputs: Sequence[str] = ()) -> Path:
    """The ``stormatrix report`` workbook. Returns the path written."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Summary"
    frame = data.frame
    metrics = sorted({str(m) for m in result.cells["cpu_metric"].dropna()}) if len(result.cells) else []
    units = sorted({str(u) for u in result.cells["cpu_per_mib_unit"].dropna()}) if len(result.cells) else []
    facts = [("Data set", label or ", ".join(sorted({str(s) for s in frame["side"].dropna()})) or "(not named)"),
             ("CPU metric", ", ".join(metrics) or "none (no host figures)"),
             ("CPU unit", ", ".join(units) or "(none)"),
             ("Configurations scored", len(result.cells)),
             ("Measurements (repeats)", len(frame)),
             ("CV limit", f"{result.cv_limit:.0%}"),
             ("Run dates", _run_dates(frame)),
             ("Generated", datetime.now(timezone.utc).isoformat(timespec="seconds"))]
    notes = [str(p) for p in data.problems] + data.notes + result.notes
    _summary(ws, "stormatrix efficiency report", facts, findings, notes)
    write_lines(wb.create_sheet("Method"), _method_efficiency(result, frame))
    write_frame(wb.create_sheet("Measurements"), frame, MEASUREMENT_FORMATS)
    scores = wb.create_sheet("Scores")
    last = write_table(scores, result.cells, SCORE_COLUMNS, widths={"config": 36, "norm_group": 30, "cv_note": 22,
                                                                     "ctx_note": 40, "score_basis": 40})
    if len(result.cells):
        col = get_column_letter([c[1] for c in SCORE_COLUMNS].index("score") + 1)
        scores.conditional_formatting.add(f"{col}2:{col}{last}", ColorScaleRule(
            start_type="min", start_color="63BE7B", mid_type="percentile", mid_value=50, mid_color="FFEB84",
            end_type="max", end_color="F8696B"))
        _efficiency_charts(wb, result)
    _environment(wb.create_sheet("Environment"), data.environment, _report_facts(frame, inputs))
    _order(wb, ["Summary", "Method", "Measurements", "Scores", "Charts", "Environment", "Chart data"])
    return _save(wb, path)


def _report_facts(frame: pd.DataFrame, inputs: Sequence[str], side: str = "report") -> list[tuple[str, str, str]]:
    return [(side, "stormatrix version", __version__),
            (side, "generated", datetime.now(timezone.utc).isoformat(timespec="seconds")),
            (side, "inputs", ", ".join(str(i) for i in inputs) or "(not given)"),
            (side, "run dates", _run_dates(frame)),
            (side, "measurements", str(len(frame)))]


def write_comparison_workbook(path: str | Path, a: IngestResult, b: IngestResult, result: ComparisonResult,
                              findings: list[Finding], *, inputs_a: Sequence[str] = (),
                              inputs_b: Sequence[str] = ()) -> Path:
    """The ``stormatrix compare`` workbook. Returns the path written."""
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
             (f"Points where {lb} needs less host CPU/MiB", f"{s.get('host_cpu_wins', 0)} of "
                                                          f"{s.get('host_cpu_points', 0)} comparable"),
             ("Run dates A", _run_dates(a.frame)), ("Run dates B", _run_dates(b.frame)),
             ("Generated", datetime.now(timezone.utc).isoformat(timespec="seconds"))]
    notes = ([f"A: {p}" for p in a.problems] + [f"B: {p}" for p in b.problems] + a.notes + b.notes
             + result.notes)
    _summary(ws, f"stormatrix comparison: {lb} vs {la}", facts, findings, notes)
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
    last = write_table(cws, points, cols)
    for field, good in (("iops_gain_pct", True), ("lat_reduction_pct", True), ("cpu_reduction_pct", True),
                        ("ctx_reduction_pct", True)):
        col = get_column_letter([c[1] for c in cols].index(field) + 1)
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
    _comparison_charts(wb, result)
    env = wb.create_sheet("Environment")
    env_a = a.environment.assign(scope=[f"A: {x}" for x in a.environment["scope"]])
    env_b = b.environment.assign(scope=[f"B: {x}" for x in b.environment["scope"]])
    _environment(env, pd.concat([env_a, env_b], ignore_index=True),
                 _report_facts(a.frame, inputs_a, f"A: {la}") + _report_facts(b.frame, inputs_b, f"B: {lb}"))
    _order(wb, ["Summary", "Method", "Measurements", "Comparison", "Averages", "Charts", "Environment",
                "Chart data"])
    return _save(wb, path)


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
                             "counted hardware cycles, else (user + system CPU seconds x 1000) / MiB (CPU-ms/MiB). "
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
    wb._sheets.sort(key=lambda s: names.index(s.title) if s.title in names else len(names))  # noqa: SLF001


def _save(wb: Workbook, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for ws in wb.worksheets:
        ws.page_setup.orientation = "landscape"
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 0
        ws.sheet_properties.pageSetUpPr.fitToPage = True
    _replace_atomically(path, wb.save)
    return path


def _replace_atomically(path: Path, write: Any) -> None:
    """Write next to ``path`` and rename over it: a report killed mid-write leaves the previous file
    whole (or none), never a truncated workbook or CSV under the real name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
