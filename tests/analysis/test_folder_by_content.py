"""A folder of results is read by what each file holds, not by its name; what is not read is said.

tests/data/folder-walk is a folder as another project leaves it (tests/data/make_folder_walk.sh, fio 3.33):
client/server output in ``fio-result.txt`` (two servers and fio's "All clients"), json+ with fio's warnings
before it in ``mixed.fiolog``, JSON named ``output.3`` and ``randwrite.txt``, DiskSpd XML named
``diskspd-64k.out``; beside them a job file, a latency log, an esxtop capture named ``run.csv`` next to
``run.json``, DiskSpd text output and a note.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
import paths

FOLDER = paths.DATA / "folder-walk"
READ = {"fio-result.txt", "mixed.fiolog", "output.3", "randwrite.txt", "run.json", "diskspd-64k.out"}
UNREAD = {"job.fio": "1 fio job file", "mix_lat.1.log": "1 fio log", "run.csv": "1 esxtop batch capture",
          "diskspd-4k-randread.txt": "1 DiskSpd text output", "notes.md": "1 file of unknown kind"}


def _doc(name: str) -> dict:
    text = (FOLDER / name).read_text()
    return json.loads(text[text.index("\n{") + 1:] if not text.startswith("{") else text)


def test_every_result_is_read_whatever_its_name_and_the_rest_is_named_once() -> None:
    data = ingest([FOLDER])
    assert not data.problems
    assert {Path(s).name for s in data.frame["source"]} == READ
    (note,) = [n for n in data.notes if "were not read" in n]
    assert note.startswith(f"{len(UNREAD)} file(s) under the inputs were not read")
    for name, kind in UNREAD.items():
        assert f"{kind} ({FOLDER / name})" in note, name
    assert "-Rxml" in note and "esxtop -b" in note


def test_each_row_has_the_files_own_numbers() -> None:
    rows = {Path(r["source"]).name: r for r in ingest([FOLDER]).frame.to_dict("records")}
    for name, direction in (("output.3", "read"), ("randwrite.txt", "write"), ("run.json", "read")):
        job = _doc(name)["jobs"][0]
        assert rows[name]["iops"] == pytest.approx(job[direction]["iops"], rel=1e-9), name
        assert rows[name]["lat_mean_us"] == pytest.approx(job[direction]["lat_ns"]["mean"] / 1000, rel=1e-9), name
    mixed = _doc("mixed.fiolog")["jobs"][0]
    assert rows["mixed.fiolog"]["iops"] == pytest.approx(mixed["read"]["iops"] + mixed["write"]["iops"], rel=1e-9)
    # client/server: the clients' sum, fio's own "All clients" not counted a second time
    stats = _doc("fio-result.txt")["client_stats"]
    clients = [c for c in stats if c["jobname"] != "All clients"]
    (everyone,) = [c for c in stats if c["jobname"] == "All clients"]
    assert len(clients) == 2
    assert rows["fio-result.txt"]["iops"] == pytest.approx(sum(c["read"]["iops"] for c in clients), rel=1e-9)
    assert rows["fio-result.txt"]["iops"] == pytest.approx(everyone["read"]["iops"], rel=5e-3)  # (its runtime: the longest)
    assert rows["diskspd-64k.out"]["engine"] == "diskspd"


def test_a_csv_that_is_not_perfs_never_sinks_the_result_beside_it(tmp_path: Path, capsys) -> None:
    shutil.copy(FOLDER / "run.json", tmp_path / "run.json")
    shutil.copy(FOLDER / "run.csv", tmp_path / "run.csv")  # an esxtop capture under the result's name
    out = tmp_path / "out.xlsx"
    assert main(["report", str(tmp_path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "run.csv): an ESXi host's counters (esxtop -b, PDH-CSV), not perf stat output" in err
    data = ingest([tmp_path])
    assert len(data.frame) == 1 and data.frame["host_scope"].isna().all()
    # the next report over the same folder names the workbook and the tidy CSV it wrote, and reads the rest
    data = ingest([tmp_path])
    (note,) = [n for n in data.notes if "were not read" in n]
    assert "2 report outputs" in note and len(data.frame) == 1


@pytest.mark.parametrize("name, found, fix", [
    ("diskspd-4k-randread.txt", "DiskSpd text output", "re-run DiskSpd with -Rxml"),
    ("job.fio", "fio job file", "--output-format=json"),
    ("mix_lat.1.log", "fio log", "--output-format=json"),
])
def test_a_file_given_by_name_is_refused_naming_its_format_and_its_fix(name: str, found: str, fix: str) -> None:
    (problem,) = ingest([FOLDER / name]).problems
    assert f"{found}, not a result file" in str(problem) and fix in str(problem)


def test_an_esxtop_capture_given_as_perf_csv_is_named_as_such() -> None:
    (problem,) = ingest([FOLDER / "run.csv"]).problems
    assert "an esxtop batch capture, not perf stat -x, output" in str(problem)
    assert "with no result file" not in str(problem)


def test_json_with_text_after_it_is_read(tmp_path: Path) -> None:
    """fio's stderr after the JSON (a `> x.log 2>&1` capture whose job ended with a warning)."""
    text = (FOLDER / "mixed.fiolog").read_text() + "fio: pid=4242, got signal=15\nfio: terminating on signal 15\n"
    (tmp_path / "trailer").write_text(text)
    (row,) = ingest([tmp_path]).frame.to_dict("records")
    (expected,) = ingest([FOLDER / "mixed.fiolog"]).frame.to_dict("records")
    assert row["iops"] == expected["iops"] and row["clat_p99_us"] == expected["clat_p99_us"]
