"""``report`` lists the cells a run skipped (``cell-skipped`` records: the Windows guest lacked the
controller's virtio-win driver, docs/journal.md) with their keys and reason, on the Summary sheet and on
stderr, so a controller is never just missing from the workbook. Built by hand from the sample journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from stormatrix.analysis.read.journalrows import read_journal_rows
from stormatrix.cli import main
import paths

SAMPLE = paths.DATA / "journal" / "sample_run" / "journal.ndjson"
REASON = ("virtio-blk needs the virtio-win driver viostor: the guest's driver store has no viostor. Install "
          "virtio-win in the guest")


def skipped(key: str, reason: str = REASON) -> str:
    return json.dumps({"schema": "stormatrix/record-1", "type": "cell-skipped", "run_id": "r", "key": key,
                       "cell": {}, "side": None, "time": "2026-11-22T03:00:00+00:00", "reason": reason,
                       "drivers": {"missing": ["viostor"]}})


def journal(tmp_path: Path, extra: list[str]) -> tuple[Path, list[str]]:
    lines = SAMPLE.read_text().splitlines()
    measured = [json.loads(x)["key"] for x in lines if json.loads(x)["type"] == "cell"]
    run = tmp_path / "run"
    run.mkdir()
    (run / "journal.ndjson").write_text("\n".join(lines + extra) + "\n")
    return run, measured


def test_skipped_cells_are_named_with_their_reason_and_measured_ones_are_not(tmp_path: Path) -> None:
    keys = ["virtio-blk/aio=native/iothread=0/cache=none/w/rep9",
            "virtio-blk/aio=threads/iothread=0/cache=none/w/rep9"]
    first = next(json.loads(x)["key"] for x in SAMPLE.read_text().splitlines() if json.loads(x)["type"] == "cell")
    run, measured = journal(tmp_path, [skipped(keys[0]), skipped(keys[1]), skipped(keys[1]),  # a resume asked again
                                       skipped(first, "sata needs nothing: stale")])
    rows, _, problems, notes = read_journal_rows(run / "journal.ndjson")
    assert not problems and len(rows) == len(measured)  # nothing measured is lost or added
    listed = [n for n in notes if "cell-skipped" in n]
    assert len(listed) == 1  # one reason, one note
    assert "2 cells skipped, not measured" in listed[0] and REASON in listed[0]
    assert all(k in listed[0] for k in keys) and "stale" not in " ".join(notes)  # measured later: not listed


def test_report_workbook_lists_skipped_cells_on_the_summary_sheet(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    key = "virtio-blk/aio=native/iothread=0/cache=none/w/rep9"
    run, measured = journal(tmp_path, [skipped(key)])
    out = tmp_path / "r.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    assert key in capsys.readouterr().err
    ws = load_workbook(out)["Summary"]
    text = " ".join(str(c.value) for row in ws.iter_rows() for c in row if c.value is not None)
    assert key in text and REASON in text and "1 cell skipped, not measured" in text
    assert load_workbook(out)["Measurements"].max_row - 1 == len(measured)


def test_no_skip_note_for_a_journal_without_skipped_cells(tmp_path: Path) -> None:
    run, _ = journal(tmp_path, [])
    assert not [n for n in read_journal_rows(run / "journal.ndjson")[3] if "skipped" in n]
