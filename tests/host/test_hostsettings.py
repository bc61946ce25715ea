"""linux-host/hostsettings.py against the fake node tree (tests/standins/pve_nodefs.py), run the way the Proxmox
backend runs it on a node: ``python3 - <command>`` with the program ``hostscope.source()`` builds (the module and
the linux-host/ modules it imports) on stdin, every path under ``--root``.

Relations that hold on any machine: what ``read`` lists is what ``apply`` changes; after ``apply`` every listed
file holds the set and irqbalance is stopped (a running one would rewrite the IRQs within 0.05 s); after
``restore`` every file and irqbalance's state is as before, and a second restore changes nothing; a host that
cannot be steered is refused with the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.pve_nodefs import NodeDescription, NodeTree

from stormatrix.backends.proxmox import hostscope
from stormatrix.backends.proxmox import node as pmxnode
from stormatrix.host import cpulist
from stormatrix.host import hostsettings as hs

SOURCE = hostscope.source()
# a python3 with nothing of stormatrix, as on a node: no PYTHONPATH, user site, site-packages or script folder
BARE = [sys.executable, "-I", "-S", "-B"]


def run(tree: NodeTree, *args: str, systemctl: str = "") -> tuple[int, dict[str, Any]]:
    cmd = [sys.executable, "-B", "-", *args, "--root", str(tree.root), "--systemctl", systemctl]
    proc = subprocess.run(cmd, input=SOURCE, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def read(tree: NodeTree, cpus: str, irqs: list[str], ifaces: list[str], systemctl: str = "") -> dict[str, Any]:
    args = ["read", "--cpus", cpus]
    for p in irqs:
        args += ["--irq", p]
    for i in ifaces:
        args += ["--interface", i]
    rc, doc = run(tree, *args, systemctl=systemctl)
    assert rc == 0, doc
    return doc


@pytest.fixture(params=["systemd", "pid"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[NodeTree, str]]:
    t = NodeTree(tmp_path / "node", NodeDescription(irqbalance=request.param, rebalance_s=0.05))
    t.build()
    systemctl = str(t.install_systemctl(tmp_path / "bin")) if request.param == "systemd" else ""
    try:
        yield t, systemctl
    finally:
        t.close()


def test_read_apply_restore_round_trip(tree: tuple[NodeTree, str]) -> None:
    t, systemctl = tree
    doc = read(t, "1-2", ["ens19", "nvme"], ["ens19"], systemctl)
    assert doc["problems"] == []
    state = doc["state"]
    assert sorted(state["irqs"], key=int) == ["40", "41", "42", "50", "51"]  # eno1's IRQ 60 is not named
    assert state["irqbalance"]["active"] and state["irqbalance"]["how"] == ("systemd" if systemctl else "pid")
    assert {Path(p).parent.name for p in state["workqueues"]} == {"workqueue", "iscsi_q_2", "writeback",
                                                                  "blkcg_punt_bio"}  # kblockd is per-CPU
    assert set(state["steering"]) == {"ens19"} and len(state["steering"]["ens19"]) == 4
    # every change is listed once, irqbalance's included
    assert any(c.startswith("irqbalance:") for c in doc["changes"])
    assert len(doc["changes"]) == 1 + 5 + 4 + 4
    before = t.settings()
    rc, applied = run(t, "apply", "--cpus", "1-2", "--state", json.dumps(state), systemctl=systemctl)
    assert rc == 0, applied
    time.sleep(0.3)  # a running irqbalance would have rewritten the IRQs by now (every 0.05 s)
    now = t.settings()
    assert now["irqbalance"] is False
    assert all(now[f"irq{n}"] == "1-2" for n in (40, 41, 42, 50, 51))
    assert now["irq60"] != "1-2"  # not named: left alone (irqbalance puts each IRQ on one CPU)
    assert now["wq"] == "6" and now["wq/iscsi_q_2"] == "6"
    assert all(now[f"ens19/{q}"] == "6" for q in ("rx-0", "rx-1", "tx-0", "tx-1"))
    assert now["eno1/rx-0"] == before["eno1/rx-0"]
    assert t.problems() == []
    rc, restored = run(t, "restore", "--state", json.dumps(state), systemctl=systemctl)
    assert rc == 0 and restored["failed"] == [], restored
    assert any("irqbalance" in r for r in restored["restored"])
    # irqbalance is back and spreads the IRQs again; the IRQ values as it left them before are the ones restored
    # (it rewrites them at its start the same way), every other file exactly as before
    deadline = time.monotonic() + 5
    while not t.settings()["irqbalance"] and time.monotonic() < deadline:
        time.sleep(0.05)
    after = t.settings()
    assert after["irqbalance"] is True
    assert {k: v for k, v in after.items() if not k.startswith("irq")} == \
        {k: v for k, v in before.items() if not k.startswith("irq")}


def test_restore_is_idempotent_and_exact_without_irqbalance(tmp_path: Path) -> None:
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        (t.root / "proc/irq/50/smp_affinity_list").write_text("0,3\n")
        before = t.settings()
        doc = read(t, "2", ["nvme"], ["ens19", "eno1"])
        assert doc["problems"] == [] and not doc["state"]["irqbalance"]["active"]
        assert not any(c.startswith("irqbalance") for c in doc["changes"])
        rc, _ = run(t, "apply", "--cpus", "2", "--state", json.dumps(doc["state"]))
        assert rc == 0 and t.settings() != before
        for _ in range(2):
            rc, out = run(t, "restore", "--state", json.dumps(doc["state"]))
            assert rc == 0 and t.settings() == before
        assert out["restored"] == []  # the second restore found everything as it was


def test_restore_after_a_partial_apply_puts_back_what_was_written(tmp_path: Path) -> None:
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        before = t.settings()
        doc = read(t, "3", ["ens19"], ["ens19"])
        # as if the harness died after the first two writes
        (t.root / "proc/irq/40/smp_affinity_list").write_text("3\n")
        (t.root / "sys/devices/virtual/workqueue/cpumask").write_text("8\n")
        rc, out = run(t, "restore", "--state", json.dumps(doc["state"]))
        assert rc == 0 and len(out["restored"]) == 2 and t.settings() == before


@pytest.mark.parametrize("cpus,irqs,ifaces,what,fix", [
    ("2-7", ["nvme"], [], "names CPU 4-7, which the host does not have online", "give [host] cpus out of 0-3"),
    ("0-3", ["nvme"], [], "leaves none for the harness", "leave at least one CPU out of [host] cpus"),
    ("1", ["iscsi-nic"], [], "'iscsi-nic' matches no IRQ", "name a substring"),
    ("1", ["nvme"], ["ens99"], "has no network interface 'ens99'", "name the storage NIC as in /sys/class/net"),
])
def test_unfit_hosts_are_refused_with_the_fix(tmp_path: Path, cpus: str, irqs: list[str], ifaces: list[str],
                                              what: str, fix: str) -> None:
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        doc = read(t, cpus, irqs, ifaces)
        assert any(what in p["what"] and fix in p["fix"] for p in doc["problems"]), doc["problems"]


def test_irqbalance_without_a_command_line_cannot_be_put_back(tmp_path: Path) -> None:
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance="pid", rebalance_s=3600)) as t:
        pid = t.irqbalance_pid()
        (t.root / f"proc/{pid}/cmdline").write_bytes(b"")
        doc = read(t, "1", ["nvme"], [])
        assert any("irqbalance" in p["what"] and "systemd unit" in p["fix"] for p in doc["problems"])


def test_cpu_lists_and_masks() -> None:
    assert cpulist.parse_cpulist("0-3,8") == [0, 1, 2, 3, 8] and cpulist.format_cpulist([8, 0, 1, 2, 3]) == "0-3,8"
    assert cpulist.format_mask([1, 2]) == "6" and cpulist.parse_mask("00000000,00000006") == [1, 2]
    assert cpulist.format_mask([32]) == "1,00000000" and cpulist.parse_mask("1,00000000") == [32]
    assert cpulist.format_mask([]) == "0"
    with pytest.raises(ValueError):
        cpulist.parse_cpulist("3-1")


def test_the_program_on_stdin_needs_nothing_but_python3(tmp_path: Path) -> None:
    """What the backend sends (hostscope.SOURCE_FILES) is every module hostsettings.py imports: it runs with a
    python3 that has no stormatrix and no linux-host/ file to fall back on, from an empty folder."""
    empty = tmp_path / "empty"
    empty.mkdir()
    probe = subprocess.run([*BARE, "-c", "import stormatrix"], cwd=empty, capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0, "this python3 finds stormatrix: the test below would prove nothing"
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        before = t.settings()
        cmd = [*BARE, "-", "read", "--cpus", "1", "--irq", "nvme", "--interface", "ens19", "--root", str(t.root),
               "--systemctl", ""]
        proc = subprocess.run(cmd, input=SOURCE, cwd=empty, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["problems"] == [] and doc["changes"] and doc["state"]["cpus"] == "1"
        rc = subprocess.run([*BARE, "-", "restore", "--state", json.dumps(doc["state"]), "--root", str(t.root),
                             "--systemctl", ""], input=SOURCE, cwd=empty, capture_output=True, text=True,
                            timeout=60)
        assert rc.returncode == 0 and json.loads(rc.stdout) == {"restored": [], "failed": []}, rc.stderr
        assert t.settings() == before
    assert list(empty.iterdir()) == []  # nothing written where it ran


def test_off_set_runs_from_the_files_copied_to_the_node(tmp_path: Path) -> None:
    """``hostsettings.py off-set`` runs from the node's copy of linux-host/ (node.collector_files(), what
    ensure_remote_collector copies): the modules it imports are among them."""
    node_dir = tmp_path / "node" / "linux-host"
    node_dir.mkdir(parents=True)
    for f in pmxnode.collector_files():
        shutil.copy(f, node_dir / f.name)
    empty = tmp_path / "empty"
    empty.mkdir()
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        # as hostscope.NodeSettings.off_set_prefix builds it, without -I: python3 runs the file next to its siblings
        cmd = [sys.executable, "-E", "-s", "-S", "-B", str(node_dir / "hostsettings.py"), "off-set", "--cpus", "1",
               "--root", str(t.root), "--", sys.executable, "-I", "-S", "-c", "print('ran off the set')"]
        proc = subprocess.run(cmd, cwd=empty, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ran off the set", (proc.stdout, proc.stderr)


def test_an_irq_the_kernel_manages_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel-managed IRQ refuses any write with EIO (kernel/irq/proc.c write_irq_affinity), even its own value;
    a fake file cannot answer EIO, so the host's write is the kernel here."""
    with NodeTree(tmp_path / "n", NodeDescription(irqbalance=None)) as t:
        real = hs.Host.write

        def write(self: hs.Host, rel: str, value: str) -> None:
            if rel == "proc/irq/51/smp_affinity_list":
                raise hs.HostProblem(f"writing {value!r} to /{rel} failed: Input/output error")
            real(self, rel, value)

        monkeypatch.setattr(hs.Host, "write", write)
        before = t.settings()
        doc = hs.read_state(hs.Host(str(t.root), None), [1], ["nvme"], [])
        assert [p["what"].split(" (")[0] for p in doc["problems"]] == ["IRQ 51"]
        assert "leave this IRQ out of [host] irqs" in doc["problems"][0]["fix"]
        assert t.settings() == before  # the probe wrote each IRQ's own value back: nothing changed


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run the module as another user")
def test_a_user_who_is_not_root_is_refused(tmp_path: Path) -> None:
    """Over ssh as a user other than root the node's files are read-only: every file and irqbalance is refused with
    the fix (ssh as root), before anything is changed."""
    base = Path(tempfile.mkdtemp(prefix="smx-nonroot-"))  # readable by everyone (pytest's tmp_path is root's only)
    try:
        base.chmod(0o755)
        with NodeTree(base / "n", NodeDescription(irqbalance="pid", rebalance_s=3600)) as t:
            for d in [base / "n", *(p for p in (base / "n").rglob("*") if p.is_dir())]:
                d.chmod(0o755)
            for f in (p for p in (base / "n").rglob("*") if p.is_file()):
                f.chmod(0o644)
            before = t.settings()
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-B", "-", "read",
                   "--cpus", "1", "--irq", "nvme", "--interface", "ens19", "--root", str(t.root), "--systemctl", ""]
            proc = subprocess.run(cmd, input=SOURCE, capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0, proc.stderr
            problems = json.loads(proc.stdout)["problems"]
            assert any("smp_affinity_list is not writable by uid 65534" in p["what"] for p in problems)
            assert any("xps_cpus is not writable by uid 65534" in p["what"] for p in problems)
            assert any("irqbalance" in p["what"] and "cannot be stopped" in p["what"] for p in problems)
            assert all("[proxmox] ssh = \"root@NODE\"" in p["fix"] for p in problems)
            assert t.settings() == before
    finally:
        shutil.rmtree(base, ignore_errors=True)
