"""fio's summary over damaged fields, field by field: every captured fio file with one field of one job
replaced by a value fio never writes (missing, null, text, negative, infinite, NaN, true, a list, an object,
a count beyond 64 bits, a number beyond any float). Ingest's reading of the file must give one problem naming
it, or rows whose every measured value is absent or a finite, non-negative number (what lets the plausibility
check skip looking at them one by one again); the runner's lenient summary must never raise and never hold an
infinite or NaN figure (it reads what it cannot use as absent). And the summary of one job must relate to the
summary of two identical jobs as sums, maxima and means do, whichever way each is worked out."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Iterator

import pytest

from stormatrix.analysis.read import fio
from stormatrix.analysis.read.checks import MEASURED
from stormatrix.analysis.read.fiorows import fio_rows
from stormatrix.analysis.read.plainfiles import parse_files
from stormatrix.core.errors import DataFileError
import paths

FIO = paths.DATA / "fio"
CAPTURES = sorted(FIO.rglob("*.json"))
DELETE = object()
BAD = [DELETE, None, "12", "fast", -1, -0.5, -1e-9, float("inf"), float("nan"), True, [], {}, 2**70, 1e308, 10**400]
JOB_FIELDS = [(f,) for f in ("error", "usr_cpu", "sys_cpu", "ctx", "mixed", "read", "write")]
DIRECTION_FIELDS = [("read", f) for f in ("io_bytes", "io_kbytes", "total_ios", "bw_bytes", "bw", "iops", "runtime",
                                          "lat_ns", "clat_ns")]
LATENCY_FIELDS = [("read", "lat_ns", "mean"), ("read", "clat_ns", "percentile", "99.000000"), ("read", "lat", "mean"),
                  ("read", "clat", "percentile", "99.000000")]


def _doc(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return fio.parse_fio_json(text, str(path)) if not text.lstrip().startswith("{") else json.loads(text)


def _mutations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    key = "client_stats" if "client_stats" in doc else "jobs"
    for field in JOB_FIELDS + DIRECTION_FIELDS + LATENCY_FIELDS:
        for value in BAD:
            m = copy.deepcopy(doc)
            target: Any = m[key][0]
            for parent in field[:-1]:
                target = target.get(parent) if isinstance(target, dict) else None
            if not isinstance(target, dict):
                continue
            if value is DELETE:
                target.pop(field[-1], None)
            else:
                target[field[-1]] = copy.deepcopy(value)
            yield f"{'.'.join(field)}={value!r:.30}", m


def _finite_or_none(summary: dict[str, Any]) -> bool:
    for value in summary.values():
        if isinstance(value, dict):
            if not _finite_or_none(value):
                return False
        elif isinstance(value, float) and not math.isfinite(value):
            return False
    return True


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_a_damaged_field_is_named_or_read_as_absent_never_a_crash(path: Path, tmp_path: Path):
    case = tmp_path / path.name
    for label, doc in _mutations(_doc(path)):
        case.write_text(json.dumps(doc))
        rows, problems = parse_files([("fio", str(case), None)])
        if problems:
            assert not rows and len(problems) == 1 and problems[0].source == str(case), (label, problems)
        for row in rows:
            bad = {k: row[k] for k in MEASURED if row.get(k) is not None and not (
                isinstance(row[k], (int, float)) and not isinstance(row[k], bool) and 0 <= row[k] < math.inf)}
            assert not bad, (label, bad)
        jobs = doc.get("client_stats", doc.get("jobs"))
        lenient = fio.summarize_jobs(jobs)
        assert _finite_or_none(lenient), (label, lenient)


@pytest.mark.parametrize("path", [p for p in CAPTURES if len(_doc(p).get("jobs", [])) == 1], ids=lambda p: p.name)
def test_one_job_and_two_identical_jobs_relate_as_sums_maxima_and_means(path: Path):
    job = _doc(path)["jobs"][0]
    one = fio.summarize_jobs([job], str(path))
    two = fio.summarize_jobs([job, copy.deepcopy(job)], str(path))
    for direction in set(one) & {"read", "write", "trim", "total"}:
        a, b = one[direction], two[direction]
        assert b["io_bytes"] == 2 * a["io_bytes"]
        assert b["total_ios"] == 2 * a["total_ios"] if a["total_ios"] is not None else b["total_ios"] is None  # fio 2.1.4
        assert b["iops"] == pytest.approx(2 * a["iops"]) and b["bw_bytes"] == pytest.approx(2 * a["bw_bytes"])
        for key in ("runtime_ms", "lat_p99_ns", "clat_p99_ns", "lat_mean_ns"):
            assert (b[key] is None) == (a[key] is None), key
            if a[key] is not None:
                assert b[key] == pytest.approx(a[key]), key
    assert two["usr_cpu"] == pytest.approx(one["usr_cpu"]) and two["ctx"] == 2 * one["ctx"]
    assert two["jobs"] == 2 and one["jobs"] == 1
    # the same figures are missing for the same reasons (two jobs lack them both)
    assert {k for k in two.get("null_reasons", {})} == {k for k in one.get("null_reasons", {})}
    assert all(two["null_reasons"][k] == why for k, why in one.get("null_reasons", {}).items())


def test_a_non_finite_error_code_and_a_mixed_block_that_is_no_object_are_named():
    doc = _doc(FIO / "fio3_randread_bs4k_qd1.json")
    bad_error = copy.deepcopy(doc)
    bad_error["jobs"][0]["error"] = float("inf")
    with pytest.raises(DataFileError, match=r"'error' is inf, not fio's error code"):
        fio_rows(bad_error, "x.json")
    assert fio.summarize_jobs(bad_error["jobs"])["error"] == 0  # the runner: unreadable counts as absent
    bad_mixed = copy.deepcopy(doc)
    bad_mixed["jobs"][0]["mixed"] = "yes"
    with pytest.raises(DataFileError, match=r"'mixed' is a str, not an object"):
        fio_rows(bad_mixed, "x.json")
