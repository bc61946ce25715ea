"""[qemu] prepare_ahead in the real guest (harness/guest/smx-mark, init; one boot under TCG): a job sent ahead
holds at its warm-up gate, with no I/O, until the host's GO; the measurement job, set up during the warm-up,
holds until the window is open; QEMU's own accounting between the window's edges is the measurement's I/O
and nothing else.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from standins.processes import qemu_processes

from stormatrix import guestimage
from stormatrix.backends.qemu.testdisks import claim_test_disks
from stormatrix.backends.qemu.vm import QemuVm, VmSpec
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.core.scope import BlockStats, GuestEndpoint
from stormatrix.executors.localagent import LocalAgentExecutor, parse_event

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


class Edges:
    """A window listener that snapshots QEMU's accounting of the test disk at every edge the executor reports."""

    def __init__(self, vm: QemuVm, drive: str) -> None:
        self.vm, self.drive = vm, drive
        self.at: dict[str, BlockStats] = {}
        self.warmup_s: float | None = None

    def job_sent(self) -> None:
        self.at["go"] = self.vm.blockstats(self.drive)

    def warmup_started(self, seconds_ago: float) -> None:
        self.warmup_s = seconds_ago

    def measure_started(self) -> None:
        # the warm-up is over and the measurement waits for its GO (sent when this returns): nothing moves
        self.at["marker"] = self.vm.blockstats(self.drive)
        time.sleep(0.5)
        self.at["open"] = self.vm.blockstats(self.drive)

    def measure_ended(self) -> None:
        self.at["end"] = self.vm.blockstats(self.drive)


def test_a_job_sent_ahead_holds_until_go_and_the_window_holds_only_measured_io(tmp_path: Path) -> None:
    image = guestimage.build()
    claim = claim_test_disks(guestimage.cache_root() / "disks", 64, 1)
    disk = DiskConfig("virtio-blk", "native", False, "none")
    vm = QemuVm(VmSpec(name="gate", disk=disk, disk_image=claim.paths[0], run_dir=tmp_path / "vm", image=image,
                       slot=0))
    ex: LocalAgentExecutor | None = None
    try:
        vm.start()
        ex = LocalAgentExecutor([GuestEndpoint("local-agent", str(vm.agent_path), connected=vm.listen_agent(
            time.monotonic() + 30), hints={"measure_job_early": True})])
        ex.wait_ready(time.monotonic() + 180)
        drive = f"drive-{disk.bus}0"
        cell = Cell(disk, Workload("w", "randread", 65536, 4, 1, rate_mib_s=16), 1)
        timing = Timing(1, 1)
        ex.prepare(cell, timing)
        while True:  # fio read the job, opened the disk and allocated: it waits at the gate
            ev = parse_event(ex.channel.readline(time.monotonic() + 60))
            if ev and ev[0] == "MARK" and ev[1][0] == "warmup-gate":
                break
        held = vm.blockstats(drive)
        time.sleep(1.5)
        edges = Edges(vm, drive)
        ex.send(cell, timing, edges)  # GO
        assert edges.at["go"] == held  # held at the gate: not one I/O before the GO
        ex.await_window(cell, edges)
        raw = ex.collect(cell).raw
    finally:
        if ex is not None:
            ex.close()
        vm.stop()
        claim.release()
    assert not qemu_processes(str(tmp_path))
    jobs = {j["jobname"]: j for j in json.loads(raw)["jobs"]}
    at = edges.at
    assert at["open"] == at["marker"]  # between the warm-up's end and the window's GO nothing moved
    warm = at["marker"].minus(at["go"]).rd_bytes
    measured = at["end"].minus(at["open"]).rd_bytes
    assert warm == jobs["warmup"]["read"]["io_bytes"] > 0
    assert measured == jobs["measure"]["read"]["io_bytes"] > 0  # the window: the measurement's I/O, all of it
    # the record's warm-up start: the guest's own warm-up length, at least its runtime, back from the marker
    assert edges.warmup_s is not None and timing.ramp_s * 0.95 <= edges.warmup_s < timing.ramp_s + 3


