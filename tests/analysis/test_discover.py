"""Finding the inputs (analysis/read/discover.py): the same measurement on both sides of a compare is named,
folders are walked following linked folders once, and a loop, a path past PATH_MAX and a folder that may
not be listed are each named, the rest still read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clirun import cli
import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"


FIO_FILE = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
FIO_WRITE = DATA / "fio" / "fio3_randwrite_bs64k_qd4.json"


def report(paths: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    return cli(["report", *map(str, paths), "-o", str(tmp_path / "r.xlsx"), *extra], capsys)


# --- compare A B sharing a measurement -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["symlink", "hardlink", "copy"])
def test_compare_names_a_measurement_found_on_both_sides(tmp_path: Path, how: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil_copy = FIO_FILE.read_bytes()
    (tmp_path / "a" / "r.json").write_bytes(shutil_copy)
    (tmp_path / "b" / "w.json").write_bytes(FIO_WRITE.read_bytes())
    twin = tmp_path / "b" / "r-again.json"
    {"symlink": lambda: twin.symlink_to(tmp_path / "a" / "r.json"),
     "hardlink": lambda: os.link(tmp_path / "a" / "r.json", twin),
     "copy": lambda: twin.write_bytes(shutil_copy)}[how]()
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "c.xlsx")]
    code, text = cli(argv, capsys)
    assert code == 0 and "on both sides" in text and str(twin) in text
    code, text = cli(argv + ["--strict"], capsys)
    assert code == 2 and "on both sides" in text and "Fix:" in text


def test_compare_of_two_different_measurements_says_nothing_of_sharing(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    sides = DATA / "fio" / "compare"
    code, text = cli(["compare", str(sides / "A"), str(sides / "B"), "-o", str(tmp_path / "c.xlsx"), "--strict"],
                     capsys)
    assert code == 0 and "both sides" not in text, text


# --- the walk reports what it cannot read ------------------------------------------------------------------

def deep_folder(parent: Path, depth: int = 22) -> None:
    """A folder whose path is longer than PATH_MAX (4096), holding one result file, made with dir fds."""
    fd = os.open(parent, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open("deep.json", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(f, FIO_WRITE.read_bytes())
        os.close(f)
    finally:
        os.close(fd)


def test_the_walk_follows_a_linked_folder_once_and_names_a_loop(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.json").write_bytes(FIO_FILE.read_bytes())
    top = tmp_path / "top"
    top.mkdir()
    (top / "w.json").write_bytes(FIO_WRITE.read_bytes())
    (top / "linked").symlink_to(tmp_path / "real")
    (top / "again").symlink_to(tmp_path / "real")
    (top / "loop").symlink_to(top)
    from stormatrix.analysis.read.ingest import ingest

    data = ingest([top])
    assert len(data.frame) == 2  # w.json, and a.json once (through the first link)
    said = " ".join(data.notes)
    assert "loop" in said and "again" in said and "already read" in said


def test_the_walk_names_a_folder_past_the_path_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_bytes(FIO_FILE.read_bytes())
    deep_folder(tmp_path / "in")
    code, text = report([tmp_path / "in"], tmp_path, capsys)
    assert code == 0 and "more than this system allows" in text and len(text) < 3000
    code, text = report([tmp_path / "in"], tmp_path, capsys, "--strict")
    assert code == 2 and "more than this system allows" in text
    import shutil as sh

    for _ in range(3):  # (rmtree cannot reach past PATH_MAX by path: remove the chain bottom-up by fd)
        sh.rmtree(tmp_path / "in", ignore_errors=True)


def test_the_walk_names_a_folder_it_may_not_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may list any folder")
    (tmp_path / "in" / "locked").mkdir(parents=True)
    (tmp_path / "in" / "a.json").write_bytes(FIO_FILE.read_bytes())
    (tmp_path / "in" / "locked").chmod(0)
    try:
        code, text = report([tmp_path / "in"], tmp_path, capsys)
    finally:
        (tmp_path / "in" / "locked").chmod(0o755)
    assert code == 0 and "locked" in text and "cannot be listed" in text
