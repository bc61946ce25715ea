"""Charts a customer can read, checked in the chart XML the workbook holds (relations, not
pixels): sized for an A4 landscape page, every score bar labelled, 95 % CI error bars where there are
repeats (values equal to the Scores sheet's CIs), and single-repeat data marked indicative."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest

from stormatrix.cli import main

from test_analysis_iopath import qemu_record, write_journal
from test_comparison_report import SIDE_A, SIDE_B, write_side

CONTROLLERS = ("virtio-blk", "virtio-scsi-single", "pvscsi", "sata", "ide")
AIO = ("native", "io_uring", "threads")


def demo_run(folder: Path, repeats: int) -> Path:
    """The demo matrix's 15 configurations, with ``repeats`` repeats each (deterministic spread)."""
    recs = []
    for i, c in enumerate(CONTROLLERS):
        for j, a in enumerate(AIO):
            for rep in range(1, repeats + 1):
                wobble = 1 + 0.02 * ((rep * 7 + i * 3 + j) % 5 - 2)
                recs.append(qemu_record(c, a, rep, vcpu_s=8.0 * (1 + i / 10) * wobble, io_s=0.5 * (1 + j / 5) * wobble,
                                        io_ctx=int(2000 * (1 + j / 3) * wobble), vcpu_ctx=int(1000 * wobble)))
    return write_journal(folder, recs)


def chart_xml(xlsx: Path) -> list[str]:
    with zipfile.ZipFile(xlsx) as z:
        names = sorted((n for n in z.namelist() if re.fullmatch(r"xl/charts/chart\d+\.xml", n)),
                       key=lambda n: int(re.search(r"(\d+)", n).group(1)))
        return [z.read(n).decode() for n in names]


@pytest.fixture(scope="module")
def books(tmp_path_factory) -> dict[int, Path]:
    out = {}
    for repeats in (1, 3):
        tmp = tmp_path_factory.mktemp(f"r{repeats}")
        xlsx = tmp / "r.xlsx"
        assert main(["report", str(demo_run(tmp / "run", repeats)), "-o", str(xlsx)]) == 0
        out[repeats] = xlsx
    return out


def test_charts_fit_an_a4_landscape_page_and_label_every_bar(books: dict[int, Path]) -> None:
    wb = openpyxl.load_workbook(books[3])
    ws = wb["Charts"]
    assert ws.page_setup.orientation == "landscape" and str(ws.page_setup.paperSize) == str(ws.PAPERSIZE_A4)
    raw, norm, bars = ws._charts
    assert raw.legend.position == "b"                                     # not beside the plot
    with zipfile.ZipFile(books[3]) as z:                                  # chart sizes: the drawing's anchors (EMU)
        # the Charts sheet's drawing (the Answer page has its own, with the score chart)
        name = next(n for n in z.namelist() if n.startswith("xl/drawings/drawing") and n.endswith(".xml")
                    and len(re.findall(r"<(?:xdr:)?graphicFrame", z.read(n).decode())) == 3)
        drawings = z.read(name).decode()
    sizes = [(int(cx) / 360000, int(cy) / 360000) for cx, cy in re.findall(r'<(?:xdr:)?ext cx="(\d+)" cy="(\d+)"', drawings)]
    assert len(sizes) == 3 and all(w >= 24 and h >= 14 for w, h in sizes)  # cm: most of a 29.7 x 21 cm page
    xml = chart_xml(books[3])
    bar_xml = next(x for x in xml if "<barChart>" in x)
    ref = re.search(r"<cat>.*?<f>(.*?)</f>", bar_xml, re.S).group(1)
    m = re.fullmatch(r"'Chart data'!\$A\$(\d+):\$A\$(\d+)", ref)
    assert m and int(m.group(2)) - int(m.group(1)) + 1 == 15              # one category per configuration
    assert "<tickLblSkip val=\"1\"/>" in bar_xml                        # every bar labelled
    assert "<showVal val=\"1\"/>" in bar_xml                            # with its score on it


def test_error_bars_are_the_confidence_intervals(books: dict[int, Path]) -> None:
    xml = chart_xml(books[3])
    scatter = next(x for x in xml if "Measured CPU" in x)
    directions = re.findall(r"<errDir val=\"(\w)\"/>", scatter)
    assert directions.count("x") == 15 and directions.count("y") == 15     # both ways, for every configuration
    bar_xml = next(x for x in xml if "<barChart>" in x)
    assert "<errBars>" in bar_xml and "<errValType val=\"cust\"/>" in bar_xml
    # the bars go up to the Scores sheet's bootstrap high and down to its low: asymmetric, around the score
    wb = openpyxl.load_workbook(books[3])
    data = wb["Chart data"]
    scores = wb["Scores"]
    head = [c.value for c in scores[1]]
    by_config = {r[head.index("Configuration")]: (r[head.index("Efficiency score")],
                                                  r[head.index("Score 95 % low (bootstrap)")],
                                                  r[head.index("Score 95 % high (bootstrap)")])
                 for r in scores.iter_rows(min_row=2, values_only=True)}
    bounds = {}
    for side, col in (("plus", "D"), ("minus", "C")):
        ref = re.search(rf"<{side}>.*?<f>(.*?)</f>", bar_xml, re.S).group(1)
        m = re.fullmatch(rf"'Chart data'!\${col}\$(\d+):\${col}\$(\d+)", ref)
        assert m
        bounds[side] = range(int(m.group(1)), int(m.group(2)) + 1)
    assert bounds["plus"] == bounds["minus"]
    for r in bounds["plus"]:
        score, low, high = by_config[data.cell(row=r, column=1).value]
        assert data.cell(row=r, column=2).value == pytest.approx(score)
        assert data.cell(row=r, column=3).value == pytest.approx(score - low)
        assert data.cell(row=r, column=4).value == pytest.approx(high - score)
        assert 0 <= low <= score <= high
    # the value axis holds every interval
    top = float(re.search(r"<valAx>.*?<max val=\"([0-9.]+)\"", bar_xml, re.S).group(1))
    assert top >= max(h for _, _, h in by_config.values())
    # and the scatter's y half-widths are the ctx/MiB CIs: high - mean
    y_ref = re.findall(r"<errDir val=\"y\"/>.*?<plus>.*?<f>(.*?)</f>", scatter, re.S)[0]
    col, row = re.fullmatch(r"'Chart data'!\$([A-Z])\$(\d+)(?::\$[A-Z]\$\d+)?", y_ref).groups()
    assert col == "H"
    config = data.cell(row=int(row), column=2).value
    cell = next(r for r in scores.iter_rows(min_row=2, values_only=True) if r[head.index("Configuration")] == config)
    assert data.cell(row=int(row), column=8).value == pytest.approx(
        cell[head.index("ctx/MiB CI95 high")] - cell[head.index("ctx/MiB mean")])


def test_single_repeat_charts_are_marked_indicative_and_have_no_error_bars(books: dict[int, Path]) -> None:
    xml = chart_xml(books[1])
    assert xml and all("INDICATIVE" in x for x in xml)
    assert not any("<errBars>" in x for x in xml)
    assert not any("INDICATIVE" in x for x in chart_xml(books[3]))


def test_mixed_repeats_mark_the_single_repeat_configurations_by_name(tmp_path: Path) -> None:
    recs = [qemu_record("sata", "native", rep, vcpu_s=5.0 + rep / 10, io_s=0.5, io_ctx=100 + rep) for rep in (1, 2, 3)]
    recs.append(qemu_record("sata", "threads", 1, vcpu_s=6.0, io_s=0.9, io_ctx=300))
    xlsx = tmp_path / "m.xlsx"
    assert main(["report", str(write_journal(tmp_path / "run", recs)), "-o", str(xlsx)]) == 0
    wb = openpyxl.load_workbook(xlsx)
    titles = [" ".join("".join(x.t for x in c.title.tx.rich.p[0].r).split()) for c in wb["Charts"]._charts]
    assert all(t.endswith("configurations marked (1 repeat) are INDICATIVE") for t in titles)
    raw = wb["Charts"]._charts[0]
    assert sorted(s.tx.v for s in raw.series) == ["sata / aio=native", "sata / aio=threads (1 repeat)"]
    labels = [r[0] for r in wb["Chart data"].iter_rows(values_only=True) if r[0] and str(r[0]).startswith("sata aio=")]
    assert labels == ["sata aio=native", "sata aio=threads (1 repeat)"]


def shown_decimals(fmt: str) -> int:
    """Decimals an Excel number format shows ("0.000" -> 3, "#,##0" -> 0); General shows up to ten."""
    assert fmt != "General", "a number left in General format prints every digit (0.8219283746)"
    return len(fmt.split(".")[1].rstrip("%")) if "." in fmt else 0


def chart_data_is_readable(xlsx: Path) -> int:
    """Every number on the Chart data sheet has a number format of at most three decimals (the cell keeps
    the exact value the chart draws), the sheet prints a row on one page width, and the charts' value axes
    keep General ticks instead of taking the cells' decimals; returns how many numbers were checked."""
    wb = openpyxl.load_workbook(xlsx)
    data = wb["Chart data"]
    numbers = [c for row in data.iter_rows() for c in row
               if isinstance(c.value, (int, float)) and not isinstance(c.value, bool)]
    for c in numbers:
        assert shown_decimals(c.number_format) <= 3, f"Chart data!{c.coordinate}: {c.number_format}"
    assert any(isinstance(c.value, float) and round(c.value, 3) != c.value for c in numbers), \
        "the cells hold the exact values, not rounded copies"
    assert data.sheet_properties.pageSetUpPr.fitToPage and data.page_setup.fitToWidth == 1
    for x in chart_xml(xlsx):
        for axis in re.findall(r"<valAx>.*?</valAx>", x, re.S):
            fmt = re.search(r"<numFmt formatCode=\"([^\"]*)\" sourceLinked=\"(\d)\"", axis)
            if "<barChart>" in x and "Efficiency score" in x:
                continue  # the score bars: their value axis reads the score cells' 0.000, as always
            assert fmt and fmt.groups() == ("General", "0"), axis[:200]
    return len(numbers)


def test_chart_data_shows_rounded_numbers_of_exact_values(books: dict[int, Path], tmp_path: Path) -> None:
    assert chart_data_is_readable(books[3]) > 100
    sides = [str(write_side(tmp_path / "a", SIDE_A)), str(write_side(tmp_path / "b", SIDE_B))]
    xlsx = tmp_path / "c.xlsx"
    assert main(["compare", *sides, "-o", str(xlsx)]) == 0
    assert chart_data_is_readable(xlsx) > 5
