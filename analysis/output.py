"""Writing output files: the tidy CSV, and the atomic replace every output goes through.

A report killed mid-write, or one whose later output fails, must never leave a truncated file under
the real name nor replace an earlier good one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook

from .safe import neutralize


def write_tidy_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """The tidy frame as CSV for scripts; text neutralised like the workbook (CSV injection)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) == "string":
            out[col] = out[col].map(lambda v: neutralize(v) if isinstance(v, str) else v)
    path = Path(path)
    replace_atomically(path, lambda tmp: out.to_csv(tmp, index=False))
    return path


def save_workbook(wb: Workbook, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for ws in wb.worksheets:
        ws.page_setup.orientation = "landscape"
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 0
        ws.sheet_properties.pageSetUpPr.fitToPage = True
    replace_atomically(path, wb.save)
    return path


def replace_atomically(path: Path, write: Any) -> None:
    """Write next to ``path`` and rename over it: a report killed mid-write leaves the previous file
    whole (or none), never a truncated workbook or CSV under the real name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
