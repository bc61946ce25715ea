"""The malformed-input corpus (tests/data/malformed, built by make_corpus.py): every file gives one clear
message naming it, never a traceback; the CLI exits 0 with warnings, or 2 under --strict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
import paths

DATA = paths.DATA
CORPUS = DATA / "malformed"
CASES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.parent != CORPUS and not p.name.endswith(".perf.csv"))


def test_corpus_is_large_enough():
    assert len(CASES) >= 50


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_malformed_input_gives_one_clear_message(path: Path):
    result = ingest([path])
    assert len(result.problems) == 1
    problem = result.problems[0]
    named = path.with_name(path.stem + ".perf.csv") if path.parent.name == "perf" else path
    assert problem.source.startswith(str(named))
    assert problem.reason and "Traceback" not in problem.reason and len(problem.reason) < 400
    if path.name == "journal_garbage_line.ndjson":
        assert len(result.frame) == 2          # the good lines around the bad one are kept
    else:
        assert result.frame.empty


def test_cli_skips_malformed_files_with_warnings_and_strict_fails(tmp_path: Path, capsys):
    inputs = tmp_path / "in"
    shutil.copytree(CORPUS / "fio", inputs)
    shutil.copy(DATA / "fio" / "fio3_randread_bs4k_qd1.json", inputs / "good.json")
    out = tmp_path / "x.xlsx"
    assert main(["report", str(inputs), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert out.exists()
    assert "Traceback" not in err
    for case in (CORPUS / "fio").iterdir():
        assert f"{inputs / case.name}:" in err, case.name
    assert main(["report", str(inputs), "-o", str(tmp_path / "y.xlsx"), "--strict"]) == 2
    err = capsys.readouterr().err
    assert "cannot be used under --strict" in err and "Traceback" not in err
    assert not (tmp_path / "y.xlsx").exists()


def test_cli_exits_2_when_nothing_is_usable(tmp_path: Path, capsys):
    assert main(["report", str(CORPUS / "diskspd"), "-o", str(tmp_path / "z.xlsx")]) == 2
    assert "no usable results" in capsys.readouterr().err


@pytest.mark.parametrize("edit, named", [
    (lambda d: d["jobs"][0]["job options"].update(bs="4q"), "bs='4q'"),
    (lambda d: d["jobs"][0]["job options"].update(rw="frobnicate"), "rw='frobnicate'"),
    (lambda d: d.update({"fio version": 3}), "'fio version' is 3"),
    (lambda d: d["jobs"][0].update(usr_cpu="lots"), "usr_cpu is 'lots'"),
    (lambda d: d["jobs"][0].update(ctx=-5), "ctx is -5"),
    (lambda d: d["jobs"][0].update(sys_cpu=float("nan")), "sys_cpu is nan"),
], ids=["bs", "rw", "version", "usr_cpu", "ctx", "sys_cpu-nan"])
def test_an_edited_field_fio_never_writes_is_named_not_replaced(tmp_path: Path, edit, named: str):
    """fio refuses to run bs=4q and never writes a text CPU figure or a negative count: such a file was edited
    or damaged, and the value is named, not replaced from the file name nor dropped to null."""
    import json

    doc = json.loads((DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text())
    edit(doc)
    path = tmp_path / "read-rand-bs4096-qd1.json"   # the name could fill bs/rw: it must not hide the damage
    path.write_text(json.dumps(doc))
    result = ingest([path])
    assert result.frame.empty and len(result.problems) == 1
    assert result.problems[0].source == str(path) and named in result.problems[0].reason
