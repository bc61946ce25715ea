"""Ingest: real captured fio 3.33 output (incl. client/server), hand-written fio 2.x and DiskSpd files,
real perf stat CSV, and journals that follow docs/journal.md. Expected numbers are read from the raw
files in the test (or written out by hand), never from the code under test."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from stormatrix.analysis.read import fio, perfcsv
from stormatrix.analysis.read.diskspd import parse_diskspd_xml
from stormatrix.analysis.read.fiorows import job_groups
from stormatrix.analysis.read.ingest import COLUMNS, ingest
from stormatrix.analysis.read.params import params_from_name
from stormatrix.core.errors import DataFileError, InputError
import paths

DATA = paths.DATA
FIO = DATA / "fio"


def raw(name: str) -> dict:
    text = (FIO / name).read_text()
    return json.loads(text[text.index("{"):])


def one(path: Path) -> pd.Series:
    result = ingest([path])
    assert result.problems == []
    assert len(result.frame) == 1
    return result.frame.iloc[0]


def test_fio3_single_job_numbers_come_from_the_file():
    d = raw("fio3_randread_bs4k_qd1.json")
    r = d["jobs"][0]["read"]
    row = one(FIO / "fio3_randread_bs4k_qd1.json")
    assert row["iops"] == pytest.approx(r["iops"], rel=1e-12)
    assert row["io_bytes"] == r["io_bytes"]
    assert row["mib"] == pytest.approx(r["io_bytes"] / 2**20)
    assert row["bw_mib_s"] == pytest.approx(r["bw_bytes"] / 2**20)
    assert row["lat_mean_us"] == pytest.approx(r["lat_ns"]["mean"] / 1000)
    # fio 3 writes completion-latency (clat) percentiles by default: that is clat p99, not total latency
    assert row["clat_p99_us"] == pytest.approx(r["clat_ns"]["percentile"]["99.000000"] / 1000)
    assert "percentile" not in r["lat_ns"] and pd.isna(row["lat_p99_us"])
    assert (row["rw"], row["bs"], row["iodepth"], row["numjobs"]) == ("randread", 4096, 1, 1)
    assert row["engine_version"] == "fio-3.33"
    assert row["source_format"] == "fio"


def test_numjobs_without_group_reporting_sums_the_clones():
    d = raw("fio3_randread_bs16k_qd2_numjobs2_nogroup.json")
    assert len(d["jobs"]) == 2
    row = one(FIO / "fio3_randread_bs16k_qd2_numjobs2_nogroup.json")
    assert row["iops"] == pytest.approx(sum(j["read"]["iops"] for j in d["jobs"]))
    assert row["io_bytes"] == sum(j["read"]["io_bytes"] for j in d["jobs"])
    assert row["numjobs"] == 2


def test_mixed_rw_group_reporting_totals_both_directions():
    d = raw("fio3_randrw70_bs8k_qd8_numjobs2_group.json")
    j = d["jobs"][0]
    row = one(FIO / "fio3_randrw70_bs8k_qd8_numjobs2_group.json")
    assert row["read_iops"] == pytest.approx(j["read"]["iops"])
    assert row["write_iops"] == pytest.approx(j["write"]["iops"])
    assert row["iops"] == pytest.approx(j["read"]["iops"] + j["write"]["iops"])
    ios_r, ios_w = j["read"]["total_ios"], j["write"]["total_ios"]
    expected_lat = (j["read"]["lat_ns"]["mean"] * ios_r + j["write"]["lat_ns"]["mean"] * ios_w) / (ios_r + ios_w)
    assert row["lat_mean_us"] == pytest.approx(expected_lat / 1000)
    assert (row["rw"], row["rwmixread"], row["numjobs"]) == ("randrw", 70, 2)


@pytest.mark.parametrize("name", ["client_server_2clients.json", "client_server_2clients_noise.json"])
def test_client_server_output_sums_clients_once_and_tolerates_noise(name):
    text = (FIO / name).read_text()
    if "noise" in name:
        assert text.splitlines()[0].startswith("<vm> fio:")  # the real noise lines are there
    d = raw(name)
    per_client = [j for j in d["client_stats"] if j["jobname"] != "All clients"]
    aggregate = next(j for j in d["client_stats"] if j["jobname"] == "All clients")
    row = one(FIO / name)
    assert row["clients"] == 2
    assert row["iops"] == pytest.approx(sum(j["read"]["iops"] for j in per_client))
    assert row["iops"] == pytest.approx(aggregate["read"]["iops"], rel=1e-6)  # fio's own sum agrees
    assert row["io_bytes"] == aggregate["read"]["io_bytes"]
    assert row["source_format"] == "fio-client"
    # rw from the JSON's "global options", bs and iodepth from the per-job "job options"
    assert row["rw"] == d["global options"]["rw"]
    assert row["bs"] == int(per_client[0]["job options"]["bs"])
    assert row["iodepth"] == int(per_client[0]["job options"]["iodepth"])


def test_fio2_usec_fields_and_kib_io_bytes_and_name_fallback():
    row = one(FIO / "fio2_read-rand-bs4096-qd16.json")
    # hand-written fio 2.2.10 file: io_bytes 2400000 (KiB), lat mean 1600 usec, clat p99 2992 usec,
    # and no job options, so rw/bs/iodepth come from the file name
    assert row["io_bytes"] == 2400000 * 1024
    assert row["lat_mean_us"] == 1600.0
    assert row["clat_p99_us"] == 2992.0 and pd.isna(row["lat_p99_us"])  # fio 2's clat percentiles
    assert row["bw_mib_s"] == pytest.approx(40000 / 1024)
    assert (row["rw"], row["bs"], row["iodepth"]) == ("randread", 4096, 16)


def test_runner_functions_keep_their_fio3_behaviour():
    d = raw("fio3_randread_bs4k_qd1.json")
    s = fio.summarize_direction(d["jobs"][0]["read"])
    assert s["io_bytes"] == d["jobs"][0]["read"]["io_bytes"]
    assert fio.jobs_named(d, "randread-4k-qd1") == d["jobs"]
    assert fio.summarize_jobs(d["jobs"])["total"]["iops"] == pytest.approx(d["jobs"][0]["read"]["iops"])
    assert fio.parse_fio_json((FIO / "client_server_2clients_noise.json").read_text())["client_stats"]


@pytest.mark.parametrize("path,expected", [
    ("runs/virtio-scsi-single/aio=io_uring/iothread=1/read-rand-bs4096-qd32-rep2.json",
     {"controller": "virtio-scsi-single", "aio": "io_uring", "iothread": True, "bs": 4096, "iodepth": 32,
      "repeat": 2, "rw": "randread"}),
    ("x/ide_native_randwrite_64k_qd8.json",
     {"controller": "ide", "aio": "native", "bs": 65536, "iodepth": 8, "rw": "randwrite"}),
    ("write-seq-bs1m-qd4-jobs2.json", {"rw": "write", "bs": 1048576, "iodepth": 4, "numjobs": 2}),
    ("vmware-pvscsi/aio=threads/cache=writeback/r.json", {"controller": "pvscsi", "aio": "threads",
                                                           "cache": "writeback"}),
])
def test_params_from_name(path, expected):
    assert params_from_name(path) == expected


def test_diskspd_iops_is_counts_over_test_time():
    row = parse_diskspd_xml((DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text(), "x.xml")
    assert row["iops"] == 937500 / 60.0
    assert row["bw_mib_s"] == 61440000000 / 2**20 / 60.0
    assert (row["rw"], row["bs"], row["iodepth"], row["numjobs"]) == ("randread", 65536, 8, 1)
    assert row["lat_mean_us"] == pytest.approx(512.0)
    assert row["lat_p99_us"] == pytest.approx(910.0)
    mix = parse_diskspd_xml((DATA / "diskspd" / "diskspd_randrw70_8k_qd16_t2.xml").read_text(), "y.xml")
    assert mix["iops"] == (700000 + 300000 + 1400000 + 600000) / 60.0   # two threads summed
    assert mix["read_iops"] == 2100000 / 60.0
    assert (mix["rw"], mix["rwmixread"], mix["numjobs"], mix["iodepth"]) == ("randrw", 70, 2, 16)


def test_perf_csv_not_supported_is_not_zero_and_falls_back_to_cpu_time():
    stat = perfcsv.parse_perf_csv((DATA / "perf" / "perf_stat_system_wide.csv").read_text(), "p.csv")
    assert stat.events["cycles:u"].value is None and stat.events["cycles:u"].not_supported == 1
    assert stat.events["context-switches"].value == 23858
    host = perfcsv.host_metrics(stat)
    assert host["cpu_metric"] == "cpu_time"
    assert host["cpu_total"] == pytest.approx(2004.89 / 1000)
    assert host["ctx_switches"] == 23858


def test_perf_csv_interval_per_cpu_and_per_thread_layouts_are_summed():
    interval = perfcsv.parse_perf_csv((DATA / "perf" / "perf_stat_interval.csv").read_text(), "i.csv")
    assert interval.events["context-switches"].value == 5 + 0       # third interval; one <not counted>
    assert interval.events["context-switches"].not_counted == 1
    assert interval.events["cpu-clock"].value == pytest.approx(0.89 + 0.05)
    per_cpu = perfcsv.parse_perf_csv((DATA / "perf" / "perf_stat_per_cpu.csv").read_text(), "c.csv")
    assert per_cpu.events["context-switches"].value == 1457 + 2472
    per_thread = perfcsv.parse_perf_csv((DATA / "perf" / "perf_stat_per_thread.csv").read_text(), "t.csv")
    assert per_thread.events["context-switches"].value == 13505 + 13488 + 120 + 10


def test_perf_csv_with_cycles_counted_is_a_cycles_measurement():
    text = "1000,,cycles:u,1,100.00,,\n3000,,cycles:k,1,100.00,,\n50,,context-switches,1,100.00,,\n" \
           "2.5,msec,cpu-clock,1,100.00,,\n"
    host = perfcsv.host_metrics(perfcsv.parse_perf_csv(text, "c.csv"))
    assert (host["cpu_metric"], host["cpu_total"], host["cpu_user"], host["cpu_system"]) == ("cycles", 4000, 1000, 3000)


def test_result_file_with_perf_csv_next_to_it_gets_host_figures(tmp_path):
    d = tmp_path / "virtio-blk" / "aio=native"
    d.mkdir(parents=True)
    shutil.copy(FIO / "fio3_randread_bs4k_qd1.json", d / "randread-rep1.json")
    shutil.copy(DATA / "perf" / "perf_stat_fio_process.csv", d / "randread-rep1.perf.csv")
    row = one(tmp_path)
    mib = raw("fio3_randread_bs4k_qd1.json")["jobs"][0]["read"]["io_bytes"] / 2**20
    assert (row["controller"], row["aio"], row["repeat"]) == ("virtio-blk", "native", 1)
    assert row["cpu_metric"] == "cpu_time" and row["cpu_per_mib_unit"] == "CPU-ms/MiB"
    assert row["cpu_per_mib"] == pytest.approx(329.58 / mib)          # CPU-ms per MiB
    assert row["ctx_per_mib"] == pytest.approx(3833 / mib)


def test_journal_rows_follow_docs_journal_md():
    result = ingest([DATA / "journal" / "sample_run"])
    df = result.frame
    assert result.problems == [] and result.notes == []
    assert len(df) == 24                       # 4 controllers x 3 aio x 2 repeats; cell-error not a row
    assert list(df.columns) == list(COLUMNS)
    assert str(df["bs"].dtype) == "Int64" and str(df["iothread"].dtype) == "boolean"
    first = df.iloc[0]
    assert first["key"] == "virtio-blk/aio=native/iothread=0/cache=none/randread-64k/rep1"
    assert (first["cpu_metric"], first["cpu_per_mib"], first["ctx_per_mib"]) == ("cpu_time", 30.1, 12736 / 320.0)
    assert first["mib"] == 320.0
    env = result.environment
    assert ("environment.qemu", "7.2.22") in set(zip(env["item"], env["value"]))
    assert env["scope"].nunique() == 2           # the first run and the resumed run


def test_journal_without_host_collector_keeps_the_row_without_cpu():
    df = ingest([DATA / "journal" / "cycles_run" / "journal.ndjson"]).frame
    sata = df[df["controller"] == "sata"].iloc[0]
    assert pd.isna(sata["cpu_per_mib"]) and pd.isna(sata["cpu_metric"])
    assert set(df["cpu_metric"].dropna()) == {"cycles"}


def test_unreadable_files_are_reported_and_the_rest_processed(tmp_path):
    shutil.copy(FIO / "fio3_randread_bs4k_qd1.json", tmp_path / "good.json")
    (tmp_path / "bad.json").write_text('{"fio version": "fio-3.33", "jobs": [')
    result = ingest([tmp_path])
    assert len(result.frame) == 1
    assert [p.source for p in result.problems] == [str(tmp_path / "bad.json")]
    assert "truncated" in result.problems[0].reason
    with pytest.raises(DataFileError, match="bad.json"):
        ingest([tmp_path], strict=True)


def test_missing_input_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        ingest([tmp_path / "nope"])


def test_utf16_output_from_windows_powershell_is_read(tmp_path):
    text = (FIO / "fio3_randread_bs4k_qd1.json").read_text()
    (tmp_path / "win.json").write_bytes(text.encode("utf-16"))   # BOM + UTF-16LE, as PowerShell 5.1 '>'
    assert one(tmp_path / "win.json")["iops"] == pytest.approx(raw("fio3_randread_bs4k_qd1.json")["jobs"][0]["read"]["iops"])


def test_repeats_are_numbered_by_order_when_names_do_not_say(tmp_path):
    for i in range(3):
        shutil.copy(FIO / "fio3_randread_bs4k_qd1.json", tmp_path / f"x{i}.json")
    df = ingest([tmp_path], label="lab").frame
    assert df["repeat"].tolist() == [1, 2, 3]
    assert set(df["side"]) == {"lab"}


def test_parallel_parse_gives_the_same_frame_as_serial(tmp_path):
    for i in range(6):
        shutil.copy(FIO / "fio3_randwrite_bs64k_qd4.json", tmp_path / f"w-rep{i + 1}.json")
    (tmp_path / "broken.json").write_text("{")
    serial = ingest([tmp_path], workers=1)
    parallel = ingest([tmp_path], workers=2)
    pd.testing.assert_frame_equal(serial.frame, parallel.frame)
    assert serial.problems == parallel.problems and len(serial.problems) == 1


def test_ingest_and_the_runner_summarise_every_capture_the_same_way():
    """One summary of fio output: ingest's strict reading equals the runner's on every captured file."""
    for path in sorted(FIO.rglob("*.json")):
        text = path.read_text()
        doc = json.loads(text[text.index("{"):])
        for group in job_groups(doc, str(path), "client_stats" in doc).values():
            assert fio.summarize_jobs(group, str(path)) == fio.summarize_jobs(group), path.name


def test_the_strict_summary_names_the_damaged_field_the_lenient_one_skips_it():
    doc = json.loads((FIO / "fio3_randread_bs4k_qd1.json").read_text())
    job = doc["jobs"][0]
    job["read"]["iops"] = "fast"
    with pytest.raises(DataFileError, match=r"read\.iops is 'fast', not a number"):
        fio.summarize_jobs([job], "x.json")
    lenient = fio.summarize_jobs([job])
    assert lenient["read"]["iops"] is None and lenient["total"]["iops"] is None  # unknown, never 0.0
    assert "iops" in lenient["null_reasons"]["total.iops"]


def test_exact_integers_stay_exact_in_the_summary():
    doc = json.loads((FIO / "fio3_randread_bs4k_qd1.json").read_text())
    job = doc["jobs"][0]
    job["read"]["io_bytes"] = 2**53 + 1
    assert fio.summarize_jobs([job])["total"]["io_bytes"] == 2**53 + 1


def test_a_job_capped_by_rate_iops_is_a_throttled_workload_and_rate_min_is_no_cap(tmp_path: Path) -> None:
    # real fio: 250 I/Os per second of 8 KiB is a cap of 250 * 8192 bytes/s; rate_min only ends a slow job
    out = tmp_path / "capped.json"
    fio_bin = shutil.which("fio")
    assert fio_bin, "fio is installed by scripts/setup.sh (Debian package fio)"
    subprocess.run([fio_bin, "--name=capped", f"--filename={tmp_path / 'f.dat'}", "--size=4m", "--rw=randread",
                    "--bs=8k", "--rate_iops=250", "--rate_min=1k", "--runtime=1", "--time_based",
                    "--output-format=json", f"--output={out}"], check=True, timeout=60)
    both = json.loads(out.read_text())
    assert both["jobs"][0]["job options"]["rate_iops"] == "250"
    assert one(out)["rate_mib_s"] == pytest.approx(250 * 8192 / 2**20)
    # the same job with rate= as well: fio caps by rate first, so that is the workload's rate
    both["jobs"][0]["job options"]["rate"] = "1m"
    out.write_text(json.dumps(both))
    assert one(out)["rate_mib_s"] == pytest.approx(1.0)
