"""Shared set-up for the suite's VM-list tests: a Proxmox stand-in with several running VMs whose guest
agents report given interfaces, and the matrix file that points a suite at them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from standins.pve import PveStandin, guest_interface

SECRET = "5c1d9e2a-0f0f-4bbb-8ccc-51a7e5ecre7s"
TOKEN_ID = "smxsuite"
TOKEN = f"root@pam!{TOKEN_ID}"
SECRET_ENV = "SMX_SUITE_PVE_SECRET"

LO = guest_interface("lo", "00:00:00:00:00:00", "127.0.0.1/8", "::1/128")


def eth(name: str, mac: str, *addresses: str) -> dict[str, Any]:
    return guest_interface(name, mac, *addresses)


def add_vm(standin: PveStandin, vmid: int, name: str, *, agent: str = "1", running: bool = True,
           interfaces: list[dict[str, Any]] | None = None) -> None:
    vol = standin.add_volume(vmid, f"vm-{vmid}-disk-0.raw", size=1 << 20)
    conf = {"name": name, "memory": "512", "cores": "1", "scsi0": f"{vol},size=1M"}
    if agent:
        conf["agent"] = agent
    standin.add_vm(vmid, conf)
    if interfaces is not None:
        standin.guest_interfaces[vmid] = interfaces
    if running:
        vm = standin.vms[vmid]
        vm.qemu = standin.launcher.start(standin.launch_spec(vm))


def write_pidfile(standin: PveStandin, vmid: int) -> int:
    """What qemu-server does on a node: ``/var/run/qemu-server/<vmid>.pid`` (here: the stand-in's run dir)."""
    qemu = standin.vms[vmid].qemu
    assert qemu is not None
    (standin.run_dir / f"{vmid}.pid").write_text(f"{qemu.pid}\n")
    return qemu.pid


def suite_matrix(standin: PveStandin, vms: list[Any], *, proxmox: dict[str, Any] | None = None,
                 **suite: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "run": {"name": "vmlist"},
        "suite": {"side": "Proxmox VE", "filename": "/dev/sdb", "vms": list(vms), "block_sizes": ["4k"],
                  "queue_depths": [1], "ramp_seconds": 0, "measure_seconds": 1},
        "proxmox": {"host": "127.0.0.1", "port": standin.port, "node": standin.node, "token_id": TOKEN_ID,
                    "token_secret_env": SECRET_ENV, "ca_file": str(standin.ca_file), "timeout": 20,
                    "qemu_server_dir": str(standin.run_dir)},
    }
    raw["suite"].update(suite)
    raw["proxmox"].update(proxmox or {})
    return copy.deepcopy(raw)


def toml_text(raw: dict[str, Any]) -> str:
    """The matrix as a TOML file (flat tables of strings, numbers, booleans and lists only)."""
    import json

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(v)

    lines = []
    for section, table in raw.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {value(v)}" for k, v in table.items()]
        lines.append("")
    return "\n".join(lines)


def write_matrix(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(toml_text(raw), encoding="utf-8")
    return path
