"""The runner takes a matrix, a run directory and one typed :class:`RunOptions`; the command line gives
only the side and whether progress is shown, and everything else a suite or a test hands in travels in
the same value."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

import pytest

from stormatrix.commands import run as run_command
from stormatrix.core.errors import GuestNotReady
from stormatrix.registry import spec_from_dict
from stormatrix.runner import RunOptions, RunPolicy, Runner

RAW = {"run": {"name": "opts"}, "matrix": {"controllers": ["virtio-blk"], "aio": ["io_uring"], "cache": ["none"]},
       "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def test_the_runner_takes_three_arguments() -> None:
    assert list(inspect.signature(Runner).parameters) == ["spec", "run_dir", "options"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().progress = False  # type: ignore[misc]


def test_defaults_are_a_matrix_run(tmp_path: Path) -> None:
    runner = Runner(spec_from_dict(RAW), tmp_path / "run")
    assert runner.side is None and runner.show_progress and runner.stream is sys.stderr
    assert runner.backend is None and runner.backend_cls.name == "qemu"
    assert runner.run_extra == {} and runner.cell_extra == {} and runner.policy == RunPolicy()
    assert [c.workload.name for c in runner.plan().cells] == ["w"]


def test_what_a_caller_hands_in_is_what_the_run_uses(tmp_path: Path) -> None:
    extra = {"suite": "s"}
    options = RunOptions(side="A", progress=False, run_extra=extra, cell_extra={"suite": "s"},
                         policy=RunPolicy(stop_on=(GuestNotReady,)), overhead_s=1.5)
    runner = Runner(spec_from_dict(RAW), tmp_path / "run", options)
    assert (runner.side, runner.show_progress, runner.overhead_s) == ("A", False, 1.5)
    assert runner.policy.stop_on == (GuestNotReady,)
    runner.run_extra["more"] = 1  # the runner's own copy: the caller's value is not written into
    assert extra == {"suite": "s"} and options.run_extra == {"suite": "s"}


def test_whether_a_journal_is_a_suites_is_the_backends_to_say() -> None:
    """The runner asks the backend (a suite's guests that run already), not what the run record adds."""
    from stormatrix.registry import BACKENDS, backend_class
    from stormatrix.suiterun import SuiteBackend

    assert SuiteBackend.runs_suite
    assert not any(backend_class(name).runs_suite for name in BACKENDS)


def test_the_command_line_gives_the_side_and_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[RunOptions] = []

    def record(self: Runner) -> dict[str, object]:
        seen.append(self.options)
        return {}

    monkeypatch.setattr(Runner, "run", record)
    matrix = tmp_path / "m.toml"
    matrix.write_text('[run]\nname = "opts"\n[matrix]\ncontrollers = ["virtio-blk"]\naio = ["io_uring"]\n'
                      'cache = ["none"]\n[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    run_command.execute(matrix, tmp_path / "run", side="B", progress=False, hold=False)
    assert seen == [RunOptions(side="B", progress=False)]
