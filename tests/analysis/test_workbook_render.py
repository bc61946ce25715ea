"""The workbooks render in LibreOffice: convert to PDF (soffice --headless), find each chart's page by
its title (pdftotext) and check that page, rasterised (pdftoppm), has drawn, coloured content."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

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
                    "--outdir", str(tmp), str(xlsx)], check=True, capture_output=True, timeout=180)
    pdf = tmp / (xlsx.stem + ".pdf")
    assert pdf.exists()
    return pdf


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


def check_chart_pages(xlsx: Path, tmp: Path, *, min_coloured: float = 0.002) -> int:
    """Every chart's page has drawn content; ``min_coloured``: the share of coloured pixels it needs (text
    and grid lines are black and grey: a chart with only a few markers needs a lower bar than 12 series)."""
    wb = openpyxl.load_workbook(xlsx)
    titles = []
    for chart in wb["Charts"]._charts:
        runs = chart.title.tx.rich.p[0].r
        titles.append(" ".join("".join(r.t for r in runs).split()))
    pdf = to_pdf(xlsx, tmp)
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


def test_efficiency_workbook_renders_every_chart(tmp_path: Path):
    out = tmp_path / "eff.xlsx"
    assert main(["report", str(DATA / "journal" / "sample_run"), "-o", str(out)]) == 0
    assert check_chart_pages(out, tmp_path) == 3


def test_comparison_workbook_renders_every_chart(tmp_path: Path):
    out = tmp_path / "cmp.xlsx"
    assert main(["compare", str(DATA / "fio" / "compare" / "A"), str(DATA / "fio" / "compare" / "B"),
                 "--label-a", "ESXi", "--label-b", "PVE", "-o", str(out)]) == 0
    assert check_chart_pages(out, tmp_path) == 10


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
    assert check_chart_pages(out, tmp_path, min_coloured=0.0003) == 6
    pages = page_texts(tmp_path / "mixed.pdf")
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


def test_demo_sized_report_labels_every_bar_on_its_page(tmp_path: Path):
    """15 configurations x 3 repeats: the score chart's page names every configuration (each bar labelled,
    not every other one), the scatter's page every legend entry, and the Charts sheet prints landscape."""
    from test_workbook_charts import AIO, CONTROLLERS, demo_run

    out = tmp_path / "demo.xlsx"
    assert main(["report", str(demo_run(tmp_path / "run", 3)), "-o", str(out)]) == 0
    assert check_chart_pages(out, tmp_path) == 3
    pages = page_texts(tmp_path / "demo.pdf")
    pages = [p.replace("- ", "-") for p in pages]
    bar_page = [p for p in pages if "Efficiency score (lower is better)" in p][-1]   # its own page: the last
    configs = [f"{c} aio={a}" for c in CONTROLLERS for a in AIO]
    assert all(c in bar_page for c in configs), [c for c in configs if c not in bar_page]
    scatter_page = [p for p in pages if "Measured CPU and context switches per MiB" in p][-1]
    assert all(f"{c} / aio={a}" in scatter_page for c in CONTROLLERS for a in AIO)
    assert "95 % CI" in scatter_page and "95 % bootstrap interval" in bar_page   # the error bars are named
    # landscape: the PDF's chart pages are wider than tall
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", str(len(pages)), str(tmp_path / "demo.pdf")],
                          capture_output=True, text=True).stdout if shutil.which("pdfinfo") else ""
    sizes = re.findall(r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)", info)
    page = pages.index(bar_page) + 1
    if sizes:
        w, h = map(float, sizes[page - 1])
        assert w > h
