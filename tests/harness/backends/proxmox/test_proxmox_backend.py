"""The proxmox backend against the loopback Proxmox stand-in (fast: the VM's "QEMU" is a sleeping
process; the real-QEMU path is in test_proxmox_qemu.py).

Every fault case must end with the VM config digest-identical to the original and every volume
still on storage; no request may ever carry ``force`` or delete an ``unusedN`` key; the token secret
must never appear in any output.
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
from typing import Any, Iterator

import pytest

from standins.pve import PveStandin

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox.api import PveAuthError
from stormatrix.core.errors import BackendError, ConfigConflictError, GuestNotReady, TaskFailed
from stormatrix.journal import Journal
from stormatrix.core.model import DiskConfig
from stormatrix.registry import spec_from_dict

SECRET = "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab"
TOKEN = "root@pam!stormatrix"
VMID = 100


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    s.add_vm(VMID, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                    "scsi1": f"{vol},aio=native,cache=none,iothread=1,serial=SMXTEST,size=64M",
                    "boot": "order=scsi1", "agent": "1", "description": "benchmark VM"})
    with s:
        yield s


def matrix(standin: PveStandin, **proxmox: Any) -> dict[str, Any]:
    return {
        "run": {"backend": "proxmox", "boot_timeout_seconds": 5},
        "matrix": {"disk_slot": 1, "controllers": ["virtio-scsi-single", "sata", "virtio-blk", "ide", "pvscsi"],
                   "aio": ["native", "threads"], "iothread": [False, True], "cache": ["none"]},
        "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
        "proxmox": {"host": "127.0.0.1", "port": standin.port, "node": "pve", "vmid": VMID, "test_disk": "scsi1",
                    "token_id": "stormatrix", "token_secret_env": "SMX_PVE_SECRET", "ca_file": str(standin.ca_file),
                    "timeout": 20, "task_timeout": 30, "qemu_server_dir": str(standin.run_dir), **proxmox},
    }


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_PVE_SECRET", SECRET)


def make_backend(standin: PveStandin, tmp_path: Path, **proxmox: Any) -> pmx.ProxmoxBackend:
    return pmx.ProxmoxBackend(spec_from_dict(matrix(standin, **proxmox)), tmp_path / "run")


def assert_pristine(standin: PveStandin, original_digest: str, volumes: set[str]) -> None:
    assert standin.digest(VMID) == original_digest
    assert standin.volumes() >= volumes and not standin.destroyed
    assert_no_force_no_unused_delete(standin)


def assert_no_force_no_unused_delete(standin: PveStandin) -> None:
    for r in standin.requests:
        assert "force" not in r["params"], r
        deleted = [k for k in r["params"].get("delete", "").split(",") if k]
        assert not any(k.startswith("unused") for k in deleted), r


CELLS = [DiskConfig("sata", "threads", False, "none"), DiskConfig("virtio-blk", "native", True, "none"),
         DiskConfig("ide", "native", False, "none"), DiskConfig("pvscsi", "threads", False, "none"),
         DiskConfig("virtio-scsi-single", "native", False, "none")]


def test_section_registered_and_secret_only_by_reference(standin: PveStandin) -> None:
    raw = matrix(standin)
    raw["proxmox"]["token_secret"] = SECRET
    with pytest.raises(Exception) as exc:
        spec_from_dict(raw)
    assert "unknown key" in str(exc.value) and SECRET not in str(exc.value)


def test_cells_apply_verify_and_restore(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    b = make_backend(standin, tmp_path)
    facts = b.prepare()
    assert facts["original_disk"] == "virtio-scsi-single/aio=native/iothread=1/cache=none"
    assert b.original_config()["digest"] == digest0
    seen = []
    for disk in CELLS:
        b.apply(disk)
        spec = standin.launch_spec(standin.vms[VMID])
        seen.append((spec.controller, spec.aio, spec.iothread, spec.cache, spec.slot))
        assert standin.vms[VMID].running and not standin.vms[VMID].pending
    assert seen == [("sata", "threads", False, "none", 1), ("virtio-blk", "native", True, "none", 1),
                    ("ide", "native", False, "none", 1), ("pvscsi", "threads", False, "none", 1),
                    ("virtio-scsi-single", "native", False, "none", 1)]
    b.stop()
    b.restore()
    b.restore()  # idempotent
    b.close()
    assert_pristine(standin, digest0, vols)
    assert not standin.vms[VMID].running  # it was stopped before the run


def test_reboot_mode_applies_pending_by_reboot(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    b = make_backend(standin, tmp_path, restart="reboot")
    b.prepare()
    b.apply(DiskConfig("virtio-scsi-single", "threads", True, "none"))  # VM stopped: stop/start path
    b.apply(DiskConfig("virtio-scsi-single", "io_uring", True, "none"))  # running, same bus: reboot
    # the reboot task shuts the guest down; qm cleanup (as root@pam) starts the new QEMU that applies pending
    last = list(standin.tasks.values())[-2:]
    assert [(t.type, t.user, t.exitstatus) for t in last] == [("qmreboot", TOKEN, "OK"), ("qmstart", "root@pam", "OK")]
    assert standin.launch_spec(standin.vms[VMID]).aio == "io_uring"
    assert standin.launcher.started[-1].aio == "io_uring"  # type: ignore[attr-defined]
    assert standin.vms[VMID].running and not standin.vms[VMID].pending
    b.restore()
    b.close()
    assert_no_force_no_unused_delete(standin)


def test_original_running_vm_is_left_running(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    standin.vms[VMID].qemu = standin.launcher.start(standin.launch_spec(standin.vms[VMID]))
    digest0 = standin.digest(VMID)
    b = make_backend(standin, tmp_path)
    b.prepare()
    b.apply(DiskConfig("sata", "native", False, "none"))
    b.restore()
    b.close()
    assert standin.digest(VMID) == digest0 and standin.vms[VMID].running


@pytest.mark.parametrize("fault", ["delete", "set"])
def test_api_500_on_a_write_then_restore(standin: PveStandin, tmp_path: Path, secret_env: None, fault: str) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    b = make_backend(standin, tmp_path)
    b.prepare()
    # "delete": the first write of the move fails; "set": the delete went through, the set fails.
    standin.fail_request("PUT", "/config", status=500, message="got timeout", count=1 if fault == "delete" else 0)
    if fault == "set":
        standin._faults.clear()
        original_update = standin._update
        calls = {"n": 0}

        def flaky(vm: Any, p: Any, raw: Any, info: Any) -> None:
            calls["n"] += 1
            if calls["n"] == 2:
                from standins.pve import ApiError
                raise ApiError(500, "unable to write config: got timeout")
            original_update(vm, p, raw, info)

        standin._update = flaky  # type: ignore[method-assign]
    with pytest.raises(BackendError, match="500"):
        b.apply(DiskConfig("sata", "native", False, "none"))
    if fault == "set":
        assert any(k.startswith("unused") for k in standin.vms[VMID].conf)  # the volume waits in unusedN
        standin._update = original_update  # type: ignore[method-assign]
    b.restore()
    b.close()
    assert_pristine(standin, digest0, vols)


def test_digest_conflict_is_an_error_not_a_retry(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    b = make_backend(standin, tmp_path)
    b.prepare()
    standin.transient_edit("lock", "backup")
    writes_before = sum(1 for r in standin.requests if r["method"] == "PUT")
    with pytest.raises(ConfigConflictError, match="changed while stormatrix"):
        b.apply(DiskConfig("ide", "native", False, "none"))
    assert sum(1 for r in standin.requests if r["method"] == "PUT") == writes_before + 1
    b.restore()
    b.close()
    assert_pristine(standin, digest0, vols)


def test_failed_task_carries_exitstatus_and_log(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    b = make_backend(standin, tmp_path)
    b.prepare()
    with pytest.raises(TaskFailed) as exc:
        # QEMU itself refuses aio=native without O_DIRECT: the start task fails with its stderr.
        b.apply(DiskConfig("virtio-blk", "native", False, "writeback"))
    assert "start failed: QEMU exited with code 1" in str(exc.value)
    assert "requires cache.direct=on" in str(exc.value)
    standin.fail_next_task("qmstop", "VM quit/powerdown failed - got timeout")
    b.apply(DiskConfig("sata", "threads", False, "none"))  # VM was not running: no stop task
    with pytest.raises(TaskFailed, match="got timeout"):
        b.apply(DiskConfig("ide", "threads", False, "none"))
    b.restore()
    b.close()
    assert_pristine(standin, digest0, vols)


def test_vm_never_ready(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    standin.agent_ready = False
    b = make_backend(standin, tmp_path)
    b.prepare()
    b.spec.run["boot_timeout_seconds"] = 2.0
    with pytest.raises(GuestNotReady, match="guest agent did not answer"):
        b.apply(DiskConfig("sata", "native", False, "none"))
    b.restore()
    b.close()
    assert_pristine(standin, digest0, vols)


def test_ctrl_c_during_apply_restores(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    digest0, vols = standin.digest(VMID), standin.volumes()
    b = make_backend(standin, tmp_path)
    b.prepare()
    real_task = b._task

    def interrupted(action: str, what: str) -> None:
        if action == "start":
            raise KeyboardInterrupt
        real_task(action, what)

    b._task = interrupted  # type: ignore[method-assign]
    try:
        with pytest.raises(KeyboardInterrupt):
            try:
                b.apply(DiskConfig("virtio-blk", "threads", False, "none"))
            finally:
                b.restore()
    finally:
        b.close()
    assert_pristine(standin, digest0, vols)


def test_refuses_pending_changes_and_missing_disk(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    b = make_backend(standin, tmp_path, test_disk="scsi2")
    with pytest.raises(Exception, match="no such disk"):
        b.prepare()
    b.close()
    standin.vms[VMID].pending["cores"] = "2"
    b = make_backend(standin, tmp_path)
    with pytest.raises(BackendError, match="pending changes"):
        b.prepare()
    b.close()


def test_wrong_token_and_tls_are_clear_errors(standin: PveStandin, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_PVE_SECRET", "wrong-" + SECRET)
    b = make_backend(standin, tmp_path)
    with pytest.raises(PveAuthError, match="401"):
        b.prepare()
    b.close()
    monkeypatch.setenv("SMX_PVE_SECRET", SECRET)
    b = make_backend(standin, tmp_path, ca_file="")  # system CAs do not know the stand-in's certificate
    with pytest.raises(BackendError, match="TLS verification"):
        b.prepare()
    b.close()


HARNESS = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import json
    from stormatrix.backends.proxmox import backend as proxmox
    from stormatrix.journal import Journal
    from stormatrix.core.model import DiskConfig
    from stormatrix.registry import spec_from_dict
    raw = json.loads(Path(sys.argv[1]).read_text())
    run_dir = Path(sys.argv[2])
    b = proxmox.ProxmoxBackend(spec_from_dict(raw), run_dir)
    b.prepare()
    Journal(run_dir).open().append({"type": "run", "run_id": "r1", "matrix": raw, "backend": "proxmox",
                                    "original_config": b.original_config()})
    print("prepared", flush=True)
    b.apply(DiskConfig("virtio-scsi-single", "threads", False, "none"))
    b.apply(DiskConfig("sata", "native", False, "none"))
    print("applied", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("when", ["mid-move", "after-apply"])
def test_sigkill_then_stormatrix_restore(standin: PveStandin, tmp_path: Path, secret_env: None, when: str,
                                         caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.cli import main

    digest0, vols = standin.digest(VMID), standin.volumes()
    raw = matrix(standin)
    (tmp_path / "matrix.json").write_text(json.dumps(raw))
    run_dir = tmp_path / "run"
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    release = None
    if when == "mid-move":
        # PUTs: 1 = the same-bus change, 2 = delete scsi1 for the sata move, 3 = set sata1: hold that one,
        # so the harness dies while the volume sits in unusedN.
        release = standin.hold_request("PUT", "/config", skip=2)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "matrix.json"), str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "prepared"
        if when == "mid-move":
            assert standin.held(60)
            assert "unused0" in standin.vms[VMID].conf and "scsi1" not in standin.vms[VMID].conf
        else:
            assert proc.stdout.readline().strip() == "applied"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close() if proc.stdout else None
        err = proc.stderr.read() if proc.stderr else ""
        proc.stderr.close() if proc.stderr else None
    assert standin.digest(VMID) != digest0  # the crash left the VM changed
    caplog.set_level(logging.DEBUG)
    assert main(["restore", str(run_dir)]) == 0
    assert "restored to its original configuration" in capsys.readouterr().out
    if release is not None:
        # The dead harness's last request reaches the server only now, with a stale digest: refused.
        n = len(standin.requests)
        release.set()
        deadline = time.monotonic() + 30
        while len(standin.requests) == n and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
    assert_pristine(standin, digest0, vols)
    assert main(["restore", str(run_dir)]) == 0
    assert "nothing to restore" in capsys.readouterr().out
    records = Journal(run_dir).records()
    assert records[-1]["type"] == "restored"
    # the secret is nowhere: journal, logs, the crashed harness's stderr
    everything = (run_dir / "journal.ndjson").read_text() + caplog.text + err
    assert SECRET not in everything


def test_token_never_in_outputs(standin: PveStandin, tmp_path: Path, secret_env: None,
                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    logging.getLogger("proxmoxer").setLevel(logging.DEBUG)
    texts: list[str] = []
    b = make_backend(standin, tmp_path)
    b.prepare()
    Journal(tmp_path / "run").open().append({"type": "run", "run_id": "x", "matrix": matrix(standin),
                                             "backend": "proxmox", "original_config": b.original_config(),
                                             "facts": repr(b.__dict__)})
    standin.fail_request("PUT", "/config", status=500, message="boom")
    for disk in (DiskConfig("sata", "native", False, "none"), DiskConfig("ide", "native", False, "writeback")):
        try:
            b.apply(disk)
        except BackendError as exc:
            texts += [str(exc), repr(exc), repr(exc.details)]
    b.restore()
    b.close()
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    texts.append(caplog.text)
    assert len(texts) >= 3
    for text in texts:
        assert SECRET not in text


@pytest.mark.parametrize("damage, words", [
    (lambda o: o.pop("test_disk"), ["original_config.test_disk is missing", "the test disk's original key"]),
    (lambda o: o.pop("volid"), ["original_config.volid is missing"]),
    (lambda o: o.update(config="scsi1: gone"), ["original_config.config is not a table"]),
    (lambda o: o["config"].pop("scsi1"), ["original_config.config has no scsi1"]),
    (lambda o: o.update(vmid="one hundred"), ["original_config.vmid is not a number"]),
])
def test_restore_from_a_damaged_journal_is_exit_2_and_changes_nothing(
        standin: PveStandin, tmp_path: Path, secret_env: None, damage: Any, words: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A journal whose proxmox record lacks a key restore needs (another version's, or edited by hand):
    a message naming the key, exit 2, and not one write to the VM (before: KeyError, a traceback)."""
    from stormatrix.cli import main

    raw = matrix(standin)
    run_dir = tmp_path / "run"
    b = pmx.ProxmoxBackend(spec_from_dict(raw), run_dir)
    b.prepare()
    b.apply(DiskConfig("sata", "threads", False, "none"))
    original = json.loads(json.dumps(b.original_config()))
    b.close()
    damage(original)
    Journal(run_dir).open().append({"type": "run", "run_id": "r1", "matrix": raw, "backend": "proxmox",
                                    "original_config": original})
    changed, writes = standin.digest(VMID), len([r for r in standin.requests if r["method"] != "GET"])
    assert main(["restore", str(run_dir)]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err
    assert "Traceback" not in err and "journal.ndjson" in err and "Nothing was changed" in err
    assert standin.digest(VMID) == changed
    assert len([r for r in standin.requests if r["method"] != "GET"]) == writes
