"""p99 per direction, and a mixed row's combined p99 computed from the merged distribution or named for what it is.

fio's own percentiles are per direction and per job; the largest of them is only an upper bound of the
p99 of all the I/Os together. json+ output (fio 3.33, tests/data/folder-walk/mixed.fiolog) has the bins
to merge; plain json (tests/data/fio) has not, and then the row says that its p99 is the worst one's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from stormatrix.analysis.read.fiorows import MERGED_P99, merged_p99
from stormatrix.analysis.read.ingest import ingest
import paths

JSONPLUS = paths.DATA / "folder-walk" / "mixed.fiolog"
MIXED_JSON = paths.DATA / "fio" / "fio3_randrw70_bs8k_qd8_numjobs2_group.json"


def _doc(path: Path) -> dict:
    text = path.read_text()
    return json.loads(text[text.index("\n{") + 1:])


def test_the_merge_is_fios_own_method() -> None:
    """One direction's bins give back the p99 fio printed for it: the method is fio's."""
    job = _doc(JSONPLUS)["jobs"][0]
    for d in ("read", "write"):
        clat = job[d]["clat_ns"]
        assert merged_p99([clat["bins"]]) == clat["percentile"]["99.000000"], d


def test_a_jsonplus_mixed_row_has_the_merged_p99_and_says_so() -> None:
    job = _doc(JSONPLUS)["jobs"][0]
    (row,) = ingest([JSONPLUS]).frame.to_dict("records")
    r99, w99 = job["read"]["clat_ns"]["percentile"]["99.000000"], job["write"]["clat_ns"]["percentile"]["99.000000"]
    assert row["read_clat_p99_us"] == pytest.approx(r99 / 1000) and row["write_clat_p99_us"] == pytest.approx(w99 / 1000)
    assert row["p99_basis"] == MERGED_P99
    # the merged p99: between the two directions' (it is neither the larger one nor made up)
    merged = merged_p99([job["read"]["clat_ns"]["bins"], job["write"]["clat_ns"]["bins"]])
    assert row["clat_p99_us"] == pytest.approx(merged / 1000)
    assert min(r99, w99) <= merged <= max(r99, w99)
    # and it counts: at least 99 % of all I/Os are at or below it, fewer below the bin before it
    bins = {}
    for d in ("read", "write"):
        for v, c in job[d]["clat_ns"]["bins"].items():
            bins[int(v)] = bins.get(int(v), 0) + c
    n = sum(bins.values())
    assert sum(c for v, c in bins.items() if v <= merged) >= 0.99 * n > sum(c for v, c in bins.items() if v < merged)


def test_a_plain_json_mixed_row_names_its_p99_as_the_worst_directions() -> None:
    job = json.loads(MIXED_JSON.read_text())["jobs"][0]
    (row,) = ingest([MIXED_JSON]).frame.to_dict("records")
    r99, w99 = (job[d]["clat_ns"]["percentile"]["99.000000"] / 1000 for d in ("read", "write"))
    assert row["read_clat_p99_us"] == pytest.approx(r99) and row["write_clat_p99_us"] == pytest.approx(w99)
    assert row["clat_p99_us"] == pytest.approx(max(r99, w99))
    assert row["p99_basis"].startswith("the worst direction's p99 (an upper bound")


def test_one_direction_of_one_job_needs_no_basis() -> None:
    (row,) = ingest([paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json"]).frame.to_dict("records")
    assert row["clat_p99_us"] == row["read_clat_p99_us"] and row["p99_basis"] is pd.NA
