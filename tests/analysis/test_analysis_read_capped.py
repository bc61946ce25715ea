"""Reading an input file's bytes with a size cap: whole files exactly, nothing past the cap, OSError as open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stormatrix.analysis.read.discover import read_capped
from stormatrix.core.errors import DataFileError
import paths


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 65537])
def test_a_regular_file_is_read_whole_and_exactly(tmp_path: Path, size: int):
    data = os.urandom(size)
    path = tmp_path / "f.json"
    path.write_bytes(data)
    assert read_capped(str(path), 2**20) == data


def test_a_file_at_the_cap_is_read_and_one_byte_more_is_refused(tmp_path: Path):
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 1000)
    assert read_capped(str(path), 1000) == b"x" * 1000
    path.write_bytes(b"x" * 1001)
    with pytest.raises(DataFileError, match="larger than"):
        read_capped(str(path), 1000)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_device_is_refused_once_past_the_cap():
    with pytest.raises(DataFileError, match="larger than"):
        read_capped("/dev/zero", 2**20)


def test_a_missing_file_or_a_directory_raise_oserror_as_open_does(tmp_path: Path):
    for path in (tmp_path / "missing.json", tmp_path):
        with pytest.raises(OSError) as got:
            read_capped(str(path), 2**20)
        with pytest.raises(OSError) as expected:
            with open(path, "rb") as fh:
                fh.read()
        assert got.value.strerror == expected.value.strerror


def test_a_link_loop_inside_a_run_folder_is_named_not_a_crash(tmp_path: Path) -> None:
    """A link that points at itself (ELOOP) among the results: the good file is read, the loop is a problem
    naming it, and the walk does not stop."""
    import shutil

    from stormatrix.analysis.read.ingest import ingest

    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json", folder / "good.json")
    (folder / "loop.json").symlink_to(folder / "loop.json")
    (folder / "sub").symlink_to(folder / "sub")
    result = ingest([folder])
    assert len(result.frame) == 1
    assert [p.source for p in result.problems] == [str(folder / "loop.json")]
