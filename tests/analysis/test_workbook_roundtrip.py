"""Workbook round trips: write, reopen with openpyxl, check sheets, headers, key cells, charts and the
cell ranges each chart series points at; and that untrusted text can never become a formula."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import openpyxl
import pytest

from stormatrix.analysis.score.compare import compare
from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.score.comparisonfindings import comparison_findings
from stormatrix.analysis.score.findings import efficiency_findings
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.read.safe import neutralize
from stormatrix.analysis.write.workbook import write_comparison_workbook, write_efficiency_workbook
from stormatrix.cli import main
import paths

DATA = paths.DATA
EFF_SHEETS = ["Answer", "Summary", "Method", "Scores", "IO path", "Charts", "Measurements", "Environment",
              "Chart data"]
CMP_SHEETS = ["Summary", "Method", "Measurements", "Comparison", "Averages", "Charts", "Environment", "Chart data"]


def refs(chart) -> list[tuple[str, str]]:
    """(x or category ref, y ref) of every series."""
    out = []
    for s in chart.series:
        y = s.val.numRef.f if s.val is not None else s.yVal.numRef.f
        if s.xVal is not None:
            x = s.xVal.numRef.f if s.xVal.numRef is not None else s.xVal.strRef.f
        else:
            x = s.cat.strRef.f if s.cat.strRef is not None else s.cat.numRef.f
        out.append((x, y))
    return out


def cells_of(wb, ref: str) -> list:
    m = re.fullmatch(r"'?(.+?)'?!\$([A-Z]+)\$(\d+)(?::\$([A-Z]+)\$(\d+))?", ref)
    assert m, ref
    ws = wb[m.group(1)]
    end = f"{m.group(4)}{m.group(5)}" if m.group(4) else f"{m.group(2)}{m.group(3)}"
    return [c.value for row in ws[f"{m.group(2)}{m.group(3)}:{end}"] for c in row]


@pytest.fixture(scope="module")
def eff_book(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("eff") / "eff.xlsx"
    data = ingest([DATA / "journal" / "sample_run"])
    result = score_cells(data.frame)
    write_efficiency_workbook(out, data, result, efficiency_findings(result), label="Lab A")
    return out


def test_efficiency_workbook_sheets_headers_and_charts(eff_book: Path):
    wb = openpyxl.load_workbook(eff_book)
    assert wb.sheetnames == EFF_SHEETS
    scores = wb["Scores"]
    headers = [c.value for c in scores[1]]
    for h in ("Rank", "Configuration", "CPU metric", "CPU unit", "CPU/MiB mean", "ctx/MiB mean", "Normalized CPU",
              "Normalized ctx", "Efficiency score", "Rank in controller", "Rank in aio mode", "Rank by CPU",
              "Rank by ctx", "CV flag"):
        assert h in headers
    assert scores.freeze_panes == "A2"
    assert scores.auto_filter.ref == f"A1:{openpyxl.utils.get_column_letter(len(headers))}13"
    assert len(scores.conditional_formatting) == 1
    best = dict(zip(headers, [c.value for c in scores[2]]))
    assert (best["Rank"], best["Configuration"], best["CPU metric"]) == (1, "virtio-blk aio=native", "cpu_time")
    # every sheet says which CPU metric was used
    assert "cpu_metric" in [c.value for c in wb["Measurements"][1]]
    summary_text = " ".join(str(c.value) for row in wb["Summary"].iter_rows() for c in row if c.value)
    assert "cpu_time" in summary_text and "CPU-ms/MiB" in summary_text
    assert "cycles" in " ".join(str(c.value) for c in wb["Method"]["A"] if c.value) + \
        " ".join(str(c.value) for c in wb["Method"]["B"] if c.value)
    charts = wb["Charts"]._charts
    assert len(charts) == 3                                   # raw scatter, normalized scatter, score bars
    raw, norm, bars = charts
    assert len(raw.series) == 12                              # one per controller x aio
    # each raw series points at the Chart data rows of its own controller/aio, x = CPU, y = ctx
    first_x, first_y = refs(raw)[0]
    assert first_x == "'Chart data'!$C$3" and first_y == "'Chart data'!$D$3"
    assert cells_of(wb, first_x) == [pytest.approx(30.3)]
    assert cells_of(wb, first_y) == [pytest.approx(40.4)]
    assert wb["Chart data"]["A3"].value == "virtio-blk / native"
    # marker per controller, colour per aio mode
    symbols = {s.tx.v: s.marker.symbol for s in raw.series}
    colours = {s.tx.v: s.marker.graphicalProperties.solidFill.srgbClr for s in raw.series}
    assert symbols["virtio-blk / aio=native"] == symbols["virtio-blk / aio=threads"] != symbols["sata / aio=native"]
    assert colours["virtio-blk / aio=native"] == colours["sata / aio=native"] != colours["sata / aio=threads"]
    assert refs(norm)[0] == ("'Chart data'!$E$3", "'Chart data'!$F$3")
    cats, vals = refs(bars)[0]
    assert cells_of(wb, cats)[0] == "virtio-blk aio=native"
    assert cells_of(wb, vals) == sorted(cells_of(wb, vals))    # best first


@pytest.fixture(scope="module")
def cmp_book(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cmp") / "cmp.xlsx"
    a, b = ingest([DATA / "fio" / "compare" / "A"]), ingest([DATA / "fio" / "compare" / "B"])
    result = compare(a.frame, b.frame, label_a="A side", label_b="B side")
    write_comparison_workbook(out, a, b, result, comparison_findings(result))
    return out


def test_comparison_workbook_sheets_and_chart_references(cmp_book: Path):
    wb = openpyxl.load_workbook(cmp_book)
    assert wb.sheetnames == CMP_SHEETS
    headers = [c.value for c in wb["Comparison"][1]]
    for h in ("IOPS A side", "IOPS B side", "IOPS gain %", "Latency reduction %", "p (IOPS, Welch)",
              "IOPS significance", "Bandwidth A side (MiB/s)"):
        assert h in headers
    charts = wb["Charts"]._charts
    # per block size: IOPS, latency, bandwidth by QD (2 block sizes) + gain/latency by QD + by block size
    assert len(charts) == 2 * 3 + 2 + 2
    iops_4k = charts[0]
    assert [s.tx.strRef.f for s in iops_4k.series] == ["'Chart data'!B2", "'Chart data'!C2"]
    (cat, y_a), (_, y_b) = refs(iops_4k)
    assert cells_of(wb, cat) == ["QD1", "QD8"]
    comparison = {(r[2], r[3]): r for r in wb["Comparison"].iter_rows(min_row=2, values_only=True)}
    assert cells_of(wb, y_a) == [pytest.approx(comparison[(4096, 1)][6]), pytest.approx(comparison[(4096, 8)][6])]
    assert cells_of(wb, y_b) == [pytest.approx(comparison[(4096, 1)][7]), pytest.approx(comparison[(4096, 8)][7])]


DANGEROUS = ["=HYPERLINK(\"http://x\",\"y\")", "+SUM(1,2)", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]


def test_untrusted_text_never_becomes_a_formula(tmp_path: Path):
    run = tmp_path / "=evil"
    run.mkdir()
    src = (DATA / "journal" / "sample_run" / "journal.ndjson").read_text().splitlines()
    lines = []
    for i, line in enumerate(src):
        for bad in ('"vm": "stormatrix-demo"', '"host": "bench-01"'):
            line = line.replace(bad, bad.split(":")[0] + ': "' + DANGEROUS[i % len(DANGEROUS)]
                                .replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\r", "\\r") + '"')
        lines.append(line)
    (run / "journal.ndjson").write_text("\n".join(lines) + "\n")
    out = tmp_path / "x.xlsx"
    assert main(["report", str(run), "-o", str(out), "--label", "=1+1"]) == 0
    wb = openpyxl.load_workbook(out)
    seen = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str):
                    assert c.data_type != "f", (ws.title, c.coordinate, c.value)
                    assert not c.value.startswith(("=", "+", "-", "@", "\t", "\r")), (ws.title, c.coordinate, c.value)
                    seen += c.value.startswith("'=") or c.value.startswith("'+")
    assert seen >= 3                                     # the label, VM names and host name are all there
    with open(out.with_suffix(".csv"), newline="") as fh:
        for row in csv.reader(fh):
            for field in row:
                assert not field.startswith(("=", "+", "@", "\t", "\r")), field
                assert not (field.startswith("-") and not re.fullmatch(r"-[\d.e+-]+", field)), field


@pytest.mark.parametrize("text,expected", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-cmd", "'-cmd"), ("@x", "'@x"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("virtio-blk", "virtio-blk"), ("a\x00b\x07c", "abc"), ("\x00=x", "'=x"),
])
def test_neutralize(text, expected):
    assert neutralize(text) == expected
