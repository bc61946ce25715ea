"""Writing output files: the tidy CSV, and the atomic replace every output goes through.

A report killed mid-write, or one whose later output fails, must never leave a truncated file under
the real name nor replace an earlier good one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
from openpyxl import Workbook

from ...core.errors import InputError
from .ooxml import schema_fonts
from ..read.safe import neutralize


def write_tidy_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """The tidy frame as CSV for scripts; text neutralised like the workbook (CSV injection)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) == "string":
            out[col] = out[col].map(lambda v: neutralize(v) if isinstance(v, str) else v)
    path = Path(path)
    # UTF-8 with \n line ends on every system (pandas would end lines with os.linesep: \r\n on Windows)
    replace_atomically(path, lambda tmp: out.to_csv(tmp, index=False, encoding="utf-8", lineterminator="\n"))
    return path


def save_workbook(wb: Workbook, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for ws in wb.worksheets:
        if ws.print_area:
            continue  # the sheet set up its own printing (sheets.print_setup / print_table)
        ws.page_setup.orientation = "landscape"
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 0
        ws.sheet_properties.pageSetUpPr.fitToPage = True
    schema_fonts(wb)  # (openpyxl writes a font's children out of the schema's order)
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


def write_all(outputs: Sequence[tuple[str, Path, Callable[[Path], Any]]]) -> None:
    """Write several outputs as one: each to a temporary file next to its name, then rename them all.

    ``outputs`` holds (the option that named it, path, writer). If any write fails, no output is
    replaced, so an earlier good workbook never ends up next to a CSV of a different run (or replaced by
    a run that failed). A failure names the output and the reason (InputError: exit 2).
    """
    temps: list[Path] = []
    try:
        for flag, path, write in outputs:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
            temps.append(tmp)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write(tmp)
            except OSError as exc:
                raise InputError(f"{flag} {path}: cannot be written ({exc.strerror or exc}); nothing was "
                                 "replaced. Fix: give a writable place") from None
        for (flag, path, _), tmp in zip(outputs, temps):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise InputError(f"{flag} {path}: cannot be replaced ({exc.strerror or exc}). "
                                 "Fix: give a writable place") from None
    finally:
        for tmp in temps:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # its folder could not be made (a file's name was given as one): nothing to remove
