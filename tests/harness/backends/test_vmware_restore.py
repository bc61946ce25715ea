"""``stormatrix restore RUN_DIR`` for vmware runs: the real CLI and runner drive the vmware backend, which
runs the real StormatrixVMware module on the PowerShell engine against the fake PowerCLI
(test_vmware_pwsh.FakeVCenter); the harness is SIGKILLed mid-run, and a later ``stormatrix restore`` must
put the lab's VM and host tuning back exactly as they were, from the journal alone; the vCenter password
appears in no output.

The guest side is a stand-in executor (defined in the harness script) that opens the measurement
window and hangs, so the crash lands where a real one would: inside a cell, VM reconfigured.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from stormatrix.cli import main
from stormatrix.journal import Journal

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_vmware_pwsh import PASSWORD, PWSH, FakeVCenter  # noqa: E402
import paths

Lab = FakeVCenter

TESTS = paths.TESTS
MATRIX = textwrap.dedent("""
    [run]
    name = "esx-crash"
    backend = "vmware"
    ramp_seconds = 0
    measure_seconds = 10
    boot_timeout_seconds = 60

    [matrix]
    controllers = ["pvscsi", "nvme"]

    [[workload]]
    name = "r"
    rw = "randread"
    bs = "4k"

    [vmware]
    server = "vc01.lab"
    pwsh = "{pwsh}"
    stats_wait_seconds = 0
    vm = "bench01"
    test_disk = "Hard disk 2"
    esx_host = "esx01.lab"
    device = "naa.600a"
    sched_num_req_outstanding = 1024
    latency_threshold_ms = 10
    guest_host = "10.0.0.5"
    guest_port = 8765
""")

HARNESS = textwrap.dedent("""
    import sys, time
    from stormatrix import registry
    from stormatrix.executors.base import GuestExecutor

    class HangingExecutor(GuestExecutor):
        '''The guest: ready at once, opens the measurement window, then never finishes.'''

        def wait_ready(self, deadline):
            return {"disk": "/dev/sdb", "signature": "none"}

        def run(self, cell, timing, window):
            window.measure_started()
            print("measuring", flush=True)
            time.sleep(600)

    registry.EXECUTORS["fio-server"] = "__main__:HangingExecutor"
    from stormatrix.cli import main
    sys.exit(main(["-vv", "run", sys.argv[1], "-o", sys.argv[2], "--no-progress"]))
""")


def vm_state(lab: Lab) -> tuple[Any, ...]:
    return lab.layout(), lab.devices()


def run_and_kill(lab: Lab, tmp_path: Path, when: str) -> tuple[Path, str]:
    """Start ``stormatrix run`` in a child, SIGKILL it at ``when``; return the run dir and its output."""
    matrix = tmp_path / "esx.toml"
    matrix.write_text(MATRIX.replace("{pwsh}", PWSH))
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    run_dir = tmp_path / "run"
    if when == "mid-move":
        state = lab.read()
        state["hang"] = "Start-VM"  # the first cell's change: VM off, disk moved to a new controller
        lab.write(state)
    proc = subprocess.Popen([sys.executable, str(script), str(matrix), str(run_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ})
    hung = None
    try:
        deadline = time.monotonic() + 120
        if when == "measuring":
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "measuring"
        else:
            while (hung := lab.read().get("hung_pid")) is None:
                assert proc.poll() is None and time.monotonic() < deadline, "the harness never reached the move"
                time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if hung:
            try:
                os.kill(hung, signal.SIGKILL)  # the pwsh the harness was waiting for dies with the workstation
            except ProcessLookupError:
                pass
        out, err = proc.communicate()
    return run_dir, out + err


@pytest.mark.parametrize("when", ["measuring", "mid-move"])
def test_sigkill_mid_run_then_stormatrix_restore(when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path, monkeypatch)
    before = vm_state(lab)
    assert before[1] == {"naa.600a": ("32", "0 milliseconds")}
    run_dir, child_output = run_and_kill(lab, tmp_path, when)

    # the crash left the VM changed, and the journal holds what it was
    layout, devices = vm_state(lab)
    assert layout != before[0] and devices == {"naa.600a": ("1024", "10 milliseconds")}
    if when == "mid-move":
        assert lab.vm()["powerState"] == "PoweredOff"
    records = Journal(run_dir).records()
    (run,) = [r for r in records if r["type"] == "run"]
    assert not [r for r in records if r["type"] == "restored"]
    original = run["original_config"]
    assert original["kind"] == "vmware" and original["layout"]["Controller"] == \
        {"Key": 1001, "Name": "SCSI controller 1", "Type": "LsiLogicSAS", "Bus": 1}
    assert [c["Key"] for c in original["layout"]["Controllers"]] == [1000, 1001]
    assert original["tuning"]["SchedNumReqOutstanding"] == 32

    caplog.set_level(logging.DEBUG)
    capsys.readouterr()
    n = len(lab.cmdlets())
    assert main(["restore", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "VM 'bench01' (Hard disk 2) on vc01.lab restored to its original configuration" in out
    assert vm_state(lab) == before
    restore = lab.cmdlets()[n:]  # what restore did: the disk back, the added controller gone, on, esxcli
    assert "Set-HardDisk" in restore and "ReconfigVM" in restore
    assert [c for c in restore if c.startswith("esxcli") and c.endswith(" set")][-2:] == \
        ["esxcli storage core device set", "esxcli storage core device latencythreshold set"]
    assert restore.index("Set-HardDisk") < restore.index("ReconfigVM") < restore.index("Start-VM")

    assert main(["restore", str(run_dir)]) == 0
    assert "nothing to restore" in capsys.readouterr().out
    last = Journal(run_dir).records()[-1]
    assert last["type"] == "restored" and last["vm"] == "bench01" and last["by"] == "stormatrix restore"

    everything = [child_output, out, caplog.text]
    everything += [p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()]
    assert not [t for t in everything if PASSWORD in t]


def test_restore_of_a_damaged_vmware_journal_is_exit_2_naming_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path, monkeypatch)
    run_dir, _ = run_and_kill(lab, tmp_path, "measuring")
    path = run_dir / "journal.ndjson"
    lines = path.read_text().splitlines()
    run = json.loads(lines[0])
    assert run["type"] == "run"
    del run["original_config"]["layout"]["Disk"]["Filename"]
    path.write_text("\n".join([json.dumps(run)] + lines[1:]) + "\n")
    calls = len(lab.read()["calls"])
    assert main(["restore", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stormatrix: error: ") and "Traceback" not in err
    assert "journal.ndjson: run " in err and "original_config.layout.Disk.Filename is None, not a string" in err
    assert "Fix: " in err
    assert len(lab.read()["calls"]) == calls, "nothing was sent to vSphere"


def test_restore_without_the_password_in_the_environment_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path, monkeypatch)
    run_dir, _ = run_and_kill(lab, tmp_path, "measuring")
    monkeypatch.delenv("STORMATRIX_VSPHERE_PASSWORD")
    assert main(["restore", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "STORMATRIX_VSPHERE_PASSWORD" in err and "not set" in err and "Traceback" not in err
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", PASSWORD)
    assert main(["restore", str(run_dir)]) == 0
