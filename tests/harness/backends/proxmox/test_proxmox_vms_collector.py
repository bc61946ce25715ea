"""The host collector of a suite's VM list: all the VMs' QEMU processes in each point's window.

- ``linux-host/multicollector.py`` (the node side): its JSON-lines protocol, run as the script it is;
- over ssh: the private ``sshd`` on 127.0.0.1 of ``tests/standins/sshd.py`` (its own host key, a client
  key, an ``ssh_config`` passed as ``[proxmox] ssh_config``) stands in for the node's. The stand-in's VMs are real local processes, so the
  collector that ssh starts measures real pids. One ssh login per window, whatever the number of VMs;
- end to end: ``stormatrix suite run`` on a discovered guest (a real fio server) with the collector over
  ssh, and the journal's host block saying what it measured.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from standins.pve import PveStandin
from standins.sshd import PrivateSshd, SshdUnavailable
from suite_pve import LO, SECRET, SECRET_ENV, TOKEN, add_vm, eth, fio_server_on_host, suite_matrix, write_matrix

from stormatrix.cli import main
from stormatrix.core.errors import CollectorError
from stormatrix.journal import Journal
from stormatrix.registry import suite_from_dict
from stormatrix.collect import RemoteProcessesCollector
from stormatrix.backends.proxmox.vms import ProxmoxSuiteVms
import paths

MULTI = paths.ROOT / "linux-host" / "multicollector.py"


# --- the node side, as a script ------------------------------------------------------------------------

def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])


def test_multicollector_protocol() -> None:
    a, b = sleeper(), sleeper()
    try:
        proc = subprocess.Popen([sys.executable, str(MULTI)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdin and proc.stdout
        req = {"processes": [{"pid": a.pid, "name": "vm01", "roles": {str(a.pid): "main-loop"}},
                             {"pid": b.pid, "name": "vm02", "roles": {}}], "use_perf": False}
        t_request = time.monotonic()
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline()) == {"started": [a.pid, b.pid]}
        t_started = time.monotonic()
        time.sleep(0.5)
        t_stop = time.monotonic()
        out, _ = proc.communicate("stop\n", timeout=30)
        t_done = time.monotonic()
        results = json.loads(out)["results"]
        assert [r["name"] for r in results] == ["vm01", "vm02"]
        for r, p in zip(results, (a, b)):
            host = r["host"]
            assert host["pid"] == p.pid and host["cpu_metric"] in ("cycles", "cpu_time") and host["source"] == "proc"
            # opened before "started" was read and closed after "stop" was sent: it spans the sleep
            assert host["ctx_switches"] > 0 and (t_stop - t_started) * 0.99 <= host["window_s"] <= t_done - t_request
        assert proc.returncode == 0
    finally:
        for p in (a, b):
            p.kill()
            p.wait()


@pytest.mark.parametrize("request_line, words", [
    ("not json", "bad request from the controller"),
    (json.dumps({"processes": []}), "processes not empty"),
    (json.dumps({"processes": [{"pid": -3}]}), "bad request"),
    (json.dumps({"processes": [{"pid": 4194304 + 7}], "use_perf": False}), "is gone"),
])
def test_multicollector_refuses_clearly(request_line: str, words: str) -> None:
    proc = subprocess.run([sys.executable, str(MULTI)], input=request_line + "\n", capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 1
    assert words in json.loads(proc.stdout)["error"]


# --- the node over ssh: the shared private sshd (tests/standins/sshd.py) ---------------------------------

@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[PrivateSshd]:
    server = PrivateSshd(tmp_path / "sshd")
    try:
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET}) as s:
        yield s


def ssh_keys(sshd: PrivateSshd, tmp_path: Path) -> dict[str, Any]:
    """[proxmox] for a controller that is not the node: ssh to it; no qemu-server pid files here."""
    return {"ssh": sshd.target, "ssh_config": str(sshd.ssh_config), "ssh_dir": str(tmp_path / "node" / "linux-host"),
            "qemu_server_dir": str(tmp_path / "controller" / "qemu-server")}


def test_collector_over_ssh_measures_every_vm_in_one_login(standin: PveStandin, sshd: PrivateSshd, tmp_path: Path) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:10:01", "10.0.0.101/24")])
    add_vm(standin, 102, "vm02", interfaces=[LO, eth("ens18", "bc:24:11:00:10:02", "10.0.0.102/24")])
    pids = [standin.vms[v].qemu.pid for v in (101, 102)]  # type: ignore[union-attr]
    suite = suite_from_dict(suite_matrix(standin, [101, 102], proxmox=ssh_keys(sshd, tmp_path)), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        collector, status = vms.host_collector()
        assert isinstance(collector, RemoteProcessesCollector)
        assert status["mode"] == "ssh" and status["processes"] == 2
        assert status["detail"].startswith(f"2 QEMU processes on {sshd.target} over ssh")
        # linux-host/ went to the node, the multi-process collector with it
        assert (tmp_path / "node" / "linux-host" / "multicollector.py").read_bytes() == MULTI.read_bytes()
        assert collector.argv()[:3] == ["ssh", "-F", str(sshd.ssh_config)] and collector.argv()[-1].endswith(
            "/node/linux-host/multicollector.py")
        for _ in range(2):  # two windows
            before = sshd.accepted()
            collector.start()
            t_started = time.monotonic()
            time.sleep(0.6)
            t_stop = time.monotonic()
            host = collector.stop()
            assert sshd.accepted() - before == 1  # one session measures both VMs
            assert host is not None
            assert host["pid"] == pids and host["vms"] == ["vm01", "vm02"] and host["node"] == sshd.target
            assert host["cpu_metric"] in ("cycles", "cpu_time") and host["scope"] == "2 qemu processes"
            assert (t_stop - t_started) * 0.99 <= host["window_s"]  # the window spans the sleep
            assert {t["tid"] for t in host["threads"]} >= set(pids)


def test_the_node_is_described_over_the_collectors_ssh(standin: PveStandin, sshd: PrivateSshd,
                                                       tmp_path: Path) -> None:
    """A suite run's environment: the node's facts, read by inventory.py where the collector runs (the
    stand-in node is this machine behind sshd, so its kernel and CPU count are this machine's)."""
    import platform

    from stormatrix.records import run_environment
    from stormatrix.backends.proxmox.vms import ProxmoxVmGuests

    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:12:01", "10.0.0.121/24")])
    suite = suite_from_dict(suite_matrix(standin, [101], proxmox=ssh_keys(sshd, tmp_path)), "s.toml")
    with ProxmoxVmGuests(ProxmoxSuiteVms(suite)) as backend:
        backend.start()
        before = sshd.accepted()
        env = run_environment(backend)
    assert sshd.accepted() > before  # read over ssh, not here
    rdir = tmp_path / "node" / "linux-host"
    assert env["host_inventory_source"] == f"ssh {sshd.target}:{rdir}/inventory.py"
    assert env["kernel"] == platform.release() and env["cpus"] == os.cpu_count()
    assert env["workstation"]["kernel"] == platform.release()  # this machine's own facts, apart
    assert "host_inventory_error" not in env


def test_a_vm_gone_mid_window_fails_the_window_and_the_next_one_takes_fresh_pids(
        standin: PveStandin, sshd: PrivateSshd, tmp_path: Path) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:11:01", "10.0.0.111/24")])
    add_vm(standin, 102, "vm02", interfaces=[LO, eth("ens18", "bc:24:11:00:11:02", "10.0.0.112/24")])
    suite = suite_from_dict(suite_matrix(standin, [101, 102], proxmox=ssh_keys(sshd, tmp_path)), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        collector, _ = vms.host_collector()
        assert collector is not None
        collector.start()
        time.sleep(0.5)  # perf needs a moment before SIGINT gives counts (windows are >= 0.5 s)
        old = standin.vms[102].qemu
        assert old is not None
        old.stop()  # the VM's QEMU dies in the window...
        with pytest.raises(CollectorError, match=r"lost 1 of 2 VMs: vm02: process \d+ is gone"):
            collector.stop()
        # ...and comes back as a new process: the next window asks the API for the pids again
        standin.vms[102].qemu = standin.launcher.start(standin.launch_spec(standin.vms[102]))
        collector.start()
        time.sleep(0.5)
        host = collector.stop()
        assert host is not None and host["pid"][1] == standin.vms[102].qemu.pid != old.pid
        # a VM that stays down: named, with what to do
        standin.vms[102].qemu.stop()
        standin.vms[102].qemu = None
        collector.scopes.invalidate()  # type: ignore[attr-defined]
        with pytest.raises(CollectorError, match=r"VM 102 \(vm02\) is stopped: its QEMU process is gone"):
            collector.start()


def test_ssh_that_stops_working_is_a_collector_error_with_the_fix(standin: PveStandin, sshd: PrivateSshd,
                                                                   tmp_path: Path) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:12:01", "10.0.0.121/24")])
    suite = suite_from_dict(suite_matrix(standin, [101], proxmox=ssh_keys(sshd, tmp_path)), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        collector, _ = vms.host_collector()
        assert collector is not None
        # the node's host key changes (reinstalled node): BatchMode refuses, nothing hangs
        other = sshd.dir / "other_host_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        pub = Path(f"{other}.pub").read_text().split()
        sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {pub[0]} {pub[1]}\n")
        t0 = time.monotonic()
        with pytest.raises(CollectorError) as info:
            collector.start()
        assert time.monotonic() - t0 < 20
        msg = str(info.value)
        assert f"host collector on {sshd.target}: the collector did not start" in msg
        assert f"the login must work without a prompt (ssh -o BatchMode=yes {sshd.target} true)" in msg


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_suite_run_with_host_metrics_over_ssh(standin: PveStandin, sshd: PrivateSshd, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with fio_server_on_host(tmp_path / "guest") as (host, port):
        add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:13:01", f"{host}/24")])
        raw = suite_matrix(standin, [101], proxmox=ssh_keys(sshd, tmp_path), port=port, filename="target.dat",
                           size="4m", queue_depths=[1, 4], measure_seconds=1.0, host_metrics="require")
        rc = main(["suite", "run", str(write_matrix(tmp_path / "s.toml", raw)), "-o", str(tmp_path / "run")])
        out, err = capsys.readouterr()
        assert rc == 0, err
        assert f"host metrics: ssh: 1 QEMU processes on {sshd.target} over ssh" in err
    records = Journal(tmp_path / "run").records()
    run = next(r for r in records if r["type"] == "run")
    assert run["host_collector"]["mode"] == "ssh" and run["host_collector"]["ssh"] == sshd.target
    env = run["environment"]  # the node, described where the collector ran; this machine apart
    assert env["host_inventory_source"].startswith(f"ssh {sshd.target}:") and env["kernel"]
    assert "workstation" in env and "host_inventory_error" not in env
    cells = [r for r in records if r["type"] == "cell"]
    assert len(cells) == 2
    pid = standin.vms[101].qemu.pid  # type: ignore[union-attr]
    for c in cells:
        assert c["host"]["node"] == sshd.target and c["host"]["pid"] == pid and c["host"]["vms"] == ["vm01"]
        unit = {"cycles": "cycles/MiB", "cpu_time": "CPU-ms/MiB"}[c["host"]["cpu_metric"]]
        assert c["per_mib"]["cpu_unit"] == unit and c["per_mib"]["ctx"] is not None
    assert SECRET not in (tmp_path / "run" / "journal.ndjson").read_text() + out + err


def test_a_missing_ssh_config_names_the_key(standin: PveStandin, tmp_path: Path) -> None:
    from stormatrix.core.errors import MatrixError

    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:14:01", "10.0.0.141/24")])
    keys = {"ssh": "root@pve-node", "ssh_config": str(tmp_path / "no-such-config"),
            "qemu_server_dir": str(tmp_path / "controller")}
    suite = suite_from_dict(suite_matrix(standin, [101], proxmox=keys), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        with pytest.raises(MatrixError) as info:
            vms.host_collector()
    assert info.value.key == "[proxmox] ssh_config" and info.value.exit_code == 2 and "Fix:" in str(info.value)
