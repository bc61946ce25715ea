"""fio 2.x wrote no total_ios: the mean latency is still exact where the file allows.

The fixtures are hand-written in fio 2.1.4's layout (stat.c of that release: usec latencies, io_bytes and
bw in KiB, iops an integer, no total_ios; tests/data/README.md). One direction of one job needs no
weighting; several directions or jobs are weighted by iops x runtime, the I/O count fio computed its iops
from. Expected values are worked out here from the raw JSON.
"""

from __future__ import annotations

import copy
import json

import pytest

from stormatrix.analysis.read import fio
from stormatrix.analysis.read.ingest import ingest
import paths

FIO = paths.DATA / "fio"
ONE = FIO / "fio214_read-seq-bs4096-qd1.json"
MIXED = FIO / "fio214_randrw-bs4096-qd4.json"


def test_one_direction_has_its_own_mean() -> None:
    job = json.loads(ONE.read_text())["jobs"][0]
    assert "total_ios" not in job["read"]
    (row,) = ingest([ONE]).frame.to_dict("records")
    assert row["lat_mean_us"] == pytest.approx(job["read"]["lat"]["mean"], rel=1e-12)
    assert "lat_mean_us" not in (row["null_reasons"] or "")


def test_a_mixed_job_is_weighted_by_the_io_counts_the_file_has() -> None:
    job = json.loads(MIXED.read_text())["jobs"][0]
    r, w = job["read"], job["write"]
    ios_r, ios_w = r["iops"] * r["runtime"] / 1000, w["iops"] * w["runtime"] / 1000
    expected = (r["lat"]["mean"] * ios_r + w["lat"]["mean"] * ios_w) / (ios_r + ios_w)
    (row,) = ingest([MIXED]).frame.to_dict("records")
    assert row["lat_mean_us"] == pytest.approx(expected, rel=1e-12)
    # and not the plain average of the two directions (70/30: the weighting matters)
    assert abs(row["lat_mean_us"] - (r["lat"]["mean"] + w["lat"]["mean"]) / 2) > 100


def test_two_jobs_are_weighted_by_iops_times_runtime() -> None:
    job = json.loads(ONE.read_text())["jobs"][0]
    slow = copy.deepcopy(job)
    slow["read"].update(iops=500, runtime=8000)
    slow["read"]["lat"]["mean"] = 2000.0
    s = fio.summarize_jobs([job, slow], str(ONE))
    ios = (job["read"]["iops"] * job["read"]["runtime"] / 1000, 500 * 8)
    expected = (job["read"]["lat"]["mean"] * ios[0] + 2000.0 * ios[1]) / sum(ios) * 1000
    assert s["read"]["lat_mean_ns"] == pytest.approx(expected, rel=1e-12)
    assert s["total"]["lat_mean_ns"] == pytest.approx(expected, rel=1e-12)


def test_no_count_at_all_leaves_the_mean_blank_and_says_why() -> None:
    job = json.loads(MIXED.read_text())["jobs"][0]
    del job["write"]["iops"]
    s = fio.summarize_jobs([job])
    assert s["total"]["lat_mean_ns"] is None
    assert "no I/O count" in s["null_reasons"]["total.lat_mean_ns"]


def test_each_blank_measurement_says_why_in_the_measurements_sheet(tmp_path) -> None:
    """fio 2.1.4 leaves total_ios and the lat p99 blank: the Measurements sheet's blank_reasons names each."""
    import openpyxl

    from stormatrix.analysis.write.measurements import MEASURED
    from stormatrix.cli import main

    out = tmp_path / "old.xlsx"
    assert main(["report", str(ONE), str(MIXED), "-o", str(out)]) == 0
    ws = openpyxl.load_workbook(out)["Measurements"]
    head = [str(c.value).split(" [")[0] for c in ws[1]]
    rows = [dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)]
    assert len(rows) == 2
    for row in rows:
        blank = [c for c in MEASURED if c in row and row[c] is None]
        assert "total_ios" in blank and "lat_mean_us" not in blank
        for c in blank:
            assert f"{c}: " in (row["blank_reasons"] or ""), (c, row["blank_reasons"])
