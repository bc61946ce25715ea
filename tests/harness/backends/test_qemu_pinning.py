"""``[qemu] pin_threads`` (under ``[host] scope = "process"``; scope "cpus" is test_qemu_cpuset.py's): while a measurement window is open, the real QEMU's vCPU thread runs on one set of
host CPUs and everything else of QEMU (main loop, iothreads, aio workers) and every thread of the harness
on another; afterwards each thread has its own affinity back — also when the cell failed. Checked in
``/proc/<pid>/task/<tid>/status`` (``Cpus_allowed_list``): relations between sets, no timings, no
assumption about how many CPUs this machine has beyond the two pinning needs (else the QEMU tests skip).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterator

import pytest
from affinity import affinities, allowed, own_back, tasks

from stormatrix.backends.base import ROLE_VCPU, format_cpuset
from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.backends.qemu.pinning import plan_pinning
from stormatrix.backends.qemu.testdisks import ensure_test_disk
from stormatrix.commands.run import execute
from stormatrix.core.errors import MatrixError
from stormatrix.core.model import DiskConfig
from stormatrix.window import Window
from stormatrix.registry import spec_from_dict

USABLE = sorted(os.sched_getaffinity(0))
TWO = pytest.mark.skipif(len(USABLE) < 2, reason="pinning needs two usable CPUs")
VCPU, OTHER = [USABLE[-1]], USABLE[:-1]


# --- the setting -------------------------------------------------------------------------------------------

def raw_spec(**qemu: object) -> dict:
    return {"run": {"backend": "qemu", "ramp_seconds": 1, "measure_seconds": 2, "retries": 0},
            "matrix": {"controllers": ["sata"], "aio": ["native"], "cache": ["none"]},
            "workload": [{"name": "rr", "rw": "randread", "bs": "64k", "iodepth": 4, "rate_mib_s": 8}],
            "qemu": {"disk_size_mib": 64, "boot_ahead": False, **qemu}, "host": {"scope": "process"}}


@pytest.mark.parametrize("value, problem", [
    ("1/1", "is in both sets"), ("3-1/0", "range goes backwards"), ("yes", "is not auto, on, off"),
    ("1,x/0", "is not a CPU list"),
])
def test_a_bad_cpu_set_is_exit_2_naming_the_key(value: str, problem: str) -> None:
    with pytest.raises(MatrixError) as exc:
        spec_from_dict(raw_spec(pin_threads=value))
    assert exc.value.exit_code == 2 and "[qemu] pin_threads" in str(exc.value) and problem in str(exc.value)


def test_cpus_the_host_does_not_offer_are_exit_2_with_the_usable_ones() -> None:
    with pytest.raises(MatrixError, match=r"\[qemu\] pin_threads: '9/0' names CPU 9.*usable: 0-1.*\"1/0\"") as exc:
        plan_pinning("9/0", "m.toml", [0, 1])
    assert exc.value.exit_code == 2
    with pytest.raises(MatrixError, match="needs two host CPUs"):
        plan_pinning("on", "m.toml", [0])


def test_auto_pins_where_there_are_two_cpus_and_says_why_not_elsewhere() -> None:
    plan, _ = plan_pinning("auto", "m", [0, 1, 2, 3])
    assert plan is not None and plan.vcpu_cpus == (3,) and plan.other_cpus == (0, 1, 2)
    assert plan_pinning("auto", "m", [5]) == (None, "one usable CPU (5): nothing to separate")
    assert plan_pinning("off", "m", [0, 1])[0] is None
    plan, _ = plan_pinning("2-3/0-1", "m", [0, 1, 2, 3])
    assert plan is not None and (plan.vcpu_cpus, plan.other_cpus) == ((2, 3), (0, 1))


# --- the real QEMU ---------------------------------------------------------------------------------------

def own_disk(tmp_path: Path) -> str:
    """A test disk of this test's own: the cache's shared image may be write-locked by another run's QEMU."""
    return str(ensure_test_disk(tmp_path / "test.raw", 16))


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[QemuBackend]:
    spec = spec_from_dict(raw_spec(pin_threads=f"{format_cpuset(VCPU)}/{format_cpuset(OTHER)}",
                                   disk_path=own_disk(tmp_path)))
    b = QemuBackend(spec, tmp_path)
    b.prepare()
    b.apply(DiskConfig("virtio-blk", "threads", True, "none"))
    try:
        yield b
    finally:
        b.close()


def check_pinned(b: QemuBackend) -> None:
    assert b.vm is not None
    roles = b.vm.thread_roles()
    vcpus = [t for t, r in roles.items() if r == ROLE_VCPU]
    assert vcpus, roles
    for tid in tasks(b.vm.pid):
        assert allowed(b.vm.pid, tid) == (VCPU if tid in vcpus else OTHER), (tid, roles.get(tid))
    for tid in tasks(os.getpid()):  # the harness, every thread of it, is off the vCPU's CPU
        assert allowed(os.getpid(), tid) == OTHER, tid


@pytest.mark.qemu
@TWO
def test_the_window_pins_qemu_and_the_harness_and_puts_everything_back(backend: QemuBackend) -> None:
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)  # a second harness thread, like the executor's
    helper.start()
    try:
        assert backend.vm is not None
        qemu_before, own_before = affinities(backend.vm.pid), affinities(os.getpid())
        backend.window_opened()
        check_pinned(backend)
        placement = backend.placement()
        assert placement["pinned"] is True and placement["roles"][ROLE_VCPU]["cpus"] == [format_cpuset(VCPU)]
        assert placement["roles"]["iothread"]["cpus"] == [format_cpuset(OTHER)]  # virtio-blk with an iothread
        assert placement["roles"]["main-loop"]["cpus"] == [format_cpuset(OTHER)]
        assert backend.window_closed() is None  # nothing paused: no overlap to report
        assert affinities(backend.vm.pid) == qemu_before and own_back(own_before)
        assert backend.placement()["pinned"] is False
    finally:
        stop.set()
        helper.join()


@pytest.mark.qemu
@TWO
def test_a_failed_cell_still_gets_its_affinity_back(backend: QemuBackend) -> None:
    assert backend.vm is not None
    own_before, qemu_before = affinities(os.getpid()), affinities(backend.vm.pid)
    # the runner's window for a cell whose workload then fails: it aborts the window
    window = Window(backend, backend.collector_factory)
    window.measure_started()
    assert window.error is None, window.error
    check_pinned(backend)
    window.abort()
    assert own_back(own_before) and affinities(backend.vm.pid) == qemu_before
    # a failure that never reaches the window's end: the backend's stop (the runner's finally) puts it back
    backend.window_opened()
    assert allowed(os.getpid(), os.getpid()) == OTHER
    backend.stop()
    assert own_back(own_before)


@pytest.mark.qemu
def test_every_record_says_where_the_threads_ran(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text("\n".join([
        "[run]", "ramp_seconds = 1", "measure_seconds = 2", "retries = 0",
        "[matrix]", 'controllers = ["sata"]', 'aio = ["native"]', 'cache = ["none"]',
        "[[workload]]", 'name = "rr"', 'rw = "randread"', 'bs = "64k"', "iodepth = 4", "rate_mib_s = 8",
        "[qemu]", f'disk_path = "{own_disk(tmp_path)}"', "[host]", 'scope = "process"']) + "\n")
    own_before = affinities(os.getpid())
    summary = execute(matrix, tmp_path / "run", progress=False)
    assert summary.measured == 1 and not summary.failed
    lines = [json.loads(x) for x in (tmp_path / "run" / "journal.ndjson").read_text().splitlines()]
    (rec,) = [r for r in lines if r["type"] == "cell"]
    placement = rec["host"]["placement"]
    if len(USABLE) < 2:
        assert placement["pinned"] is False and "one usable CPU" in placement["reason"]
        return
    assert placement["pinned"] is True
    assert placement["roles"][ROLE_VCPU]["cpus"] == [format_cpuset(VCPU)]
    others = {c for role, e in placement["roles"].items() if role != ROLE_VCPU for c in e["cpus"]}
    assert others == {format_cpuset(OTHER)}
    header = lines[0]
    assert header["environment"]["pin_threads"] == {"vcpu_cpus": format_cpuset(VCPU),
                                                    "other_cpus": format_cpuset(OTHER)}
    assert own_back(own_before)


@pytest.mark.qemu
@TWO
def test_a_vm_started_inside_a_pinned_window_is_not_confined_to_the_other_cpus(tmp_path: Path) -> None:
    # two images from the cache (boot-ahead needs two), of a size no other test uses, to meet no other QEMU
    spec = spec_from_dict(raw_spec(pin_threads=f"{format_cpuset(VCPU)}/{format_cpuset(OTHER)}", boot_ahead=True,
                                   disk_size_mib=40))
    b = QemuBackend(spec, tmp_path)
    try:
        b.prepare()
        b.apply(DiskConfig("sata", "native", False, "none"))
        own = allowed(os.getpid(), os.getpid())
        b.window_opened()
        assert allowed(os.getpid(), os.getpid()) == OTHER
        b.boot_ahead(DiskConfig("virtio-blk", "native", False, "none"))  # inherits the harness's pinned CPUs...
        assert b.ahead is not None
        assert {tuple(allowed(b.ahead.pid, t)) for t in tasks(b.ahead.pid)} == {tuple(own)}  # ...and gets them back
        b.window_closed()
        assert allowed(os.getpid(), os.getpid()) == own
    finally:
        b.close()


def test_plan_prints_where_the_threads_will_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``plan`` shows the backend's own notes: for the qemu backend, the placement each window will use
    (or why nothing is pinned), so a user sees it before a run."""
    from stormatrix.cli import main

    m = tmp_path / "m.toml"
    m.write_text('[run]\nname = "p"\nbackend = "qemu"\n[matrix]\ncontrollers = ["sata"]\naio = ["threads"]\n'
                 'cache = ["none"]\n[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n'
                 '[qemu]\npin_threads = "off"\n[host]\nscope = "process"\n')
    assert main(["plan", str(m)]) == 0
    assert "QEMU's threads are not pinned" in capsys.readouterr().out
