"""The Answer page (issue 21): the first sheet, one A4 portrait page, answering from the run's own records.

The run record here is written by the test (docs/journal.md's ``run`` type), so every condition the page
states can be checked against what the test put in; the findings' numbers against the Scores sheet.
"""

from __future__ import annotations

import itertools

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from stormatrix.cli import main

from test_analysis_iopath import qemu_record

# (controller, aio) -> CPU-ms/MiB and switches/MiB of three repeats: native beats threads on every controller,
# clearly on virtio-blk and ide, and sata's threads repeats scatter (a CV far above 10 %)
DATA = {
    ("virtio-blk", "native"): ([20.0, 20.3, 19.8], [40.0, 40.5, 40.2]),
    ("virtio-blk", "threads"): ([26.0, 26.4, 25.7], [61.0, 60.0, 60.5]),
    ("ide", "native"): ([30.0, 30.5, 29.6], [70.0, 70.8, 69.5]),
    ("ide", "threads"): ([36.0, 36.3, 35.8], [90.0, 91.0, 90.5]),
    ("sata", "native"): ([24.0, 24.2, 23.9], [50.0, 50.6, 50.1]),
    ("sata", "threads"): ([25.0, 34.0, 28.0], [55.0, 75.0, 62.0]),
}


def run_dir(tmp: Path, accel: str = "tcg") -> Path:
    recs: list[dict[str, Any]] = []
    for (ctrl, aio), (cpu, ctx) in DATA.items():
        for rep, (c, x) in enumerate(zip(cpu, ctx), start=1):
            rec = qemu_record(ctrl, aio, rep, vcpu_s=c / 10 - 0.1, io_s=0.1, io_ctx=int(round(x * 100)) - 50)
            rec["cell"]["workload"].update({"name": "randread-64k-32m", "rate_mib_s": 32})
            rec["rate"] = {"target_mib_s": 32.0, "achieved_mib_s": 32.0, "missed": False}
            recs.append(rec)
    run = {"schema": "stormatrix/record-1", "type": "run", "run_id": "answer", "started": "2026-11-22T03:00:00+00:00",
           "backend": "qemu", "side": None,
           "environment": {"host": "lab", "accel": accel, "cpus": 2, "cpu_model": "AMD EPYC", "kernel": "6.1.0",
                           "qemu": "7.2.22 (Debian)", "guest_kernel": "6.1.0-56-amd64", "vcpus": 1, "memory_mib": 512},
           "matrix": {"run": {"repeats": 3, "ramp_seconds": 3, "measure_seconds": 8, "cv_limit_pct": 10,
                              "max_repeats": 0}}}
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in [run, *recs]))
    return tmp


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> openpyxl.Workbook:
    tmp = tmp_path_factory.mktemp("answer")
    out = tmp / "a.xlsx"
    assert main(["report", str(run_dir(tmp / "run")), "-o", str(out)]) == 0
    return openpyxl.load_workbook(out)


def texts(ws: Any) -> list[str]:
    return [str(c.value) for row in ws.iter_rows() for c in row if isinstance(c.value, str)]


def conditions(ws: Any) -> dict[str, str]:
    rows = list(ws.iter_rows(values_only=True))
    start = next(i for i, r in enumerate(rows) if r[0] == "Conditions")
    end = next(i for i, r in enumerate(rows) if r[0] == "Findings")
    return {r[0]: r[1] for r in rows[start + 1:end] if r[0]}


def test_the_answer_is_the_first_sheet_and_prints_on_one_page(book: openpyxl.Workbook) -> None:
    ws = book.worksheets[0]
    assert ws.title == "Answer"
    assert ws["A1"].value.startswith("Which storage configuration")
    assert ws.page_setup.orientation == "portrait" and str(ws.page_setup.paperSize) == str(ws.PAPERSIZE_A4)
    assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToHeight == 1
    assert ws.page_setup.fitToWidth == 1 and ws.print_area
    assert len(ws._charts) == 1                                    # the score chart


def test_the_answer_names_the_best_configuration_and_how_sure(book: openpyxl.Workbook) -> None:
    scores = book["Scores"]
    head = [c.value for c in scores[1]]
    rows = [dict(zip(head, r)) for r in scores.iter_rows(min_row=2, values_only=True)]
    best = min(rows, key=lambda r: r["Efficiency score"])
    answer = book["Answer"]["A2"].value
    assert answer.startswith(f"{best['Configuration']} has the lowest efficiency score, {best['Efficiency score']:.3f}")
    assert f"{best['Score 95 % low (bootstrap)']:.3f}-{best['Score 95 % high (bootstrap)']:.3f}" in answer
    # "ranks above every other" exactly when the Scores sheet says it ranks above the next one and all below it
    if best["Test vs next rank"].startswith("ranks above") and "every other" in answer:
        assert "tied" not in answer
    else:
        assert "tied within noise with" in answer


def test_the_conditions_come_from_the_run_record(book: openpyxl.Workbook) -> None:
    cond = conditions(book["Answer"])
    assert "accelerator tcg: software emulation, no KVM" in cond["Platform"] and "QEMU 7.2.22" in cond["Platform"]
    assert cond["Guest"].startswith("Linux 6.1.0-56-amd64, 1 vCPU, 512 MiB")
    assert cond["Host"].startswith("2 CPUs (AMD EPYC)")
    assert cond["Workload"] == "randread 64k, QD 8, 1 job, fixed rate 32 MiB/s"
    assert cond["Window"].startswith("3 s warm-up, then 8 s measured per repeat")
    assert cond["Repeats"] == "3 per configuration: 18 measurements of 6 configurations"
    assert cond["Not tested"] == "aio=io_uring, iothreads, host caches other than cache=none"
    scores = book["Scores"]
    head = [c.value for c in scores[1]]
    flagged = sum(1 for r in scores.iter_rows(min_row=2, values_only=True) if "CV >" in r[head.index("CV flag")])
    assert flagged >= 1
    assert cond["Repeatability"].startswith(f"{flagged} of 6 configurations vary by more than the 10% CV limit")
    assert "max_repeats = 0 allows none" in cond["Repeatability"]
    assert cond["CPU figure"].startswith("perf task-clock (ns) of the whole QEMU process")


def test_findings_are_short_with_their_numbers_in_their_own_columns(book: openpyxl.Workbook) -> None:
    ws = book["Answer"]
    rows = list(ws.iter_rows(values_only=True))
    head = next(i for i, r in enumerate(rows) if r[:2] == ("Topic", "Finding"))
    found = list(itertools.takewhile(lambda r: r[0], rows[head + 1:]))  # up to the next section
    assert 3 <= len(found) <= 6
    assert all(len(r[1]) <= 120 for r in found)                    # a sentence, not a paragraph
    by_topic = {r[0]: r for r in found}
    # the aio roll-up: native is best for all 3 controllers here, threads worst for all 3
    assert by_topic["Best aio mode"][1] == "aio=native is the most efficient aio mode for each of the 3 controllers."
    assert by_topic["Best aio mode"][2:5] == (3, 3, "controllers")
    assert by_topic["Worst aio mode"][1].startswith("aio=threads is the least efficient")
    scores = book["Scores"]
    head_s = [c.value for c in scores[1]]
    score = {r[head_s.index("Configuration")]: r[head_s.index("Efficiency score")]
             for r in scores.iter_rows(min_row=2, values_only=True)}
    ordered = sorted(score, key=score.get)
    best = by_topic["Best"]
    assert best[2] == pytest.approx(score[ordered[0]]) and best[3] == pytest.approx(score[ordered[1]])
    assert ordered[1] in best[1] and ordered[0] in best[1]
    # the Evidence column and the words come from one verdict
    assert ("ranks above" in best[1]) == best[5].startswith("significant")
    assert ("tied within noise" in best[1]) == best[5].startswith("within noise")


def test_a_kvm_run_is_not_called_emulated(tmp_path: Path) -> None:
    out = tmp_path / "k.xlsx"
    assert main(["report", str(run_dir(tmp_path / "run", accel="kvm")), "-o", str(out)]) == 0
    cond = conditions(openpyxl.load_workbook(out)["Answer"])
    assert cond["Platform"] == "local QEMU 7.2.22; accelerator kvm"


@pytest.mark.parametrize("bases, said", [
    (["open verdict", "open verdict"], "2 of them extra repeats for verdicts still open"),
    (["open verdict", "cv_limit_pct"], "2 of them extra repeats (1 for verdicts still open, 1 for the CV limit)"),
    ([None, None], "2 of them extra repeats"),  # an older journal says no reason: none is made up
])
def test_the_repeats_condition_says_what_each_extra_repeat_was_for(
        tmp_path: Path, bases: list[str | None], said: str) -> None:
    run = run_dir(tmp_path / "run")
    lines = (run / "journal.ndjson").read_text().splitlines()
    extra = []
    for basis, ctrl in zip(bases, ["virtio-blk", "sata"]):
        rec = qemu_record(ctrl, "threads", 4, vcpu_s=2.5, io_s=0.1, io_ctx=6000)
        rec["cell"]["workload"].update({"name": "randread-64k-32m", "rate_mib_s": 32})
        if basis:
            rec["extra_repeat"] = {"basis": basis, "reason": f"{basis}: why"}
        extra.append(json.dumps(rec))
    (run / "journal.ndjson").write_text("\n".join(lines + extra) + "\n")
    out = tmp_path / "x.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    repeats = conditions(openpyxl.load_workbook(out)["Answer"])["Repeats"]
    assert said in repeats and repeats.count("extra repeats") == 1, repeats


def test_the_answer_chart_is_tall_enough_to_label_every_bar(tmp_path: Path) -> None:
    """0.75 cm a bar: with less LibreOffice leaves every other configuration's name out when names wrap (seen
    with 10 bars on 7.5 cm); the chart's drawn height (its anchor's extent in the sheet's drawing) grows with
    the bars."""
    import re
    import zipfile

    from test_workbook_charts import AIO, CONTROLLERS, demo_run

    out = tmp_path / "demo.xlsx"
    assert main(["report", str(demo_run(tmp_path / "run", 2)), "-o", str(out)]) == 0
    with zipfile.ZipFile(out) as z:
        book = z.read("xl/workbook.xml").decode()
        first = re.search(r'<(?:\w+:)?sheet [^>]*name="Answer"[^>]*r:id="(rId\d+)"', book)
        assert first
        rels = z.read("xl/_rels/workbook.xml.rels").decode()
        target = re.search(rf'Id="{first.group(1)}"[^>]*Target="/?(?:xl/)?([^"]+)"', rels) or \
            re.search(rf'Target="/?(?:xl/)?([^"]+)"[^>]*Id="{first.group(1)}"', rels)
        assert target
        sheet = target.group(1)
        sheet_rels = z.read(f"xl/worksheets/_rels/{sheet.rsplit('/', 1)[1]}.rels").decode()
        drawing = re.search(r'Target="(?:\.\./|/xl/)drawings/([^"]+)"', sheet_rels)
        assert drawing
        xml = z.read(f"xl/drawings/{drawing.group(1)}").decode()
    height_cm = int(re.search(r'<(?:\w+:)?ext [^>]*cy="(\d+)"', xml).group(1)) / 360000  # EMU per cm
    bars = len(CONTROLLERS) * len(AIO)
    assert height_cm >= 0.75 * bars, (height_cm, bars)
