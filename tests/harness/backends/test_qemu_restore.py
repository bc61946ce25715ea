"""[qemu] restore: a configuration's VM started from a saved state of the same VM, booted and ready.

Unit level: which states may load where (the key), a state cut short. With real QEMU (few boots): a saved
state restored for a whole run (the first cell too), the records saying so with sane figures; a damaged
state deleted with a warning and the VM booted instead.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from standins.processes import qemu_processes

from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.backends.qemu.state import StateCache
from stormatrix.commands.run import execute
from stormatrix.core.model import DiskConfig
from stormatrix.guestimage import GuestImage
from stormatrix.registry import load_spec

from qemumatrix import small_matrix


def backend_for(tmp_path: Path, qemu_extra: str = "restore = true\n", name: str = "m") -> QemuBackend:
    matrix = tmp_path / f"{name}.toml"
    matrix.write_text(small_matrix("restore", ["virtio-blk"], aio="native", ramp_seconds=1, measure_seconds=2,
                                   qemu_extra=qemu_extra))
    return QemuBackend(load_spec(matrix), tmp_path / f"run-{name}")


def key_of(tmp_path: Path, disk: DiskConfig, *, index: int = 0, opts: dict | None = None,
           name: str = "m", image_id: str = "img1", qemu: str = "7.2") -> str:
    """The state key the backend gives ``disk``'s VM (a stand-in image: the key reads its paths and id only)."""
    backend = backend_for(tmp_path, name=name)
    backend.opts.update(opts or {})
    backend.image = GuestImage(root=tmp_path, kernel=tmp_path / "vmlinux", initrd=tmp_path / "initrd.cpio",
                               kernel_release="6.1", image_id=image_id, module_order=(), module_deps={})
    backend.disk_paths = [tmp_path / f"disk-{name}-{i}.raw" for i in range(3)]
    backend._binary = {"path": "/usr/bin/qemu-system-x86_64", "version": qemu}
    return backend.state_key(backend.vm_spec(disk, index))[0]


VB = DiskConfig("virtio-blk", "native", False, "none")


def test_a_state_serves_every_aio_and_iothread_of_the_same_devices(tmp_path: Path) -> None:
    """Measured with QEMU 7.2 under TCG: a state loads (and the guest runs fio) across aio and iothread."""
    base = key_of(tmp_path, VB)
    assert key_of(tmp_path, replace(VB, aio="threads")) == base
    assert key_of(tmp_path, replace(VB, aio="io_uring", iothread=True)) == base
    single = DiskConfig("virtio-scsi-single", "native", False, "none")
    assert key_of(tmp_path, replace(single, iothread=True)) == key_of(tmp_path, single)
    # nor do the run's own paths count: another run folder, VM name, test-disk image
    assert key_of(tmp_path, VB, index=1, name="other") == base


@pytest.mark.parametrize("what, other", [
    ("controller", {"disk": DiskConfig("sata", "native", False, "none")}),
    ("another SCSI controller", {"disk": DiskConfig("virtio-scsi-pci", "native", False, "none")}),
    ("cache (the guest sees the write cache)", {"disk": replace(VB, cache="writethrough")}),
    ("memory", {"opts": {"memory_mib": 1024}}),
    ("vCPUs", {"opts": {"vcpus": 2}}),
    ("firmware", {"opts": {"firmware": "seabios"}}),
    ("disk size", {"opts": {"disk_size_mib": 128}}),
    ("QEMU version", {"qemu": "8.0"}),
    ("guest image", {"image_id": "img2"}),
])
def test_a_state_saved_for_one_device_set_is_never_loaded_for_another(tmp_path: Path, what: str,
                                                                      other: dict) -> None:
    disk = other.pop("disk", VB)
    assert key_of(tmp_path, disk, name="other", **other) != key_of(tmp_path, VB), what


def test_a_state_cut_short_is_deleted_with_a_warning_before_qemu_reads_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = StateCache(tmp_path / "states")
    staged = cache.staging("k1")
    staged.write_bytes(b"QEVM" + bytes(4096))
    cache.commit("k1", staged, {"argv": []}, 0.1)
    assert cache.lookup("k1") == cache.path("k1")
    with open(cache.path("k1"), "r+b") as fh:
        fh.truncate(1000)
    with caplog.at_level(logging.WARNING):
        assert cache.lookup("k1") is None
    assert "1000 bytes, and 4100 were saved" in caplog.text and "boots instead" in caplog.text
    assert not cache.path("k1").exists() and not list((tmp_path / "states").iterdir())
    assert cache.lookup("k2") is None  # none saved: nothing said


def test_the_least_recently_used_states_go_beyond_the_limit(tmp_path: Path) -> None:
    cache = StateCache(tmp_path / "states")
    for i in range(4):
        staged = cache.staging(f"k{i}")
        staged.write_bytes(bytes(10))
        cache.commit(f"k{i}", staged, {}, 0.1)
        os.utime(tmp_path / "states" / f"k{i}.json", (1000 + i, 1000 + i))
    assert cache.lookup("k0") is not None  # used now: kept
    cache.prune(keep=2)
    assert sorted(p.name for p in (tmp_path / "states").iterdir()) == ["k0.json", "k0.state", "k3.json", "k3.state"]


def cells(run_dir: Path) -> list[dict]:
    lines = (run_dir / "journal.ndjson").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "cell"]


@pytest.mark.qemu
@pytest.mark.slow
def test_a_saved_state_is_restored_for_every_cell_and_a_damaged_one_boots_instead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    states = tmp_path / "states"
    monkeypatch.setattr(QemuBackend, "states_root", staticmethod(lambda: states))
    # a booted VM saves its state once it is ready (outside any window)
    backend = backend_for(tmp_path)
    backend.prepare()
    try:
        vm = backend._start_vm(VB)
        backend.aheads.append(vm)
        t0 = time.monotonic()
        backend._finish_prep(vm, cancel=False)
        print(f"boot and save: {time.monotonic() - t0:.1f} s")
        assert vm.how.get("saved") and vm.alive()
        key = vm.how["saved"]
        assert backend.states is not None and backend.states.lookup(key) is not None
        # saved and running on: its READY is still there for the executor
        assert vm.agent is not None and b"@@SMX READY" in vm.agent.recv(4096)
    finally:
        backend.close()

    # a run whose two configurations (aio native, threads) share that state: both VMs restored, the first too
    matrix = tmp_path / "run.toml"
    matrix.write_text(small_matrix("restore", ["virtio-blk"], aio="native\", \"threads", ramp_seconds=1,
                                   measure_seconds=1, qemu_extra="restore = true\n"))
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    summary = execute(matrix, run_dir, progress=False)
    print(f"run: {time.monotonic() - t0:.1f} s")
    assert summary.measured == 2 and not summary.failed
    recs = cells(run_dir)
    assert [r["times"]["vm_start"]["how"] for r in recs] == ["restore", "restore"]
    assert {r["times"]["vm_start"]["state"] for r in recs} == {key}
    assert [r["cell"]["disk"]["aio"] for r in recs] == ["native", "threads"]
    for r in recs:  # a restored guest measures like a booted one
        assert r["fio"]["total"]["io_bytes"] > 0 and r["fio"].get("error", 0) == 0, r["fio"]["total"]
        assert r["crosscheck"]["flag"] is False, r["crosscheck"]
        clock = r["clock"]  # fio's runtime (guest clock) inside the host's window
        assert 0 < clock["fio_runtime_s"] <= clock["host_window_s"] * 1.01, clock
        assert r["guest"]["disk"] == "/dev/vda" and r["guest"]["signature"] == "none"
        # the guest's wall clock is the host's again (it stood still in the state since the save)
        started = datetime.fromisoformat(r["times"]["measure_start"]).timestamp()
        assert abs(json.loads(r["raw"]["output"])["timestamp"] - started) < 30
    header = json.loads((run_dir / "journal.ndjson").read_text().splitlines()[0])
    assert header["environment"]["restore"] == {"states": str(states)}

    # damaged in place (same size): QEMU refuses it; deleted with a warning, and the VM boots
    path = states / f"{key}.state"
    with open(path, "r+b") as fh:
        fh.write(b"\xff" * 64)
    backend = backend_for(tmp_path, name="again")
    backend.prepare()
    try:
        with caplog.at_level(logging.WARNING):
            vm = backend.vm = backend._start_vm(VB)
            backend._finish_prep(vm)
        assert vm.how["how"] == "boot" and "failed" in vm.how["note"], vm.how
        assert vm.alive() and not path.exists()
        assert "is not used and is deleted" in caplog.text
    finally:
        backend.close()
    assert not qemu_processes(str(tmp_path))


def test_the_users_own_disk_is_never_restored_onto(tmp_path: Path) -> None:
    """[qemu] disk_path: the guest must probe that disk as it is (partitions too), so its VM always boots."""
    disk = tmp_path / "own.raw"
    disk.write_bytes(bytes(2**20))
    assert QemuBackend.restores(backend_for(tmp_path).spec)
    own = backend_for(tmp_path, qemu_extra=f'restore = true\ndisk_path = "{disk}"\n', name="own")
    assert not QemuBackend.restores(own.spec)
    assert not any("saved booted states" in n for n in QemuBackend.plan_notes(own.spec))
