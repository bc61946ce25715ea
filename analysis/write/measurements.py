"""The Measurements sheet of both workbooks: the tidy frame itself, one column per field, with a last column
saying why each blank measurement is blank and headers that say which latency a percentile is.

Every string that came from outside goes through :func:`stormatrix.analysis.read.safe.safe_value` (column-wise,
:func:`_cell_values`), as on every other sheet (:mod:`.sheets`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import pandas as pd
from openpyxl.comments import Comment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from ..read.safe import safe_value
from .sheets import CHARS_PER_WIDTH, LINE_PT, WRAP_IN_ROW, cell_text, fit_height, header, lines_needed, print_table

MEASUREMENT_FORMATS = {"iops": "#,##0", "read_iops": "#,##0", "write_iops": "#,##0", "bw_mib_s": "0.00",
                       "mib": "0.00", "lat_mean_us": "0.0", "read_lat_mean_us": "0.0", "write_lat_mean_us": "0.0",
                       "lat_p99_us": "0.0", "clat_p99_us": "0.0",
                       "read_clat_p99_us": "0.0", "write_clat_p99_us": "0.0", "cpu_per_mib": "0.000",
                       "ctx_per_mib": "0.00", "cpu_total": "0.000",
                       "rate_mib_s": "0.0", "window_s": "0.00"}


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
                    "seen by fio, without the submission time. Microseconds. A row of several directions or jobs: "
                    "p99_basis says what it is (the merged json+ bins, or the worst one's p99)."),
    "read_clat_p99_us": ("read_clat_p99_us [completion latency p99, reads]",
                         "99th percentile of fio's completion latency (clat) of the reads alone. Microseconds."),
    "write_clat_p99_us": ("write_clat_p99_us [completion latency p99, writes]",
                          "99th percentile of fio's completion latency (clat) of the writes alone. Microseconds."),
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
    blank measurement is blank (there only when one is)."""
    formats = formats or {}
    reasons = blank_reasons(frame)
    if any(reasons):  # (a column of nothing when no measurement is blank: then it goes)
        frame = frame.assign(**{BLANK_HEADER: reasons})
    # a column no row has a value in says nothing: left out, and named in the first header's comment; a
    # measured column stays (each row's blank_reasons says why it is blank), and so does blank_reasons
    empty = [c for c in frame.columns if c not in MEASURED and c != BLANK_HEADER and not frame[c].notna().any()]
    frame = frame.drop(columns=empty)
    frame, root = _relative_sources(frame)
    if "key" in frame.columns:  # first: it names the measurement on every printed page
        frame = frame[["key"] + [c for c in frame.columns if c != "key"]]
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
    if root:
        ws.cell(row=1, column=list(frame.columns).index("source") + 1).comment = Comment(
            f"Each file's path relative to {root}", "stormatrix")
    if empty:
        first = ws.cell(row=1, column=1)
        first.comment = Comment("Left out because no measurement has a value: " + ", ".join(empty)
                                + (f"\n\n{first.comment.text}" if first.comment else ""), "stormatrix")
    for j, c in enumerate(frame.columns, start=1):
        ws.column_dimensions[get_column_letter(j)].width = _frame_width(str(ws.cell(row=1, column=j).value),
                                                                        frame[c], formats.get(c))
    # a text longer than its column (the reasons, a note) wraps, and its row grows to hold it
    ws.column_dimensions[get_column_letter(len(frame.columns))].width = 60.0
    lines = [1] * len(frame)
    for j, c in enumerate(frame.columns, start=1):
        if frame[c].dtype == "float64":
            continue
        width = ws.column_dimensions[get_column_letter(j)].width
        for i, text in enumerate(frame[c].tolist()):
            if isinstance(text, str) and len(text) > (width - 2) * CHARS_PER_WIDTH:
                ws._cells[(i + 2, j)].alignment = WRAP_IN_ROW
                lines[i] = max(lines[i], lines_needed(text, width))
    for i, n in enumerate(lines, start=2):
        if n > 1:
            ws.row_dimensions[i].height = LINE_PT * n
    fit_height(ws, 1, [(ws.cell(row=1, column=j).value, ws.column_dimensions[get_column_letter(j)].width)
                       for j in range(1, len(frame.columns) + 1)])
    print_table(ws, len(frame.columns), last)
    return last


def _relative_sources(frame: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The source column shown relative to the directory all its files share (named in the header's
    comment), so a row reads the same wherever the results were copied; a journal row's ``path:line`` keeps
    its line. The data (and the CSV) keep the full paths."""
    if "source" not in frame.columns:
        return frame, None
    values = [None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v)
              for v in frame["source"].tolist()]
    heads = [_source_path(v) if v else None for v in values]
    paths = [h for h in heads if h]
    if not paths or not all(os.path.isabs(p) for p in paths):
        return frame, None
    root = os.path.commonpath(paths)
    if root in paths:  # a single file: its directory
        root = os.path.dirname(root)
    if root in ("", os.sep):
        return frame, None
    shown = [None if v is None or h is None else os.path.relpath(h, root) + v[len(h):]
             for v, h in zip(values, heads)]
    return frame.assign(source=pd.Series(shown, index=frame.index, dtype="string")), root


def _source_path(value: str) -> str:
    """A source's file path: a journal row's ``path:line`` without its line."""
    head, _, tail = value.rpartition(":")
    return head if head and tail.isdigit() else value


def _frame_width(head: str, column: pd.Series, fmt: str | None) -> float:
    """A Measurements column as wide as its longest value (a key or a file name is never cut), numbers as
    wide as their format shows them; the header wraps over its words."""
    if column.dtype == "float64" or column.dtype == "Float64" or column.dtype == "Int64":
        values = column.dropna()
        longest = max((len(cell_text(float(v), fmt or "0.000")) for v in (values.min(), values.max())), default=0) \
            if len(values) else 0
    else:
        lengths = column.dropna().astype(str).str.len()
        longest = int(lengths.max()) if len(lengths) else 0
    words = max([len(w) for w in head.split()] + [4])
    return float(min(60.0, max(longest / CHARS_PER_WIDTH, min(words, 30), len(head) / 3) + 2.0))
