"""The fio job the local agent sends (executors/localagent.fio_job): where its markers hold fio, as
harness/guest/smx-mark implements them (a job sent ahead holds at its warm-up; the measurement job set up during
the warm-up when it has one clone)."""

from __future__ import annotations

import configparser

import pytest

from stormatrix.core.model import Timing, Workload
from stormatrix.executors.localagent import fio_job

W = Workload("w", "randread", 65536, 8, 1, rate_mib_s=32)


def sections(job: str) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None)
    parser.read_string(job)
    return {s: dict(parser[s]) for s in parser.sections()}


def test_the_default_job_warms_up_then_measures_after_a_stonewall() -> None:
    job = sections(fio_job(W, Timing(3, 8), "@DISK@"))
    assert list(job) == ["global", "warmup", "measure"]
    assert job["warmup"] == {"runtime": "3", "exec_prerun": "/bin/smx-mark warmup-start"}
    assert "stonewall" in job["measure"] and job["measure"]["exec_prerun"] == "/bin/smx-mark measure-start"
    assert job["measure"]["exec_postrun"] == "/bin/smx-mark measure-end"


def test_a_job_sent_ahead_holds_at_its_warm_up_gate() -> None:
    job = sections(fio_job(W, Timing(3, 8), "@DISK@", gate=True))
    assert job["warmup"]["exec_prerun"] == "/bin/smx-mark warmup-gate"
    assert job["measure"]["exec_prerun"] == "/bin/smx-mark measure-start"  # the window's own gate stays


def test_the_measurement_job_set_up_early_waits_for_the_warm_ups_end_instead_of_a_stonewall() -> None:
    job = sections(fio_job(W, Timing(3, 8), "@DISK@", gate=True, measure_early=True))
    assert job["warmup"]["exec_postrun"] == "/bin/smx-mark warmup-end"
    assert "stonewall" not in job["measure"] and "new_group" in job["measure"]  # its own figures
    assert job["measure"]["exec_prerun"] == "/bin/smx-mark measure-next"


@pytest.mark.parametrize("workload, timing, markers", [
    (Workload("w", "randread", 65536, 8, 2), Timing(3, 8), True),  # clones: the hand-over is one to one
    (W, Timing(0, 8), True),  # no warm-up to wait for
    (W, Timing(3, 8), False),  # no markers (fio-server)
])
def test_otherwise_the_measurement_keeps_its_stonewall(workload: Workload, timing: Timing, markers: bool) -> None:
    job = sections(fio_job(workload, timing, "@DISK@", markers=markers, measure_early=True))
    assert "stonewall" in job["measure"]
    assert "exec_postrun" not in job.get("warmup", {})
