"""The runner takes a source (what the run is of), a run directory and one typed :class:`RunOptions`; the
command line gives only the side and whether progress is shown. A matrix and a suite are both sources
(:class:`MatrixSource`, :class:`~stormatrix.suiterun.SuiteSource`) that give the runner the same
:class:`~stormatrix.core.settings.RunSettings`; the runner has no suite special case."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
from pathlib import Path

import paths
import pytest

from stormatrix.commands import run as run_command
from stormatrix.core.errors import GuestDisconnected, GuestNotReady
from stormatrix.core.settings import RunSettings
from stormatrix.registry import spec_from_dict, suite_from_dict
from stormatrix.runner import Runner
from stormatrix.runsource import MatrixSource, RunOptions, RunPolicy, RunSummary
from stormatrix.suiteguests import AddressGuests
from stormatrix.suiterun import SuiteSource

RAW = {"run": {"name": "opts"}, "matrix": {"controllers": ["virtio-blk"], "aio": ["io_uring"], "cache": ["none"]},
       "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}
SUITE = {"run": {"name": "opts", "retries": 2}, "suite": {
    "side": "A", "block_sizes": ["4k"], "queue_depths": [1, 2], "ramp_seconds": 0.5, "measure_seconds": 1.0,
    "filename": "target.dat", "size": "16m", "guests": ["g1=127.0.0.1:8765"]}}


def test_the_runner_takes_three_arguments() -> None:
    assert list(inspect.signature(Runner).parameters) == ["source", "run_dir", "options"]
    assert [f.name for f in dataclasses.fields(RunOptions)] == ["side", "progress", "stream", "backend",
                                                                 "collector_factory", "executor_factory"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().progress = False  # type: ignore[misc]


def test_defaults_are_a_matrix_run(tmp_path: Path) -> None:
    runner = Runner(spec_from_dict(RAW), tmp_path / "run")
    assert isinstance(runner.source, MatrixSource)
    assert runner.side is None and runner.show_progress and runner.stream is sys.stderr
    assert runner.backend is None and runner.backend_cls.name == "qemu"
    assert runner.policy == RunPolicy() and runner.source.cell_fields() == {}
    assert [c.workload.name for c in runner.plan().cells] == ["w"]


def test_a_suite_is_a_source_with_the_same_settings(tmp_path: Path) -> None:
    """The suite's settings are a RunSettings (not a matrix made up for it), its failure policy and records
    its own; its backend is the side's guests."""
    suite = suite_from_dict(SUITE, "s.toml")
    guests = AddressGuests(suite.settings(), suite.guests)
    source = SuiteSource(suite, guests, tmp_path, fio="fio")
    runner = Runner(source, tmp_path / "run", RunOptions(side="A", progress=False))
    assert type(runner.settings) is RunSettings
    assert runner.settings.run["executor"] == "fio-server" and runner.settings.run["retries"] == 2
    assert runner.settings.timing.measure_s == 1.0 and runner.settings.name == suite.name
    assert runner.policy.stop_on == (GuestDisconnected, GuestNotReady)
    assert [c.key for c in runner.plan().cells] == [p.key for p in suite.points()]
    assert source.make_backend(tmp_path) is guests and source.cell_fields() == {"suite": suite.name}
    fields = source.run_fields(guests)
    assert fields["suite"] == suite.name and fields["guests"] == [{"name": "g1", "host": "127.0.0.1", "port": 8765}]
    assert fields["host_collector"]["mode"] == "none" and fields["vms"] is None and "storage" not in fields


def test_the_run_loop_has_no_suite_special_case() -> None:
    """No name or string in the runner's code (docstrings aside) speaks of a suite: what a suite adds comes
    from its source (SuiteSource), and whether a journal is a suite's from the journal format (RunRecord.kind)."""
    tree = ast.parse((paths.ROOT / "harness" / "runner.py").read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    words = [(getattr(n, "lineno", 0), w) for n in ast.walk(tree) for w in (
        [n.id] if isinstance(n, ast.Name) else [n.attr] if isinstance(n, ast.Attribute) else [n.arg]
        if isinstance(n, ast.arg) else [n.value] if isinstance(n, ast.Constant) and isinstance(n.value, str)
        and id(n) not in docstrings else [])]
    assert [(line, w) for line, w in words if "suite" in w.lower()] == []


def test_the_command_line_gives_the_side_and_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[RunOptions] = []

    def record(self: Runner) -> RunSummary:
        seen.append(self.options)
        return self.summary

    monkeypatch.setattr(Runner, "run", record)
    matrix = tmp_path / "m.toml"
    matrix.write_text('[run]\nname = "opts"\n[matrix]\ncontrollers = ["virtio-blk"]\naio = ["io_uring"]\n'
                      'cache = ["none"]\n[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    run_command.execute(matrix, tmp_path / "run", side="B", progress=False, hold=False)
    assert seen == [RunOptions(side="B", progress=False)]
