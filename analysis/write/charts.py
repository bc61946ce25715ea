"""Native Excel charts of both workbooks, reading their numbers from the *Chart data* sheet.

Charts never point into the tables a reader may sort with the autofilter: sorting a table that a chart
points into would silently re-pair points and labels. One chart per printed page.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable

import pandas as pd
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.chart.data_source import NumDataSource, NumRef
from openpyxl.chart.error_bar import ErrorBars
from openpyxl.chart.label import DataLabelList
from openpyxl.chart.marker import DataPoint, Marker
from openpyxl.chart.series import XYSeries
from openpyxl.descriptors.sequence import Sequence
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.drawing.text import CharacterProperties
from openpyxl.styles import Font
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from ...core.model import NOT_APPLICABLE, format_size
from ..score.compare import ComparisonResult
from ..score.efficiency import EfficiencyResult
from .ooxml import SchemaErrorBars
from ..read.safe import neutralize, safe_value
from .sheets import WRAP, autosize, cpu_format, header, print_table

# a symbol per storage controller, a colour per aio mode (the method's chart convention)
MARKERS = ["circle", "square", "triangle", "diamond", "x", "star", "plus", "dash", "dot"]
AIO_COLOURS = {"native": "2CA02C", "io_uring": "1F77B4", "threads": "D62728",
               NOT_APPLICABLE: "9467BD"}  # no aio setting (ESXi): its own colour, not the unknown's grey
OTHER_COLOUR = "7F7F7F"
SIDE_COLOURS = ("7F7F7F", "305496")  # A grey (the baseline), B blue

# One chart per A4 landscape page (29.7 x 21 cm, margins 1 cm: 27.7 x 19 cm to print on): 26 x 15 cm in
# 30 rows of 0.53 cm leaves 5 rows for a note above it on the same page.
CHART_W, CHART_H = 26.0, 15.0  # cm
CHART_ROWS = 30                # rows one chart occupies on the Charts sheet (default row height)
NOTE_LINES = 4                 # rows a note in place of a chart is merged over (it wraps); a blank row follows
NOTE_COLUMNS = 10              # columns a note is merged across (it wraps within them)
INDICATIVE_TITLE = " - INDICATIVE: single repeats, not tested"
SOME_INDICATIVE = " - configurations marked (1 repeat) are INDICATIVE"
ONE_REPEAT = " (1 repeat)"
# the comparison's Chart data columns (QD, IOPS A/B, latency A/B, MiB/s A/B) at the Points sheet's precision
POINT_FORMATS = ["@", "#,##0", "#,##0", "0.0", "0.0", "0.0", "0.0"]


def _a4_landscape(ws: Worksheet) -> None:
    """The Charts sheet prints one chart per A4 landscape page."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    m = 0.4  # inches (1 cm)
    ws.page_margins.left = ws.page_margins.right = ws.page_margins.top = ws.page_margins.bottom = m
    ws.page_margins.header = ws.page_margins.footer = 0.2


def _title(chart: Any, text: str) -> None:
    """The chart's title at 12 pt bold: a group's title (about 70 characters) fits on one line of the
    page-wide chart instead of wrapping after a hyphen."""
    chart.title = neutralize(text)
    title: Any = chart.title  # openpyxl's descriptor has made the text a Title (mypy sees the str given)
    for p in title.tx.rich.p:
        if p.pPr is not None and p.pPr.defRPr is not None:
            p.pPr.defRPr.sz, p.pPr.defRPr.b = 1200, True
        for r in p.r or []:
            r.rPr = CharacterProperties(sz=1200, b=True)


def _error_bars(ref: Reference, direction: str | None, colour: str = "404040",
                minus: Reference | None = None) -> ErrorBars:
    """Custom error bars: +/- a column of CI half-widths (the 95 % confidence interval of the mean), or
    ``ref`` up and ``minus`` down (an interval that is not symmetric about its value); drawn in the series'
    colour, 1.5 pt, so that they read as part of their point and not as grid lines."""
    bars = SchemaErrorBars(errDir=direction, errBarType="both", errValType="cust",
                           plus=NumDataSource(numRef=NumRef(f=ref)), minus=NumDataSource(numRef=NumRef(f=minus or ref)),
                           noEndCap=False)
    bars.spPr = GraphicalProperties()
    bars.spPr.line.solidFill = colour
    bars.spPr.line.width = 19050  # EMU: 1.5 pt
    return bars


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


class _XYSeries(XYSeries):
    """A scatter series that holds two ``errBars`` (x and y), as the chart schema allows; openpyxl's own
    holds one, and a twin series for the other direction doubled the series and the legend."""

    tagname = "ser"
    errBars = Sequence(expected_type=ErrorBars)
    # the serialiser's lists are built from a class's own attributes: keep XYSeries' (same order)
    __elements__ = XYSeries.__elements__
    __nested__ = XYSeries.__nested__
    __attrs__ = XYSeries.__attrs__

    def __init__(self, *args: Any, **kw: Any) -> None:
        kw.setdefault("errBars", [])
        super().__init__(*args, **kw)


def _marker_series(values: Reference, xvalues: Reference, title: str, symbol: str, colour: str) -> Series:
    plain = Series(values, xvalues, title=neutralize(title))
    s = _XYSeries(**{k: getattr(plain, k) for k in ("idx", "order", "tx", "xVal", "yVal")})
    s.marker = Marker(symbol=symbol, size=9)
    s.marker.graphicalProperties = GraphicalProperties(solidFill=colour)
    s.marker.graphicalProperties.line.solidFill = colour
    s.graphicalProperties = GraphicalProperties()
    s.graphicalProperties.line.noFill = True
    return s


def efficiency_charts(wb: Workbook, result: EfficiencyResult) -> dict[str, Callable[[], BarChart]]:
    """Per group: measured and normalized CPU vs ctx/MiB scatters (95 % CI error bars both ways where there
    are repeats) and the score bars (every bar labelled, its value on it, CI error bars); the I/O-path lens
    and the Method lines on significance are the workbook's (:mod:`.evidencesheets`)."""
    charts = wb.create_sheet("Charts")
    _a4_landscape(charts)
    data = wb.create_sheet("Chart data")
    cells = result.cells
    controllers = list(dict.fromkeys(cells["controller"].fillna("?")))
    symbol = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(controllers)}
    r = 1
    at = 1  # the next free row on the Charts sheet
    score_charts: dict[str, Callable[[], BarChart]] = {}  # group -> another score chart
    for group, g in cells.groupby("norm_group", sort=False):
        unit = g["cpu_per_mib_unit"].iloc[0]
        has_ctx = g["ctx_per_mib_mean"].notna()
        single = bool((g["n"] < 2).any())
        mixed = single and bool((g["n"] >= 2).any())  # mark the single-repeat ones by name; else the title says it
        mark = SOME_INDICATIVE if mixed else INDICATIVE_TITLE if single else ""
        bars_note = "" if single and not mixed else "; error bars: 95 % CI of the mean"
        scatter_notes = _scatter_notes(str(group), g)
        metric = str(g["cpu_metric"].iloc[0])
        metric = {"cpu_time": "CPU time", "cycles": "cycles"}.get(metric, metric)
        unitless = f"{g['workload'].iloc[0]} ({metric})"
        data.cell(row=r, column=1, value=safe_value(f"Group: {group}")).font = Font(bold=True)
        r += 1
        header(data, r, ["Series (controller / aio)", "Configuration", f"CPU/MiB ({unit})", "ctx/MiB",
                         "Normalized CPU", "Normalized ctx", f"CPU/MiB CI95 +/- ({unit})", "ctx/MiB CI95 +/-",
                         "Repeats"])
        r += 1
        # shown at the precision of the Scores sheet; the cells keep the exact values the charts draw
        cpu = cpu_format(unit)
        point_formats = ["@", "@", cpu, "0.00", "0.000", "0.000", cpu, "0.00", "0"]
        raw = ScatterChart()
        norm = ScatterChart()
        for ch, what in ((raw, "Measured"), (norm, "Normalized")):
            # a normalized chart has no unit: its title names the workload and the CPU metric, not "[CPU-ms/MiB]"
            _title(ch, f"{what} CPU and context switches per MiB - {group if ch is raw else unitless}"
                   + (mark if ch is raw or single else ""))
            ch.style = 13
            ch.scatterStyle = "lineMarker"
            ch.x_axis.title = f"CPU per MiB ({unit}{bars_note})" if ch is raw else "Normalized CPU per MiB"
            ch.y_axis.title = (f"Context switches per MiB{' (' + bars_note[2:] + ')' if bars_note else ''}"
                               if ch is raw else "Normalized context switches per MiB")
            ch.legend.position = "b"   # below the plot: a 15-entry legend at the side took 3/4 of the chart
            ch.x_axis.delete = ch.y_axis.delete = False
            _plain_axes(ch.x_axis, ch.y_axis)
        norm.x_axis.scaling.min = norm.y_axis.scaling.min = 0
        norm.x_axis.scaling.max = norm.y_axis.scaling.max = 1
        for (ctrl, aio), gs in g.groupby([g["controller"].fillna("?"), g["aio"].fillna("?")], sort=False):
            first = r
            series = ctrl if aio == NOT_APPLICABLE else f"{ctrl} / {aio}"  # ESXi: no aio mode
            for _, row in gs.iterrows():
                cpu_half = row["cpu_per_mib_ci_high"] - row["cpu_per_mib_mean"]
                ctx_half = row["ctx_per_mib_ci_high"] - row["ctx_per_mib_mean"]
                for j, v in enumerate([series, row["config"], row["cpu_per_mib_mean"], row["ctx_per_mib_mean"],
                                       row["norm_cpu"], row["norm_ctx"], cpu_half, ctx_half, row["n"]], start=1):
                    data.cell(row=r, column=j, value=safe_value(v)).number_format = point_formats[j - 1]
                r += 1
            last = r - 1
            if not has_ctx[gs.index].any():
                continue  # no y value anywhere in this series: it would be a legend entry without a point
            colour = AIO_COLOURS.get(str(aio), OTHER_COLOUR)
            title = ctrl if aio == NOT_APPLICABLE else f"{ctrl} / aio={aio}"
            if mixed and gs["n"].min() < 2:
                title += ONE_REPEAT
            ys, xs = (Reference(data, min_col=c, min_row=first, max_row=last) for c in (4, 3))
            point = _marker_series(ys, xs, title, symbol[ctrl], colour)
            raw.series.append(point)
            if gs["n"].min() >= 2:  # the CI both ways
                point.errBars = [_error_bars(Reference(data, min_col=7, min_row=first, max_row=last), "x", colour),
                                 _error_bars(Reference(data, min_col=8, min_row=first, max_row=last), "y", colour)]
            norm.series.append(_marker_series(Reference(data, min_col=6, min_row=first, max_row=last),
                                              Reference(data, min_col=5, min_row=first, max_row=last),
                                              title, symbol[ctrl], colour))
        r += 1
        # score bars, best first, coloured by aio mode
        header(data, r, ["Configuration (by score)", "Efficiency score", "Interval below the score",
                         "Interval above the score", "Evidence vs next rank"])
        r += 1
        first = r
        ordered = g.sort_values(["score", "config"], kind="stable")
        for _, row in ordered.iterrows():
            label = str(row["config"]) + (ONE_REPEAT if mixed and row["n"] < 2 else "")
            data.cell(row=r, column=1, value=safe_value(label))
            data.cell(row=r, column=2, value=safe_value(row["score"])).number_format = "0.000"
            if row["n"] >= 2:  # a single repeat has no spread of its own: no bar
                for j, v in ((3, row["score"] - row["score_ci_low"]), (4, row["score_ci_high"] - row["score"])):
                    data.cell(row=r, column=j, value=safe_value(v)).number_format = "0.000"
            data.cell(row=r, column=5, value=safe_value(row.get("evidence") or None))
            r += 1
        last = r - 1
        bar_title = (f"Efficiency score (lower is better) - {unitless}"
                     + (SOME_INDICATIVE if mixed else INDICATIVE_TITLE if single else ""))
        bar = _score_bars(data, first, last, ordered, bar_title)
        score_charts[str(group)] = partial(_score_bars, data, first, last, ordered, bar_title)
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
    autosize(data)  # column A as wide as its longest name (it was 44 whatever the names)
    _print_data(data)
    return score_charts


def _plain_axes(*axes: Any) -> None:
    """Value axes labelled in Excel's General format, not linked to the Chart data cells' number formats
    (linked, a CPU/MiB axis read 5.000, 10.000 ...: the cells' precision is for reading a value, not a tick)."""
    for axis in axes:
        axis.number_format = "General"


def _print_data(data: Worksheet) -> None:
    """The Chart data sheet prints every column of a row on one page width: a table of at most nine
    columns that ran a little over the page (LibreOffice at 75 %) put its last column alone on a page of
    its own, its rows no longer beside their names."""
    print_table(data, data.max_column, data.max_row, header_row=None)
    data.sheet_properties.pageSetUpPr.fitToPage = True
    data.page_setup.fitToWidth, data.page_setup.fitToHeight = 1, 0


def _score_bars(data: Worksheet, first: int, last: int, ordered: pd.DataFrame, title: str) -> BarChart:
    """Horizontal score bars, best at the top: every bar labelled with its configuration and its score,
    coloured by aio mode, with the 95 % bootstrap interval of the score as error bars where there are repeats."""
    bar = BarChart()
    bar.type = "bar"
    bar.style = 10
    _title(bar, title)
    bar.y_axis.title = "Efficiency score" + ("; error bars: 95 % bootstrap interval"
                                             if (ordered["n"] >= 2).any() else "")
    bar.x_axis.scaling.orientation = "maxMin"  # best at the top
    bar.x_axis.tickLblSkip = bar.x_axis.tickMarkSkip = 1  # a label on every bar, not every other one
    bar.x_axis.delete = bar.y_axis.delete = False
    bar.y_axis.scaling.min = 0
    # the axis contains every interval and leaves room for the value labels beyond the longest bar
    top = float(max(ordered["score"].max(), ordered["score_ci_high"].max(skipna=True)
                    if ordered["score_ci_high"].notna().any() else 0.0))
    bar.y_axis.scaling.max = max(0.1, math.ceil(top * 11.5) / 10)
    bar.gapWidth = 40
    bar.legend = None
    bar.add_data(Reference(data, min_col=2, min_row=first - 1, max_row=last), titles_from_data=True)
    bar.set_categories(Reference(data, min_col=1, min_row=first, max_row=last))
    series = bar.series[0]
    series.dLbls = DataLabelList()
    series.dLbls.showVal = True
    series.dLbls.showSerName = series.dLbls.showCatName = series.dLbls.showLegendKey = False
    series.dLbls.numFmt = "0.000"
    series.dLbls.position = "outEnd"
    if (ordered["n"] >= 2).any():
        series.errBars = _error_bars(Reference(data, min_col=4, min_row=first, max_row=last), None,
                                     minus=Reference(data, min_col=3, min_row=first, max_row=last))
    for i, aio in enumerate(ordered["aio"].tolist()):
        pt = DataPoint(idx=i)
        pt.graphicalProperties = GraphicalProperties(solidFill=AIO_COLOURS.get(str(aio), OTHER_COLOUR))
        series.dPt.append(pt)
    return bar


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
    _plain_axes(ch.y_axis)
    return ch


def comparison_charts(wb: Workbook, result: ComparisonResult) -> None:
    charts = wb.create_sheet("Charts")
    _a4_landscape(charts)
    data = wb.create_sheet("Chart data")
    a, b = result.label_a, result.label_b
    index = 0
    r = 1
    pts = result.points
    for (rw, bs), g in pts.groupby(["rw", "bs"], sort=True):
        bs_label = format_size(int(bs))
        data.cell(row=r, column=1, value=safe_value(f"{rw} {bs_label}")).font = Font(bold=True)
        r += 1
        header(data, r, ["QD", f"IOPS {a}", f"IOPS {b}", f"Latency us {a}", f"Latency us {b}",
                         f"MiB/s {a}", f"MiB/s {b}"])
        head = r
        for _, p in g.sort_values("iodepth").iterrows():
            r += 1
            for j, v in enumerate([f"QD{int(p['iodepth'])}", p["iops_a"], p["iops_b"], p["lat_us_a"], p["lat_us_b"],
                                   p["bw_mib_s_a"], p["bw_mib_s_b"]], start=1):
                data.cell(row=r, column=j, value=safe_value(v)).number_format = POINT_FORMATS[j - 1]
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
            header(data, r, [label.capitalize(), "IOPS gain %", "Latency reduction %"])
            head = r
            for _, p in g.iterrows():
                r += 1
                k = f"QD{int(p[key])}" if key == "iodepth" else format_size(int(p[key]))
                for j, v in enumerate([k, p["iops_gain_pct"], p["lat_reduction_pct"]], start=1):
                    data.cell(row=r, column=j, value=safe_value(v)).number_format = "@" if j == 1 else "0.0"
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
    autosize(data)
    data.column_dimensions["A"].width = 28
    _print_data(data)
