"""Shared set-up for the suite's VM-list tests: a Proxmox stand-in with several running VMs whose guest
agents report given interfaces, and the matrix file that points a suite at them."""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
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


def host_ipv4() -> str | None:
    """This machine's address for the outside (not loopback): where a real fio server can listen for a
    guest whose agent reports that address (the suite never picks a loopback address)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route's source address
            addr = s.getsockname()[0]
        except OSError:
            return None
    return None if addr.startswith("127.") else addr


@contextlib.contextmanager
def fio_server_on_host(home: Path) -> Iterator[tuple[str, int]]:
    """A real ``fio --server`` on this machine's outside address, working in ``home``: ``(host, port)``.
    Skips the test where the machine has no such address; kills the server's process group at the end."""
    import socket

    from standins.fioservers import free_port

    from stormatrix.executors.fioserver.client import find_fio

    host = host_ipv4()
    if host is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen([find_fio(), f"--server=ip:{host},{port}"], cwd=home, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((host, port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield host, port
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def kill_when(argv: list[str], env: dict[str, str], ready: Callable[[], bool], what: str,
              timeout_s: float = 120.0) -> None:
    """Run ``argv`` (a harness) until ``ready()`` (polled; it may block a little itself) says it is at the
    moment to test, and SIGKILL it there; fails, naming ``what``, if the harness ends or times out first."""
    harness = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if harness.poll() is not None or time.monotonic() > deadline:
                assert harness.stderr is not None
                if harness.poll() is None:
                    harness.kill()
                pytest.fail(f"the harness never reached {what}: " + harness.stderr.read().decode()[-2000:])
            time.sleep(0.01)
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        assert harness.stderr is not None
        harness.stderr.close()


def kill_at_hold(standin: PveStandin, hold: tuple[str, str, int], argv: list[str], env: dict[str, str]) -> None:
    """Run ``argv`` (a harness) until the stand-in holds the request ``hold`` (method, path suffix, how
    many matching ones pass first), SIGKILL it there, then let the stand-in carry the request out."""
    release = standin.hold_request(hold[0], hold[1], skip=hold[2])
    try:
        kill_when(argv, env, lambda: standin.held(0.2), "the held request")
    finally:
        release.set()
    time.sleep(0.5)  # the held request goes on inside the stand-in, as Proxmox would carry it out
