"""Bad input to ``report``/``compare`` as a new user would give it: no traceback, no hang, no number
invented, and a failing write never replaces an earlier good output.

Inputs are real fio 3.33 captures (tests/data/fio) edited the way the mistakes happen; every expected
figure is computed here from those files.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
import paths

DATA = paths.DATA
FIO = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
SAMPLE_RUN = DATA / "journal" / "sample_run"


def fio_doc() -> dict[str, Any]:
    return json.loads(FIO.read_text())


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def edited(path: Path, **read: Any) -> Path:
    doc = fio_doc()
    doc["jobs"][0]["read"].update(read)
    return write(path, doc)


# --- counts beyond 64-bit signed, and impossible rates ------------------------------------------------

@pytest.mark.parametrize("field,value", [("io_bytes", 2**63), ("io_bytes", 2**64 - 1), ("io_bytes", 2**64),
                                         ("total_ios", 2**63), ("total_ios", 2**64)])
def test_counts_up_to_2_to_the_64_are_read_without_a_traceback(tmp_path: Path, field: str, value: int,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = edited(tmp_path / "in" / "huge.json", **{field: value})
    result = ingest([bad])
    assert result.frame.empty and len(result.problems) == 1
    assert result.problems[0].source == str(bad) and field in result.problems[0].reason or \
        "impossible rate" in result.problems[0].reason
    assert main(["report", str(bad), "-o", str(tmp_path / "r.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(bad) in err


def test_a_consistent_file_with_huge_integers_keeps_them_exact(tmp_path: Path) -> None:
    """Below 2^63 an integer is kept exactly, also past 2^53 where a float would round it."""
    doc = fio_doc()
    r = doc["jobs"][0]["read"]
    runtime_s = r["runtime"] / 1000.0
    r["io_bytes"] = 2**53 + 4096 * 3
    r["total_ios"] = r["io_bytes"] // 4096
    r["bw_bytes"] = r["io_bytes"] / runtime_s
    r["iops"] = r["total_ios"] / runtime_s
    result = ingest([write(tmp_path / "big.json", doc)])
    assert not result.problems
    assert int(result.frame["io_bytes"].iloc[0]) == 2**53 + 4096 * 3


@pytest.mark.parametrize("change,word", [({"iops": 1e300}, "IOPS"), ({"bw_bytes": 2**64}, "bandwidth"),
                                         ({"bw_bytes": 2**64, "bw": 2**54}, "bandwidth")])
def test_rates_that_disagree_with_what_was_moved_are_flagged_not_data(tmp_path: Path, change: dict[str, Any],
                                                                       word: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    doc = fio_doc()
    r = doc["jobs"][0]["read"]
    r.update(io_bytes=35_000_000, total_ios=35_000_000 // 4096, runtime=1000)
    r.update(bw_bytes=35_000_000.0, iops=(35_000_000 // 4096) / 1.0)
    good = write(tmp_path / "in" / "good-rep1.json", doc)
    assert not ingest([good]).problems  # consistent: 35 MB in 1 s is 35 MB/s
    r.update(change)
    bad = write(tmp_path / "in" / "bad-rep2.json", doc)
    result = ingest([tmp_path / "in"])
    assert [p.source for p in result.problems] == [str(bad)]
    assert word in result.problems[0].reason and "impossible rate" in result.problems[0].reason
    assert result.frame["source"].tolist() == [str(good)]
    out = tmp_path / "r.xlsx"
    assert main(["report", str(tmp_path / "in"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {bad}" in err
    assert str(bad) not in (tmp_path / "r.csv").read_text()


def test_real_captures_pass_the_rate_check() -> None:
    """Every captured fio file (fio 2.x, 3.x, numjobs, client/server) agrees with its own counts."""
    files = [p for p in (DATA / "fio").rglob("*") if p.suffix in (".json", ".fio")]
    result = ingest(files)
    assert not [p for p in result.problems if "impossible rate" in p.reason]
    assert len(result.frame) >= 20


def test_a_suite_points_summed_rates_may_exceed_its_bytes_over_the_longest_window() -> None:
    """A point on many guests sums each client's own rate: with windows of 0.9-1.2 s (clients started
    apart on a busy host) the sum is above the bytes over the longest window, never below it."""
    from stormatrix.analysis.read.checks import check_row
    from stormatrix.core.errors import DataFileError

    mib = 64 * 2**20
    row = {"bs": 4096, "iodepth": 1, "numjobs": 1, "io_bytes": mib, "total_ios": mib // 4096, "runtime_ms": 1200.0,
           "bw_mib_s": 61.2, "iops": 15660.0, "clients": 64}
    check_row(row, "suite point")  # 64 MiB / 1.2 s = 53.3 MiB/s <= 61.2: the sum of 64 clients' rates
    for one_window in ({"clients": 1}, {"clients": None}):  # one client, or a plain file: exactly its rate
        with pytest.raises(DataFileError, match="impossible rate"):
            check_row({**row, **one_window}, "one client")
    with pytest.raises(DataFileError, match="bandwidth 40 MiB/s disagrees"):  # below bytes / longest window
        check_row({**row, "bw_mib_s": 40.0}, "suite point")


# --- inputs that are not files -------------------------------------------------------------------------

def test_a_device_is_refused_without_reading_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "/dev/zero", "-o", str(tmp_path / "r.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "/dev/zero" in err and "character device" in err and "Fix:" in err and "Traceback" not in err


def test_a_pipe_in_a_directory_is_skipped_not_opened(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copy(FIO, folder / "x.json") if folder.mkdir() is None else None
    os.mkfifo(folder / "pipe.json")  # opening it would block for ever
    result = ingest([folder])
    assert len(result.frame) == 1 and not result.problems
    assert any("pipe.json" in n and "named pipe" in n for n in result.notes)


def test_a_named_pipe_given_as_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "p.json")
    assert main(["report", str(tmp_path / "p.json"), "-o", str(tmp_path / "r.xlsx")]) == 2
    assert "named pipe" in capsys.readouterr().err


def test_an_oversized_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "in" / "big.json"
    big.parent.mkdir()
    with open(big, "wb") as fh:  # sparse: no disk space, 300 MiB of apparent size
        fh.truncate(300 * 2**20)
    result = ingest([big])
    assert result.frame.empty and "larger than 256 MiB" in result.problems[0].reason


# --- the same data given twice -------------------------------------------------------------------------

def test_the_same_run_directory_twice_is_counted_once(tmp_path: Path) -> None:
    once = ingest([SAMPLE_RUN])
    assert len(once.frame) > 0
    twice = ingest([SAMPLE_RUN, SAMPLE_RUN])
    assert len(twice.frame) == len(once.frame)
    assert any("given twice" in n for n in twice.notes)


def test_a_directory_and_its_own_journal_are_counted_once(tmp_path: Path) -> None:
    once = ingest([SAMPLE_RUN])
    both = ingest([SAMPLE_RUN, SAMPLE_RUN / "journal.ndjson"])
    assert len(both.frame) == len(once.frame)
    assert any("given twice" in n and "journal.ndjson" in n for n in both.notes)


def test_a_copied_run_directory_is_counted_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(SAMPLE_RUN, copy)
    once = ingest([SAMPLE_RUN])
    both = ingest([SAMPLE_RUN, copy])
    assert len(both.frame) == len(once.frame)
    assert any("already read" in n and "counted once" in n for n in both.notes)
    assert main(["report", str(SAMPLE_RUN), str(copy), "-o", str(tmp_path / "r.xlsx")]) == 0
    assert "counted once" in capsys.readouterr().err


def test_a_folder_given_twice_through_overlapping_paths_is_counted_once(tmp_path: Path) -> None:
    shutil.copytree(DATA / "fio" / "compare", tmp_path / "c")
    once = ingest([tmp_path / "c"])
    both = ingest([tmp_path / "c", tmp_path / "c" / "A", str(tmp_path / "c" / "B" / "*.json")])
    assert len(both.frame) == len(once.frame)
    assert len([n for n in both.notes if "already among the inputs" in n]) == 2


# --- outputs -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["-o", "--csv"])
def test_an_output_under_a_regular_file_is_refused_naming_it(tmp_path: Path, flag: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    out = tmp_path / "good.xlsx"
    assert main(["report", str(FIO), "-o", str(out)]) == 0
    before = out.read_bytes(), (tmp_path / "good.csv").read_bytes()
    capsys.readouterr()
    args = (["-o", str(blocker / "sub" / "r.xlsx")] if flag == "-o"
            else ["-o", str(out), "--csv", str(blocker / "r.csv")])
    assert main(["report", str(FIO), *args]) == 2
    err = capsys.readouterr().err
    assert f"{flag} " in err and str(blocker) in err and "not a directory" in err and "Traceback" not in err
    assert (out.read_bytes(), (tmp_path / "good.csv").read_bytes()) == before


def test_a_failing_csv_write_does_not_replace_the_earlier_workbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    out = tmp_path / "r.xlsx"
    assert main(["report", str(FIO), "-o", str(out)]) == 0
    before = out.read_bytes()

    def disk_full(self: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", disk_full)
    assert main(["report", str(SAMPLE_RUN), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--csv" in err and "No space left on device" in err and "nothing was replaced" in err
    assert out.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".part", ".tmp"))]


def test_an_output_that_is_a_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(FIO), "-o", str(tmp_path / "r.xlsx"), "--csv", "/dev/null"]) == 2
    assert "/dev/null" in capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_compare_help_shows_percent_signs_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = capsys.readouterr().out
    assert "%%" not in text and "IOPS gain %" in " ".join(text.split())


# --- DiskSpd cells in a journal ------------------------------------------------------------------------

def _engine_journal(run_dir: Path, engine: str | None, side: str) -> Path:
    """The sample run's cell records, measured by ``engine`` (``raw.engine``; None: an older record)."""
    lines = SAMPLE_RUN.joinpath("journal.ndjson").read_text().splitlines()
    out = []
    for line in lines:
        rec = json.loads(line)
        rec["run_id"] = f"{rec.get('run_id')}-{side}"
        if rec.get("type") == "cell":  # as the runner writes it: the record's engine, and the raw output's
            rec.setdefault("raw", {})
            rec.pop("engine", None)
            if engine is None:
                rec["raw"].pop("engine", None)
            else:
                rec["raw"]["engine"] = rec["engine"] = engine
        out.append(json.dumps(rec))
    run_dir.mkdir(parents=True)
    (run_dir / "journal.ndjson").write_text("\n".join(out) + "\n")
    return run_dir


def test_diskspd_cells_in_a_journal_report_with_their_engine(tmp_path: Path) -> None:
    result = ingest([_engine_journal(tmp_path / "d", "diskspd", "d")])
    assert len(result.frame) > 0 and set(result.frame["engine"]) == {"diskspd"}
    older = ingest([_engine_journal(tmp_path / "o", None, "o")])
    assert set(older.frame["engine"]) == {"fio"}
    bad = ingest([_engine_journal(tmp_path / "x", "iometer", "x")])
    assert bad.frame.empty and "'engine' is 'iometer'" in bad.problems[0].reason
    run = _engine_journal(tmp_path / "m", "diskspd", "m")
    recs = [json.loads(line) for line in (run / "journal.ndjson").read_text().splitlines()]
    for rec in recs:
        if rec.get("type") == "cell":
            rec["engine"] = "fio"  # the record says fio, its raw output says DiskSpd: edited
    (run / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in recs))
    mixed = ingest([run])
    assert mixed.frame.empty and "'raw.engine' is 'diskspd'" in mixed.problems[0].reason


def test_diskspd_against_fio_compares_with_the_engine_in_every_row(tmp_path: Path) -> None:
    import openpyxl

    a = _engine_journal(tmp_path / "a", "fio", "a")
    b = _engine_journal(tmp_path / "b", "diskspd", "b")
    out = tmp_path / "c.xlsx"
    assert main(["compare", str(a), str(b), "--label-a", "fio", "--label-b", "DiskSpd", "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    ws = wb["Measurements"]
    header = [c.value for c in ws[1]]
    by_side = {(r[header.index("side")], r[header.index("engine")]) for r in ws.iter_rows(min_row=2, values_only=True)}
    assert by_side == {("fio", "fio"), ("DiskSpd", "diskspd")}
    notes = " ".join(str(c.value) for row in wb["Summary"].iter_rows() for c in row if c.value)
    assert "different engines (fio: fio; DiskSpd: diskspd)" in notes
    report = tmp_path / "r.xlsx"
    assert main(["report", str(b), "-o", str(report)]) == 0
    scores = openpyxl.load_workbook(report)["Scores"]
    col = [c.value for c in scores[1]].index("Engine")
    values = [r[col] for r in scores.iter_rows(min_row=2, values_only=True)]
    assert values and set(values) == {"diskspd"}


# --- journals of another schema, or not text at all ----------------------------------------------------

def test_a_journal_of_an_unknown_schema_is_one_problem_with_the_upgrade_hint(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lines = SAMPLE_RUN.joinpath("journal.ndjson").read_text().splitlines()
    run = tmp_path / "run"
    run.mkdir()
    (run / "journal.ndjson").write_text("".join(
        json.dumps({**json.loads(line), "schema": "stormatrix/record-9"}) + "\n" for line in lines))
    result = ingest([run])
    assert len(result.problems) == 1 and len(lines) > 2
    reason = result.problems[0].reason
    assert f"{len(lines)} lines" in reason and "record-9" in reason and "upgrade stormatrix" in reason
    assert main(["report", str(run), "-o", str(tmp_path / "r.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "(1 inputs could not be read)" in err and err.count("record-9") == 1


def test_a_binary_journal_is_one_problem_not_one_per_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "journal.ndjson").write_bytes(b"\x00\x01\x02\n" * 50 + b"\xff" * 100)
    result = ingest([run])
    assert len(result.problems) == 1 and "binary data, not a journal" in result.problems[0].reason


def test_the_shared_line_reader_marks_a_torn_last_line() -> None:
    from stormatrix.core.journalfile import read_lines

    lines = list(read_lines(b'{"a": 1}\n[2]\n\nnot json\n{"b": 2}\n{"torn'))
    assert [(ln.number, ln.record, ln.error is None, ln.last) for ln in lines] == [
        (1, {"a": 1}, True, False), (2, None, True, False), (4, None, False, False), (5, {"b": 2}, True, False),
        (6, None, False, True)]


def test_cv_limit_takes_a_fraction_or_a_percentage_never_a_guess(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.commands.report import cv_limit

    assert cv_limit("0.1") == pytest.approx(0.10) and cv_limit("10%") == pytest.approx(0.10)
    assert cv_limit("150%") == pytest.approx(1.5)
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(SAMPLE_RUN), "-o", str(tmp_path / "r.xlsx"), "--cv-limit", "10"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--cv-limit" in err and "1000 %" in err and "10%" in err
    assert main(["report", str(SAMPLE_RUN), "-o", str(tmp_path / "r.xlsx"), "--cv-limit", "10%"]) == 0
