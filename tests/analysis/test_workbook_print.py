"""The workbooks as a customer prints them: rendered by LibreOffice headless to PDF, read back with poppler.

- every chart's page has drawn, coloured content (the page found by the chart's title, pdftotext; rasterised,
  pdftoppm), every score bar and legend entry of a demo-sized workbook is labelled on its page, the Charts
  sheet prints landscape;
- no clipped or overprinted text on any page (pdftotext -bbox: every word with its box): a cell's text that
  runs into its neighbour, or a wrapped text whose row is too short, is drawn over the next cell's words
  (LibreOffice exports the whole string under a clip path), so no two words' boxes may overlap, and none may
  leave the paper; every text of every sheet is printed (nothing cut off by a print area); every chart has
  data points and a title (the chart XML), and its title is printed;
- the Answer page is one page, and the compare workbook's Summary too.

Each workbook is written and rendered once per module and checked by every test that needs it: a demo-sized
report (5 controllers x 3 aio modes x 3 repeats, through the same journal records the qemu backend writes),
the compare workbook of the fio fixtures, the sample run's report and one with ESXi cells.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from stormatrix.analysis.write.ooxml import schema_fonts
from stormatrix.cli import main
import paths

DATA = paths.DATA
SOFFICE = shutil.which("soffice")
POPPLER = shutil.which("pdftoppm") and shutil.which("pdftotext")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SOFFICE, reason="LibreOffice (soffice) is not installed: apt-get install -y "
                                           "--no-install-recommends libreoffice-calc-nogui"),
    pytest.mark.skipif(not POPPLER, reason="poppler-utils (pdftoppm, pdftotext) is not installed"),
]


def to_pdf(xlsx: Path, tmp: Path) -> Path:
    profile = tmp / "lo-profile"
    subprocess.run([SOFFICE, f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", "pdf",
                    "--outdir", str(tmp), str(xlsx)], check=True, capture_output=True, timeout=300)
    pdf = tmp / (xlsx.stem + ".pdf")
    assert pdf.exists()
    return pdf


class Printed:
    """A workbook and its PDF (rendered once), in its own folder."""

    def __init__(self, xlsx: Path) -> None:
        self.xlsx, self.tmp = xlsx, xlsx.parent
        self.pdf = to_pdf(xlsx, self.tmp)


def page_texts(pdf: Path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True).stdout
    return [" ".join(p.split()) for p in text.split("\f")]


def ink(pdf: Path, page: int, tmp: Path) -> tuple[float, float]:
    """(share of non-white pixels, share of coloured pixels) of one page, from a PPM raster."""
    prefix = tmp / f"p{page}"
    subprocess.run(["pdftoppm", "-r", "30", "-f", str(page), "-l", str(page), str(pdf), str(prefix)],
                   check=True, capture_output=True)
    ppm = next(tmp.glob(f"p{page}-*.ppm"))
    data = ppm.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:                      # P6 <w> <h> <max>\n<bytes>
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pixels = data[pos + 1:]
    n = len(pixels) // 3
    dark = coloured = 0
    for i in range(0, n * 3, 3):
        r, g, b = pixels[i], pixels[i + 1], pixels[i + 2]
        if min(r, g, b) < 235:
            dark += 1
        if max(r, g, b) - min(r, g, b) > 60:
            coloured += 1
    return dark / n, coloured / n


def check_chart_pages(printed: Printed, *, min_coloured: float = 0.002) -> int:
    """Every chart's page has drawn content; ``min_coloured``: the share of coloured pixels it needs (text
    and grid lines are black and grey: a chart with only a few markers needs a lower bar than 12 series)."""
    wb = openpyxl.load_workbook(printed.xlsx)
    titles = []
    for chart in wb["Charts"]._charts:
        runs = chart.title.tx.rich.p[0].r
        titles.append(" ".join("".join(r.t for r in runs).split()))
    pdf, tmp = printed.pdf, printed.tmp
    pages = page_texts(pdf)
    for title in titles:
        # a title wrapped after a hyphen ("randread-" / "64k") reads "randread- 64k": compare without that space
        flat = " ".join(title.split()).replace("- ", "-")
        hits = [i for i, text in enumerate(pages, start=1) if flat in text.replace("- ", "-")]
        assert hits, f"chart {title!r} is not in the PDF"
        # the chart's own page is the last with its title: LibreOffice also exports the top of the next
        # page's chart into the text layer of the page before (clipped, not drawn)
        dark, coloured = ink(pdf, hits[-1], tmp)
        assert dark > 0.01, f"page {hits[-1]} ({title}) is nearly blank"
        assert coloured > min_coloured, f"page {hits[-1]} ({title}) has no coloured chart content"
    return len(titles)


Word = tuple[float, float, float, float, str]


def word_boxes(pdf: Path) -> tuple[list[list[Word]], list[tuple[float, float]]]:
    """The PDF's pages as word boxes, and each page's size (points: the Answer page is portrait, the rest landscape)."""
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    pages, sizes = [], []
    for page in out.split("<page ")[1:]:
        size = re.match(r'width="([\d.]+)" height="([\d.]+)"', page)
        assert size
        sizes.append((float(size.group(1)), float(size.group(2))))
        pages.append([(float(a), float(b), float(c), float(d), html.unescape(w)) for a, b, c, d, w in
                      re.findall(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>',
                                 page)])
    return pages, sizes


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


def check(printed: Printed) -> tuple[openpyxl.Workbook, dict[str, list[int]], list[list[Word]]]:
    xlsx = printed.xlsx
    wb = openpyxl.load_workbook(xlsx)
    pages, sizes = word_boxes(printed.pdf)
    assert pages
    text = " ".join(w[4] for page in pages for w in page)
    for n, page in enumerate(pages, start=1):
        bad = overlaps(page)
        assert not bad, f"{xlsx.name} page {n}: text drawn over other text (clipped cells): {bad[:5]}"
        # across the paper's sides only: a row never splits over two pages, and what crosses the bottom edge is
        # LibreOffice putting the top of the next page's chart into this page's text layer (clipped, not drawn)
        width = sizes[n - 1][0]
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
    """A word LibreOffice wrapped at a hyphen or slash prints as two or more pieces, each ending at one
    (``randread-`` ``64k``; ``virtio-scsi-`` ``single.``): some split at those points has every piece printed."""
    cuts = [m.end() for m in re.finditer(r"[-/]", word) if m.end() < len(word)]

    def pieces(rest: str, start: int) -> bool:
        if rest in printed or rest.rstrip("-/") in printed:
            return start > 0
        return any(rest[:c - start] in printed and pieces(word[c:], c) for c in cuts if c > start)

    return bool(cuts) and pieces(word, 0)


def _has_numbers(wb: openpyxl.Workbook, ref: str) -> bool:
    m = re.fullmatch(r"'?(.*?)'?!\$([A-Z]+)\$(\d+)(?::\$([A-Z]+)\$(\d+))?", ref)
    assert m, ref
    ws = wb[m.group(1)]
    cells = ws[f"{m.group(2)}{m.group(3)}:{m.group(4) or m.group(2)}{m.group(5) or m.group(3)}"]
    values = [c.value for row in (cells if isinstance(cells, tuple) else ((cells,),)) for c in
              (row if isinstance(row, tuple) else (row,))]
    return any(isinstance(v, (int, float)) for v in values)


@pytest.fixture(scope="module")
def demo_sized(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    """15 configurations x 3 repeats, the demo matrix's shape, under software emulation."""
    from test_workbook_charts import demo_run

    tmp = tmp_path_factory.mktemp("demo")
    out = tmp / "demo.xlsx"
    assert main(["report", str(demo_run(tmp / "run", 3)), "-o", str(out)]) == 0
    return Printed(out)


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    out = tmp_path_factory.mktemp("cmp") / "cmp.xlsx"
    assert main(["compare", str(DATA / "fio" / "compare" / "A"), str(DATA / "fio" / "compare" / "B"),
                 "--label-a", "ESXi", "--label-b", "PVE", "-o", str(out)]) == 0
    return Printed(out)


# --- charts ----------------------------------------------------------------------------------------------------

def test_efficiency_workbook_renders_every_chart(tmp_path: Path):
    out = tmp_path / "eff.xlsx"
    assert main(["report", str(DATA / "journal" / "sample_run"), "-o", str(out)]) == 0
    assert check_chart_pages(Printed(out)) == 3


def test_comparison_workbook_renders_every_chart(comparison: Printed):
    assert check_chart_pages(comparison) == 10


def test_report_with_esxi_cells_renders_its_charts_and_notes(tmp_path: Path):
    """A mixed QEMU/ESXi group and an ESXi-only group: every chart drawn has content on its page, and the
    notes standing in for the scatter charts without ctx/MiB print whole on the page of the next chart."""
    from test_analysis_noctx import ESX_REASON, journal, mixed_records, record

    esx = [record("nvme", None, rep, cpu, None, workload="randwrite-4k") for rep, cpu in ((1, 9.0), (2, 9.5))]
    esx += [record("pvscsi", None, rep, cpu, None, workload="randwrite-4k") for rep, cpu in ((1, 12.0), (2, 12.5))]
    run = journal(tmp_path / "mixed", mixed_records() + esx)
    out = tmp_path / "mixed.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    # randread-64k: measured scatter + bars; randwrite-4k: bars; seqwrite-1m: both scatters + bars. The
    # scatters hold 2 and 3 markers (about 0.06 % of a page's pixels each at 30 dpi), not 12 series
    printed = Printed(out)
    assert check_chart_pages(printed, min_coloured=0.0003) == 6
    pages = page_texts(printed.pdf)
    for note, chart in (
            ("Not on the measured CPU vs context-switch chart of randread-64k [CPU-ms/MiB]: pvscsi (no context-switch",
             "Measured CPU and context switches per MiB - randread-64k"),
            ("No normalized CPU vs context-switch chart for randread-64k [CPU-ms/MiB]",
             "Efficiency score (lower is better) - randread-64k"),
            (f"No CPU vs context-switch charts for randwrite-4k [CPU-ms/MiB]: no configuration has context-switch "
             f"counts ({ESX_REASON}); the group is scored on CPU/MiB alone (score chart below, Scores sheet).",
             "Efficiency score (lower is better) - randwrite-4k")):
        # a wrapped line may break after a hyphen ("context-" / "switch"): compare without that space
        hits = [i for i, text in enumerate(pages) if note.replace("- ", "-") in text.replace("- ", "-")]
        assert hits, f"note {note!r} is not in the PDF (cut off?)"
        assert chart.replace("- ", "-") in pages[hits[0]].replace("- ", "-"), \
            f"note {note!r} is not on the page of {chart!r}"


def test_demo_sized_report_labels_every_bar_on_its_page(demo_sized: Printed):
    """15 configurations x 3 repeats: the score chart's page names every configuration (each bar labelled,
    not every other one), the scatter's page every legend entry, and the Charts sheet prints landscape."""
    from test_workbook_charts import AIO, CONTROLLERS

    assert check_chart_pages(demo_sized) == 3
    pages = page_texts(demo_sized.pdf)
    pages = [p.replace("- ", "-") for p in pages]
    bar_page = [p for p in pages if "Efficiency score (lower is better)" in p][-1]   # its own page: the last
    configs = [f"{c} aio={a}" for c in CONTROLLERS for a in AIO]
    assert all(c in bar_page for c in configs), [c for c in configs if c not in bar_page]
    scatter_page = [p for p in pages if "Measured CPU and context switches per MiB" in p][-1]
    assert all(f"{c} / aio={a}" in scatter_page for c in CONTROLLERS for a in AIO)
    assert "95 % CI" in scatter_page and "95 % bootstrap interval" in bar_page   # the error bars are named
    # landscape: the PDF's chart pages are wider than tall
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", str(len(pages)), str(demo_sized.pdf)],
                          capture_output=True, text=True).stdout if shutil.which("pdfinfo") else ""
    sizes = re.findall(r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)", info)
    page = pages.index(bar_page) + 1
    if sizes:
        w, h = map(float, sizes[page - 1])
        assert w > h


# --- text ------------------------------------------------------------------------------------------------------

def test_efficiency_workbook_prints_without_clipped_text(demo_sized: Printed) -> None:
    wb, by_sheet, pages = check(demo_sized)
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


def test_compare_workbook_prints_without_clipped_text(comparison: Printed) -> None:
    wb, by_sheet, _ = check(comparison)
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
        check(Printed(out))
