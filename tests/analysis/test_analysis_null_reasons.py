"""Honest values: nothing measured is invented. A figure fio did not write is null with the
reason, in the summary the journal records and in the tidy frame and workbook (never 0.0, never a default
numjobs); the total latency's p99 (fio's ``lat``) and the completion latency's (``clat``) are two values.

Every input is a real captured fio 3.33 file with one field removed or added by hand, or a journal record
written out here; expected numbers are read from those inputs, never from the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from stormatrix.analysis.read import fio
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.read.journalrows import OLDER_P99
from stormatrix.cli import main
import paths

FIO = paths.DATA / "fio"


def real(name: str = "fio3_randread_bs4k_qd1.json") -> dict:
    return json.loads((FIO / name).read_text())


def reasons(cell: object) -> dict[str, str]:
    """The ``null_reasons`` cell as a dict (``column: why; column: why``)."""
    if not isinstance(cell, str):
        return {}
    return {k.strip(): v.strip() for k, _, v in (p.partition(":") for p in cell.split(";"))}


# --- the summary (runner and ingest share it) ---------------------------------------------------------


def test_a_bandwidth_fio_did_not_write_is_null_with_why_not_zero():
    job = real()["jobs"][0]
    del job["read"]["bw_bytes"], job["read"]["bw"]
    for source in (None, "x.json"):  # the runner's lenient summary and ingest's strict one alike
        s = fio.summarize_jobs([job], source)
        assert s["read"]["bw_bytes"] is None and s["total"]["bw_bytes"] is None
        assert "bw" in s["null_reasons"]["total.bw_bytes"]
        assert s["total"]["io_bytes"] == job["read"]["io_bytes"]  # what was written is still there


def test_the_lenient_summary_says_a_value_was_not_a_number():
    job = real()["jobs"][0]
    job["read"]["iops"], job["sys_cpu"] = "fast", "n/a"
    s = fio.summarize_jobs([job])  # the runner's: no error, but no invented number either
    assert s["total"]["iops"] is None and s["sys_cpu"] is None
    assert "'fast', not a number" in s["null_reasons"]["total.iops"]
    assert "'n/a', not a number" in s["null_reasons"]["sys_cpu"]


def test_guest_cpu_and_runtime_missing_in_one_clone_make_the_sum_unknown():
    doc = real("fio3_randread_bs16k_qd2_numjobs2_nogroup.json")
    a, b = doc["jobs"]
    del b["usr_cpu"], b["read"]["runtime"]
    s = fio.summarize_jobs([a, b])
    assert s["usr_cpu"] is None and s["sys_cpu"] == pytest.approx((a["sys_cpu"] + b["sys_cpu"]) / 2)
    assert s["read"]["runtime_ms"] is None  # the longest of two runtimes is not the one that was written
    assert "usr_cpu" in s["null_reasons"]["usr_cpu"] and "#2" in s["null_reasons"]["read.runtime_ms"]
    assert s["read"]["iops"] == pytest.approx(a["read"]["iops"] + b["read"]["iops"])


def test_a_byte_count_fio_did_not_write_is_unknown_not_zero(tmp_path: Path):
    doc = real("fio3_randrw70_bs8k_qd8_numjobs2_group.json")
    write = doc["jobs"][0]["write"]
    del write["io_bytes"], write["io_kbytes"]
    s = fio.summarize_jobs(doc["jobs"], "x.json")
    assert s["write"]["io_bytes"] is None and s["total"]["io_bytes"] is None
    assert s["read"]["io_bytes"] == doc["jobs"][0]["read"]["io_bytes"]
    assert s["total"]["total_ios"] == doc["jobs"][0]["read"]["total_ios"] + write["total_ios"]
    assert "io_bytes" in s["null_reasons"]["total.io_bytes"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    row = ingest([path]).frame.iloc[0]
    assert pd.isna(row["io_bytes"]) and pd.isna(row["mib"]) and "io_bytes" in reasons(row["null_reasons"])


def test_total_and_completion_p99_are_kept_apart():
    job = real()["jobs"][0]
    clat = job["read"]["clat_ns"]["percentile"]["99.000000"]
    s = fio.summarize_jobs([job])
    assert s["total"]["clat_p99_ns"] == clat
    assert s["total"]["lat_p99_ns"] is None  # fio 3 wrote no lat percentiles (lat_percentiles=0)
    assert "lat_percentiles" in s["null_reasons"]["total.lat_p99_ns"]
    # as fio writes it with lat_percentiles=1: lat percentiles beside the clat ones (hand-written value)
    job["read"]["lat_ns"]["percentile"] = {"99.000000": clat + 12345}
    s = fio.summarize_jobs([job])
    assert (s["total"]["lat_p99_ns"], s["total"]["clat_p99_ns"]) == (clat + 12345, clat)
    assert "null_reasons" not in s


# --- ingest of plain fio files ------------------------------------------------------------------------


def test_ingested_file_without_bandwidth_has_a_blank_with_its_reason(tmp_path: Path):
    doc = real()
    del doc["jobs"][0]["read"]["bw_bytes"], doc["jobs"][0]["read"]["bw"]
    path = tmp_path / "read-rand-bs4096-qd1.json"
    path.write_text(json.dumps(doc))
    result = ingest([path])
    assert result.problems == []
    row = result.frame.iloc[0]
    assert pd.isna(row["bw_mib_s"]) and row["iops"] == pytest.approx(doc["jobs"][0]["read"]["iops"])
    assert "bw_bytes" in reasons(row["null_reasons"])["bw_mib_s"]
    assert row["clat_p99_us"] == pytest.approx(doc["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"] / 1000)


def test_numjobs_is_read_from_the_file_or_left_blank_with_why(tmp_path: Path):
    doc = real()
    assert "numjobs" not in doc["jobs"][0]["job options"] and len(doc["jobs"]) == 1
    plain = tmp_path / "a.json"
    plain.write_text(json.dumps(doc))
    assert ingest([plain]).frame.iloc[0]["numjobs"] == 1  # one clone entry in the file, counted
    doc.setdefault("global options", {})["group_reporting"] = ""  # clones folded into one entry: they cannot be counted
    folded = tmp_path / "b.json"
    folded.write_text(json.dumps(doc))
    row = ingest([folded]).frame.iloc[0]
    assert pd.isna(row["numjobs"]) and "group_reporting" in reasons(row["null_reasons"])["numjobs"]


# --- journal records ----------------------------------------------------------------------------------


def record(fio_total: dict, *, numjobs: int | None = 1, by_role: dict | None = None) -> dict:
    key = "virtio-blk/aio=native/iothread=0/cache=none/randread-4k/rep1"
    workload = {"name": "randread-4k", "rw": "randread", "bs": 4096, "iodepth": 1, "rate_mib_s": None}
    if numjobs is not None:
        workload["numjobs"] = numjobs
    host = {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 2.0, "cpu_user": 1.5, "cpu_system": 0.5,
            "ctx_switches": 4000, "source": "proc", "scope": "qemu pid 42"}
    if by_role is not None:
        host["by_role"] = by_role
    return {"schema": "stormatrix/record-1", "type": "cell", "run_id": "h", "key": key,
            "cell": {"disk": {"controller": "virtio-blk", "aio": "native", "iothread": False, "cache": "none"},
                     "workload": workload, "repeat": 1, "key": key},
            "backend": "qemu", "times": {"measure_start": "2026-11-24T02:00:00+00:00", "window_s": 10.0},
            "fio": {"version": "fio-3.33", "total": fio_total}, "host": host}


TOTAL = {"io_bytes": 40 * 2**20, "bw_bytes": 4 * 2**20, "iops": 1024.0, "total_ios": 10240, "runtime_ms": 10000,
         "lat_mean_ns": 9e5}


def journal(tmp_path: Path, *recs: dict) -> Path:
    run = {"schema": "stormatrix/record-1", "type": "run", "run_id": "h", "environment": {"accel": "tcg"}}
    path = tmp_path / "journal.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in (run, *recs)))
    return path


def test_journal_record_without_bandwidth_or_numjobs_is_not_filled_in(tmp_path: Path):
    total = {k: v for k, v in TOTAL.items() if k != "bw_bytes"}
    result = ingest([journal(tmp_path, record({**total, "lat_p99_ns": 2e6, "clat_p99_ns": 1.9e6}, numjobs=None))])
    assert result.problems == []
    row = result.frame.iloc[0]
    assert pd.isna(row["bw_mib_s"]) and pd.isna(row["numjobs"])  # not 0.0, not 1
    why = reasons(row["null_reasons"])
    assert "fio.total.bw_bytes" in why["bw_mib_s"] and "cell.workload.numjobs" in why["numjobs"]


def test_journal_p99_new_records_keep_both_and_older_ones_are_labelled(tmp_path: Path):
    new = record({**TOTAL, "lat_p99_ns": 2e6, "clat_p99_ns": 1.9e6})
    old = record({**TOTAL, "lat_p99_ns": 1.9e6})
    old["key"] = old["cell"]["key"] = old["key"].replace("rep1", "rep2")
    old["cell"]["repeat"] = 2
    frame = ingest([journal(tmp_path, new, old)]).frame.set_index("repeat")
    assert (frame.loc[1, "lat_p99_us"], frame.loc[1, "clat_p99_us"]) == (2000.0, 1900.0)
    assert pd.isna(frame.loc[1, "lat_p99_us_note"])
    assert frame.loc[2, "lat_p99_us"] == 1900.0 and pd.isna(frame.loc[2, "clat_p99_us"])
    assert frame.loc[2, "lat_p99_us_note"] == OLDER_P99
    assert "older record" in reasons(frame.loc[2, "null_reasons"])["clat_p99_us"]


def test_journal_rows_carry_the_io_path_split(tmp_path: Path):
    roles = {"vcpu": {"user_s": 1.0, "system_s": 0.25, "ctx_voluntary": 100, "ctx_involuntary": 10},
             "main-loop": {"user_s": 0.5, "system_s": 0.125, "ctx_voluntary": 300, "ctx_involuntary": 3},
             "aio-worker": {"user_s": 0.0625, "system_s": 0.0625, "ctx_voluntary": 50, "ctx_involuntary": 0}}
    split = record({**TOTAL, "lat_p99_ns": None, "clat_p99_ns": 1e6}, by_role=roles)
    bare = record({**TOTAL, "lat_p99_ns": None, "clat_p99_ns": 1e6})
    bare["key"] = bare["cell"]["key"] = bare["key"].replace("rep1", "rep2")
    bare["cell"]["repeat"] = 2
    frame = ingest([journal(tmp_path, split, bare)]).frame.set_index("repeat")
    assert frame.loc[1, "io_path_cpu_s"] == 0.5 + 0.125 + 0.0625 + 0.0625  # every role but vcpu
    assert frame.loc[1, "io_path_ctx"] == 300 + 3 + 50
    assert pd.isna(frame.loc[1, "io_path_note"])
    assert pd.isna(frame.loc[2, "io_path_cpu_s"]) and "split" in frame.loc[2, "io_path_note"]
    assert set(frame["accel"]) == {"tcg"}  # the run record's environment.accel, per row


def test_workbook_states_the_significance_test_and_the_blank_reasons(tmp_path: Path):
    total = {k: v for k, v in TOTAL.items() if k != "bw_bytes"}
    run = journal(tmp_path, record({**total, "lat_p99_ns": None, "clat_p99_ns": 1e6}))
    out = tmp_path / "r.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    summary = [[c for c in r if c is not None] for r in wb["Summary"].iter_rows(values_only=True)]
    assert ["Significance", "Welch's t-test, 95 %; single repeats are indicative"] in summary
    ws = wb["Measurements"]
    head = [c.value for c in ws[1]]
    row = dict(zip(head, next(ws.iter_rows(min_row=2, values_only=True))))
    assert row["bw_mib_s"] is None
    assert "bw_mib_s: not in the result (the record has no fio.total.bw_bytes)" in row["blank_reasons"]


def test_a_diskspd_record_p99_is_total_latency_not_an_older_mix(tmp_path: Path):
    rec = record({**TOTAL, "lat_p99_ns": 2e6})  # harness/records.py diskspd_summary: DiskSpd's 99th total
    rec["engine"] = "diskspd"
    row = ingest([journal(tmp_path, rec)]).frame.iloc[0]
    assert row["lat_p99_us"] == 2000.0 and pd.isna(row["lat_p99_us_note"])
    assert "DiskSpd" in reasons(row["null_reasons"])["clat_p99_us"]


def test_a_diskspd_file_says_why_it_has_no_completion_p99():
    path = paths.DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml"
    row = ingest([path]).frame.iloc[0]
    assert row["lat_p99_us"] > 0 and pd.isna(row["clat_p99_us"])
    assert "DiskSpd" in reasons(row["null_reasons"])["clat_p99_us"]


@pytest.mark.parametrize("clat", [-1.9e6, float("nan")])
def test_a_negative_or_nan_completion_p99_is_refused(tmp_path: Path, clat: float):
    """clat_p99_us is a measurement like lat_p99_us: a negative or NaN value (a damaged or edited file) is
    refused with the file and the column named, never written into a workbook as data."""
    good = record({**TOTAL, "lat_p99_ns": 2e6, "clat_p99_ns": 1.9e6})
    bad = record({**TOTAL, "lat_p99_ns": 2e6, "clat_p99_ns": clat})
    bad["key"] = bad["cell"]["key"] = bad["key"].replace("rep1", "rep2")
    bad["cell"]["repeat"] = 2
    path = journal(tmp_path, good, bad)
    result = ingest([path])
    assert len(result.frame) == 1 and result.frame.iloc[0]["clat_p99_us"] == 1900.0   # the good one is kept
    assert len(result.problems) == 1
    message = str(result.problems[0])
    assert "clat_p99_us" in message and str(path) in message and "negative, NaN or infinite" in message


def test_a_diskspd_file_without_its_thread_count_leaves_numjobs_blank_with_why(tmp_path: Path):
    """DiskSpd's thread count is ThreadsPerFile (-t); without it and without a numjobs in the file name the
    row's numjobs is blank with the reason, never a default of 1; a name that says nj4 gives 4."""
    xml = (paths.DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text()
    assert xml.count("<ThreadsPerFile>1</ThreadsPerFile>") == 1
    bare = xml.replace("<ThreadsPerFile>1</ThreadsPerFile>", "")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    unnamed = tmp_path / "a" / "diskspd_randread_64k_qd8.xml"
    named = tmp_path / "b" / "diskspd_randread_64k_qd8_nj4.xml"
    unnamed.write_text(bare)
    named.write_text(bare)
    row = ingest([unnamed]).frame.iloc[0]
    assert pd.isna(row["numjobs"])
    why = reasons(row["null_reasons"])
    assert "ThreadsPerFile" in why["numjobs"] and "DiskSpd" in why["clat_p99_us"]   # both reasons kept
    assert ingest([named]).frame.iloc[0]["numjobs"] == 4
    kept = tmp_path / "b" / "diskspd_randread_64k_qd8_t1.xml"
    kept.write_text(xml)
    assert ingest([kept]).frame.iloc[0]["numjobs"] == 1                      # the file's own -t
