"""The example files of the real cases (examples/) plan as their technotes describe them, against the stand-ins.

Each example is read as shipped; only what points it at a real lab (host, port, node, CA file, the pwsh and
qemu-server paths) is replaced by the stand-in's, and the stand-in is given what the example names (the VM,
the template, the storages), so a key the example gets wrong fails here as it would on the user's lab.

- Technote 004's matrix (Proxmox, a Windows Server 2022 guest): every controller Windows drives x aio native /
  io_uring / threads x iothread, a fixed 1 GiB/s, 10-minute windows, the technote's CPU-set scope; planned
  against the stand-in and its node (a fake /proc and /sys over a real sshd), every configuration it plans applied
  to the stand-in's VM, started as qemu-server would start it, and the VM and the node put back.
- Technote 003's fleet suite (iSCSI vs NVMe/TCP on Proxmox) and technote 000's two sides (Proxmox and ESXi):
  7 block sizes x 8 queue depths on 32 workers, planned by `suite plan` against the Proxmox stand-in and the
  fake vCenter, nothing created.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
from standins.pve import PveStandin
from standins.pve_nodefs import NodeDescription, NodeTree
from standins.sshd import PrivateSshd, SshdUnavailable

from stormatrix.backends.proxmox.backend import ProxmoxBackend
from stormatrix.cli import main
from stormatrix.registry import backend_class, spec_from_dict
from stormatrix.cells import expand
import paths

EXAMPLES = paths.ROOT / "examples"
SECRET, TOKEN = "0b1c2d3e-aaaa-4bbb-8ccc-0123456789ab", "root@pam!stormatrix"
GIB = 2**30
# technotes 000 and 003: ".5K, 4K, 8K, 16K, 32K, 64K, and 128K" x QD 1 to 128, 1-minute warm-up, 20 minutes measured
SEED_BS = ["512", "4k", "8k", "16k", "32k", "64k", "128k"]
SEED_QD = [1, 2, 4, 8, 16, 32, 64, 128]
# the controllers a Windows Server 2022 guest has a driver for (in-box, or virtio-win's viostor / vioscsi)
WINDOWS_CONTROLLERS = {"ide", "sata", "virtio-blk", "virtio-scsi-pci", "virtio-scsi-single", "pvscsi", "megasas"}
IOTHREAD_CONTROLLERS = {"virtio-blk", "virtio-scsi-single"}  # the only ones qemu-server gives an iothread


def read(name: str) -> dict[str, Any]:
    return tomllib.loads((EXAMPLES / name).read_text())


def toml_text(doc: dict[str, Any]) -> str:
    """The example back as TOML (tables of scalars and lists, arrays of tables): JSON spells those alike."""
    out = []
    for section, body in doc.items():
        for table in body if isinstance(body, list) else [body]:
            out.append(f"[[{section}]]" if isinstance(body, list) else f"[{section}]")
            out += [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    return "\n".join(out) + "\n"


def pointed_at(standin: PveStandin, doc: dict[str, Any]) -> dict[str, Any]:
    proxmox = {k: v for k, v in doc["proxmox"].items() if k != "ssh"}  # the stand-in's node is not reachable by ssh
    proxmox.update(host="127.0.0.1", port=standin.port, node=standin.node, ca_file=str(standin.ca_file),
                   token_id="stormatrix", timeout=20, qemu_server_dir=str(standin.run_dir))
    if "vmid" in proxmox:  # a matrix's one VM (a fleet's VMs are in [fleet])
        proxmox["task_timeout"] = 30
    return {**doc, "proxmox": proxmox}


@pytest.fixture
def pve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv("STORMATRIX_PVE_TOKEN", SECRET)
    with PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET}) as s:
        yield s


# --- technote 004: the efficiency matrix, Windows Server 2022 on Proxmox ---------------------------------------

@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[NodeTree, PrivateSshd]]:
    """The Proxmox node as [host] scope = "cpus" needs it: its /proc and /sys as a fake tree (IRQs, work queues,
    NICs, irqbalance under systemd) reached over a real sshd, as tests/harness/backends/proxmox/test_proxmox_cpuset.py
    has it."""
    tree = NodeTree(tmp_path / "nodefs", NodeDescription(irqbalance="systemd", rebalance_s=3600)).build()
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


def windows_vm(pve: PveStandin, doc: dict[str, Any]) -> int:
    """A Windows Server 2022 VM as the example's comments describe it: booting from sata0, the raw test disk at the
    matrix's slot with the serial [winrm] names."""
    vmid, key, serial = doc["proxmox"]["vmid"], doc["proxmox"]["test_disk"], doc["winrm"]["disk_serial"]
    boot = pve.add_volume(vmid, f"vm-{vmid}-disk-0.raw")
    test = pve.add_volume(vmid, f"vm-{vmid}-disk-1.raw")
    pve.add_vm(vmid, {"name": "w2022", "ostype": "win11", "memory": "4096", "cores": "4", "agent": "1",
                      "scsihw": "virtio-scsi-single", "sata0": f"{boot},size=64M", "boot": "order=sata0",
                      key: f"{test},aio=native,cache=none,iothread=1,serial={serial},size=64M"})
    return int(vmid)


@pytest.mark.slow
def test_the_windows_efficiency_matrix_is_technote_004s_and_applies_to_the_proxmox_vm(
        pve: PveStandin, node: tuple[NodeTree, PrivateSshd], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Planned by `stormatrix plan` against the stand-in and the node; then every configuration it plans is applied
    to the VM, started as qemu-server would start it, and the VM and the node are put back."""
    tree, sshd = node
    pve.node_tree = tree
    doc = pointed_at(pve, read("proxmox-windows2022-efficiency.toml"))
    # the node's side of the lab: how to reach it, where its files are, and a CPU set it has (the fake node has
    # CPUs 0-3; CPU 1 exists on every test machine, where the VM's "QEMU" really runs)
    doc["proxmox"].update(ssh=sshd.target, ssh_config=str(sshd.ssh_config), ssh_dir=str(tmp_path / "node-lh"),
                          node_root=str(tree.root), check_cmdline=False)
    doc["host"] = {**doc["host"], "cpus": "1"}
    vmid = windows_vm(pve, doc)
    digest, volumes, settings = pve.digest(vmid), pve.volumes(), tree.settings()
    path = tmp_path / "w2022.toml"
    path.write_text(toml_text(doc))
    assert main(["plan", str(path)]) == 0, capsys.readouterr().err[-3000:]
    out = capsys.readouterr().out
    spec = spec_from_dict(doc, str(path))
    plan = expand(spec, backend_controllers=backend_class("proxmox").controllers)
    configs = {(c.disk.controller, c.disk.aio, c.disk.iothread) for c in plan.cells}
    # every controller Windows drives x every aio mode x iothread where qemu-server honours one, nothing else
    wanted = {(c, a, t) for c in WINDOWS_CONTROLLERS for a in ("native", "io_uring", "threads")
              for t in ((False, True) if c in IOTHREAD_CONTROLLERS else (False,))}
    assert configs == wanted and len(wanted) == 27
    assert {s.disk.controller for s in plan.skipped} == WINDOWS_CONTROLLERS - IOTHREAD_CONTROLLERS
    assert all(s.disk.iothread and "iothread has no effect" in s.reason for s in plan.skipped)
    (workload,) = spec.workloads
    assert workload.rate_mib_s == 1024 and workload.rw == "randread"  # 1 GiB/s of random reads
    assert spec.timing.measure_s == 600 and spec.run["repeats"] >= 2  # 10-minute windows, several runs each
    assert spec.run["guest_os"] == "windows2022" and spec.run["executor"] == "winrm"
    assert doc["host"]["scope"] == "cpus"  # the technote's scope: the CPUs that carry the guest's I/O
    assert f"{len(plan.cells)} cells" in out and f"{len(plan.skipped)} skipped) on backend proxmox" in out
    assert tree.settings() == settings and pve.digest(vmid) == digest  # plan changed nothing

    backend = ProxmoxBackend(spec, tmp_path / "run")
    backend.prepare()
    started = []
    serial = doc["winrm"]["disk_serial"]
    for disk in dict.fromkeys(c.disk for c in plan.cells):  # each configuration once, in the plan's order
        backend.apply(disk)
        launched = pve.launch_spec(pve.vms[vmid])
        started.append((launched.controller, launched.aio, launched.iothread))
        assert (launched.controller, launched.aio, launched.iothread) == (disk.controller, disk.aio, disk.iothread)
        assert launched.slot == spec.matrix["disk_slot"] and f"serial={serial}" in launched.config[launched.key]
        assert launched.config.get("affinity") == "1"  # every QEMU thread on the set
    assert len(started) == 27
    backend.stop()
    backend.restore()
    backend.close()
    assert pve.digest(vmid) == digest and pve.volumes() >= volumes and not pve.destroyed
    assert tree.settings() == settings  # the node's IRQs, work queues, RPS/XPS and irqbalance as they were


# --- technotes 003 and 000: the fleet suites ----------------------------------------------------------------

def template(pve: PveStandin, vmid: int) -> None:
    """A worker template as `stormatrix fleet template` describes it: a cloud image with the guest agent, on the
    bridge; its description declares the controller's fio, as `fleet template --record` writes it."""
    from stormatrix.executors.fioserver.client import find_fio
    from stormatrix.suiterun import fio_version

    pve.add_vm(vmid, {"name": "ubuntu2204-fio", "memory": "2048", "cores": "2", "agent": "1", "template": "1",
                      "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0",
                      "description": f"stormatrix-fio: {fio_version(find_fio())}"})


def plan_suite(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["suite", "plan", str(path)])
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    return out.out


def assert_the_seeds_grid(doc: dict[str, Any], out: str) -> None:
    suite = doc["suite"]
    assert suite["block_sizes"] == SEED_BS and suite["queue_depths"] == SEED_QD and suite["rw"] == ["randread"]
    assert (suite["ramp_seconds"], suite["measure_seconds"]) == (60, 1200)
    assert "block sizes: 512, 4k, 8k, 16k, 32k, 64k, 128k; queue depths: 1, 2, 4, 8, 16, 32, 64, 128" in out
    assert "60 s warm-up + 1200 s measured" in out
    assert doc["fleet"]["workers"] == 32 and (doc["fleet"]["vcpus"], doc["fleet"]["memory_mib"]) == (4, 4096)
    assert "32 workers" in out


def proxmox_fleet_plan(pve: PveStandin, tmp_path: Path, name: str,
                       capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    doc = pointed_at(pve, read(name))
    template(pve, doc["fleet"]["template"])
    for sid in doc["fleet"]["storages"]:
        pve.add_storage(sid, type="lvm", vgname=sid, total=2048 * GIB)
    path = tmp_path / Path(name).name
    path.write_text(toml_text(doc))
    out = plan_suite(path, capsys)
    assert not [r for r in pve.requests if r["method"] in ("POST", "PUT", "DELETE")]  # plan creates nothing
    return doc, out


def test_the_iscsi_vs_nvme_tcp_fleet_suite_is_technote_003s(pve: PveStandin, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    doc, out = proxmox_fleet_plan(pve, tmp_path, "proxmox-iscsi-vs-nvme-tcp.toml", capsys)
    assert_the_seeds_grid(doc, out)
    assert doc["fleet"]["storages"] == ["bb-iscsi", "bb-nvme"]  # two sides: iSCSI, then NVMe/TCP
    assert doc["fleet"]["power_cycle"] == "point"  # "Before each test run, the VMs are power cycled"
    for sid in doc["fleet"]["storages"]:
        assert f"storage {sid} (lvm): needs 1024.0 GiB" in out, out  # 32 volumes of 32G


def test_the_proxmox_side_of_proxmox_vs_esxi_is_technote_000s(pve: PveStandin, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    doc, out = proxmox_fleet_plan(pve, tmp_path, "proxmox-vs-esxi/proxmox.toml", capsys)
    assert_the_seeds_grid(doc, out)
    esxi = read("proxmox-vs-esxi/esxi.toml")
    assert esxi["suite"] == doc["suite"]  # one grid, two platforms


@pytest.mark.pwsh
def test_the_esxi_side_of_proxmox_vs_esxi_plans_on_the_fake_vcenter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from standins.fakevcenter import FakeVCenter
    from pwshengine import pwsh_path

    vcenter = FakeVCenter(tmp_path, monkeypatch)
    doc = read("proxmox-vs-esxi/esxi.toml")
    fleet = doc["fleet"]
    # the lab gets what the example names: its template (the lab's worker template, renamed), host and datastore
    lab = vcenter.read()
    lab["server"]["name"] = doc["vmware"]["server"]
    lab["server"]["credentialStore"] = [dict(c, host=doc["vmware"]["server"]) for c in lab["server"]["credentialStore"]]
    for host in lab["hosts"]:
        if host["name"] == "esx01.lab":
            host["name"] = fleet["vmhost"]
    for t in lab["templates"]:
        if t["name"] == "smx-worker-tpl":
            t["name"], t["host"] = fleet["template"], fleet["vmhost"]
    lab["datastores"].append({"name": fleet["storages"][0], "id": "Datastore-datastore-21", "type": "VMFS",
                              "capacityGB": 2048, "freeSpaceGB": 2000, "accessible": True})
    vcenter.write(lab)
    doc["vmware"] = {**doc["vmware"], "pwsh": pwsh_path(), "call_timeout": 120}
    path = tmp_path / "esxi.toml"
    path.write_text(toml_text(doc))
    out = plan_suite(path, capsys)
    assert_the_seeds_grid(doc, out)
    assert "New-VM" not in vcenter.cmdlets()  # plan creates nothing
