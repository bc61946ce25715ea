"""The workbooks as a customer sees them (issue 21): rendered by LibreOffice headless to PDF, read back with
poppler (pdftotext -bbox: every word with its box on its page).

- no clipped or overprinted text on any page: a cell's text that runs into its neighbour, or a wrapped
  text whose row is too short, is drawn over the next cell's words (LibreOffice exports the whole string
  under a clip path), so no two words' boxes may overlap, and none may leave the paper;
- every text of every sheet is printed: each cell's words are found on the pages (nothing cut off by a
  print area);
- every chart has data points and a title (the chart XML), and its title is printed;
- the Answer page is one page, and the compare workbook's Summary too.

Workbooks: a demo-sized report (5 controllers x 3 aio modes x 3 repeats, through the same journal records
the qemu backend writes) and a compare workbook of the fio fixtures.
"""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import openpyxl
import pytest

from stormatrix.analysis.write.ooxml import schema_fonts
from stormatrix.cli import main

from test_analysis_iopath import qemu_record, write_journal
import paths

from test_workbook_render import SOFFICE, pytestmark  # noqa: F401 - the same skips (LibreOffice, poppler)

DATA = paths.DATA


Word = tuple[float, float, float, float, str]


def render(xlsx: Path, tmp: Path) -> tuple[list[list[Word]], tuple[float, float]]:
    """The workbook's PDF pages as word boxes, and the page size (points)."""
    subprocess.run([SOFFICE, f"-env:UserInstallation=file://{tmp / 'lo-profile'}", "--headless", "--convert-to",
                    "pdf", "--outdir", str(tmp), str(xlsx)], check=True, capture_output=True, timeout=300)
    pdf = tmp / (xlsx.stem + ".pdf")
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    size = re.search(r'<page width="([\d.]+)" height="([\d.]+)"', out)
    assert size
    pages = []
    for page in out.split("<page ")[1:]:
        pages.append([(float(a), float(b), float(c), float(d), html.unescape(w)) for a, b, c, d, w in
                      re.findall(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>',
                                 page)])
    return pages, (float(size.group(1)), float(size.group(2)))


def overlaps(words: list[Word]) -> list[tuple[str, str]]:
    """Pairs of words drawn over each other: boxes crossing by more than a point across and half a line."""
    out = []
    for i, (x0, y0, x1, y1, w) in enumerate(words):
        for a0, b0, a1, b1, v in words[i + 1:]:
            if min(x1, a1) - max(x0, a0) > 1.0 and min(y1, b1) - max(y0, b0) > 0.5 * min(y1 - y0, b1 - b0):
                out.append((w, v))
    return out


def sheet_pages(pages: list[list[Word]], wb: openpyxl.Workbook) -> dict[str, list[int]]:
    """Which pages each sheet printed on: the sheets print in order, each starting on a new page with its
    first cell's text (A1) or, for a chart sheet, its first chart's title."""
    starts = []
    for ws in wb.worksheets:
        first = ws["A1"].value if ws["A1"].value is not None else chart_titles(ws)[0]
        starts.append((ws.title, str(first).split()[0]))
    out: dict[str, list[int]] = {}
    page = 0
    for k, (title, word) in enumerate(starts):
        nxt = starts[k + 1][1] if k + 1 < len(starts) else None
        out[title] = [page]
        page += 1
        while page < len(pages) and not (nxt is not None and pages[page] and
                                         any(w[4] == nxt for w in pages[page][:8])):
            out[title].append(page)
            page += 1
    return out


def chart_titles(ws: object) -> list[str]:
    return [" ".join("".join(r.t for r in c.title.tx.rich.p[0].r).split()) for c in ws._charts]  # type: ignore


def check(xlsx: Path, tmp: Path) -> tuple[openpyxl.Workbook, dict[str, list[int]], list[list[Word]]]:
    wb = openpyxl.load_workbook(xlsx)
    pages, (width, height) = render(xlsx, tmp)
    assert pages
    text = " ".join(w[4] for page in pages for w in page)
    for n, page in enumerate(pages, start=1):
        bad = overlaps(page)
        assert not bad, f"{xlsx.name} page {n}: text drawn over other text (clipped cells): {bad[:5]}"
        # across the paper's sides only: a row never splits over two pages, and what crosses the bottom edge is
        # LibreOffice putting the top of the next page's chart into this page's text layer (clipped, not drawn)
        off = [w[4] for w in page if w[2] > width + 0.5 or w[0] < -0.5]
        assert not off, f"{xlsx.name} page {n}: words beyond the paper's sides: {off[:5]}"
    printed = set(text.split())
    lines = [" ".join(w[4] for w in sorted(line, key=lambda w: w[0])) for page in pages for line in _lines(page)]
    for ws in wb.worksheets:
        merged = {c for rng in ws.merged_cells.ranges for row in ws.iter_rows(
            min_row=rng.min_row, max_row=rng.max_row, min_col=rng.min_col, max_col=rng.max_col) for c in row}
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.strip():
                    missing = [w for w in c.value.split() if w not in printed and not _split_word(w, printed)]
                    assert not missing, f"{ws.title}!{c.coordinate}: not printed: {missing[:5]} of {c.value[:80]!r}"
                    # a text on one line (not wrapped) prints whole on one line: a cut one lacks its end
                    one = " ".join(c.value.split())
                    if not (c.alignment and c.alignment.wrap_text) and c not in merged and ws.title != "Charts":
                        assert any(one in line for line in lines), f"{ws.title}!{c.coordinate}: cut: {one[:80]!r}"
        for chart, title in zip(ws._charts, chart_titles(ws)):
            assert title, f"{ws.title}: a chart without a title"
            assert all(w in printed or _split_word(w, printed) for w in title.split()), f"title not printed: {title}"
            assert chart.series and all(s.val is not None or s.yVal is not None for s in chart.series), title
            refs = [s.val.numRef.f if s.val is not None else s.yVal.numRef.f for s in chart.series]
            assert all(_has_numbers(wb, ref) for ref in refs), f"{title}: a series without data points"
    return wb, sheet_pages(pages, wb), pages


def _lines(page: list[Word]) -> list[list[Word]]:
    """The words of a page grouped into printed lines (the same baseline, within a point)."""
    out: dict[int, list[Word]] = {}
    for w in page:
        out.setdefault(round(w[3]), []).append(w)
    return list(out.values())


def _split_word(word: str, printed: set[str]) -> bool:
    """A word LibreOffice wrapped at a hyphen or slash prints as two: ``randread-`` ``64k``."""
    parts = [p for p in re.split(r"(?<=[-/])", word) if p]
    return len(parts) > 1 and all(p in printed or p.rstrip("-/") in printed for p in parts)


def _has_numbers(wb: openpyxl.Workbook, ref: str) -> bool:
    m = re.fullmatch(r"'?(.*?)'?!\$([A-Z]+)\$(\d+)(?::\$([A-Z]+)\$(\d+))?", ref)
    assert m, ref
    ws = wb[m.group(1)]
    cells = ws[f"{m.group(2)}{m.group(3)}:{m.group(4) or m.group(2)}{m.group(5) or m.group(3)}"]
    values = [c.value for row in (cells if isinstance(cells, tuple) else ((cells,),)) for c in
              (row if isinstance(row, tuple) else (row,))]
    return any(isinstance(v, (int, float)) for v in values)


def demo_like(tmp: Path) -> Path:
    """The demo matrix's shape: 5 controllers x 3 aio modes x 3 repeats of one randread workload."""
    recs = []
    for c_i, ctrl in enumerate(["ide", "sata", "virtio-blk", "virtio-scsi-single", "pvscsi"]):
        for a_i, aio in enumerate(["native", "io_uring", "threads"]):
            for rep in (1, 2, 3):
                recs.append(qemu_record(ctrl, aio, rep, vcpu_s=4.0 + c_i * 0.6 + a_i * 0.3 + rep * 0.07,
                                        io_s=0.3 + a_i * 0.1, io_ctx=2000 + 400 * c_i + 900 * a_i + 50 * rep))
    return write_journal(tmp, recs, accel="tcg")


@pytest.fixture(scope="module")
def efficiency(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("eff")
    out = tmp / "demo.xlsx"
    assert main(["report", str(demo_like(tmp / "run")), "-o", str(out)]) == 0
    return out, tmp


def test_efficiency_workbook_prints_without_clipped_text(efficiency: tuple[Path, Path]) -> None:
    out, tmp = efficiency
    wb, by_sheet, pages = check(out, tmp)
    assert wb.sheetnames[0] == "Answer"
    assert len(by_sheet["Answer"]) == 1, f"the Answer page printed on {len(by_sheet['Answer'])} pages"
    answer = " ".join(w[4] for w in pages[by_sheet["Answer"][0]])
    for condition in ("Platform", "Guest", "Host", "Workload", "Window", "Repeats", "Repeatability", "Not tested",
                      "CPU figure"):
        assert condition in answer
    assert "tcg" in answer and "Efficiency" in answer          # the emulation is named, the score chart printed
    # the Method sheet explains the CPU figure and the score's interval
    method = " ".join(w[4] for p in by_sheet["Method"] for w in pages[p])
    assert "CPU figure scored" in method and "Score interval" in method and "resamples" in method


def test_compare_workbook_prints_without_clipped_text(tmp_path: Path) -> None:
    out = tmp_path / "cmp.xlsx"
    assert main(["compare", str(DATA / "fio" / "compare" / "A"), str(DATA / "fio" / "compare" / "B"),
                 "--label-a", "ESXi", "--label-b", "PVE", "-o", str(out)]) == 0
    wb, by_sheet, _ = check(out, tmp_path)
    assert len(by_sheet["Summary"]) == 1, f"the compare Summary printed on {len(by_sheet['Summary'])} pages"


def test_the_check_finds_clipped_text(tmp_path: Path) -> None:
    """The check can fail: a long text in a narrow column with its neighbour filled is reported."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "a long explanation squeezed into a column about eight characters wide"
    ws["B1"] = "neighbour text"
    ws.column_dimensions["A"].width = 8
    out = tmp_path / "clipped.xlsx"
    schema_fonts(wb)  # (every workbook the tests write must pass the Open XML validator: tests/conftest.py)
    wb.save(out)
    with pytest.raises(AssertionError, match="drawn over other text|not printed"):
        check(out, tmp_path)
