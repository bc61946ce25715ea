"""``[proxmox] restart = "reboot"``: pending changes applied by an API reboot.

On Proxmox the reboot task only shuts the guest down (guest agent, else ACPI); qmeventd's
``qm cleanup`` then starts a new QEMU process in a ``qmstart`` task of its own (as root@pam), and
that start applies the pending changes. (A reboot from inside the guest keeps the QEMU process, so
pending changes stay pending: the harness never relies on one.) The stand-in does the same, with
real QEMU in the last test: each cell must run in a new process whose command line has the cell's
devices, with nothing left pending.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.pve import PveStandin, SleepLauncher

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox.cmdline import cmdline_problems
from stormatrix.backends.base import HostScope
from stormatrix.core.errors import BackendError, TaskFailed
from stormatrix.host.collector import WindowCollector
from stormatrix.journal import Journal
from stormatrix.core.model import DiskConfig
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict

SECRET = "reboot-secret-7c1d2e3f4a5b"
TOKEN = "root@pam!smx"


def make(tmp_path: Path, *, acpi: bool = True, auditors: set[str] | None = None,
         agent: bool = True) -> PveStandin:
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET}, launcher=SleepLauncher(guest_acpi=acpi),
                   auditors=auditors)
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    conf = {"name": "bench", "scsihw": "virtio-scsi-single", "scsi1": f"{vol},aio=native,cache=none,iothread=1",
            "boot": "order=scsi1"}
    if agent:
        conf["agent"] = "1"
    s.add_vm(100, conf)
    return s


def backend(s: PveStandin, tmp_path: Path, **proxmox: Any) -> pmx.ProxmoxBackend:
    raw = {"run": {"backend": "proxmox", "boot_timeout_seconds": 5},
           "matrix": {"disk_slot": 1, "controllers": ["virtio-scsi-single"], "aio": ["threads"]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "proxmox": {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": 100, "test_disk": "scsi1",
                       "token_id": "smx", "token_secret_env": "SMX_REBOOT_SECRET", "ca_file": str(s.ca_file),
                       "task_timeout": 20, "qemu_server_dir": str(s.run_dir), "restart": "reboot", **proxmox}}
    return pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_REBOOT_SECRET", SECRET)


def start_running(s: PveStandin) -> int:
    """The VM runs before the harness comes (so the first cell is a reboot too)."""
    vm = s.vms[100]
    vm.qemu = s.launcher.start(s.launch_spec(vm))
    return vm.qemu.pid


def pristine(s: PveStandin, digest0: str, vols: set[str]) -> None:
    assert s.digest(100) == digest0 and s.volumes() >= vols and not s.destroyed
    for r in s.requests:
        assert "force" not in r["params"]


@pytest.mark.parametrize("audit", [True, False], ids=["follows-qmstart", "no-sys-audit"])
def test_reboot_applies_pending_in_a_new_process(tmp_path: Path, audit: bool) -> None:
    with make(tmp_path, auditors=None if audit else set()) as s:
        digest0, vols = s.digest(100), s.volumes()
        pid0 = start_running(s)
        # the VM stays stopped a while after the reboot task, and the start takes time: the backend must wait
        s.qm_cleanup_delay = 1.0
        s.launcher.start_delay = 1.0  # type: ignore[attr-defined]
        b = backend(s, tmp_path)
        b.prepare()
        b.apply(DiskConfig("virtio-scsi-single", "threads", True, "none"))
        vm = s.vms[100]
        assert vm.running and vm.qemu is not None and vm.qemu.pid != pid0 and not vm.pending
        assert s.launcher.started[-1].aio == "threads"  # type: ignore[attr-defined]
        assert "aio=threads" in Path(f"/proc/{vm.qemu.pid}/cmdline").read_text()
        types = [(t.type, t.user) for t in s.tasks.values()]
        assert types == [("qmreboot", TOKEN), ("qmstart", "root@pam")]  # no stop/start of ours
        # the backend looked for qm cleanup's start; it reads that task only with Sys.Audit
        assert any(r["path"] == "/nodes/pve/tasks" for r in s.requests)
        assert any("qmstart" in r["path"] for r in s.requests) == audit
        b.restore()
        b.close()
        pristine(s, digest0, vols)
        assert s.vms[100].running  # it was running before


@pytest.mark.parametrize("audit", [True, False], ids=["follows-qmstart", "no-sys-audit"])
def test_a_failing_start_after_the_reboot_is_an_error(tmp_path: Path, audit: bool) -> None:
    with make(tmp_path, auditors=None if audit else set()) as s:
        digest0, vols = s.digest(100), s.volumes()
        start_running(s)
        b = backend(s, tmp_path, task_timeout=5)
        b.prepare()
        if audit:  # the failed qmstart of qm cleanup, with its log
            with pytest.raises(TaskFailed) as exc:
                b.apply(DiskConfig("virtio-scsi-single", "native", True, "writeback"))
            assert "the start after the reboot (qm cleanup" in str(exc.value)
            assert "requires cache.direct=on" in str(exc.value)
        else:  # without Sys.Audit only the VM's status: a deadline
            with pytest.raises(BackendError, match=r"did not run again within \[proxmox\] task_timeout = 5 s.*"
                                                   r"failed qmstart task"):
                b.apply(DiskConfig("virtio-scsi-single", "native", True, "writeback"))
        b.restore()
        b.close()
        pristine(s, digest0, vols)


def test_a_guest_that_ignores_the_reboot_is_a_clear_error(tmp_path: Path) -> None:
    # no agent configured and a guest without ACPI handling: qemu-server's powerdown times out
    with make(tmp_path, acpi=False, agent=False) as s:
        digest0, vols = s.digest(100), s.volumes()
        pid0 = start_running(s)
        b = backend(s, tmp_path, reboot_timeout=1, ready="executor")
        b.prepare()
        with pytest.raises(TaskFailed) as exc:
            b.apply(DiskConfig("virtio-scsi-single", "threads", True, "none"))
        text = str(exc.value)
        assert "VM quit/powerdown failed - got timeout" in text and "reboot_timeout = 1 s" in text
        assert 'restart = "stop-start"' in text
        assert not s.reboot_request(100).exists()
        post = [r for r in s.requests if r["path"].endswith("/status/reboot")]
        assert post and post[-1]["params"] == {"timeout": "1"}
        assert s.vms[100].qemu is not None and s.vms[100].qemu.pid == pid0 and s.vms[100].pending
        b.restore()  # stop (not a reboot), revert/restore, start again
        b.close()
        pristine(s, digest0, vols)
        assert s.vms[100].running


def test_a_bus_move_in_reboot_mode_still_stops_and_starts(tmp_path: Path) -> None:
    with make(tmp_path) as s:
        start_running(s)
        b = backend(s, tmp_path)
        b.spec.matrix["controllers"] = ["sata"]
        b.prepare()
        b.apply(DiskConfig("sata", "threads", False, "none"))
        assert [t.type for t in s.tasks.values()] == ["qmstop", "qmstart"]
        b.restore()
        b.close()


# --- real QEMU -----------------------------------------------------------------------------------

@pytest.fixture
def qemu_node(tmp_path: Path) -> Iterator[PveStandin]:
    from standins.pve import QemuVmLauncher

    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET}, launcher=QemuVmLauncher())
    vol = s.add_volume(100, "vm-100-disk-0.raw", size=256 * 1024 * 1024)
    # agent: 1 -> the reboot's shutdown is the agent's guest-shutdown (the test guest has no acpid)
    s.add_vm(100, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                   "scsi0": f"{vol},aio=io_uring,cache=none,iothread=1,size=256M", "boot": "order=scsi0",
                   "serial1": "socket", "agent": "1"})
    with s:
        yield s


@pytest.mark.qemu
def test_reboot_mode_cells_run_in_a_new_qemu_with_the_cells_devices(qemu_node: PveStandin, tmp_path: Path) -> None:
    s = qemu_node
    digest0, vols = s.digest(100), s.volumes()
    pid0 = start_running(s)
    deadline = time.monotonic() + 60
    while not s.vms[100].qemu.agent_ping():  # type: ignore[union-attr]  # a VM that has booted
        assert time.monotonic() < deadline, "the guest did not boot"
    raw = {"run": {"backend": "proxmox", "executor": "local-agent", "ramp_seconds": 1, "measure_seconds": 2,
                   "retries": 0},
           "matrix": {"controllers": ["virtio-scsi-single"], "aio": ["threads", "native"], "iothread": [True],
                      "cache": ["none"], "disk_slot": 0},
           "workload": [{"name": "r", "rw": "randread", "bs": "64k", "iodepth": 4, "rate_mib_s": 16}],
           "proxmox": {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": 100, "test_disk": "scsi0",
                       "token_id": "smx", "token_secret_env": "SMX_REBOOT_SECRET", "ca_file": str(s.ca_file),
                       "qemu_server_dir": str(s.run_dir), "guest_channel": "serial1", "restart": "reboot",
                       # the local-agent executor catches the guest's READY itself (it waits 60 s before it
                       # PINGs a guest that announced READY before it listened)
                       "ready": "executor", "task_timeout": 60}}
    spec = spec_from_dict(raw, "reboot.toml")
    windows: list[dict[str, Any]] = []

    def factory(scope: HostScope) -> Any:
        vm = s.vms[100]
        windows.append({"pid": scope.pid, "cmdline": Path(f"/proc/{scope.pid}/cmdline").read_bytes().split(b"\0"),
                        "pending": dict(vm.pending), "pending_delete": dict(vm.pending_delete),
                        "reboots": [t for t in s.tasks.values() if t.type == "qmreboot"]})
        return WindowCollector(scope.pid, dict(scope.threads))

    summary = Runner(spec, tmp_path / "run", RunOptions(progress=False, collector_factory=factory)).run()
    assert not summary.failed and summary.measured == 2, summary
    cells = [r for r in Journal(tmp_path / "run").records() if r["type"] == "cell"]
    assert [w["pid"] for w in windows] == [c["host"]["pid"] for c in cells]
    pids = [pid0] + [w["pid"] for w in windows]
    assert len(set(pids)) == 3  # every cell in a QEMU process of its own
    for w, c in zip(windows, cells):
        argv = [a.decode() for a in w["cmdline"] if a]
        assert not cmdline_problems(argv, DiskConfig(**{k: c["cell"]["disk"][k] for k in
                                                           ("controller", "aio", "iothread", "cache")}), "scsi0")
        drive = next(a for a in argv if "id=drive-scsi0" in a)
        assert f"aio={c['cell']['disk']['aio']}" in drive
        assert not w["pending"] and not w["pending_delete"]
        assert c["fio"]["total"]["io_bytes"] > 0
    # one API reboot per cell, each followed by qm cleanup's start as root@pam
    tasks = [(t.type, t.user, t.exitstatus) for t in s.tasks.values()]
    assert tasks[:4] == [("qmreboot", TOKEN, "OK"), ("qmstart", "root@pam", "OK")] * 2
    assert len(windows[0]["reboots"]) == 1 and len(windows[1]["reboots"]) == 2
    kept = sorted(p.name for p in (tmp_path / "run" / "proxmox").iterdir())
    assert len([k for k in kept if k.endswith(".running.txt")]) == 2
    text = (tmp_path / "run" / "proxmox" / kept[0]).read_text()
    assert shlex.split(text.replace("\\\n", " "))[0] == "qemu-system-x86_64"
    # restore: the original config, running as it was found
    assert s.digest(100) == digest0 and s.volumes() >= vols and not s.destroyed and s.vms[100].running
