"""The one efficiency pipeline (``analysis.efficiency_report``) that ``stormatrix report`` and ``demo`` call:
what the caller passes in changes where warnings go and what refuses the inputs, never the numbers."""

from __future__ import annotations

import shutil
from pathlib import Path

import openpyxl
import pytest

from stormatrix.analysis.efficiency_report import efficiency_report
from stormatrix.cli import main
from stormatrix.core.errors import InputError
import paths

SAMPLE = paths.DATA / "journal" / "sample_run"


def sheet_values(path: Path) -> dict[str, list[tuple[object, ...]]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:  # when it was generated (Summary, Environment) is all that may differ between two writes
        return {ws.title: [r for r in ws.iter_rows(values_only=True) if not {"Generated", "generated"} & set(r)]
                for ws in wb}
    finally:
        wb.close()


def test_the_command_and_the_function_write_the_same_workbook(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run, stray = tmp_path / "run", tmp_path / "stray.json"
    shutil.copytree(SAMPLE, run)
    stray.write_text("{}")  # a file that is no result: skipped and named
    assert main(["report", str(run), str(stray), "-o", str(tmp_path / "command.xlsx")]) == 0
    printed = capsys.readouterr()
    heard: list[str] = []
    report = efficiency_report([str(run), str(stray)], tmp_path / "function.xlsx", tmp_path / "function.csv",
                               warn=heard.extend)
    assert report.workbook.is_file() and report.csv.is_file()
    assert sheet_values(tmp_path / "command.xlsx") == sheet_values(report.workbook)
    assert (tmp_path / "command.csv").read_text() == report.csv.read_text()
    assert [f"stormatrix: warning: {w}" for w in heard] == printed.err.splitlines()
    assert any("stray.json" in w for w in heard)
    assert f"{len(report.data.frame)} measurements, {len(report.result.cells)} configurations scored, " \
           f"{len(report.findings)} findings" in printed.out


def test_a_check_refuses_the_inputs_before_anything_is_written(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def refuse(data: object) -> None:
        seen.append(list(getattr(data, "inputs")))
        raise InputError("refused")

    heard: list[str] = []
    with pytest.raises(InputError, match="refused"):
        efficiency_report([str(SAMPLE)], tmp_path / "w.xlsx", tmp_path / "w.csv", warn=heard.extend, check=refuse)
    assert seen and str(SAMPLE / "journal.ndjson") in seen[0]
    assert heard == [] and not (tmp_path / "w.xlsx").exists() and not (tmp_path / "w.csv").exists()


def test_no_usable_result_names_the_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=f"no usable results in {empty}. Fix: give run directories"):
        efficiency_report([str(empty)], tmp_path / "w.xlsx", tmp_path / "w.csv", warn=lambda _: None)
