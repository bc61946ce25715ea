"""[qemu] prepare_ahead through the real runner and the real LocalAgentExecutor, the guest an agent stand-in
(``standins/agent.py``: the guest's protocol, a job sent ahead held at its warm-up gate until a GO).

What the change guarantees: the next configuration's first job is sent to its VM booted ahead during the
cell before's warm-up (before that cell's window opens), and released only when its own cell starts (after
the window before closed); the records say whether a job was sent ahead and when each warm-up and window
started; when what runs next changes (a failure and its retry), the prepared VM is discarded and leaves
nothing running, its job never released.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.journal import read_journal
from stormatrix.progress import estimate_seconds
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict


def run(tmp_path: Path, faults: dict[str, Any], retries: int = 0) -> tuple[Runner, FakeVmBackend, dict[str, Any]]:
    raw = {"run": {"name": "ahead", "ramp_seconds": 1, "measure_seconds": 1, "retries": retries,
                   "order": "grouped"},
           "matrix": {"controllers": ["virtio-blk", "sata", "ide"], "aio": ["native"], "cache": ["none"]},
           "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 2.0
    backend = FakeVmBackend(spec, tmp_path / "run", {"pipelined": True, "ahead": True, **faults})
    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=FakeCollector))
    return runner, backend, runner.run()


def cells(tmp_path: Path) -> list[dict[str, Any]]:
    return [r for r in read_journal(tmp_path / "run" / "journal.ndjson").records if r["type"] == "cell"]


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def left_nothing(backend: FakeVmBackend) -> None:
    assert backend.proc is None and backend.agent is None and not backend.aheads and not backend.claimed
    assert not backend.handed


def test_the_next_first_job_goes_ahead_during_the_warm_up_and_is_released_when_its_cell_starts(
        tmp_path: Path) -> None:
    runner, backend, summary = run(tmp_path, {})
    assert summary.measured == 3 and not summary.failed
    recs = cells(tmp_path)
    assert [r["times"]["job_sent_ahead"] for r in recs] == [False, True, True]
    for r in recs:  # when each warm-up and window started, in order
        t = r["times"]
        assert at(t["started"]) <= at(t["warmup_start"]) <= at(t["measure_start"]) < at(t["measure_end"]), t
    t = runner.timeline
    keys = [r["key"] for r in recs]
    for before, key in zip(keys, keys[1:]):
        # sent during the warm-up before (its window not open yet), released after that window closed
        assert t[key]["sent_ahead"] < t[before]["measure_marker"], (before, key)
        assert t[key]["sent"] >= t[before]["measure_end"], (before, key)
    # three guests, each one job; the two sent ahead held at their gate until their GO
    assert [len(a.jobs) for a in backend.agents] == [1, 1, 1]
    assert "warmup-start" in backend.agents[0].jobs[0]
    assert all("exec_prerun=/bin/smx-mark warmup-gate" in a.jobs[0] for a in backend.agents[1:])
    assert [len(a.gate_waits) for a in backend.agents] == [0, 1, 1]
    assert not backend.discarded
    left_nothing(backend)


def test_a_failure_discards_the_prepared_vm_and_its_job_never_runs(tmp_path: Path) -> None:
    """The first cell's guest drops its connection in the cell's warm-up, after the second configuration's job
    went ahead: the retry of the first cell runs next, so that prepared VM is discarded (its job never released)
    and the second configuration gets a VM (and a job sent ahead) again."""
    runner, backend, summary = run(tmp_path, {"first_agent": {"drop_mid_command": 1}}, retries=1)
    assert summary.measured == 3 and not summary.failed
    plan = runner.plan().cells
    errors = [r for r in read_journal(tmp_path / "run" / "journal.ndjson").records if r["type"] == "cell-error"]
    assert [e["key"] for e in errors] == [plan[0].key]
    assert backend.discarded == [plan[1].disk.key]
    discarded = next(a for a in backend.agents if a.jobs and "warmup-gate" in a.jobs[0] and not a.gate_waits)
    assert len(discarded.jobs) == 1 and discarded.go_received == 0  # held at its gate, then stopped
    recs = {r["key"]: r for r in cells(tmp_path)}
    assert all(at(r["times"]["warmup_start"]) <= at(r["times"]["measure_start"]) for r in recs.values())
    left_nothing(backend)


def test_with_no_vm_booted_ahead_every_job_is_sent_when_its_cell_starts(tmp_path: Path) -> None:
    runner, backend, summary = run(tmp_path, {"ahead": False})
    assert summary.measured == 3
    assert [r["times"]["job_sent_ahead"] for r in cells(tmp_path)] == [False] * 3
    assert all("warmup-gate" not in a.jobs[0] for a in backend.agents)
    left_nothing(backend)


def test_the_eta_of_a_run_that_restores_its_vms_is_below_that_of_one_that_boots_them(tmp_path: Path) -> None:
    """`plan` and the progress bar count a VM start per configuration: a restored one (the first too) costs less
    than a booted one, ahead or not."""
    raw = {"run": {"name": "eta", "ramp_seconds": 3, "measure_seconds": 8},
           "matrix": {"controllers": ["virtio-blk", "sata", "ide"], "aio": ["native", "threads"], "cache": ["none"]},
           "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}
    etas = {}
    for restore in (False, True):
        spec = spec_from_dict({**raw, "qemu": {"restore": restore}})
        plan = Runner(spec, tmp_path / "r", RunOptions(progress=False)).plan()
        assert QemuBackend.restores(spec) is restore and QemuBackend.boots_ahead(spec)
        etas[restore] = estimate_seconds(plan, 3, 8, boot_ahead=True, restore=QemuBackend.restores(spec))
        active = len(plan.cells) * 11
        assert etas[restore] > active  # never less than the warm-ups and windows themselves
    assert etas[True] < etas[False]
    plan = Runner(spec_from_dict(raw), tmp_path / "r", RunOptions(progress=False)).plan()
    assert estimate_seconds(plan, 3, 8, restore=True) < estimate_seconds(plan, 3, 8)  # every VM started cold
