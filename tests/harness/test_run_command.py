"""``stormatrix run``'s closing lines: what the runner's summary holds is said, cells skipped for a
missing virtio-win driver included (they are neither measured nor failed, so the first line alone would
hide them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormatrix.cli import main

REASON_BLK = "virtio-blk needs the virtio-win driver viostor: the guest's driver store has no viostor"
REASON_SCSI = "virtio-scsi-single needs the virtio-win driver vioscsi: the guest's driver store has no vioscsi"


def run_with(summary: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``stormatrix run`` whose run (stood in) returns a summary of 2 measured cells with ``summary``'s fields."""
    import stormatrix.commands.run as run_cmd
    from stormatrix.runsource import RunSummary

    done = RunSummary(run_dir=str(tmp_path / "r"), run_id="r1", cells=2, order="rounds", seed=1,
                      measured_keys=["a/rep1", "b/rep1"], **summary)
    monkeypatch.setattr(run_cmd, "execute", lambda *a, **k: done)
    code = main(["run", str(tmp_path / "m.toml"), "-o", str(tmp_path / "r"), "--no-progress"])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_cells_skipped_for_a_missing_driver_are_counted_by_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    skipped = [("virtio-blk/a/rep1", REASON_BLK), ("virtio-blk/b/rep1", REASON_BLK),
               ("virtio-scsi-single/a/rep1", REASON_SCSI)]
    code, text = run_with({"driver_skipped": skipped}, tmp_path, monkeypatch, capsys)
    assert code == 0  # a skipped cell is not a failed one
    assert "2 cells measured" in text and "3 cells skipped" in text and "virtio-win driver" in text
    assert f"2 x {REASON_BLK}" in text and f"1 x {REASON_SCSI}" in text and "cell-skipped" in text


def test_no_skip_line_without_skipped_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    for summary in ({}, {"driver_skipped": []}):
        code, text = run_with(summary, tmp_path, monkeypatch, capsys)
        assert code == 0 and "2 cells measured" in text and "skipped" not in text
