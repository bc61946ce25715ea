"""The proxmox backend's ssh path against a real, private sshd on 127.0.0.1 (tests/standins/sshd.py):
linux-host/ copied to the "node" only when a file is missing or differs, the collector run there over
ssh against a real process, and ssh failures as clear errors. The whole path with real QEMU (remote
collector, pinning with taskset, qm showcmd over ssh) is test_ssh_end_to_end_with_real_qemu."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.sshd import PrivateSshd, SshdUnavailable

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox import node as pmxnode
from stormatrix.core import scope
from stormatrix.backends.base import HostScope
from stormatrix.collect import RemoteProcessesCollector
from stormatrix.core.errors import BackendError, CollectorError


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[PrivateSshd]:
    server = PrivateSshd(tmp_path / "sshd")
    try:
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(f"sshd cannot run here: {exc}")
    try:
        yield server
    finally:
        server.stop()


def shell(sshd: PrivateSshd) -> pmxnode.NodeShell:
    return pmxnode.NodeShell(sshd.target, str(sshd.ssh_config))


def local_files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in pmxnode.collector_files()}


def test_linux_host_copied_only_when_missing_or_changed(sshd: PrivateSshd, tmp_path: Path) -> None:
    node_dir = tmp_path / "node" / "linux-host"  # on the "node" (the same file system here)
    cfg = str(sshd.ssh_config)
    assert pmxnode.ensure_remote_collector(sshd.target, str(node_dir), ssh_config=cfg) == "copied"
    want = local_files()
    assert {p.name: p.read_bytes() for p in node_dir.glob("*.py")} == want and "collector.py" in want
    assert node_dir.stat().st_mode & 0o777 == 0o700
    mtimes = {p.name: p.stat().st_mtime_ns for p in node_dir.iterdir()}
    logins = sshd.accepted()
    assert pmxnode.ensure_remote_collector(sshd.target, str(node_dir), ssh_config=cfg) == "up to date"
    assert sshd.accepted() == logins + 1  # one sha256sum over ssh, no copy
    assert {p.name: p.stat().st_mtime_ns for p in node_dir.iterdir()} == mtimes
    # a collector changed on the node (an older stormatrix's, or edited) is replaced, not trusted
    (node_dir / "collector.py").write_bytes(want["collector.py"] + b"\n# edited on the node\n")
    assert pmxnode.ensure_remote_collector(sshd.target, str(node_dir), ssh_config=cfg) == "copied"
    assert (node_dir / "collector.py").read_bytes() == want["collector.py"]
    (node_dir / "inventory.py").unlink()
    assert pmxnode.ensure_remote_collector(sshd.target, str(node_dir), ssh_config=cfg) == "copied"
    assert {p.name: p.read_bytes() for p in node_dir.glob("*.py")} == want


def test_remote_hashes_are_the_nodes(sshd: PrivateSshd, tmp_path: Path) -> None:
    d = tmp_path / "h"
    d.mkdir()
    (d / "a.py").write_bytes(b"print(1)\n")
    got = pmxnode.remote_hashes(shell(sshd), str(d), ["a.py", "missing.py"])
    assert got == {"a.py": hashlib.sha256(b"print(1)\n").hexdigest()}
    assert pmxnode.remote_hashes(shell(sshd), str(tmp_path / "nope"), ["a.py"]) == {}


BUSY = """
import threading, time, sys
def spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
t = threading.Thread(target=spin, args=(30,), name="spinner", daemon=True)
t.start()
print(t.native_id, flush=True)
while True:
    time.sleep(0.05)   # the main thread: voluntary context switches
"""


def test_collector_over_ssh_measures_a_real_process(sshd: PrivateSshd, tmp_path: Path) -> None:
    node_dir = str(tmp_path / "node" / "linux-host")
    pmxnode.ensure_remote_collector(sshd.target, node_dir, ssh_config=str(sshd.ssh_config))
    busy = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout is not None
        spinner = int(busy.stdout.readline())
        scope = HostScope(pid=busy.pid, threads={spinner: "vcpu"}, vm="busy", ssh=sshd.target)
        c = RemoteProcessesCollector(shell(sshd), lambda: [scope], remote_dir=node_dir, name_vms=False)
        c.start()
        time.sleep(1.5)
        host = c.stop()
    finally:
        busy.kill()
        busy.wait()
        busy.stdout.close()  # type: ignore[union-attr]
    assert host["pid"] == busy.pid and host["scope"] == "qemu-process"
    # relations that hold on any machine, however loaded: no rates, no upper bounds on time
    assert host["cpu_time_s"]["total"] > 0 and host["window_s"] >= 1.5
    rows = {t["tid"]: t for t in host["threads"]}
    cpu = {tid: row["user_s"] + row["system_s"] for tid, row in rows.items()}
    assert rows[spinner]["role"] == "vcpu" and cpu[spinner] > cpu[busy.pid]  # spinning costs more than napping
    assert rows[busy.pid]["role"] == "main-loop" and rows[busy.pid]["ctx_voluntary"] > 0  # it sleeps: it switches
    assert host["by_role"]["vcpu"]["threads"] == 1 and host["ctx_switches"] > 0
    # the roles travel on stdin: nothing but linux-host/ itself is written on the node
    assert {p.name for p in (tmp_path / "node" / "linux-host").iterdir()} == set(local_files())
    assert "vms" not in host and "node" not in host  # one VM's block is the local collector's, unchanged


def test_collector_over_ssh_for_a_gone_process_is_a_clear_error(sshd: PrivateSshd, tmp_path: Path) -> None:
    node_dir = str(tmp_path / "node" / "linux-host")
    pmxnode.ensure_remote_collector(sshd.target, node_dir, ssh_config=str(sshd.ssh_config))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    scope = HostScope(pid=gone.pid, vm="gone", ssh=sshd.target)
    c = RemoteProcessesCollector(shell(sshd), lambda: [scope], remote_dir=node_dir)
    with pytest.raises(CollectorError, match=rf"host collector on {sshd.target} did not start: process {gone.pid} is gone"):
        c.start()
    c.abort()


def test_ssh_failures_name_the_setting_and_the_fix(sshd: PrivateSshd, tmp_path: Path) -> None:
    # the node's host key is not the one known: refused (StrictHostKeyChecking), never a prompt
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} ssh-ed25519 "
                                "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    with pytest.raises(BackendError) as exc:
        shell(sshd).run(["true"])
    text = str(exc.value)
    assert "ssh to" in text and "Host key verification failed" in text and "[proxmox] ssh and ssh_config" in text
    # a command that fails on the node is its own error, with its exit code and message
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} "
                                + (sshd.dir / "host_key.pub").read_text().split(" stormatrix")[0] + "\n")
    with pytest.raises(BackendError, match=r"cat /nonexistent on .* exited 1: cat: /nonexistent"):
        shell(sshd).run(["cat", "/nonexistent"])
    # arguments reach the node as given (quoted for its shell)
    assert shell(sshd).run(["printf", "%s|", "a b", "$HOME", "it's"]).stdout == "a b|$HOME|it's|"


# --- the whole ssh path with real QEMU: remote collector, pinning with taskset, qm showcmd over ssh --------

@pytest.mark.qemu
def test_ssh_end_to_end_with_real_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from standins.pve import PveStandin, QemuVmLauncher
    from test_proxmox_pinning import Watched, allowed

    from stormatrix.backends.base import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, HostScope
    from stormatrix.journal import Journal
    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import spec_from_dict

    secret = "ssh-e2e-secret-31415926"
    online = scope.parse_cpuset(Path("/sys/devices/system/cpu/online").read_text().strip())
    if len(online) < 2:
        pytest.skip("pinning to a subset needs 2 CPUs or more")
    pin = str(max(online))
    bindir = tmp_path / "node-bin"
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": secret}, launcher=QemuVmLauncher())
    vol = s.add_volume(100, "vm-100-disk-0.raw", size=256 * 1024 * 1024)
    s.add_vm(100, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                   "scsi0": f"{vol},aio=io_uring,cache=none,iothread=1,size=256M", "boot": "order=scsi0",
                   "serial1": "socket"})
    node_dir = tmp_path / "node" / "linux-host"
    monkeypatch.setenv("SMX_SSH_SECRET", secret)
    with s:
        s.install_node_tools(bindir)  # qm, on the ssh sessions' PATH only
        server = PrivateSshd(tmp_path / "sshd", path=[bindir])
        try:
            server.start()
        except SshdUnavailable as exc:
            pytest.skip(f"sshd cannot run here: {exc}")
        try:
            raw = {"run": {"backend": "proxmox", "executor": "local-agent", "ramp_seconds": 1, "measure_seconds": 3,
                           "retries": 0},
                   "matrix": {"controllers": ["virtio-scsi-single"], "aio": ["threads"], "iothread": [True],
                              "cache": ["none"], "disk_slot": 0},
                   "workload": [{"name": "r", "rw": "randread", "bs": "64k", "iodepth": 4, "rate_mib_s": 16}],
                   "proxmox": {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": 100, "test_disk": "scsi0",
                               "token_id": "t", "token_secret_env": "SMX_SSH_SECRET", "ca_file": str(s.ca_file),
                               "qemu_server_dir": str(s.run_dir), "guest_channel": "serial1", "ready": "executor",
                               "ssh": server.target, "ssh_config": str(server.ssh_config), "ssh_dir": str(node_dir),
                               "pin_cpus": pin}}
            spec = spec_from_dict(raw, "ssh.toml")
            backend = Watched(spec, tmp_path / "run")
            seen: list[dict[str, Any]] = []

            def factory(scope: HostScope) -> Any:
                backend.pid, backend.watch = scope.pid, dict(scope.threads)
                seen.append({"ssh": scope.ssh, "pid": scope.pid,
                             "cpus": {tid: (role, allowed(scope.pid, tid)) for tid, role in scope.threads.items()}})
                collector = backend.collector_factory(scope)
                assert isinstance(collector, RemoteProcessesCollector)
                return collector

            summary = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=factory)).run()
        finally:
            server.stop()
    assert not summary.failed and summary.measured == 1, summary
    records = Journal(tmp_path / "run").records()
    cell = next(r for r in records if r["type"] == "cell")
    run = next(r for r in records if r["type"] == "run")
    host = cell["host"]
    # measured on the "node" by linux-host/multicollector.py over ssh, thread roles from HMP through the API
    assert seen[0]["ssh"] == server.target and host["pid"] == seen[0]["pid"]
    assert {t["role"] for t in host["threads"]} >= {ROLE_MAIN, ROLE_VCPU, ROLE_IOTHREAD}
    assert host["cpu_time_s"]["total"] > 0 and host["ctx_switches"] > 0 and cell["per_mib"]["ctx"] is not None
    assert {p.name for p in node_dir.glob("*.py")} == set(local_files())
    assert run["environment"]["host_collector"] == f"ssh {server.target}:{node_dir} (copied)"
    # the node's facts read there over the same ssh (inventory.py from the copied linux-host/), the
    # workstation's kept apart
    assert run["environment"]["host_inventory_source"] == f"ssh {server.target}:{node_dir}/inventory.py"
    assert "host_inventory_error" not in run["environment"] and "cpu_model" in run["environment"]
    assert set(run["environment"]["workstation"]) >= {"cpu_model", "kernel", "qemu"}
    # pinned with taskset over ssh while the window was open, put back after
    for tid, (role, cpus) in seen[0]["cpus"].items():
        assert cpus == (pin if role in (ROLE_VCPU, ROLE_IOTHREAD) else scope.format_cpuset(online)), (tid, role)
        assert backend.after[0][tid] == scope.format_cpuset(online)
    # qm showcmd and /proc/<pid>/cmdline read over ssh, kept, and the original's journaled
    names = sorted(p.name for p in (tmp_path / "run" / "proxmox").iterdir())
    assert names == ["001-virtio-scsi-single_aio=threads_iothread=1_cache=none.running.txt",
                     "001-virtio-scsi-single_aio=threads_iothread=1_cache=none.showcmd.txt", "original.showcmd.txt"]
    assert "aio=io_uring" in run["environment"]["qemu_cmdline"]
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


# --- bad ssh settings: exit 2 naming the key, before anything is changed -----------------------------------

@pytest.mark.parametrize("key, value, words", [
    ("ssh", "-oProxyCommand=touch /tmp/x", ["[proxmox] ssh", "is not an ssh target like root@pve1"]),
    ("ssh", "root@pve node", ["[proxmox] ssh", "is not an ssh target"]),
    ("ssh_dir", "$HOME/x", ["[proxmox] ssh_dir", "is not a plain directory path"]),
    ("ssh_config", "/nonexistent/ssh_config", ["[proxmox] ssh_config", "'/nonexistent/ssh_config' is not a file",
                                              "Fix: give the path of an ssh_config file"]),
])
def test_bad_ssh_settings_are_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, value: str,
                                     words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from standins.pve import PveStandin

    from stormatrix.cli import main

    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": "bad-ssh-secret-1234"})
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},cache=none", "boot": "order=scsi1"})
    monkeypatch.setenv("SMX_BAD_SSH", "bad-ssh-secret-1234")
    with s:
        digest0 = s.digest(100)
        path = tmp_path / "m.toml"
        path.write_text(f'''[run]
backend = "proxmox"
executor = "local-agent"
[matrix]
controllers = ["sata"]
disk_slot = 1
[[workload]]
name = "r"
rw = "randread"
bs = "4k"
[proxmox]
host = "127.0.0.1"
port = {s.port}
node = "pve"
vmid = 100
test_disk = "scsi1"
token_id = "t"
token_secret_env = "SMX_BAD_SSH"
ca_file = "{s.ca_file}"
guest_channel = "serial1"
{key} = "{value}"
''' + ('' if key == "ssh" else 'ssh = "root@pve-node"\n'))
        assert main(["run", str(path), "-o", str(tmp_path / "run"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        for w in words:
            assert w in err, err
        assert "Traceback" not in err and str(path) in err
        assert s.digest(100) == digest0 and not s.launcher.started  # type: ignore[attr-defined]


# --- the one ssh/scp argv builder (harness/ssh.py) ------------------------------------------------------

def test_ssh_argv_is_batch_mode_and_quotes_the_remote_command(tmp_path: Path) -> None:
    from stormatrix.ssh import SshOptions

    cfg = tmp_path / "cfg"
    o = SshOptions("root@pve1", str(cfg), known_hosts=str(tmp_path / "known"))
    argv = o.ssh_argv(["printf", "%s", "a b", "$HOME"])
    assert argv[:3] == ["ssh", "-F", str(cfg)] and argv[-3:] == ["root@pve1", "--", "printf %s 'a b' '$HOME'"]
    assert "BatchMode=yes" in argv and "ConnectTimeout=10" in argv and "StrictHostKeyChecking=yes" in argv
    assert f"UserKnownHostsFile={tmp_path / 'known'}" in argv
    assert o.scp_argv([tmp_path / "a.py"], "dir")[-2:] == [str(tmp_path / "a.py"), "root@pve1:dir/"]
    # without a config or known-hosts file: exactly the options every caller relied on
    assert SshOptions("esx01").ssh_argv("esxtop -b") == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                                                         "esx01", "--", "esxtop -b"]


@pytest.mark.parametrize("target", ["-oProxyCommand=touch /tmp/x", "root@pve node", "", "a;b"])
def test_ssh_targets_that_ssh_would_misread_are_refused(target: str) -> None:
    from stormatrix.ssh import SshOptions, check_target

    if target:
        with pytest.raises(ValueError, match="is not an ssh target"):
            check_target(target)
    with pytest.raises(ValueError):
        SshOptions(target).ssh_argv(["true"])
