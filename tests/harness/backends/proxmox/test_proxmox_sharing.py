"""scsihw is one setting per VM: a SCSI-controller cell moves every other scsiN disk of the VM (a boot disk
on scsi0) to its controller model, or shares the controller with it. Against the Proxmox stand-in:
such a matrix is refused before anything changes unless ``[proxmox] allow_shared_scsihw``, and every
cell says which disks shared its controller or were moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from standins.pve import PveStandin
from test_proxmox_backend import (SECRET, TOKEN, VMID, assert_pristine, matrix, secret_env,  # noqa: F401 - fixtures
                                  standin)

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.core.model import DiskConfig
from stormatrix.journal import Journal
from stormatrix.registry import spec_from_dict


def boot_on_scsi0(standin: PveStandin) -> None:
    """The VM of a Windows install on virtio-scsi: boot disk scsi0, test disk scsi1 on the same controller."""
    boot = standin.add_volume(VMID, "vm-100-disk-0.raw")
    standin.vms[VMID].conf.update({"scsihw": "virtio-scsi-pci", "scsi0": f"{boot},cache=none,size=64M",
                                   "boot": "order=scsi0", "ide2": "none,media=cdrom"})


def test_cells_that_would_move_the_boot_disk_are_refused_with_the_fix(standin: PveStandin, tmp_path: Path,
                                                                       secret_env: None,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.cli import main

    boot_on_scsi0(standin)
    digest0 = standin.digest(VMID)
    raw = matrix(standin)
    raw["matrix"]["controllers"] = ["sata", "lsi", "virtio-scsi-pci", "virtio-scsi-single"]
    path = tmp_path / "m.json"
    b = pmx.ProxmoxBackend(spec_from_dict(raw, "m.toml"), tmp_path / "run")
    with pytest.raises(Exception) as exc:
        b.prepare()
    b.close()
    text = str(exc.value)
    assert getattr(exc.value, "exit_code", 1) == 2 and "m.toml: [matrix] controllers" in text
    assert "scsi0 (boot disk, local:100/vm-100-disk-0.raw)" in text or "scsi0 (boot disk" in text, text
    assert "lsi, virtio-scsi-single would move it from scsihw = virtio-scsi-pci" in text
    assert "virtio-scsi-pci would measure the test disk on the controller it shares" in text
    assert "move that disk to sata, ide or virtio" in text and "allow_shared_scsihw = true" in text
    assert "sata" not in text.split("Fix:")[0].split("besides")[0]
    assert standin.digest(VMID) == digest0 and not any(r["method"] != "GET" for r in standin.requests)
    del path
    # the same through the CLI: exit 2 before anything is changed
    m = tmp_path / "m.toml"
    m.write_text(toml_of(raw))
    assert main(["run", str(m), "-o", str(tmp_path / "run2"), "--no-progress"]) == 2
    assert "would move it from scsihw" in capsys.readouterr().err
    assert standin.digest(VMID) == digest0


def test_sata_only_matrix_with_a_scsi_boot_disk_runs(standin: PveStandin, tmp_path: Path, secret_env: None) -> None:
    boot_on_scsi0(standin)
    raw = matrix(standin)
    raw["matrix"]["controllers"] = ["sata", "virtio-blk"]
    b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")
    try:
        facts = b.prepare()
        assert "shared_scsihw" not in facts
        b.apply(DiskConfig("sata", "threads", False, "none"))
        assert b.window_closed() == {"controller_shared_with": {"controller": "sata", "shares": [], "moves": []}}
    finally:
        b.restore()
        b.close()


def test_allow_shared_scsihw_runs_and_every_cell_names_the_disks(standin: PveStandin, tmp_path: Path,
                                                                secret_env: None) -> None:
    boot_on_scsi0(standin)
    digest0, vols = standin.digest(VMID), standin.volumes()
    raw = matrix(standin, allow_shared_scsihw=True)
    raw["matrix"]["controllers"] = ["lsi", "virtio-scsi-pci", "virtio-scsi-single", "sata"]
    b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")
    seen = {}
    try:
        facts = b.prepare()
        assert facts["shared_scsihw"].startswith("lsi: scsi0 (boot disk, ")
        assert {part.split(":")[0] for part in facts["shared_scsihw"].split("; ")} == \
            {"lsi", "virtio-scsi-pci", "virtio-scsi-single"}
        for ctrl in ("lsi", "virtio-scsi-pci", "virtio-scsi-single", "sata"):
            b.apply(DiskConfig(ctrl, "threads", False, "none"))
            # scsihw is one per VM: the SATA cell keeps what the SCSI cell before it set
            assert standin.vms[VMID].conf.get("scsihw") == (ctrl if ctrl != "sata" else "virtio-scsi-single")
            seen[ctrl] = b.window_closed()["controller_shared_with"]
    finally:
        b.restore()
        b.close()
    boot = {"key": "scsi0", "volume": standin.vms[VMID].conf["scsi0"].split(",")[0], "cdrom": False, "boot": True}
    # lsi: 7 disks per controller, scsi0 and scsi1 on the first one, and moved from virtio-scsi-pci
    assert seen["lsi"] == {"controller": "lsi", "shares": [boot],
                           "moves": [{**boot, "from": "virtio-scsi-pci", "to": "lsi"}]}
    assert seen["virtio-scsi-pci"] == {"controller": "virtio-scsi-pci", "shares": [boot], "moves": []}
    # virtio-scsi-single: a controller per disk, so nothing shares it, but scsi0 was moved to the model
    assert seen["virtio-scsi-single"] == {"controller": "virtio-scsi-single", "shares": [],
                                          "moves": [{**boot, "from": "virtio-scsi-pci", "to": "virtio-scsi-single"}]}
    # the SATA cell shares nothing, and says that scsi0 still sits on the model the cell before chose
    assert seen["sata"] == {"controller": "sata", "shares": [],
                            "moves": [{**boot, "from": "virtio-scsi-pci", "to": "virtio-scsi-single"}]}
    assert_pristine(standin, digest0, vols)


def toml_of(raw: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))
    out = []
    for section in ("run", "matrix", "proxmox"):
        out.append(f"[{section}]")
        out += [f"{k} = {value(v)}" for k, v in raw[section].items()]
    for w in raw["workload"]:
        out.append("[[workload]]")
        out += [f"{k} = {value(v)}" for k, v in w.items()]
    return "\n".join(out) + "\n"


def test_every_journaled_cell_names_the_disks_sharing_its_controller(tmp_path: Path, secret_env: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the runner: the cell records of a run with allow_shared_scsihw say what shared the
    controller (overlap.controller_shared_with), the run record's environment says it once."""
    from standins.agent import AgentFaults, AgentStandin, FakeCollector

    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions

    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    boot_vol = s.add_volume(VMID, "vm-100-disk-0.raw")
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    s.add_vm(VMID, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-pci",
                    "scsi0": f"{boot_vol},size=64M", "scsi1": f"{vol},cache=none,size=64M", "boot": "order=scsi0",
                    "serial1": "socket"})
    with s:
        agent = AgentStandin(s.run_dir / f"{VMID}.serial1", AgentFaults())
        try:
            raw = matrix(s, allow_shared_scsihw=True, guest_channel="serial1", ready="executor")
            raw["run"].update(executor="local-agent", ramp_seconds=0, measure_seconds=1, retries=0)
            raw["matrix"].update(controllers=["virtio-scsi-pci", "sata"], aio=["threads"], iothread=[False])
            runner = Runner(spec_from_dict(raw), tmp_path / "run", RunOptions(progress=False, collector_factory=FakeCollector))
            # the sleeping "QEMU" has no monitor
            monkeypatch.setattr(runner.backend_cls, "thread_roles", lambda self: {})
            monkeypatch.setattr(runner.backend_cls, "blockstats", lambda self: None)
            summary = runner.run()
        finally:
            agent.close()
    assert summary.measured == 2 and not summary.failed, summary
    records = Journal(tmp_path / "run").records()
    cells = {r["cell"]["disk"]["controller"]: r["overlap"]["controller_shared_with"]
             for r in records if r["type"] == "cell"}
    assert [d["key"] for d in cells["virtio-scsi-pci"]["shares"]] == ["scsi0"] and not cells["virtio-scsi-pci"]["moves"]
    assert cells["sata"] == {"controller": "sata", "shares": [], "moves": []}
    run = next(r for r in records if r["type"] == "run")
    assert run["environment"]["shared_scsihw"].startswith("virtio-scsi-pci: scsi0 (boot disk")
