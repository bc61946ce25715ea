"""Fault injection through the real runner.

Each fault must end with: a ``cell-error`` record and a log line naming the cell; the VM's original
configuration restored (and a ``restored`` record); the run going on (``on_error = "skip"``) or
stopping with one message that names the cell (``"stop"``); ``retries`` attempts, except for faults
that cannot heal by retrying (an unsafe write, a refused password, a test disk the guest cannot see).

The guest is the agent stand-in (``standins/agent.py``, the real protocol, so the real
LocalAgentExecutor is what fails); Proxmox faults use the Proxmox stand-in with the real backend;
disk full is a real ``EFBIG`` from RLIMIT_FSIZE in a child process.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from standins.agent import FAULTS_ENV, AgentFaults, AgentStandin, FakeCollector, FakeVmBackend, FakeWinRMExecutor
from standins.pve import PveStandin

from stormatrix.cli import main
from stormatrix.core.errors import StormatrixError
from stormatrix.executors.localagent import LocalAgentExecutor
from stormatrix.journal import read_journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions, RunSummary
from stormatrix.registry import spec_from_dict
import paths

HERE = paths.TESTS
CONTROLLERS = ["virtio-blk", "sata"]


def matrix(on_error: str = "skip", retries: int = 1, rw: str = "randread", **run: Any) -> dict[str, Any]:
    # grouped: the faults are aimed at the first cell in matrix order
    return {"run": {"name": "faults", "ramp_seconds": 0, "measure_seconds": 1, "on_error": on_error,
                    "retries": retries, "order": "grouped", **run},
            "matrix": {"controllers": CONTROLLERS, "aio": ["io_uring"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": rw, "bs": "4k"}]}


def first_key(raw: dict[str, Any]) -> str:
    return Runner(spec_from_dict(raw), "/nonexistent", RunOptions(progress=False)).plan().cells[0].key


# name -> (backend faults, WinRM fault, expected stage, expected error type, retried?)
FAULTS: dict[str, tuple[dict[str, Any], str, str, str, bool]] = {
    "vm-start-fails": ({"start_fails": 99}, "", "apply", "VmStartError", True),
    "guest-never-ready": ({"agent": {"never_ready": 99}}, "", "ready", "GuestNotReady", True),
    "guest-finds-no-disk": ({"agent": {"no_disk": 99}}, "", "ready", "GuestNotReady", True),
    "fio-exits-nonzero": ({"agent": {"fio_rc": 5, "fio_rc_count": 99}}, "", "run", "WorkloadFailed", True),
    "fio-prints-garbage": ({"agent": {"garbage": 99}}, "", "run", "WorkloadFailed", True),
    "result-damaged": ({"agent": {"damaged": 99}}, "", "run", "WorkloadFailed", True),
    "connection-drops-mid-command": ({"agent": {"drop_mid_command": 99}}, "", "run", "GuestDisconnected", True),
    "winrm-auth-fails": ({}, "auth", "ready", "AuthenticationFailed", False),
    "winrm-connection-drops": ({}, "drop", "run", "GuestDisconnected", True),
    # a driver that is not there will not appear after another restart: journaled once, not retried
    "winrm-test-disk-missing": ({}, "no-disk", "ready", "TestDiskMissing", False),
}


def limit_faults(faults: dict[str, Any], n: int) -> dict[str, Any]:
    """The same faults, hitting only the first ``n`` attempts (so the second cell is healthy)."""
    out: dict[str, Any] = {}
    for k, v in faults.items():
        if k == "agent":
            out["agent"] = {kk: (n if isinstance(vv, int) and vv == 99 else vv) for kk, vv in v.items()}
        else:
            out[k] = n if v == 99 else v
    return out


@pytest.fixture
def winrm_fake(use_executor: Callable[[str, str], None]) -> type[FakeWinRMExecutor]:
    use_executor("winrm", "standins.agent:FakeWinRMExecutor")
    FakeWinRMExecutor.fault, FakeWinRMExecutor.count = "", 0
    return FakeWinRMExecutor


def run_inprocess(tmp_path: Path, raw: dict[str, Any], faults: dict[str, Any]) -> tuple[Runner, FakeVmBackend, Any]:
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 1.0  # the schema's minimum is 5 s; a stand-in answers at once or never
    backend = FakeVmBackend(spec, tmp_path / "run", faults)
    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=FakeCollector))
    try:
        outcome: Any = runner.run()
    except StormatrixError as exc:
        outcome = exc
    return runner, backend, outcome


def check_common(tmp_path: Path, backend: FakeVmBackend, key: str, stage: str, etype: str, attempts: int,
                 caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    records = read_journal(tmp_path / "run" / "journal.ndjson").records
    errors = [r for r in records if r["type"] == "cell-error"]
    assert [(e["key"], e["stage"], e["error"]["type"]) for e in errors] == [(key, stage, etype)] * attempts
    assert all(e["error"]["message"] for e in errors)
    assert backend.config == FakeVmBackend.ORIGINAL and backend.restored >= 1  # the VM is put back
    assert records[-1]["type"] == "restored"
    assert backend.proc is None and backend.agent is None  # nothing left running
    assert key in caplog.text  # the log names the cell
    return records


def run_fault(name: str, on_error: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
              winrm_fake: type[FakeWinRMExecutor]) -> tuple[Any, ...]:
    """The two-cell matrix with fault ``name`` injected into its first cell under ``on_error``: the runner,
    the backend, the outcome, the failing cell's key and the journal records (after the common checks)."""
    faults, winrm_fault, stage, etype, retried = FAULTS[name]
    raw = matrix(on_error, retries=1, executor="winrm" if winrm_fault else "auto")
    attempts = 2 if retried else 1
    winrm_fake.fault, winrm_fake.count = winrm_fault, attempts
    caplog.set_level(logging.WARNING)
    runner, backend, outcome = run_inprocess(tmp_path, raw, limit_faults(faults, attempts))
    key = first_key(raw)
    if on_error == "stop":  # (checked before the journal: the outcome is what the caller sees first)
        assert isinstance(outcome, StormatrixError) and type(outcome).__name__ == etype
    return runner, outcome, key, check_common(tmp_path, backend, key, stage, etype, attempts, caplog)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_with_on_error_skip_goes_on(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                          winrm_fake: type[FakeWinRMExecutor]) -> None:
    runner, outcome, key, records = run_fault(name, "skip", tmp_path, caplog, winrm_fake)
    assert isinstance(outcome, RunSummary), outcome
    assert outcome.failed == [key] and outcome.measured == 1  # the second cell still ran
    assert [r["key"] for r in records if r["type"] == "cell"] == [runner.plan().cells[1].key]


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_with_on_error_stop_stops_naming_the_cell(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                        winrm_fake: type[FakeWinRMExecutor]) -> None:
    _, outcome, key, records = run_fault(name, "stop", tmp_path, caplog, winrm_fake)
    assert outcome.cell == key and str(outcome).startswith(f"[{key}] ")
    assert not [r for r in records if r["type"] == "cell"]  # stopped: the second cell never ran


@pytest.mark.parametrize("name", ["vm-start-fails", "fio-exits-nonzero", "connection-drops-mid-command"])
def test_a_retry_heals_a_transient_fault(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    faults, _, stage, etype, _ = FAULTS[name]
    raw = matrix("stop", retries=1)
    runner, backend, outcome = run_inprocess(tmp_path, raw, limit_faults(faults, 1))
    assert isinstance(outcome, RunSummary) and not outcome.failed and outcome.measured == 2
    records = read_journal(tmp_path / "run" / "journal.ndjson").records
    assert [(r["key"], r["stage"]) for r in records if r["type"] == "cell-error"] == [(first_key(raw), stage)]
    assert backend.config == FakeVmBackend.ORIGINAL


def test_stop_through_the_cli_prints_one_line_naming_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             use_backend: Callable[[str, str], None],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The user's view: exit 1, ``stormatrix: error: [cell] ...``, no traceback, VM restored."""
    use_backend("qemu", "standins.agent:FakeVmBackend")
    monkeypatch.setenv(FAULTS_ENV, json.dumps({"agent": {"fio_rc": 3, "fio_rc_count": 99}}))
    raw = matrix("stop", retries=0)
    m = tmp_path / "m.toml"
    m.write_text(toml(raw))
    assert main(["run", str(m), "-o", str(tmp_path / "run"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"stormatrix: error: [{first_key(raw)}] fio exited 3 in the guest" in err and "Traceback" not in err
    assert read_journal(tmp_path / "run" / "journal.ndjson").records[-1]["type"] == "restored"


def toml(raw: dict[str, Any]) -> str:
    """A tiny TOML writer for the flat matrices used here (no third-party writer on Debian 12)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    out: list[str] = []
    for section, table in raw.items():
        tables = table if isinstance(table, list) else [table]
        for t in tables:
            out.append(f"[[{section}]]" if isinstance(table, list) else f"[{section}]")
            out += [f"{k} = {value(v)}" for k, v in t.items()]
            out.append("")
    return "\n".join(out)


# --- the local agent executor on its own --------------------------------------------------------------

def test_agent_executor_names_each_guest_fault(tmp_path: Path) -> None:
    from stormatrix.backends.base import GuestEndpoint
    from stormatrix.core.errors import GuestDisconnected, GuestNotReady, WorkloadFailed
    from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
    import time

    cell = Cell(DiskConfig("virtio-blk", "io_uring", False, "none"), Workload("w", "randread", 4096, 1, 1), 1)
    cases = [("never_ready", GuestNotReady, "did not report ready"), ("no_disk", GuestNotReady, "no test disk"),
             ("fio_rc_count", WorkloadFailed, "fio exited 1"), ("garbage", WorkloadFailed, "no usable JSON"),
             ("damaged", WorkloadFailed, "SHA-256"), ("damaged_gzip", WorkloadFailed, "SHA-256"),
             ("drop_mid_command", GuestDisconnected, "closed the agent channel")]

    class Window:
        def measure_started(self) -> None: ...

        def measure_ended(self) -> None: ...

    for fault, etype, text in cases:
        sock = tmp_path / f"{fault}.sock"
        agent = AgentStandin(sock, AgentFaults(**{fault: 1}))
        ex = LocalAgentExecutor([GuestEndpoint("local-agent", str(sock))])
        try:
            with pytest.raises(etype, match=text):
                ex.wait_ready(time.monotonic() + 1.0)
                ex.run(cell, Timing(0, 1), Window())
        finally:
            ex.close()
            agent.close()


# --- Proxmox: API 500, digest conflict, failed task, through the runner -------------------------------

SECRET = "pve-fault-secret-0a1b2c3d"
VMID = 100


@pytest.fixture
def pve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[PveStandin, AgentStandin]]:
    monkeypatch.setenv("SMX_FAULT_SECRET", SECRET)
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!smx": SECRET})
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    s.add_vm(VMID, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                    "scsi1": f"{vol},aio=native,cache=none,iothread=1,size=64M", "boot": "order=scsi1",
                    "serial1": "socket"})
    with s:
        agent = AgentStandin(s.run_dir / f"{VMID}.serial1", AgentFaults())
        try:
            yield s, agent
        finally:
            agent.close()


def pve_matrix(s: PveStandin, on_error: str) -> dict[str, Any]:
    raw = matrix(on_error, retries=1, backend="proxmox", executor="local-agent")
    raw["matrix"].update(disk_slot=1, controllers=["sata", "virtio-blk"])
    raw["proxmox"] = {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": VMID, "test_disk": "scsi1",
                      "token_id": "smx", "token_secret_env": "SMX_FAULT_SECRET", "ca_file": str(s.ca_file),
                      "timeout": 20, "task_timeout": 30, "qemu_server_dir": str(s.run_dir),
                      "guest_channel": "serial1", "ready": "executor"}
    return raw


PVE_FAULTS = {
    "api-500": ("apply", "PveApiError"),
    "digest-conflict": ("apply", "ConfigConflictError"),
    "task-failure": ("apply", "TaskFailed"),
}


def inject(s: PveStandin, name: str, times: int) -> None:
    if name == "api-500":
        s.fail_request("PUT", "/config", status=500, message="unable to write config: got timeout", count=times)
    elif name == "task-failure":
        for _ in range(times):
            s.fail_next_task("qmstart", "start failed: QEMU exited with code 1")
    else:  # another tool edits the VM between our read and our write, on the next `times` writes
        for i in range(times):
            s.transient_edit("lock", "backup")


@pytest.mark.parametrize("on_error", ["skip", "stop"])
@pytest.mark.parametrize("name", sorted(PVE_FAULTS))
def test_proxmox_fault_restores_the_vm(name: str, on_error: str, pve: tuple[PveStandin, AgentStandin], tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    s, _agent = pve
    stage, etype = PVE_FAULTS[name]
    digest0, vols = s.digest(VMID), s.volumes()
    raw = pve_matrix(s, on_error)
    spec = spec_from_dict(raw)
    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False, collector_factory=FakeCollector))
    # the stand-in has no monitor; monkeypatch puts the real methods back (a del would remove them)
    monkeypatch.setattr(runner.backend_cls, "thread_roles", lambda self: {})
    monkeypatch.setattr(runner.backend_cls, "blockstats", lambda self: None)
    inject(s, name, 2)
    caplog.set_level(logging.WARNING)
    key = runner.plan().cells[0].key
    try:
        outcome: Any = runner.run()
    except StormatrixError as exc:
        outcome = exc
    records = read_journal(tmp_path / "run" / "journal.ndjson").records
    errors = [(r["key"], r["stage"], r["error"]["type"]) for r in records if r["type"] == "cell-error"]
    if on_error == "skip":
        assert isinstance(outcome, RunSummary) and outcome.failed == [key] and outcome.measured == 1
    else:
        assert isinstance(outcome, StormatrixError) and outcome.cell == key, outcome
    assert errors == [(key, stage, etype)] * 2
    assert records[-1]["type"] == "restored"
    assert key in caplog.text and SECRET not in caplog.text
    assert s.digest(VMID) == digest0 and s.volumes() >= vols and not s.destroyed
    for r in s.requests:
        assert "force" not in r["params"]
        assert not any(k.startswith("unused") for k in r["params"].get("delete", "").split(","))


# --- disk full while writing the journal ---------------------------------------------------------------

def file_size_limit(limit: int) -> Any:
    def preexec() -> None:  # in the child, before exec: no file may grow past ``limit`` bytes
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


@pytest.mark.parametrize("on_error", ["skip", "stop"])
def test_disk_full_while_journaling_stops_the_run_and_keeps_the_journal_readable(tmp_path: Path, on_error: str) -> None:
    """A real EFBIG (RLIMIT_FSIZE; Python ignores SIGXFSZ) in the middle of the second cell's record:
    the run stops whatever on_error says, exit 1 with the fix, no partial line, and a re-run
    without the limit finishes the matrix with each cell once."""
    raw = matrix(on_error, retries=1)
    raw["matrix"]["controllers"] = ["virtio-blk", "sata", "ide"]
    m = tmp_path / "m.toml"
    m.write_text(toml(raw))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)]),
           FAULTS_ENV: json.dumps({"agent": {"window_s": 1.0}})}

    def argv(run_dir: Path) -> list[str]:
        return [sys.executable, str(HERE / "standins" / "agent.py"), "run", str(m), "-o", str(run_dir), "--no-progress"]

    # learn the record sizes from a run without a limit
    sizing = subprocess.run(argv(tmp_path / "sizing"), capture_output=True, text=True, env=env, timeout=120)
    assert sizing.returncode == 0, sizing.stderr
    lines = (tmp_path / "sizing" / "journal.ndjson").read_bytes().splitlines(keepends=True)
    limit = len(lines[0]) + len(lines[1]) + len(lines[2]) // 2

    run_dir = tmp_path / "run"
    res = subprocess.run(argv(run_dir), capture_output=True, text=True, env=env, preexec_fn=file_size_limit(limit),
                         timeout=120)
    assert res.returncode == 1, res.stderr
    assert "cannot write to the journal" in res.stderr and "Free space" in res.stderr
    assert "Traceback" not in res.stderr
    data = (run_dir / "journal.ndjson").read_bytes()
    assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())
    done = [json.loads(x)["key"] for x in data.splitlines() if json.loads(x)["type"] == "cell"]
    assert len(done) == 1
    res2 = subprocess.run(argv(run_dir), capture_output=True, text=True, env=env, timeout=120)
    assert res2.returncode == 0, res2.stderr
    keys = [json.loads(x)["key"] for x in (run_dir / "journal.ndjson").read_bytes().splitlines()
            if json.loads(x)["type"] == "cell"]
    assert len(keys) == 3 and len(set(keys)) == 3


# --- two cells in flight: a failure found after the next cell's job was sent ------------------------------

def test_a_result_damaged_after_the_next_cell_started_is_journaled_for_its_own_cell_and_retried(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With a backend that hands a VM off after its window ([qemu] pipeline), the first cell's result is read
    only after the second cell's job was sent: its damage is the first cell's error, and that cell runs again."""
    caplog.set_level(logging.WARNING)
    raw = matrix("skip", retries=1)
    runner, backend, outcome = run_inprocess(tmp_path, raw, {"pipelined": True, "agent": {"damaged": 1}})
    key = first_key(raw)
    check_common(tmp_path, backend, key, "run", "WorkloadFailed", 1, caplog)
    assert backend.starts == 3 and not backend.handed  # the retry had a VM of its own; every VM is gone
    assert not outcome.failed and sorted(outcome.measured_keys) == sorted(c.key for c in runner.plan().cells)
    assert outcome.measured_keys[-1] == key  # retried after the groups
    t = runner.timeline
    second = next(k for k in outcome.measured_keys if k != key)
    assert t[second]["sent"] <= t[second]["measure_start"]


def test_on_error_stop_from_a_cell_collected_late_names_that_cell_not_the_one_in_flight(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    raw = matrix("stop", retries=0)
    runner, backend, outcome = run_inprocess(tmp_path, raw, {"pipelined": True, "agent": {"damaged": 1}})
    key = first_key(raw)
    assert isinstance(outcome, StormatrixError) and outcome.cell == key and "SHA-256" in str(outcome)
    check_common(tmp_path, backend, key, "run", "WorkloadFailed", 1, caplog)  # no error blamed on the second cell
    assert not backend.handed and runner.summary.measured == 0
