"""The CPU-set scope on the proxmox backend (``[host] scope = "cpus"``, issue 33) end to end: the Proxmox stand-in
(its ``affinity`` schema-checked, its QEMU started under qemu-server's taskset), the node's files as a fake /proc and
/sys tree with a real irqbalance (tests/standins/pve_nodefs.py) and a real sshd as the node (tests/standins/sshd.py).

Relations that hold on any machine: ``plan`` lists every setting the run changes, or refuses the node with the fix;
during the run every named IRQ, work-queue mask and RPS/XPS mask holds the set, irqbalance is stopped, the VM's
QEMU runs with ``affinity`` = the set, and the harness's collector and its ssh session on the node are off the set;
after a normal end, an error, and a kill -9 followed by ``stormatrix restore``, every host setting, irqbalance and
the VM's config (affinity included, digest-identical) are as they were.
"""

from __future__ import annotations

import json
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
from standins.pve_nodefs import NodeDescription, NodeTree
from standins.sshd import PrivateSshd, SshdUnavailable

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.cli import main
from stormatrix.core.errors import BackendError, MatrixError, TaskFailed
from stormatrix.core.model import DiskConfig
from stormatrix.core.scope import HostScope, parse_cpuset
from stormatrix.journal import Journal
from stormatrix.registry import spec_from_dict

SECRET = "0c1d2e3f-aaaa-4bbb-8ccc-0123456789ab"
TOKEN = "root@pam!stormatrix"
VMID = 100
SET = "1"  # the fake node has CPUs 0-3; CPU 1 exists on every test machine too, so the QEMU's real affinity is set
CELL = DiskConfig("virtio-scsi-single", "threads", False, "none")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[NodeTree, PrivateSshd]]:
    """The node: its files (irqbalance under systemd, rebalancing rarely so that values compare exactly) and sshd,
    whose sessions find the node's systemctl first on their PATH."""
    tree = NodeTree(tmp_path / "nodefs", NodeDescription(irqbalance="systemd", rebalance_s=3600,
                                                         live_stat=True)).build()
    bindir = tmp_path / "nodebin"
    tree.install_systemctl(bindir)
    server = PrivateSshd(tmp_path / "sshd", path=[bindir])
    try:
        server.start()
    except SshdUnavailable as exc:
        tree.close()
        pytest.skip(f"sshd cannot run here: {exc}")
    try:
        yield tree, server
    finally:
        server.stop()
        tree.close()


@pytest.fixture(params=[None, "0-3"], ids=["affinity-unset", "affinity-0-3"])
def standin(request: pytest.FixtureRequest, tmp_path: Path, node: tuple[NodeTree, PrivateSshd],
            monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv("SMX_PVE_SECRET", SECRET)
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    s.node_tree = node[0]
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    conf = {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
            "scsi1": f"{vol},aio=native,cache=none,iothread=1,serial=SMXTEST,size=64M", "boot": "order=scsi1",
            "agent": "1"}
    if request.param:
        conf["affinity"] = request.param
    s.add_vm(VMID, conf)
    with s:
        yield s


def matrix(standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path, *,
           host: dict[str, Any] | None = None, **proxmox: Any) -> dict[str, Any]:
    tree, sshd = node
    return {
        "run": {"backend": "proxmox", "boot_timeout_seconds": 5},
        "matrix": {"disk_slot": 1, "controllers": ["virtio-scsi-single", "sata"], "aio": ["threads"],
                   "iothread": [False], "cache": ["none"]},
        "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
        "host": {"scope": "cpus", "cpus": SET, "irqs": ["ens19", "nvme"], "interfaces": ["ens19"], **(host or {})},
        "proxmox": {"host": "127.0.0.1", "port": standin.port, "node": "pve", "vmid": VMID, "test_disk": "scsi1",
                    "token_id": "stormatrix", "token_secret_env": "SMX_PVE_SECRET", "ca_file": str(standin.ca_file),
                    "timeout": 20, "task_timeout": 30, "qemu_server_dir": str(standin.run_dir),
                    "ssh": sshd.target, "ssh_config": str(sshd.ssh_config), "ssh_dir": str(tmp_path / "node-lh"),
                    "node_root": str(tree.root), "check_cmdline": False, **proxmox},
    }


def toml(raw: dict[str, Any]) -> str:
    """The matrix as a TOML file (strings, numbers, booleans and lists of those are all it holds)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)
    out = []
    for name, section in raw.items():
        for table in (section if isinstance(section, list) else [section]):
            out.append(f"[[{name}]]" if isinstance(section, list) else f"[{name}]")
            out += [f"{k} = {value(v)}" for k, v in table.items()]
    return "\n".join(out) + "\n"


def on_set(tree: NodeTree) -> None:
    """Every setting the run changes holds the set (masks: CPU 1 = 0x2), irqbalance is stopped."""
    now = tree.settings()
    assert now["irqbalance"] is False
    assert all(now[f"irq{n}"] == SET for n in (40, 41, 42, 50, 51)), now
    assert now["irq60"] != SET or tree.desc.irqs  # eno1 is not named: whatever irqbalance left there
    assert all(now[k] == "2" for k in now if k.startswith(("wq", "ens19/"))), now
    assert tree.problems() == []


def cpus_allowed(pid: int) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return set(parse_cpuset(line.split(":", 1)[1].strip()))
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


def session_chain(pid: int) -> list[int]:
    """``pid`` and its parents up to the ssh session's sshd, included."""
    out = []
    while pid > 1:
        out.append(pid)
        if Path(f"/proc/{pid}/comm").read_text().startswith("sshd"):
            break
        text = Path(f"/proc/{pid}/stat").read_text()
        pid = int(text[text.rindex(")") + 2:].split()[1])
    return out


def test_plan_lists_every_change(standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    before = node[0].settings()
    path = tmp_path / "matrix.toml"
    path.write_text(toml(matrix(standin, node, tmp_path)))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"VM {VMID}: affinity = {SET}" in out
    # irqbalance left IRQ 41 on CPU 1 already (it spreads IRQs 40, 41, 42, 50, 51 over CPUs 0, 1, 2, 3, 0): no change
    assert "IRQ 41 (" not in out
    for line in ("IRQ 40 (", "IRQ 42 (", "IRQ 50 (", "IRQ 51 (", "irqbalance: stopped during the run",
                 "work queue mask /sys/devices/virtual/workqueue/cpumask", "workqueue/iscsi_q_2/cpumask",
                 "ens19 steering /sys/class/net/ens19/queues/rx-0/rps_cpus", "queues/tx-0/xps_cpus",
                 "the harness's collector and its ssh session run on CPUs 0,2-3"):
        assert line in out, line
    assert "IRQ 60" not in out and "eno1" not in out  # not named: not changed
    assert node[0].settings() == before  # plan reads, changes nothing


@pytest.mark.parametrize("host,proxmox,message", [
    ({"cpus": "0-3"}, {}, "leaves none for the harness"),
    ({"cpus": "2-7"}, {}, "names CPU 4-7, which the host does not have online"),
    ({"irqs": ["ens19", "iscsi-hba"]}, {}, "'iscsi-hba' matches no IRQ in /proc/interrupts"),
    ({"interfaces": ["ens99"]}, {}, "the host has no network interface 'ens99'"),
    ({}, {"ssh": ""}, "[proxmox] ssh: is empty, but [host] scope = \"cpus\" changes the node's IRQ"),
])
def test_plan_refuses_a_node_it_cannot_steer(standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str], host: dict[str, Any],
                                             proxmox: dict[str, Any], message: str) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(toml(matrix(standin, node, tmp_path, host=host, **proxmox)))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Fix:" in err and str(path) in err, err


def test_plan_refuses_irqbalance_it_could_not_start_again(standin: PveStandin, node: tuple[NodeTree, PrivateSshd],
                                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = node[0]
    subprocess.run([str(tree.systemctl), "stop", "irqbalance"], check=True, timeout=30)
    tree.start_irqbalance()  # outside systemd now, its command line unreadable
    (tree.root / f"proc/{tree.irqbalance_pid()}/cmdline").write_bytes(b"")
    path = tmp_path / "matrix.toml"
    path.write_text(toml(matrix(standin, node, tmp_path)))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "irqbalance" in err and "could not be started again" in err and "systemd unit" in err


def test_run_confines_and_a_normal_end_puts_everything_back(standin: PveStandin, node: tuple[NodeTree, PrivateSshd],
                                                            tmp_path: Path) -> None:
    tree, _ = node
    before, digest0 = tree.settings(), standin.digest(VMID)
    affinity0 = standin.vms[VMID].conf.get("affinity")
    b = pmx.ProxmoxBackend(spec_from_dict(matrix(standin, node, tmp_path)), tmp_path / "run")
    facts = b.prepare()
    assert facts["host_scope"] == "cpus" and facts["host_cpus"] == SET
    original = b.original_config()
    assert original is not None and original["host_settings"]["affinity"] == affinity0
    assert set(original["host_settings"]["state"]["irqs"]) == {"40", "41", "42", "50", "51"}
    assert tree.settings() == before  # prepare reads only; the change comes after the journal has it
    for disk in (CELL, DiskConfig("sata", "threads", False, "none")):
        b.apply(disk)
        vm = standin.vms[VMID]
        assert vm.running and vm.affinity == SET and not vm.pending
        assert vm.qemu is not None and cpus_allowed(vm.qemu.pid) == {1}
        on_set(tree)
    # the collector on the node, and its ssh session, run off the set while they measure
    qemu = standin.vms[VMID].qemu
    assert qemu is not None
    # the sleeping "QEMU" has no monitor for thread roles: its main thread is all there is
    collector = b.collector_factory(HostScope(pid=qemu.pid, threads={qemu.pid: "main"}, vm="bench",
                                              ssh=node[1].target))
    collector.start()
    try:
        found = [int(p) for p in os.listdir("/proc") if p.isdigit()
                 and b"multicollector.py" in Path(f"/proc/{p}/cmdline").read_bytes()
                 and b"ssh" not in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0]]
        assert found, "the collector does not run on the node"
        for pid in found:
            session = session_chain(pid)
            assert Path(f"/proc/{session[-1]}/comm").read_text().startswith("sshd")
            for p in session:
                assert 1 not in cpus_allowed(p), (p, Path(f"/proc/{p}/cmdline").read_bytes())
    finally:
        block = collector.stop()
    # the set's figures in the usual keys, the QEMU process's beside them: the set's window holds the process's
    assert block is not None and block["scope"] == "cpus" and block["cpus"] == SET
    assert block["process"]["pid"] == qemu.pid and block["process"]["scope"] == "qemu-process"
    assert "leak" in block and isinstance(block["on_set"], list)
    for key in ("cpu_total", "ctx_switches"):
        if block[key] is not None and block["process"][key] is not None:
            assert block[key] >= block["process"][key], key
    b.stop()
    b.restore()
    b.restore()  # idempotent
    b.close()
    assert tree.settings() == before
    assert standin.digest(VMID) == digest0 and standin.vms[VMID].conf.get("affinity") == affinity0
    assert tree.problems() == []


def test_an_error_puts_everything_back(standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path) -> None:
    tree, _ = node
    before, digest0 = tree.settings(), standin.digest(VMID)
    b = pmx.ProxmoxBackend(spec_from_dict(matrix(standin, node, tmp_path)), tmp_path / "run")
    b.prepare()
    standin.fail_next_task("qmstart", "start failed: QEMU exited with code 1")
    with pytest.raises(TaskFailed):
        b.apply(CELL)
    assert tree.settings()["irqbalance"] is False  # steered before the failing start
    b.restore()
    b.close()
    assert tree.settings() == before and standin.digest(VMID) == digest0


def test_a_start_with_a_cpu_the_node_lacks_fails_in_the_standin(standin: PveStandin, node: tuple[NodeTree, PrivateSshd],
                                                                tmp_path: Path) -> None:
    """The stand-in's own check (qemu-server's taskset), independent of the backend's plan-time one."""
    vm = standin.vms[VMID]
    vm.conf["affinity"] = "9"
    raw = matrix(standin, node, tmp_path)
    raw["host"] = {"scope": "process"}
    b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")
    b.prepare()
    with pytest.raises(TaskFailed, match="failed to set pid .* affinity: Invalid argument"):
        b.apply(CELL)
    b.restore()
    b.close()


def test_affinity_is_schema_checked(standin: PveStandin) -> None:
    import ssl
    import urllib.error
    import urllib.request

    digest = standin.digest(VMID)
    for bad in ("1-", "3-1", "a", "1;2"):
        req = urllib.request.Request(f"https://127.0.0.1:{standin.port}/api2/json/nodes/pve/qemu/{VMID}/config",
                                     data=f"affinity={bad}&digest={digest}".encode(), method="PUT",
                                     headers={"Authorization": f"PVEAPIToken={TOKEN}={SECRET}"})
        ctx = ssl.create_default_context(cafile=str(standin.ca_file))
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, context=ctx, timeout=20)
        assert exc.value.code == 400
        assert "unable to parse cpuset option" in exc.value.read().decode()
    assert standin.digest(VMID) == digest


HARNESS = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from stormatrix.backends.proxmox import backend as proxmox
    from stormatrix.core.model import DiskConfig
    from stormatrix.journal import Journal
    from stormatrix.registry import spec_from_dict
    raw = json.loads(Path(sys.argv[1]).read_text())
    run_dir = Path(sys.argv[2])
    b = proxmox.ProxmoxBackend(spec_from_dict(raw), run_dir)
    b.prepare()
    Journal(run_dir).open().append({"type": "run", "run_id": "r1", "matrix": raw, "backend": "proxmox",
                                    "original_config": b.original_config()})
    b.apply(DiskConfig("virtio-scsi-single", "threads", False, "none"))
    print("applied", flush=True)
    time.sleep(600)
""")


def test_kill_9_then_stormatrix_restore(standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    tree, _ = node
    before, digest0 = tree.settings(), standin.digest(VMID)
    raw = matrix(standin, node, tmp_path)
    (tmp_path / "matrix.json").write_text(json.dumps(raw))
    run_dir = tmp_path / "run"
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "matrix.json"), str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "applied", proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    on_set(tree)  # the crash left the node steered and the VM confined
    assert standin.vms[VMID].affinity == SET and standin.digest(VMID) != digest0
    # resuming there first would journal the steered values as the node's own: refused, with the fix
    again = pmx.ProxmoxBackend(spec_from_dict(raw), run_dir)
    with pytest.raises(BackendError, match=r"was not put back .* Fix: stormatrix restore"):
        again.prepare()
    again.close()
    on_set(tree)
    assert main(["restore", str(run_dir)]) == 0
    assert "restored to its original configuration" in capsys.readouterr().out
    assert tree.settings() == before
    assert standin.digest(VMID) == digest0
    assert main(["restore", str(run_dir)]) == 0
    assert "nothing to restore" in capsys.readouterr().out
    assert Journal(run_dir).records()[-1]["type"] == "restored"
    journal = (run_dir / "journal.ndjson").read_text()
    assert SECRET not in journal and '"host_settings"' in journal


def test_cpus_is_required_with_the_cpu_scope(standin: PveStandin, node: tuple[NodeTree, PrivateSshd],
                                             tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match=r"\[host\] cpus: is empty"):
        pmx.ProxmoxBackend(spec_from_dict(matrix(standin, node, tmp_path, host={"cpus": ""})), tmp_path / "run")
    with pytest.raises(MatrixError, match=r"\[host\] irqs: is steered onto the measured CPU set, but this matrix "
                                          r"measures 'process'"):
        pmx.ProxmoxBackend.host(spec_from_dict(matrix(standin, node, tmp_path, host={"scope": "process", "cpus": ""})))


class OnSetCollector:
    """The window's host collector for the runner test: at each window's start it looks at the node (every setting
    on the set, irqbalance stopped, the VM's QEMU started with the set), then answers like the real one."""

    seen: list[dict[str, Any]] = []

    def __init__(self, scope: Any, tree: NodeTree, standin: PveStandin) -> None:
        from standins.agent import FakeCollector

        self.inner = FakeCollector(scope)
        self.tree, self.standin = tree, standin

    def start(self) -> None:
        on_set(self.tree)
        OnSetCollector.seen.append({"affinity": self.standin.vms[VMID].affinity})
        self.inner.start()

    def stop(self) -> dict[str, Any]:
        return self.inner.stop()

    def abort(self) -> None:
        self.inner.abort()


def test_a_run_through_the_runner_confines_every_window_and_ends_as_it_began(
        tmp_path: Path, node: tuple[NodeTree, PrivateSshd], monkeypatch: pytest.MonkeyPatch) -> None:
    from standins.agent import AgentFaults, AgentStandin

    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions

    tree, _ = node
    monkeypatch.setenv("SMX_PVE_SECRET", SECRET)
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    s.node_tree = tree
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    s.add_vm(VMID, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                    "scsi1": f"{vol},cache=none,size=64M", "serial1": "socket"})
    before = tree.settings()
    OnSetCollector.seen = []
    with s:
        digest0 = s.digest(VMID)
        agent = AgentStandin(s.run_dir / f"{VMID}.serial1", AgentFaults())
        try:
            raw = matrix(s, node, tmp_path, guest_channel="serial1", ready="executor")
            raw["run"].update(executor="local-agent", ramp_seconds=0, measure_seconds=1, retries=0)
            runner = Runner(spec_from_dict(raw), tmp_path / "run", RunOptions(
                progress=False, collector_factory=lambda scope: OnSetCollector(scope, tree, s)))
            monkeypatch.setattr(runner.backend_cls, "thread_roles", lambda self: {})  # the sleeping "QEMU" has no monitor
            monkeypatch.setattr(runner.backend_cls, "blockstats", lambda self: None)
            summary = runner.run()
        finally:
            agent.close()
        assert s.digest(VMID) == digest0 and "affinity" not in s.vms[VMID].conf
    assert summary.measured == 2 and not summary.failed, summary
    assert OnSetCollector.seen == [{"affinity": SET}] * 2
    assert tree.settings() == before and tree.problems() == []
    records = Journal(tmp_path / "run").records()
    run = next(r for r in records if r["type"] == "run")
    assert run["environment"]["host_scope"] == "cpus" and run["environment"]["host_cpus"] == SET
    assert run["original_config"]["host_settings"]["state"]["irqbalance"]["how"] == "systemd"
    assert records[-1]["type"] == "restored"


def test_ctrl_c_during_apply_puts_everything_back(standin: PveStandin, node: tuple[NodeTree, PrivateSshd],
                                                  tmp_path: Path) -> None:
    tree, _ = node
    before, digest0 = tree.settings(), standin.digest(VMID)
    b = pmx.ProxmoxBackend(spec_from_dict(matrix(standin, node, tmp_path)), tmp_path / "run")
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
                b.apply(CELL)
            finally:
                assert tree.settings()["irqbalance"] is False  # the node was steered before the start
                b.restore()
    finally:
        b.close()
    assert tree.settings() == before and standin.digest(VMID) == digest0


def test_affinity_written_to_a_running_vm_stays_pending_until_its_next_start(
        standin: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path) -> None:
    """The stand-in's own behaviour (qemu-server applies ``affinity`` at QEMU's start: taskset around it)."""
    b = pmx.ProxmoxBackend(spec_from_dict(matrix(standin, node, tmp_path)), tmp_path / "run")
    c = b.client
    c.wait_task(c.power("start"), what="start")
    vm = standin.vms[VMID]
    started_with = vm.affinity
    c.update_config({"affinity": "2"}, c.config()["digest"])
    assert c.config()["affinity"] == "2"  # the config with pending values merged
    assert c.config(current=True).get("affinity") == started_with  # the running values
    assert [p.get("pending") for p in c.pending() if p["key"] == "affinity"] == ["2"]
    assert vm.affinity == started_with  # the running QEMU keeps what it was started with
    c.wait_task(c.power("stop"), what="stop")
    c.wait_task(c.power("start"), what="start")
    assert vm.affinity == "2" and not [p for p in c.pending() if "pending" in p]
    c.wait_task(c.power("stop"), what="stop")
    b.close()
