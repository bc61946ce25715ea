"""Text UTF-8 cannot encode is shown escaped in every sheet, CSV and message, and never crashes a writer.

Two real shapes: a fio job name holding a lone surrogate (``"\\ud800"`` is valid JSON) and a result file
whose name is not UTF-8 (Latin-1 ``café.json``, which Python holds as a surrogate escape). Both ended in a
UnicodeEncodeError traceback from the workbook writer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import openpyxl
import pytest

from stormatrix.analysis.read.safe import escape_unencodable, neutralize
from stormatrix.cli import main
import paths

TEMPLATE = paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    doc = json.loads(TEMPLATE.read_text())
    text = json.dumps(doc).replace('"jobname": "', '"jobname": "\\ud800', 1)  # JSON's escape, as fio can write it
    (d / "surrogate.json").write_text(text)
    try:
        (Path(os.fsdecode(bytes(d) + b"/caf\xe9.json"))).write_text(json.dumps(doc))
    except (OSError, UnicodeError):  # a filesystem that refuses names that are not UTF-8
        pytest.skip("this filesystem takes only UTF-8 names")
    broken = dict(doc, jobs=[dict(doc["jobs"][0], error="bad")])
    Path(os.fsdecode(bytes(d) + b"/br\xf6ken.json")).write_text(json.dumps(broken))
    return d


def test_report_writes_them_escaped(folder: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "r.xlsx"
    assert main(["report", str(folder), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "br\\xf6ken.json" in err and "\udcf6" not in err        # the message: escaped, readable
    wb = openpyxl.load_workbook(out)
    cells = {str(v) for ws in wb.worksheets for row in ws.iter_rows(values_only=True) for v in row if v}
    assert "caf\\xe9.json" in cells
    assert any(v.startswith("\\ud800randread") for v in cells)
    assert any("br\\xf6ken.json" in v for v in cells)                # the Summary's note names it too
    csv = out.with_suffix(".csv").read_bytes().decode("utf-8")      # valid UTF-8 throughout
    assert "caf\\xe9.json" in csv and "\\ud800randread" in csv


def test_the_escapes() -> None:
    assert escape_unencodable("caf\udce9.json") == "caf\\xe9.json"
    assert escape_unencodable("\ud800x") == "\\ud800x" and escape_unencodable("plain") == "plain"
    assert neutralize("=\ud800\x01") == "'=\\ud800"


def test_strict_names_the_file_escaped(folder: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", "--strict", str(folder), "-o", str(tmp_path / "s.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "br\\xf6ken.json: cannot be used under --strict" in err and "Traceback" not in err
