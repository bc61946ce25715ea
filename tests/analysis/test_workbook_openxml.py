"""Each kind of workbook passes Microsoft's Open XML SDK validator (Office 2016 rules) with 0 errors.

Excel reads a part by the schema's sequence and offers to "repair" a file that breaks it, dropping the
charts; LibreOffice, which the render tests use, does not tell. ``tests/conftest.py`` validates every
workbook the whole session wrote as well; here each kind is written and checked by name, and a workbook
in openpyxl's own order is shown to fail (the check can fail).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.chart.data_source import NumDataSource, NumRef
from openpyxl.chart.error_bar import ErrorBars

from stormatrix.analysis.write.savefiles import save_workbook
from stormatrix.cli import main
from stormatrix.suiterun import write_comparison as suite_workbook
import openxmlcheck
import paths

DATA = paths.DATA


def assert_valid(*books: Path) -> None:
    errors = openxmlcheck.validate(books)
    assert not errors, "\n".join(map(str, errors))


def test_efficiency_workbook_of_fio_and_diskspd_results(tmp_path: Path) -> None:
    out = tmp_path / "eff.xlsx"
    inputs = [str(p) for p in sorted((DATA / "fio").glob("fio3_*.json"))] + [str(DATA / "diskspd")]
    assert main(["report", *inputs, "-o", str(out)]) == 0
    assert_valid(out)


def test_compare_and_suite_workbooks(tmp_path: Path) -> None:
    a, b = DATA / "fio" / "compare" / "A", DATA / "fio" / "compare" / "B"
    cmp_out = tmp_path / "cmp.xlsx"
    assert main(["compare", str(a), str(b), "-o", str(cmp_out)]) == 0
    suite_out = tmp_path / "suite.xlsx"
    suite_workbook(("iSCSI", a), ("NBD", b), suite_out)
    assert_valid(cmp_out, suite_out)


def test_the_check_finds_openpyxls_own_order(tmp_path: Path) -> None:
    """openpyxl 3.0 writes errBars' minus before plus and the default font's name first: both are errors."""
    wb = Workbook()
    ws = wb.active
    for row in ([1, 0.1], [2, 0.2]):
        ws.append(row)
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=1, min_row=1, max_row=2))
    ref = NumDataSource(numRef=NumRef(f="Sheet!$B$1:$B$2"))
    chart.series[0].errBars = ErrorBars(errDir="y", errBarType="both", errValType="cust", plus=ref, minus=ref)
    ws.add_chart(chart, "D2")
    with tempfile.TemporaryDirectory() as scratch:  # (outside the session's folders, which must all be valid)
        raw = Path(scratch) / "raw.xlsx"
        wb.save(raw)
        errors = openxmlcheck.validate([raw])
    assert any(e.part.startswith("/xl/charts/") and "errBars" in e.path and ":plus" in e.description for e in errors)
    assert any(e.part == "/xl/styles.xml" and "font" in e.path for e in errors)
    fixed = tmp_path / "fixed.xlsx"
    wb2 = Workbook()
    wb2.active.append([1])
    save_workbook(wb2, fixed)  # the product's save: fonts in the schema's order
    assert_valid(fixed)
