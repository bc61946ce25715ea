"""The tidy frame built column by column equals pandas' generic construction of the same rows.

The reference below is the obvious way to type a list of row dicts (``DataFrame.from_records``, then
``to_numeric``/``astype`` per column): the frame builder transposes runs of rows with the same keys and
converts each column in one call, and must give exactly that frame, whatever the mix of readers' rows,
their order, the empty case and values that are not plain numbers.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from stormatrix.analysis.read.discover import discover
from stormatrix.analysis.read.journalrows import read_journal_rows
from stormatrix.analysis.read.plainfiles import parse_files
from stormatrix.analysis.read.tidy import COLUMNS, frame_from_rows
import paths

DATA = paths.DATA


def reference(rows: list[dict[str, Any]]) -> pd.DataFrame:
    raw = pd.DataFrame.from_records(rows, columns=list(COLUMNS)) if rows else pd.DataFrame(columns=list(COLUMNS))
    typed = {}
    for col, dtype in COLUMNS.items():
        if dtype in ("float64", "Int64"):
            typed[col] = pd.to_numeric(raw[col], errors="raise").astype(dtype)
        else:
            typed[col] = raw[col].astype(dtype)
    return pd.DataFrame(typed, index=raw.index)


def data_rows() -> list[dict[str, Any]]:
    """Rows of every readable test data file: fio (plain, client/server, fio 2), DiskSpd, journals."""
    found = discover([DATA / "fio", DATA / "diskspd", DATA / "journal"])
    rows, _ = parse_files([(kind, path, None) for kind, path in found.files if kind != "journal"])
    for kind, path in found.files:
        if kind == "journal":
            rows += read_journal_rows(path)[0]
    return rows


def with_fio_times(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``started`` filled from fio's epoch ``timestamp`` (``_epoch``) where they have none:
    ISO text, UTC, whole seconds, as the frame shows a plain fio file's time."""
    out = []
    for row in rows:
        epoch = row.get("_epoch")
        if row.get("started") is None and isinstance(epoch, (int, float)) and 0 < epoch < 4e10:
            row = {**row, "started": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(math.floor(epoch)))}
        out.append(row)
    return out


def same(rows: list[dict[str, Any]]) -> None:
    copies = [dict(r) for r in rows]
    got = frame_from_rows(copies)
    expected = reference(with_fio_times(copies))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_rows_of_every_reader_in_any_order_give_the_reference_frame():
    rows = data_rows()
    formats = {r.get("source_format") for r in rows}
    assert {"fio", "fio-client", "diskspd", "journal"} <= formats  # the mix the test is about
    same(rows)
    shuffled = list(rows)
    random.Random(3).shuffle(shuffled)  # runs of one key set broken up, interleaved with others
    same(shuffled)


def test_no_rows_give_the_typed_empty_frame():
    same([])


@pytest.mark.parametrize("values", [
    [{"io_bytes": 2**62 + 1, "bs": 4096}, {"io_bytes": 2**62 + 3, "bs": 8192}],    # exact 64-bit counts
    [{"io_bytes": 2**62 + 1}, {"io_bytes": None}, {}],                              # counts with gaps
    [{"bs": 4096.0, "iops": 1}, {"bs": None, "iops": None}],                        # whole floats, ints
    [{"iops": True, "bs": 4}, {"iops": 2.5, "bs": 8}],                              # a bool among numbers
    [{"iops": "7.5", "bs": "4096"}, {"iops": None, "bs": None}],                    # numbers in text
    [{"iothread": True, "rate_missed": None}, {"iothread": None, "rate_missed": False}],
    [{"run_id": 17, "vm": "a"}, {"run_id": None, "vm": float("nan")}],            # non-text in text columns
    [{"side": "A"}],
])
def test_unusual_values_are_typed_as_the_reference_types_them(values):
    same(values)


@pytest.mark.parametrize("values", [
    [{"iops": "fast"}],
    [{"bs": 4096.5}],
    [{"io_bytes": [1, 2]}],
])
def test_values_no_column_can_hold_fail_as_the_reference_fails(values):
    with pytest.raises((TypeError, ValueError)):
        reference(values)
    with pytest.raises((TypeError, ValueError)):
        frame_from_rows(values)
