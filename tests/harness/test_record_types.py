"""One set of journal record types: named once (core.journalfile), built in one module (records.py),
read back by analysis through the same names; an executor adds only its own keys to a cell record."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stormatrix import records
from stormatrix.core.journalfile import CELL_SKIPPED, RECORD_TYPES, RESTORED, RUN
from stormatrix.core.model import Cell, DiskConfig, Workload
from stormatrix.executors.base import EXECUTOR_RECORD_KEYS, WorkloadResult
from stormatrix.window import Window
import paths

ROOT = paths.ROOT


def record_literals(folder: Path) -> list[str]:
    """``file:line`` of every dict literal whose ``"type"`` is a record type, outside records.py."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if path.name == "records.py" and path.parent.name == "harness":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant)
                            and value.value in RECORD_TYPES):
                        found.append(f"{path.relative_to(folder.parent)}:{node.lineno}")
    return found


def test_records_are_built_in_records_py_only() -> None:
    assert record_literals(ROOT / "harness") == []


def test_the_scan_finds_a_record_built_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "runner.py").write_text('rec = {"type": "restored", "run_id": "x"}\n')
    assert record_literals(tmp_path / "harness") == ["harness/runner.py:1"]


def test_every_builder_writes_a_known_type() -> None:
    cell = Cell(DiskConfig("sata", "threads", False, "none"), Workload("w", "randread", 4096, 1), 1)
    built = [records.run_record(run_id="r", matrix_path="m.toml", matrix={}, backend="qemu", side=None,
                                environment={}, original_config=None, cells=1, todo=1),
             records.skipped_record(run_id="r", cell=cell, side=None, reason="no driver", drivers={}),
             records.restored_record(run_id="r", backend="qemu")]
    assert [r.to_json()["type"] for r in built] == [RUN, CELL_SKIPPED, RESTORED]
    assert built[1].key == cell.key and "readiness" not in built[1].to_json()


def test_an_executor_sets_only_its_own_record_keys() -> None:
    WorkloadResult(engine="fio", raw="", data={}, record={"clients": [], "times": {"window_offset_s": 0.1}})
    with pytest.raises(ValueError, match="per_mib"):
        WorkloadResult(engine="fio", raw="", data={}, record={"per_mib": {}, "skew": {}})
    assert "per_mib" not in EXECUTOR_RECORD_KEYS and "host" not in EXECUTOR_RECORD_KEYS


class _Backend:
    """Only what a Window asks of a backend."""

    def window_opened(self) -> None:
        pass

    def window_closed(self) -> None:
        return None

    def scope(self) -> list[object]:
        return []

    def blockstats(self) -> None:
        return None


def test_a_window_reports_through_one_result() -> None:
    window = Window(_Backend(), lambda scope: None)  # type: ignore[arg-type]
    assert not window.result().complete  # never opened
    window.measure_started()
    window.measure_ended()
    result = window.result()
    assert result.complete and result.t_start is not None and result.seconds >= 0 and result.vms == ()
    with pytest.raises(AttributeError):
        result.host = {}  # type: ignore[misc]
