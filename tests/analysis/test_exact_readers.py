"""The readers refuse a number they cannot read exactly, never guess it, and read the valid neighbour right:
fio's --status-interval output at its final report, two runs pasted into one file, block-size ranges and
splits, per-direction block sizes and rates, DiskSpd targets of different workloads and DiskSpd counts that
are present but bad, a perf CSV written under a decimal-comma locale (and the collector running perf in the
C locale). Real captures come from tests/data/ambiguous (see its README) or from the installed fio/perf.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clirun import cli
import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"
PY = sys.executable


FIO_FILE = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
FIO_WRITE = DATA / "fio" / "fio3_randwrite_bs64k_qd4.json"


# --- readers: a number that cannot be read exactly is refused, never guessed ------------------------------

AMBIGUOUS = DATA / "ambiguous"


def report(paths: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    return cli(["report", *map(str, paths), "-o", str(tmp_path / "r.xlsx"), *extra], capsys)


def test_status_interval_output_is_read_at_its_final_report(tmp_path: Path) -> None:
    from stormatrix.analysis.read.fio import extract_json_documents, parse_fio_json

    text = (AMBIGUOUS / "fio333-status-interval-1s.json").read_text()
    docs = extract_json_documents(text)
    assert len(docs) >= 3  # interim reports, then the final one
    doc = parse_fio_json(text, "x")
    final = docs[-1]["jobs"][0]["read"]
    assert doc["jobs"][0]["read"]["io_bytes"] == final["io_bytes"] > docs[0]["jobs"][0]["read"]["io_bytes"]
    from stormatrix.analysis.read.ingest import ingest

    frame = ingest([AMBIGUOUS / "fio333-status-interval-1s.json"]).frame
    assert int(frame["io_bytes"].iloc[0]) == final["io_bytes"]


def test_status_interval_is_read_from_a_fresh_fio_run_too(tmp_path: Path) -> None:
    import shutil as sh

    if sh.which("fio") is None:
        pytest.skip("fio is not installed")
    out = tmp_path / "si.json"
    subprocess.run(["fio", "--name=si", f"--filename={tmp_path / 'f'}", "--size=1m", "--rw=randread", "--bs=4k",
                    "--runtime=2", "--time_based", "--output-format=json", "--status-interval=1", f"--output={out}"],
                   check=True, capture_output=True, timeout=60)
    from stormatrix.analysis.read.fio import extract_json_documents
    from stormatrix.analysis.read.ingest import ingest

    docs = extract_json_documents(out.read_text())
    frame = ingest([out]).frame
    assert len(docs) >= 2 and int(frame["io_bytes"].iloc[0]) == docs[-1]["jobs"][0]["read"]["io_bytes"]


def test_two_runs_pasted_into_one_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pasted = tmp_path / "two.json"
    pasted.write_text(FIO_FILE.read_text() + "\n" + FIO_WRITE.read_text())
    code, text = report([pasted], tmp_path, capsys, "--strict")
    assert code == 2 and "two.json" in text and "different jobs" in text


@pytest.mark.parametrize("bs,rw,says", [("4k-64k", "randread", "range"), ("4k,64k", "randrw", "reads 4k, writes 64k"),
                                        ("4k-8k,16k", "randread", "range")])
def test_block_sizes_that_are_not_one_size_are_refused(bs: str, rw: str, says: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].update(bs=bs, rw=rw)
    path = tmp_path / "read-rand-bs4096-qd1.json"  # a name that would give 4k if the option were skipped
    path.write_text(json.dumps(doc))
    code, text = report([path], tmp_path, capsys, "--strict")
    assert code == 2 and says in text and path.name in text


@pytest.mark.parametrize("option", [{"bsrange": "4k-64k"}, {"bssplit": "4k/50:64k/50"}])
def test_bsrange_and_bssplit_are_refused_not_taken_from_the_name(option: dict[str, str], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import json

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].pop("bs", None)
    doc["jobs"][0]["job options"].update(option)
    path = tmp_path / "randread-bs4k-qd1.json"
    path.write_text(json.dumps(doc))
    code, text = report([path], tmp_path, capsys, "--strict")
    assert code == 2 and next(iter(option)) in text


def test_a_real_fio_range_capture_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = report([AMBIGUOUS / "fio333-randread-bs4k-64k.json"], tmp_path, capsys, "--strict")
    assert code == 2 and "range" in text


@pytest.mark.parametrize("bs,rw,expected", [("4k,64k", "randread", 4096), ("4k,64k", "randwrite", 65536),
                                            (",64k", "write", 65536), ("64k,64k", "randrw", 65536),
                                            ("65536", "randrw", 65536), ("8k,32k,", "randrw", None)])
def test_per_direction_block_sizes_are_read_for_the_directions_used(bs: str, rw: str, expected: int | None) -> None:
    from stormatrix.analysis.read.params import block_size

    value, why = block_size(bs, rw)
    assert value == expected and (why is None) == (expected is not None)


def test_diskspd_targets_with_different_workloads_are_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, text = report([AMBIGUOUS / "diskspd_two_targets_64k_4k.xml"], tmp_path, capsys, "--strict")
    assert code == 2 and "2 targets" in text and "65536" in text and "4096" in text


def test_diskspd_targets_of_one_workload_are_summed() -> None:
    from stormatrix.analysis.read.diskspd import parse_diskspd_xml

    one = parse_diskspd_xml((DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text(), "one")
    two = parse_diskspd_xml((AMBIGUOUS / "diskspd_two_targets_64k_64k.xml").read_text(), "two")
    assert two["bs"] == one["bs"] == 65536 and two["iodepth"] == one["iodepth"]
    assert two["io_bytes"] == 2 * one["io_bytes"] and two["numjobs"] == 2 * one["numjobs"]


@pytest.mark.parametrize("name", ["perf_stat_de_DE.csv", "perf_stat_de_DE_interval.csv",
                                  "perf_stat_de_DE_per_cpu.csv"])
def test_a_decimal_comma_perf_csv_is_refused_with_the_fix(name: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "r.json").write_bytes(FIO_FILE.read_bytes())
    (tmp_path / "in" / "r.perf.csv").write_bytes((AMBIGUOUS / name).read_bytes())
    code, text = report([tmp_path / "in" / "r.json"], tmp_path, capsys, "--strict")
    assert code == 2 and "decimal comma" in text and "LC_ALL=C" in text and "r.perf.csv" in text


def test_perf_csvs_in_the_c_locale_still_read() -> None:
    from stormatrix.analysis.read.perfcsv import host_metrics, parse_perf_csv

    for path in (DATA / "perf").glob("*.csv"):
        parse_perf_csv(path.read_text(), str(path))  # none refused
    m = host_metrics(parse_perf_csv((DATA / "perf" / "perf_stat_fio_process.csv").read_text()))
    assert m["ctx_switches"] > 0


@pytest.fixture(scope="module")
def de_locale(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil as sh

    if sh.which("localedef") is None or not Path("/usr/share/i18n/locales/de_DE").exists():
        pytest.skip("localedef or the de_DE locale source is not installed")
    where = tmp_path_factory.mktemp("locale")
    r = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(where / "de_DE.UTF-8")], capture_output=True)
    if not (where / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef failed: {r.stderr[:200]!r}")
    return where


def test_the_collector_runs_perf_in_the_c_locale(de_locale: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix.host import collector, perfrun

    if not perfrun.perf_available():
        pytest.skip("perf stat cannot count software events here")
    monkeypatch.setenv("LOCPATH", str(de_locale))
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    probe = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "--", "sleep", "0.01"],
                           capture_output=True, text=True)
    assert any(line.split(",")[1:2] and line.split(",")[1].isdigit() for line in probe.stderr.splitlines()
               if "task-clock" in line), probe.stderr  # this perf does print decimal commas under de_DE
    busy = subprocess.Popen([PY, "-c", "import time\nt=time.time()\nwhile time.time()-t<30: pass"])
    try:
        c = collector.WindowCollector(busy.pid, {}, use_perf=True)
        c.start()
        import time

        time.sleep(1.0)
        res = c.stop()
    finally:
        busy.kill()
        busy.wait()
    task_clock_s = res["perf"]["task-clock"]["value"] / 1000.0  # msec
    proc_s = res["cpu_time_s"]["user"] + res["cpu_time_s"]["system"]  # /proc's ticks, read apart from perf
    assert res["cpu_total_source"] == "perf task-clock (ns)"
    assert abs(task_clock_s - proc_s) <= 0.2 * proc_s + 0.05, (task_clock_s, proc_s)


@pytest.mark.parametrize("rate,rw,mib", [("10m,20m", "randwrite", 20.0), ("10m,20m", "randread", 10.0),
                                         ("10m,20m", "randrw", None), ("32m", "randrw", 32.0), (",20m", "write", 20.0),
                                         (",20m", "read", None)])
def test_a_per_direction_rate_is_read_for_the_directions_used(rate: str, rw: str, mib: float | None,
                                                              tmp_path: Path) -> None:
    import json

    from stormatrix.analysis.read.ingest import ingest

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].update(rate=rate, rw=rw)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    frame = ingest([path]).frame
    value = frame["rate_mib_s"].iloc[0]
    assert (value == mib) if mib is not None else not (value == value)  # (NaN: no one rate)


# --- DiskSpd XML: a present but bad count is an error naming the file and tag, an absent one falls back --

DISKSPD = (paths.DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text()
TARGET_QD = "<RequestCount>8</RequestCount>"
SETTINGS = "<ThreadCount>0</ThreadCount>\n        <RequestCount>0</RequestCount>"


def diskspd(text: str, name: str = "diskspd_randread_64k_qd8_t1.xml") -> dict:
    from stormatrix.analysis.read.diskspd import parse_diskspd_xml

    return parse_diskspd_xml(text, name)


@pytest.mark.parametrize("tag,good", [("BlockSize", "<BlockSize>65536</BlockSize>"), ("RequestCount", TARGET_QD),
                                      ("ThreadsPerFile", "<ThreadsPerFile>1</ThreadsPerFile>"),
                                      ("ThreadCount", "<ThreadCount>0</ThreadCount>"),
                                      ("TestTimeSeconds", "<TestTimeSeconds>60.00</TestTimeSeconds>")])
@pytest.mark.parametrize("value", ["abc", "NaN", "-1", "1" + "0" * 40, "", "4294967296"])
def test_a_present_but_bad_diskspd_number_is_an_error_naming_file_and_tag(tag: str, good: str, value: str) -> None:
    from stormatrix.core.errors import DataFileError

    assert DISKSPD.count(good) == 1
    if tag == "TestTimeSeconds" and value == "4294967296":
        value = "4.3e9"  # seconds are a decimal number in DiskSpd's XML
    with pytest.raises(DataFileError) as exc:
        diskspd(DISKSPD.replace(good, f"<{tag}>{value}</{tag}>"), "run7/diskspd_randread_64k_qd8_t1.xml")
    text = str(exc.value)
    assert "run7/diskspd_randread_64k_qd8_t1.xml" in text and f"<{tag}>" in text and "diskspd -Rxml" in text


def test_diskspd_counts_read_as_written_and_absent_tags_fall_back_as_documented() -> None:
    row = diskspd(DISKSPD)
    assert (row["bs"], row["iodepth"], row["numjobs"]) == (65536, 8, 1)
    # absent: the file name says bs/iodepth; without ThreadsPerFile and no numjobs in the name: blank, with why
    bare = (DISKSPD.replace("<BlockSize>65536</BlockSize>", "").replace(TARGET_QD, "")
            .replace("<ThreadsPerFile>1</ThreadsPerFile>", ""))
    row = diskspd(bare, "diskspd_randread_16k_qd4.xml")
    assert (row["bs"], row["iodepth"], row["numjobs"]) == (16384, 4, None) and "ThreadsPerFile" in row["null_reasons"]
    # -F 4 -O 32: four threads share the target, 32 requests each in flight
    fixed = diskspd(DISKSPD.replace(SETTINGS, "<ThreadCount>4</ThreadCount>\n<RequestCount>32</RequestCount>"))
    assert (fixed["iodepth"], fixed["numjobs"]) == (32, 4)
    assert diskspd(DISKSPD.replace("<BlockSize>65536</BlockSize>", "<BlockSize>4096</BlockSize>"))["bs"] == 4096


def test_a_diskspd_block_size_of_zero_is_refused() -> None:
    from stormatrix.core.errors import DataFileError

    with pytest.raises(DataFileError, match="BlockSize"):
        diskspd(DISKSPD.replace("<BlockSize>65536</BlockSize>", "<BlockSize>0</BlockSize>"))
