"""The journal survives kills mid-write: a torn last line is reported and cut, never glued on."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from stormatrix.core.errors import DataFileError
from stormatrix.journal import Journal, read_journal


def test_append_read_and_done_keys(tmp_path: Path) -> None:
    j = Journal(tmp_path).open()
    j.append({"type": "run", "run_id": "r"})
    j.append({"type": "cell", "key": "a"})
    j.append({"type": "cell-error", "key": "b"})
    j.append({"type": "cell", "key": "c", "value": float("nan")})
    assert j.done_keys() == {"a", "c"}
    lines = (tmp_path / "journal.ndjson").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["schema"] == "stormatrix/record-1" for x in lines)
    assert json.loads(lines[3])["value"] is None  # NaN is not JSON: stored as null


def test_torn_tail_is_discarded_with_a_message_then_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    j = Journal(tmp_path).open()
    j.append({"type": "cell", "key": "a"})
    with open(j.path, "ab") as fh:
        fh.write(b'{"type": "cell", "key": "torn", "fio": {"read"')  # killed mid-write
    with caplog.at_level(logging.WARNING):
        res = read_journal(j.path)
    assert res.torn_tail and [r["key"] for r in res.records] == ["a"]
    assert "torn last line" in caplog.text
    j2 = Journal(tmp_path).open()  # a resumed run cuts the torn line before appending
    j2.append({"type": "cell", "key": "b"})
    assert [r["key"] for r in j2.records()] == ["a", "b"]
    assert j.path.read_bytes().count(b"torn") == 0


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "journal.ndjson"
    p.write_text('{"type": "cell", "key": "a"}\nnot json\n{"type": "cell", "key": "b"}\n')
    with pytest.raises(DataFileError, match="line 2"):
        read_journal(p)
