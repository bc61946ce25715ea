"""Resuming a run.

Which keys a resumed run may change is declared by each section's owner (``Section.may_change_on_resume``:
the spec for ``[run]``, each backend's and executor's package for its own section), and the runner's
resume check reads those declarations, for every registered section alike.

The runner's resume reads the journal as the record types (core/recordtypes.py, ``resume_record``):
a run directory written by an older stormatrix resumes, its lines left byte for byte as they were, and a
record with a wrong-typed key refuses the resume before anything is appended, naming the line and the key; a
suite side resumes only on its side and guests, read from the run record's typed suite part (SuiteInfo).

Through the real runner with the in-process stand-ins (the agent stand-in as the guest, the VM stand-in
that keeps its config), as tests/harness/test_run_order.py does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.core.errors import DataFileError, MatrixError
from stormatrix.journal import Journal
from stormatrix.registry import sections, spec_from_dict, suite_from_dict
from stormatrix.resume import run_differences
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.schema import Field, Section
from stormatrix.spec import MATRIX_SECTION, RUN_SECTION
from stormatrix.suiterun import check_resumable

# --- which keys a resume may change -----------------------------------------------------------------------

ALL = {"run": RUN_SECTION, **sections()}


def test_a_section_may_declare_only_its_own_keys() -> None:
    with pytest.raises(ValueError, match=r"\[toy\]: may_change_on_resume names hots, which are not its keys"):
        Section("toy", {"host": Field(str, "")}, may_change_on_resume=frozenset({"hots"}))


@pytest.mark.parametrize("name", sorted(n for n, s in ALL.items() if s.may_change_on_resume))
def test_a_declared_key_may_change_and_any_other_may_not(name: str) -> None:
    section = ALL[name]
    for key in sorted(section.may_change_on_resume):
        assert run_differences({name: {key: "before"}}, {name: {key: "after"}}) == [], key
    fixed = sorted(set(section.fields) - section.may_change_on_resume)
    assert fixed, f"[{name}] declares every key resumable: then no key says what a cell measures"
    for key in fixed:
        found = run_differences({name: {key: "before"}}, {name: {key: "after"}})
        assert found == [f'[{name}] {key}: was "before", now "after"'], key


def test_the_matrix_axes_are_never_resumable() -> None:
    assert not MATRIX_SECTION.may_change_on_resume
    assert run_differences({"matrix": {"aio": ["native"]}}, {"matrix": {"aio": ["threads"]}}) != []


def test_the_owners_declare_how_their_machines_are_reached() -> None:
    """What the resume rules said before they moved to the owners (docs/journal.md, Resuming)."""
    assert {"repeats", "retries", "seed", "guest_drivers"} <= RUN_SECTION.may_change_on_resume
    assert {"boot_ahead", "overlap"} <= ALL["qemu"].may_change_on_resume and "vcpus" not in ALL["qemu"].may_change_on_resume
    assert {"host", "token_secret_env", "timeout"} <= ALL["proxmox"].may_change_on_resume
    assert {"server", "password_env", "call_timeout"} <= ALL["vmware"].may_change_on_resume
    assert {"host", "password_env", "operation_timeout_seconds"} <= ALL["winrm"].may_change_on_resume
    assert "vmid" not in ALL["proxmox"].may_change_on_resume and "name" not in RUN_SECTION.may_change_on_resume


# --- the journal read as the record types ----------------------------------------------------------------


def _matrix() -> dict[str, Any]:
    return {"run": {"name": "older", "ramp_seconds": 0, "measure_seconds": 1, "repeats": 2, "order": "grouped"},
            "matrix": {"controllers": ["sata", "virtio-blk"], "aio": ["threads"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def _run(run_dir: Path) -> dict[str, Any]:
    spec = spec_from_dict(_matrix())
    spec.run["boot_timeout_seconds"] = 1.0
    return Runner(spec, run_dir, RunOptions(progress=False, backend=FakeVmBackend(spec, run_dir, {}),
                                            collector_factory=FakeCollector)).run()


def _older(line: dict[str, Any]) -> dict[str, Any]:
    """A record as an older stormatrix wrote it: a run record without ``order``/``seed``/``cells``/``todo``
    (those runs were grouped), a cell record without ``engine``, ``raw.engine`` and
    ``host.cpu_total_source`` (fio's, worked out when read)."""
    out = {k: v for k, v in line.items() if k not in ("order", "seed", "cells", "todo", "engine")}
    if out["type"] == "cell":
        out["raw"] = {k: v for k, v in out["raw"].items() if k != "engine"}
        out["host"] = {k: v for k, v in out["host"].items() if k != "cpu_total_source"}
    return out


def _journal_lines(run_dir: Path) -> list[dict[str, Any]]:
    return Journal(run_dir).records()


def test_a_run_directory_of_an_older_format_resumes_where_it_stopped(tmp_path: Path) -> None:
    whole = _run(tmp_path / "whole")
    keys = whole.measured_keys
    assert len(keys) == 4
    lines = _journal_lines(tmp_path / "whole")
    cells = [r for r in lines if r["type"] == "cell"]
    older = [_older(next(r for r in lines if r["type"] == "run")), *(_older(c) for c in cells[:2])]
    run_dir = tmp_path / "older"
    run_dir.mkdir()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in older)
    (run_dir / "journal.ndjson").write_text(text)
    assert all("engine" not in r and "engine" not in r["raw"] for r in older[1:])

    summary = _run(run_dir)
    assert summary.already_done_keys == keys[:2] and summary.measured_keys == keys[2:]
    after = (run_dir / "journal.ndjson").read_text()
    assert after.startswith(text)  # the older lines stay as they were
    new = [json.loads(line) for line in after[len(text):].splitlines()]
    assert [r["type"] for r in new] == ["run", "cell", "cell", "restored"]
    assert new[0]["order"] == "grouped" and new[0]["todo"] == 2 and new[0]["cells"] == 4
    assert Journal(run_dir).done_keys() == set(keys)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A whole run's run record and first cell record: the start of a journal to resume."""
    run_dir = tmp_path_factory.mktemp("whole")
    _run(run_dir)
    return _journal_lines(run_dir)[:2]


@pytest.mark.parametrize("line, key, value", [(1, "seed", "7"), (1, "guests", "g1"), (2, "cell", "sata"),
                                              (2, "key", ["x"]), (2, "clients", {"name": "g1"})])
def test_a_wrong_typed_key_refuses_the_resume_naming_the_line_and_key(tmp_path: Path, interrupted: list[Any],
                                                                       line: int, key: str, value: Any) -> None:
    run_dir = tmp_path / "run"
    lines = json.loads(json.dumps(interrupted))
    lines[line - 1][key] = value
    run_dir.mkdir()
    (run_dir / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in lines))
    before = (run_dir / "journal.ndjson").read_bytes()
    with pytest.raises(DataFileError) as err:
        _run(run_dir)
    assert err.value.path == f"{run_dir / 'journal.ndjson'}:{line}" and f"'{key}'" in err.value.problem
    assert "unedited journal" in err.value.fix
    assert (run_dir / "journal.ndjson").read_bytes() == before  # nothing appended


SUITE = {"run": {"name": "typed"}, "suite": {
    "side": "A", "block_sizes": ["4k"], "queue_depths": [1], "ramp_seconds": 0.5, "measure_seconds": 1.0,
    "filename": "target.dat", "size": "16m", "guests": ["g1=127.0.0.1:8765", "g2=127.0.0.1:8766"]}}


def _suite_journal(run_dir: Path, **run: Any) -> Path:
    """A suite side's journal as ``suite run`` writes its run record (the suite's keys beside the record's)."""
    line = {"schema": "stormatrix/record-1", "type": "run", "run_id": "s1", "started": "2026-11-28T00:00:00+00:00",
            "matrix_path": "s.toml", "matrix": SUITE, "backend": None, "side": "A", "environment": {},
            "original_config": None, "cells": 1, "todo": 1, "order": "rounds", "seed": 3, "suite": "typed",
            "executor": "fio-server", "points": 1,
            "guests": [{"name": "g1", "host": "127.0.0.1", "port": 8765}, {"name": "g2", "host": "127.0.0.1", "port": 8766}],
            "host_collector": {"mode": "none", "detail": "given by address"}, "vms": None, **run}
    run_dir.mkdir()
    (run_dir / "journal.ndjson").write_text(json.dumps(line) + "\n")
    return run_dir


def test_a_suite_side_resumes_only_on_its_side_and_guests_read_from_the_typed_run_record(tmp_path: Path) -> None:
    suite = suite_from_dict(SUITE, "s.toml")
    check_resumable(Journal(_suite_journal(tmp_path / "same")), suite)  # the same side and guests: resumes
    with pytest.raises(MatrixError, match="holds side 'B', not 'A'"):
        check_resumable(Journal(_suite_journal(tmp_path / "side", side="B")), suite)
    with pytest.raises(MatrixError, match="was measured on guests g1, g3"):
        check_resumable(Journal(_suite_journal(tmp_path / "guests", guests=[{"name": "g1"}, {"name": "g3"}])), suite)
    bad = _suite_journal(tmp_path / "bad", guests=[{"name": "g1", "port": "8765"}])
    with pytest.raises(DataFileError) as err:
        check_resumable(Journal(bad), suite)
    assert err.value.path == f"{bad / 'journal.ndjson'}:1" and "'guests[0].port' is '8765'" in err.value.problem
