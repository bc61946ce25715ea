"""The demo matrix through the proxmox backend, against the stand-in with real QEMU behind it.

The stand-in starts each configuration with the qemu backend's own command builder (QemuVm), so
the cells run real fio in the real guest; the journal must match the qemu backend's in cells and
record shape, and the VM must come back digest-identical.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from standins.pve import PveStandin, QemuVmLauncher

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.journal import Journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict

pytestmark = pytest.mark.qemu

SECRET = "e2e-secret-5e1f0c8a9b7d"
DEMO = Path(pmx.__file__).resolve().parents[2] / "matrices" / "demo.toml"


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!smx": SECRET}, launcher=QemuVmLauncher())
    vol = s.add_volume(100, "vm-100-disk-0.raw", size=256 * 1024 * 1024)
    s.add_vm(100, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                   "scsi0": f"{vol},aio=io_uring,cache=none,iothread=1,size=256M", "boot": "order=scsi0",
                   "serial1": "socket"})
    with s:
        yield s


def demo_matrix(standin: PveStandin, controllers: list[str] | None = None, aio: list[str] | None = None) -> dict:
    raw = tomllib.loads(DEMO.read_text())
    raw.pop("qemu", None)
    raw["run"].update(backend="proxmox", executor="local-agent", measure_seconds=4, ramp_seconds=2, repeats=1,
                      max_repeats=0)
    if controllers:
        raw["matrix"]["controllers"] = controllers
    if aio:
        raw["matrix"]["aio"] = aio
    raw["proxmox"] = {"host": "127.0.0.1", "port": standin.port, "node": "pve", "vmid": 100, "test_disk": "scsi0",
                      "token_id": "smx", "token_secret_env": "SMX_E2E_SECRET", "ca_file": str(standin.ca_file),
                      "qemu_server_dir": str(standin.run_dir), "guest_channel": "serial1", "ready": "executor"}
    return raw


def test_demo_cells_through_proxmox(standin: PveStandin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMX_E2E_SECRET", SECRET)
    full = os.environ.get("STORMATRIX_FULL_DEMO") == "1"
    raw = demo_matrix(standin, None if full else ["sata", "virtio-scsi-single"], None if full else ["native", "threads"])
    digest0, vols = standin.digest(100), standin.volumes()
    spec = spec_from_dict(raw, "demo-proxmox.toml")
    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False))
    summary = runner.run()
    assert not summary.failed, summary
    records = Journal(tmp_path / "run").records()
    cells = [r for r in records if r["type"] == "cell"]
    assert {c["key"] for c in cells} == {c.key for c in runner.plan().cells}
    for c in cells:
        assert c["backend"] == "proxmox"
        assert c["fio"]["total"]["io_bytes"] > 0
        assert c["host"]["pid"] and c["host"]["ctx_switches"] > 0
        assert {t["role"] for t in c["host"]["threads"]} >= {"main-loop", "vcpu"}
        assert c["crosscheck"] is not None and c["per_mib"]["ctx"] is not None
    started = [(s.controller, s.aio, s.slot) for s in standin.launcher.started]  # type: ignore[attr-defined]
    assert ("sata", "threads", 0) in started
    run = next(r for r in records if r["type"] == "run")
    assert run["original_config"]["config"]["digest"] == digest0
    assert records[-1]["type"] == "restored"
    assert standin.digest(100) == digest0 and standin.volumes() >= vols and not standin.destroyed
    for r in standin.requests:
        assert "force" not in r["params"]
        assert not any(k.startswith("unused") for k in r["params"].get("delete", "").split(","))
    # The workbook and every file of the run: no token secret anywhere (xlsx is a zip: read its members).
    from stormatrix.cli import main

    assert main(["report", str(tmp_path / "run"), "-o", str(tmp_path / "out.xlsx")]) == 0
    import zipfile

    with zipfile.ZipFile(tmp_path / "out.xlsx") as z:
        assert all(SECRET.encode() not in z.read(n) for n in z.namelist())
    for path in [*(tmp_path / "run").rglob("*"), tmp_path / "out.csv"]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
