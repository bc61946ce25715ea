"""The one A-vs-B pipeline (``analysis.comparison_report``) that ``stormatrix compare`` and a suite's
comparison workbook (``suiterun.write_comparison``) both call: what each caller passes in changes
where warnings go, how a side is named and what a side without results should do, never the numbers.

Sides are real fio 3.33 captures with their IOPS written in (the numbers are this file's own).
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from stormatrix.analysis.comparison_report import compare_inputs, side_label, write_comparison
from stormatrix.cli import main
from stormatrix.core.errors import InputError
from stormatrix.suiterun import write_comparison as suite_workbook
import paths

# (bs, qd) -> IOPS per repeat
SIDE_A = {(4096, 1): [1000, 1100], (4096, 8): [5000, 5200]}
SIDE_B = {(4096, 1): [1500, 1600], (4096, 8): [4800, 5000]}


def write_side(folder: Path, side: dict[tuple[int, int], list[int]]) -> Path:
    template = json.loads((paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text())
    folder.mkdir(parents=True)
    for (bs, qd), iops in side.items():
        for rep, i in enumerate(iops, start=1):
            doc = copy.deepcopy(template)
            job = doc["jobs"][0]
            job["job options"].update({"bs": str(bs), "iodepth": str(qd), "rw": "randread"})
            r = job["read"]
            r.update(iops=float(i), runtime=10000, total_ios=i * 10, io_bytes=i * 10 * bs, bw_bytes=i * bs,
                     bw=i * bs // 1024)
            r["io_kbytes"] = r["io_bytes"] // 1024
            (folder / f"result_bs{bs}_qd{qd}_rep{rep}.json").write_text(json.dumps(doc))
    return folder


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    return write_side(tmp_path / "a", SIDE_A), write_side(tmp_path / "b", SIDE_B)


def comparison_rows(path: Path) -> list[tuple[object, ...]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [tuple(r) for r in wb["Comparison"].iter_rows(values_only=True)]
    finally:
        wb.close()


def test_the_command_and_a_suite_write_the_same_comparison(sides, tmp_path):
    """One pipeline: the same two sides under the same labels give the same Comparison sheet and the same
    tidy rows, whether ``stormatrix compare`` or a suite of sides wrote them."""
    by_command = tmp_path / "command.xlsx"
    assert main(["compare", str(sides[0]), str(sides[1]), "--label-a", "iSCSI", "--label-b", "NBD",
                 "-o", str(by_command)]) == 0
    by_suite = suite_workbook(("iSCSI", sides[0]), ("NBD", sides[1]), tmp_path / "suite.xlsx")
    assert comparison_rows(by_command) == comparison_rows(by_suite)
    command_csv, suite_csv = pd.read_csv(by_command.with_suffix(".csv")), pd.read_csv(by_suite.with_suffix(".csv"))
    assert list(command_csv["side"].unique()) == list(suite_csv["side"].unique()) == ["iSCSI", "NBD"]
    assert len(command_csv) == len(suite_csv) == 8
    # the numbers are the inputs': 4k QD1 is (1500+1600)/2 over (1000+1100)/2
    header = comparison_rows(by_suite)[0]
    first = dict(zip(header, comparison_rows(by_suite)[1]))
    assert first["IOPS gain %"] == pytest.approx((1550 / 1050 - 1) * 100)


def test_warnings_go_where_the_caller_says_and_skipped_inputs_name_their_side(sides, tmp_path):
    (sides[1] / "broken.json").write_text("{ not json")
    heard: list[str] = []
    c = compare_inputs([str(sides[0])], [str(sides[1])], warn=heard.extend, names=("left", "right"))
    assert any(line.startswith("right: ") and "broken.json" in line for line in heard)
    assert not any(line.startswith("left: ") for line in heard)
    assert (c.label_a, c.label_b) == ("a", "b")  # the inputs' names: plain files carry no side
    assert set(c.frame()["side"]) == {"a", "b"}
    assert c.result.summary["points"] == 2 and c.findings


def test_equal_labels_are_told_apart():
    frame = pd.DataFrame({"side": ["x", None]})
    assert side_label(None, frame, "/runs/one") == "x"
    assert side_label("given", frame, "/runs/one") == "given"
    assert side_label(None, pd.DataFrame({"side": ["x", "y"]}), "/runs/one/") == "one"


def test_the_same_label_twice_gets_a_b(sides):
    c = compare_inputs([str(sides[0])], [str(sides[1])], warn=lambda _: None, label_a="same", label_b="same")
    assert (c.label_a, c.label_b) == ("same", "same (B)")


def test_a_side_without_results_names_the_side_and_the_callers_fix(sides, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as err:
        compare_inputs([str(sides[0])], [str(empty)], warn=lambda _: None, names=("NBD", "iSCSI"),
                       no_results_fix="run the same command again")
    assert f"side iSCSI has no usable results in {empty}" in str(err.value)
    assert str(err.value).endswith("Fix: run the same command again")


def test_a_refusing_check_stops_before_any_warning(sides):
    (sides[1] / "broken.json").write_text("{ not json")
    heard: list[str] = []
    seen: list[int] = []

    def refuse(a, b):
        seen.append(len(a.inputs) + len(b.inputs))
        raise InputError("refused")

    with pytest.raises(InputError, match="refused"):
        compare_inputs([str(sides[0])], [str(sides[1])], warn=heard.extend, check=refuse)
    assert seen == [9] and heard == []  # every file read, the broken one too; nothing said yet


def test_a_failed_csv_replaces_no_workbook(sides, tmp_path):
    """The workbook and the CSV are written as one: a CSV that cannot be written leaves the earlier
    workbook as it was (a suite's workbook used to be replaced before its CSV failed)."""
    c = compare_inputs([str(sides[0])], [str(sides[1])], warn=lambda _: None)
    workbook = tmp_path / "out.xlsx"
    workbook.write_bytes(b"earlier")
    (tmp_path / "a-file").write_text("")
    csv = tmp_path / "a-file" / "out.csv"  # its folder cannot be made
    with pytest.raises(InputError, match="its tidy CSV"):
        write_comparison(c, workbook, csv, flags=("the workbook", "its tidy CSV"))
    assert workbook.read_bytes() == b"earlier"


def test_a_suite_logs_what_the_analysis_says(sides, tmp_path, caplog):
    (sides[0] / "broken.json").write_text("{ not json")
    with caplog.at_level(logging.WARNING, logger="stormatrix.suite"):
        suite_workbook(("iSCSI", sides[0]), ("NBD", sides[1]), tmp_path / "s.xlsx")
    assert any(r.getMessage().startswith("iSCSI: ") and "broken.json" in r.getMessage() for r in caplog.records)
