"""Boot-ahead on the local QEMU backend, for real: the next configuration's VM boots during the
current cell's warm-up, is paused while the measurement window is open, and is taken over by the
next cell; a retry in between keeps it; closing the backend leaves no QEMU behind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from standins.processes import qemu_processes

from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.commands.run import execute
from stormatrix.executors.localagent import LocalAgentExecutor
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.core.model import DiskConfig
from stormatrix.registry import load_spec

from qemumatrix import small_matrix

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def matrix_text(boot_ahead: bool, controllers: tuple[str, ...] = ("virtio-blk", "sata", "virtio-scsi-single")) -> str:
    return small_matrix("ahead", list(controllers), ramp_seconds=3,
                        qemu_extra=f"boot_ahead = {'true' if boot_ahead else 'false'}\n")


def cells(run_dir: Path) -> list[dict]:
    lines = (run_dir / "journal.ndjson").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "cell"]


def test_next_vm_boots_ahead_and_is_paused_in_the_window(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(matrix_text(True))
    run_dir = tmp_path / "run"
    summary = execute(matrix, run_dir, progress=False)
    assert summary.measured == 3 and not summary.failed
    recs = cells(run_dir)
    assert [r["cell"]["disk"]["controller"] for r in recs] == ["virtio-blk", "sata", "virtio-scsi-single"]
    # the first VM booted the ordinary way; the others had booted during the cell before
    assert [r["times"]["booted_ahead"] for r in recs] == [False, True, True]
    # the test-disk images take turns (QEMU write-locks an image)
    for r in recs[:2]:  # a VM was booting ahead during these cells' windows: paused, and it says so
        ov = r["overlap"]
        assert ov["paused_in_window"] is True
        # paused: a small fraction of one CPU over the window (a booting TCG guest takes a whole one)
        assert ov["cpu_s_in_window"] is not None and ov["cpu_s_in_window"] < 0.5 * r["host"]["window_s"], ov
        assert ov["vm"] != r["vm"]
    assert recs[2]["overlap"] is None  # nothing after the last cell
    for r in recs:  # a VM taken over after a pause measures like any other
        # (how close it comes to its 16 MiB/s rate depends on the host's load: a benchmark's matter)
        assert r["fio"]["total"]["io_bytes"] > 0 and r["fio"].get("error", 0) == 0, r["fio"]["total"]
        clock = r["clock"]  # the guest's time inside the host's window; the margin depends on the host's load
        assert r["crosscheck"]["flag"] is False and 0 < clock["fio_runtime_s"] <= clock["host_window_s"] * 1.01, \
            (r["crosscheck"], clock)
        assert r["host"]["cpu_total"] > 0
    header = json.loads((run_dir / "journal.ndjson").read_text().splitlines()[0])
    assert header["environment"]["boot_ahead"] is True
    # [qemu] boot_ahead_depth = 2 (the default): the VM under test, two booting ahead and (overlap) the one
    # before sending its result, one image each
    assert header["environment"]["boot_ahead_depth"] == 2 and len(header["environment"]["test_disks"]) == 4
    assert len({r["vm"] for r in recs}) == 3
    assert not qemu_processes(str(run_dir))


def test_with_overlap_the_next_vm_boots_at_once_and_no_teardown_runs_in_a_window(
        tmp_path: Path) -> None:
    """[qemu] overlap (the default): the previous cell's VM stops in the background and the VM booting ahead
    starts as soon as the current one is taken over; before each window opens, every VM being stopped is gone
    (and the VM booting ahead is paused: the test above)."""
    matrix = tmp_path / "m.toml"
    matrix.write_text(matrix_text(True))
    spec = load_spec(matrix)
    stopped: list[Any] = []
    windows: list[tuple[int, list[bool]]] = []
    ahead_at: list[tuple[float, DiskConfig]] = []

    class Watched(QemuBackend):
        def _stop_in_background(self, vm: Any) -> None:
            stopped.append(vm)
            super()._stop_in_background(vm)

        def boot_ahead(self, disk: DiskConfig) -> None:
            ahead_at.append((time.monotonic(), disk))
            super().boot_ahead(disk)

        def window_opened(self) -> None:
            super().window_opened()
            windows.append((len(self._stopping), [vm.alive() for vm in stopped]))

    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=Watched(spec, tmp_path / "run")))
    summary = runner.run()
    assert summary.measured == 3 and not summary.failed
    assert len(stopped) >= 2  # the first two cells' VMs were stopped off the critical path
    assert len(windows) == 3 and all(n == 0 and not any(alive) for n, alive in windows), windows
    marks = [runner.timeline[k] for k in summary.measured_keys]
    # the next two configurations boot ahead ([qemu] boot_ahead_depth = 2): where a VM started cold (the first)
    # the next one at once, the one after once the job is sent; the second cell asks once its job is sent
    # (the last configuration's VM is already booting: nothing more starts)
    assert [d.controller for _, d in ahead_at] == ["sata", "virtio-scsi-single", "virtio-scsi-single"]
    assert marks[0]["applied"] <= ahead_at[0][0] <= marks[0]["ready"]
    assert marks[0]["sent"] <= ahead_at[1][0] <= marks[0]["measure_start"]
    assert marks[1]["sent"] <= ahead_at[2][0] <= marks[1]["measure_start"]
    # two cells in flight ([qemu] pipeline): each cell's result is collected, journaled and its VM stopped
    # after the next cell's job was sent, and before that cell's window opens
    for m, nxt in zip(marks, marks[1:]):
        assert nxt["sent"] <= m["result"] <= m["journaled"] <= m["stopped"] <= nxt["measure_start"], (m, nxt)
    assert [r["times"]["booted_ahead"] for r in cells(tmp_path / "run")] == [False, True, True]
    assert not qemu_processes(str(tmp_path / "run"))


def test_boot_ahead_off_runs_one_vm_at_a_time(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(matrix_text(False, ("virtio-blk", "sata")))
    run_dir = tmp_path / "run"
    execute(matrix, run_dir, progress=False)
    recs = cells(run_dir)
    assert [r["times"]["booted_ahead"] for r in recs] == [False, False]
    assert all(r["overlap"] is None for r in recs)
    assert {r["vm"] for r in recs} == {"stormatrix-vm"}


def test_a_retry_keeps_the_vm_booted_ahead_for_its_turn(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(matrix_text(True))
    backend = QemuBackend(load_spec(matrix), tmp_path / "run")
    a = DiskConfig("virtio-blk", "native", False, "none")
    b = DiskConfig("sata", "native", False, "none")
    try:
        backend.prepare()
        backend.apply(a)
        first = backend.vm
        backend.boot_ahead(b)
        ahead = backend.ahead
        assert ahead is not None and ahead.alive() and ahead.spec.disk_image != first.spec.disk_image
        backend.window_opened()  # paused: its CPU time stands still while the window is open
        cpu0, t0 = ahead.cpu_seconds(), time.monotonic()
        time.sleep(1.0)
        info = backend.window_closed()
        elapsed = time.monotonic() - t0
        # paused: a small fraction of one CPU over the window (a booting TCG guest takes a whole one)
        assert info is not None and info["paused_in_window"] and info["cpu_s_in_window"] < 0.5 * elapsed
        assert ahead.cpu_seconds() - cpu0 < 0.5 * elapsed
        # the cell failed and is retried: A again, on an image B's VM does not hold; B's VM stays booting
        backend.apply(a)
        assert backend.ahead is ahead and ahead.alive() and not backend.booted_ahead
        assert backend.vm is not first and backend.vm.spec.disk_image != ahead.spec.disk_image
        # B's turn: taken over, already booted or booting, and the guest answers on the early connection
        backend.apply(b)
        assert backend.vm is ahead and backend.booted_ahead and backend.ahead is None
        executor = LocalAgentExecutor(backend.endpoints())
        facts = executor.wait_ready(time.monotonic() + 90)
        assert facts["disk"] == "/dev/sda" and facts["fio_prestarted"] == "yes"
        executor.close()
    finally:
        backend.restore()
        backend.close()
    assert not qemu_processes(str(tmp_path / "run"))
