"""``[proxmox] pin_cpus``: the VM's vCPU and iothreads (thread ids from QMP ``query-cpus-fast`` and
``query-iothreads``) run on the user's CPU set while a cell runs, and get their own affinity back
afterwards, also when the cell fails. Checked in /proc/<pid>/task/<tid>/status (``Cpus_allowed_list``)
of the real QEMU the Proxmox stand-in starts. A CPU set the node does not have is exit 2 naming the key.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.pve import PveStandin

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.core import scope
from stormatrix.backends.base import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, HostScope
from stormatrix.core.errors import CollectorError
from stormatrix.host.collector import WindowCollector
from stormatrix.journal import Journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict

SECRET = "pin-secret-4f2a9c81d0e3"
ONLINE = scope.parse_cpuset(Path("/sys/devices/system/cpu/online").read_text().strip())
# the CPUs this test may use: the stand-in's QEMU inherits them, so its unpinned threads are allowed exactly these
OURS = sorted(os.sched_getaffinity(0))


def allowed(pid: int, tid: int) -> str:
    for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list for {tid}")


# --- bad CPU sets: exit 2, the key and the fix, no traceback, the VM untouched -------------------------

MATRIX = textwrap.dedent("""\
    [run]
    backend = "proxmox"
    executor = "local-agent"
    [matrix]
    controllers = ["sata"]
    aio = ["threads"]
    disk_slot = 1
    [[workload]]
    name = "r"
    rw = "randread"
    bs = "4k"
    [proxmox]
    host = "127.0.0.1"
    port = {port}
    node = "pve"
    vmid = 100
    test_disk = "scsi1"
    token_id = "t"
    token_secret_env = "SMX_PIN_SECRET"
    ca_file = "{ca}"
    qemu_server_dir = "{run}"
    guest_channel = "serial1"
    pin_cpus = "{cpus}"
    """)


@pytest.fixture
def fast_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": SECRET})
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},cache=none", "boot": "order=scsi1"})
    monkeypatch.setenv("SMX_PIN_SECRET", SECRET)
    with s:
        yield s


@pytest.mark.parametrize("cpus, words", [
    (str(max(ONLINE) + 6), ["[proxmox] pin_cpus", f"names CPU {max(ONLINE) + 6}, which this machine does not have",
                             f"online CPUs are {scope.format_cpuset(ONLINE)}", "Fix: give host CPUs out of"]),
    (f"{min(ONLINE)},{max(ONLINE) + 1}-{max(ONLINE) + 3}", ["[proxmox] pin_cpus",
                                                           f"names CPU {max(ONLINE) + 1}-{max(ONLINE) + 3}"]),
    ("a-b", ["[proxmox] pin_cpus", "'a-b' is not a CPU list like 2-3 or 0,2,4", "Fix:"]),
])
def test_bad_cpu_set_is_exit_2_with_key_and_fix(fast_node: PveStandin, tmp_path: Path, cpus: str, words: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.cli import main

    digest0 = fast_node.digest(100)
    path = tmp_path / "m.toml"
    path.write_text(MATRIX.format(port=fast_node.port, ca=fast_node.ca_file, run=fast_node.run_dir, cpus=cpus))
    assert main(["run", str(path), "-o", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err and SECRET not in err
    for w in words:
        assert w in err, err
    assert fast_node.digest(100) == digest0 and not fast_node.launcher.started  # type: ignore[attr-defined]


# --- real QEMU: pinned during the cell, restored after it, also when it fails ---------------------------

@pytest.fixture
def qemu_node(tmp_path: Path) -> Iterator[PveStandin]:
    from standins.pve import QemuVmLauncher

    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": SECRET}, launcher=QemuVmLauncher())
    vol = s.add_volume(100, "vm-100-disk-0.raw", size=256 * 1024 * 1024)
    s.add_vm(100, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                   "scsi0": f"{vol},aio=io_uring,cache=none,iothread=1,size=256M", "boot": "order=scsi0",
                   "serial1": "socket"})
    with s:
        yield s


class Watched(pmx.ProxmoxBackend):
    """The backend as the runner drives it, noting each thread's CPU list right after stop() (the cell
    is over, its QEMU still runs: the proxmox backend restarts it at the next apply)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.after: list[dict[int, str]] = []
        self.watch: dict[int, str] = {}  # tid -> role of the QEMU the last window saw
        self.pid = 0

    def _stop(self) -> None:
        super()._stop()
        if self.watch:
            self.after.append({tid: allowed(self.pid, tid) for tid in self.watch})
            self.watch = {}


@pytest.mark.qemu
@pytest.mark.skipif(len(OURS) < 2, reason="pinning to a subset needs 2 CPUs or more allowed to this process")
def test_threads_pinned_during_the_cell_and_restored_after_even_on_error(qemu_node: PveStandin, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_PIN_SECRET", SECRET)
    pin = str(max(OURS))
    raw = {"run": {"backend": "proxmox", "executor": "local-agent", "ramp_seconds": 1, "measure_seconds": 2,
                   "retries": 0, "on_error": "skip"},
           "matrix": {"controllers": ["virtio-scsi-single"], "aio": ["threads", "native"], "iothread": [True],
                      "cache": ["none"], "disk_slot": 0},
           "workload": [{"name": "r", "rw": "randread", "bs": "64k", "iodepth": 4, "rate_mib_s": 16}],
           "proxmox": {"host": "127.0.0.1", "port": qemu_node.port, "node": "pve", "vmid": 100, "test_disk": "scsi0",
                       "token_id": "t", "token_secret_env": "SMX_PIN_SECRET", "ca_file": str(qemu_node.ca_file),
                       "qemu_server_dir": str(qemu_node.run_dir), "guest_channel": "serial1", "ready": "executor",
                       "pin_cpus": pin}}
    spec = spec_from_dict(raw, "pin.toml")
    backend = Watched(spec, tmp_path / "run")
    during: list[dict[int, tuple[str, str]]] = []

    class Failing(WindowCollector):
        def stop(self) -> dict[str, Any]:
            super().stop()
            raise CollectorError("injected: the collector lost the process")

    def factory(scope: HostScope) -> Any:
        # the window is open: the cell's workload runs now
        backend.pid, backend.watch = scope.pid, dict(scope.threads)
        during.append({tid: (role, allowed(scope.pid, tid)) for tid, role in scope.threads.items()})
        cls = Failing if len(during) == 2 else WindowCollector
        return cls(scope.pid, dict(scope.threads))

    digest0 = qemu_node.digest(100)
    summary = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=factory)).run()
    assert summary.measured == 1 and len(summary.failed) == 1, summary
    assert len(during) == 2 and len(backend.after) == 2
    for seen, after in zip(during, backend.after):
        roles = {role for role, _ in seen.values()}
        assert {ROLE_MAIN, ROLE_VCPU, ROLE_IOTHREAD} <= roles
        original = next(cpus for role, cpus in seen.values() if role == ROLE_MAIN)  # never pinned
        assert original == scope.format_cpuset(OURS) != pin
        for tid, (role, cpus) in seen.items():
            assert cpus == (pin if role in (ROLE_VCPU, ROLE_IOTHREAD) else original), (tid, role, cpus)
            assert after[tid] == original, (tid, role, after[tid])  # put back when the cell ended
    records = Journal(tmp_path / "run").records()
    errors = [r for r in records if r["type"] == "cell-error"]
    assert len(errors) == 1 and "injected" in errors[0]["error"]["message"] and errors[0]["stage"] == "run"
    run = next(r for r in records if r["type"] == "run")
    assert run["environment"]["pin_cpus"] == pin
    assert qemu_node.digest(100) == digest0 and not backend.pinner.pinned
