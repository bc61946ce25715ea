"""``[host] scope = "cpus"`` (issue 33, the qemu backend's default): QEMU's threads of the VM under test run on
the measured set (the last usable CPU by default) and the harness on the others while a window is open — under
software emulation (``accel = tcg``, these tests') every thread but the vCPUs, which are the emulated guest and
run beside the harness; the set is measured system-wide, the QEMU process's figures beside it; every affinity
is put back.

Relations that hold on any machine with two CPUs (else the QEMU tests skip): the set's figures are never
below those of the process's threads that ran on it (its window holds the process's), nothing of the harness
runs on the set, every thread's affinity is back after the window, after a failed one and after the run. A
vCPU thread is told by the name QEMU gives it (``CPU <n>/TCG``, ``-name ...,debug-threads=on``), as the
kernel shows it, not by the product's own roles. The set's CPU time is /proc's (0.01 s accounting units, read
at both edges), so it is compared with a tolerance of those units, not of the machine's speed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest
from affinity import affinities, allowed, own_back, tasks
from qemumatrix import small_matrix

from stormatrix.backends.base import format_cpuset
from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.backends.qemu.testdisks import ensure_test_disk
from stormatrix.backends.qemu.pinning import plan_placement
from stormatrix.commands.run import execute
from stormatrix.core.errors import MatrixError
from stormatrix.core.model import DiskConfig
from stormatrix.registry import backend_class, spec_from_dict
from stormatrix.window import Window
from stormatrix.spec import HostSettings

USABLE = sorted(os.sched_getaffinity(0))
TWO = pytest.mark.skipif(len(USABLE) < 2, reason="a CPU set needs two usable CPUs")
SET, REST = [USABLE[-1]], USABLE[:-1]
#: /proc/stat and /proc/uptime count in 1/100 s; the set's busy time is read from both at each edge
UNITS_S = 0.01


def raw(**host: object) -> dict:
    return {"run": {"backend": "qemu", "ramp_seconds": 1, "measure_seconds": 2, "retries": 0},
            "matrix": {"controllers": ["sata"], "aio": ["native"], "cache": ["none"]},
            "workload": [{"name": "rr", "rw": "randread", "bs": "64k", "iodepth": 4, "rate_mib_s": 8}],
            "qemu": {"disk_size_mib": 64, "boot_ahead": False}, **({"host": host} if host else {})}


# --- the settings ------------------------------------------------------------------------------------------

def test_the_qemu_backend_measures_a_cpu_set_by_default_and_others_the_process() -> None:
    qemu = backend_class("qemu")
    host = qemu.host(spec_from_dict(raw()))
    assert host.scope == ("cpus" if len(USABLE) >= 2 else "process") and not host.scope_given
    assert backend_class("proxmox").default_host_scope == "process"
    assert qemu.host(spec_from_dict(raw(scope="process"))).scope == "process"


@pytest.mark.parametrize("host, key, problem", [
    ({"cpus": "1-x"}, "[host] cpus", "is not a CPU list"),
    ({"scope": "cores"}, "[host] scope", "is not one of cpus, process"),
    ({"interfaces": ["ens 19"]}, "[host] interfaces", "is not a network interface name"),
])
def test_a_bad_host_key_is_exit_2_naming_it(host: dict, key: str, problem: str) -> None:
    with pytest.raises(MatrixError) as exc:
        spec_from_dict(raw(**host))
    assert exc.value.exit_code == 2 and key in str(exc.value) and problem in str(exc.value)


@pytest.mark.parametrize("cpus, problem, fix", [
    ([0, 1], "names CPU 9, which this host does not offer", 'cpus = "1"'),
])
def test_a_cpu_the_host_lacks_is_refused_with_the_usable_ones(cpus: list[int], problem: str, fix: str) -> None:
    with pytest.raises(MatrixError) as exc:
        plan_placement("auto", HostSettings("cpus", True, (9,)), "m.toml", cpus=cpus)
    assert "[host] cpus" in str(exc.value) and problem in str(exc.value) and fix in str(exc.value)
    assert "usable: 0-1" in str(exc.value)


def test_a_set_that_leaves_no_cpu_for_the_harness_is_refused() -> None:
    with pytest.raises(MatrixError, match=r"\[host\] cpus: '0-1' takes every usable CPU.*leave at least one"):
        plan_placement("auto", HostSettings("cpus", True, (0, 1)), "m.toml", cpus=[0, 1])
    # one CPU: an explicit scope "cpus" is refused; the default falls back to measuring the process
    with pytest.raises(MatrixError, match=r"\[host\] scope: \"cpus\" needs two host CPUs"):
        plan_placement("auto", HostSettings("cpus", True), "m.toml", cpus=[0])
    assert plan_placement("auto", HostSettings("cpus", False), "m.toml", cpus=[0])[0] is None
    plan, _ = plan_placement("auto", HostSettings("cpus", False), "m.toml", cpus=[0, 1, 2])
    assert plan is not None and plan.whole_qemu and (plan.vcpu_cpus, plan.other_cpus) == ((2,), (0, 1))


def test_under_tcg_the_vcpus_run_beside_the_harness_and_under_kvm_on_the_set() -> None:
    tcg, why = plan_placement("auto", HostSettings("cpus", False), "m.toml", cpus=[0, 1], accel="tcg")
    kvm, _ = plan_placement("auto", HostSettings("cpus", False), "m.toml", cpus=[0, 1], accel="kvm")
    assert tcg is not None and kvm is not None and "vCPUs off the set" in why
    assert [tcg.on_set(r) for r in ("vcpu", "main-loop", "iothread", "aio-worker", "other")] == [False] + [True] * 4
    assert all(kvm.on_set(r) for r in ("vcpu", "main-loop", "iothread", "aio-worker", "other"))
    assert "emulated guest" in tcg.describe() and "every QEMU thread" in kvm.describe()
    process, _ = plan_placement("1/0", HostSettings("process", True), "m.toml", cpus=[0, 1], accel="tcg")
    assert process is not None and process.on_set("vcpu") and not process.on_set("main-loop")  # pin_threads as before


@TWO
def test_pin_threads_belongs_to_scope_process_and_steering_keys_to_proxmox() -> None:
    qemu = backend_class("qemu")
    spec = spec_from_dict({**raw(), "qemu": {"pin_threads": "1/0"}})
    with pytest.raises(MatrixError, match=r'\[qemu\] pin_threads: applies under \[host\] scope = "process"'):
        qemu.host(spec)
    with pytest.raises(MatrixError, match=r"\[host\] irqs: is steered on a Proxmox node only"):
        qemu.host(spec_from_dict(raw(irqs=["nvme"])))
    with pytest.raises(MatrixError, match=r"\[host\] scope: 'cpus' cannot be measured on the vmware backend.*ESXi"):
        backend_class("vmware").host(spec_from_dict({**raw(scope="cpus"), "run": {"backend": "vmware"}}))
    with pytest.raises(MatrixError, match=r'\[host\] cpus: a CPU set is measured only with scope = "cpus"'):
        qemu.host(spec_from_dict(raw(scope="process", cpus="1")))


# --- the real QEMU ---------------------------------------------------------------------------------------------

@pytest.fixture
def backend(tmp_path: Path) -> Iterator[QemuBackend]:
    disk = str(ensure_test_disk(tmp_path / "test.raw", 16))  # this test's own: no other run's QEMU locks it
    spec = spec_from_dict({**raw(cpus=format_cpuset(SET)), "qemu": {"disk_size_mib": 64, "boot_ahead": False,
                                                                    "disk_path": disk}})
    b = QemuBackend(spec, tmp_path)
    b.prepare()
    b.apply(DiskConfig("virtio-blk", "threads", True, "none"))
    try:
        yield b
    finally:
        b.close()


def comm(pid: int, tid: int) -> str:
    return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()


def check_confined(b: QemuBackend) -> None:
    assert b.vm is not None
    vcpus = [t for t in tasks(b.vm.pid) if comm(b.vm.pid, t).startswith("CPU ")]
    assert vcpus and all(comm(b.vm.pid, t).endswith("/TCG") for t in vcpus)
    for tid in tasks(b.vm.pid):  # every QEMU thread: the vCPUs (the emulated guest) with the harness, the rest on it
        assert allowed(b.vm.pid, tid) == (REST if tid in vcpus else SET), (tid, comm(b.vm.pid, tid))
    for tid in tasks(os.getpid()):  # the harness, every thread of it, off the set
        assert allowed(os.getpid(), tid) == REST, tid


@pytest.mark.qemu
@TWO
def test_a_window_confines_qemu_to_the_set_and_measures_it_beside_the_process(backend: QemuBackend) -> None:
    assert backend.vm is not None
    qemu_before, own_before = affinities(backend.vm.pid), affinities(os.getpid())
    window = Window(backend, backend.collector_factory)
    window.measure_started()
    assert window.error is None, window.error
    check_confined(backend)
    window.measure_ended()
    assert window.error is None, window.error
    host = window.host
    assert host is not None and host["scope"] == "cpus" and host["cpus"] == format_cpuset(SET)
    assert host["process"]["scope"] == "qemu-process" and host["process"]["pid"] == backend.vm.pid
    assert host["placement"]["scope"] == "cpus" and host["leak"]["outside_cpus"] == format_cpuset(REST)
    placement = host["placement"]
    assert placement["vcpu_on_set"] is False and placement["set_cpus"] == format_cpuset(SET)
    assert placement["roles"]["vcpu"]["cpus"] == [format_cpuset(REST)]  # read back from the kernel
    assert placement["roles"]["main-loop"]["cpus"] == [format_cpuset(SET)]
    assert os.getpid() not in {t["pid"] for t in host["on_set"]}  # the harness did not run on the set
    assert affinities(backend.vm.pid) == qemu_before and own_back(own_before)


@pytest.mark.qemu
@TWO
def test_a_failed_window_puts_every_affinity_back(backend: QemuBackend) -> None:
    assert backend.vm is not None
    qemu_before, own_before = affinities(backend.vm.pid), affinities(os.getpid())
    window = Window(backend, backend.collector_factory)
    window.measure_started()
    check_confined(backend)
    window.abort()  # the cell's workload failed
    assert own_back(own_before) and affinities(backend.vm.pid) == qemu_before
    backend.window_opened()  # a failure before the window's end: the backend's stop puts it back
    backend.stop()
    assert own_back(own_before)


@pytest.mark.qemu
@pytest.mark.slow
@TWO
def test_a_run_journals_both_scopes_and_the_leak_the_set_never_below_the_process(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(small_matrix("cpuset", ["virtio-blk", "sata"], measure_seconds=4))  # boots one ahead
    own_before = affinities(os.getpid())
    summary = execute(matrix, tmp_path / "run", progress=False)
    assert summary.measured == 2 and not summary.failed, summary
    lines = [json.loads(x) for x in (tmp_path / "run" / "journal.ndjson").read_text().splitlines()]
    facts = lines[0]["environment"]["host_scope"]
    assert {k: facts[k] for k in ("scope", "cpus", "harness_cpus", "given", "vcpu_on_set", "vcpu_cpus")} == {
        "scope": "cpus", "cpus": format_cpuset(SET), "harness_cpus": format_cpuset(REST), "given": False,
        "vcpu_on_set": False, "vcpu_cpus": format_cpuset(REST)}
    assert "emulated guest" in facts["why"]
    cells = [r for r in lines if r["type"] == "cell"]
    assert len(cells) == 2
    for rec in cells:
        host, proc = rec["host"], rec["host"]["process"]
        assert host["scope"] == "cpus" and host["cpus"] == format_cpuset(SET) and proc["scope"] == "qemu-process"
        assert host["cpu_metric"] == proc["cpu_metric"]
        vcpu = proc["by_role"]["vcpu"]  # the vCPU threads ran off the set: the set holds the process's others
        assert vcpu["runtime_s"] > 0 and host["placement"]["vcpu_on_set"] is False
        on_set_cpu = proc["cpu_total"] - vcpu["runtime_s"]
        on_set_ctx = proc["ctx_switches"] - vcpu["ctx_voluntary"] - vcpu["ctx_involuntary"]
        if host["cpu_metric"] == "cpu_time":  # the set's busy time, in /proc's units; the threads' in ns
            assert host["cpu_total"] + 3 * UNITS_S * len(SET) >= on_set_cpu > 0, (host, proc)
        else:
            assert host["cpu_total"] > 0 and on_set_cpu > 0
        if host["ctx_switches"] is not None:  # perf ran: every switch of QEMU's threads on the set, in its window
            assert host["ctx_switches"] >= on_set_ctx > 0
        assert set(host["leak"]) >= {"interrupts", "softirqs", "outside_cpus"}
        assert isinstance(host["on_set"], list)
        assert os.getpid() not in {t["pid"] for t in host["on_set"]}
        assert host["per_cpu"].keys() == {str(c) for c in SET}
        assert rec["per_mib"]["cpu"] > 0  # scored on the set's figures
        # the guest's fio waits out its rate gaps spinning in every window, not sleeping in some (guest/init)
        assert rec["guest"]["fio_timerslack_ns"] == "20000000", rec["guest"]
    assert own_back(own_before)


@pytest.mark.qemu
@TWO
def test_a_vm_booting_ahead_stays_off_the_set_while_it_is_paused_and_gets_its_cpus_back(tmp_path: Path) -> None:
    # two images from the cache (boot-ahead needs two), of a size no other test uses, to meet no other QEMU
    spec = spec_from_dict({**raw(), "qemu": {"disk_size_mib": 44, "boot_ahead": True}})
    b = QemuBackend(spec, tmp_path)
    try:
        b.prepare()
        b.apply(DiskConfig("sata", "native", False, "none"))
        b.boot_ahead(DiskConfig("virtio-blk", "native", False, "none"))
        assert b.ahead is not None and b.ahead.alive()
        ahead_before = affinities(b.ahead.pid)
        b.window_opened()
        check_confined(b)
        assert all(cpus == REST for cpus in affinities(b.ahead.pid).values())  # paused, and off the set
        b.window_closed()
        assert affinities(b.ahead.pid) == {t: c for t, c in ahead_before.items() if t in affinities(b.ahead.pid)}
    finally:
        b.close()
