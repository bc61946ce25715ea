"""The workbooks render in LibreOffice: convert to PDF (soffice --headless), find each chart's page by
its title (pdftotext) and check that page, rasterised (pdftoppm), has drawn, coloured content."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from stormatrix.cli import main

DATA = Path(__file__).parent / "data"
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


def check_chart_pages(xlsx: Path, tmp: Path) -> int:
    wb = openpyxl.load_workbook(xlsx)
    titles = []
    for chart in wb["Charts"]._charts:
        runs = chart.title.tx.rich.p[0].r
        titles.append(" ".join("".join(r.t for r in runs).split()))
    pdf = to_pdf(xlsx, tmp)
    pages = page_texts(pdf)
    for title in titles:
        words = title.split()
        hits = [i for i, text in enumerate(pages, start=1) if " ".join(words) in text]
        assert hits, f"chart {title!r} is not in the PDF"
        dark, coloured = ink(pdf, hits[0], tmp)
        assert dark > 0.01, f"page {hits[0]} ({title}) is nearly blank"
        assert coloured > 0.002, f"page {hits[0]} ({title}) has no coloured chart content"
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
