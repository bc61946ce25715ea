"""What the runner measures on the cell's running VM, and how: its QEMU process and the roles of its threads, the
test drive's block counters, how the guest is reached, and the host collector for the ``[host] scope``.

QEMU is asked on the node's QMP socket (``<qemu_server_dir>/<vmid>.qmp``, one connection per command, the way
qemu-server does it) when stormatrix runs on the node and may write to it; otherwise through the API's human
monitor (``info cpus``, ``info iothreads``, ``info blockstats``, read by :mod:`.node`). The host collector runs
here, or as ``linux-host/multicollector.py`` on the node over ``[proxmox] ssh``; with ``[host] scope = "cpus"``
it measures the CPU set system-wide (:mod:`.hostscope`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from ...collect import CpuSetHostCollector, RemoteProcessesCollector
from ...core.errors import BackendError, InputError
from ...core.scope import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, BlockStats, GuestEndpoint, HostScope
from ...host.collector import WindowCollector
from ...qmp import Qmp
from .api import PveClient
from .hostscope import CpuScope, NodeSettings
from .node import NodeShell, parse_hmp_blockstats, parse_hmp_threads


def qmp_path(opts: Mapping[str, Any]) -> Path:
    return Path(opts["qemu_server_dir"]) / f"{opts['vmid']}.qmp"


def qmp(opts: Mapping[str, Any], command: str) -> Any:
    """One QMP command on the node's socket (connect, run, close: the way qemu-server does it)."""
    q = Qmp(qmp_path(opts), timeout=10).connect(time.monotonic() + 10)
    try:
        return q.execute(command)
    finally:
        q.close()


def local_qmp(opts: Mapping[str, Any]) -> bool:
    """Whether QEMU is asked on its QMP socket here (stormatrix on the node, the socket writable)."""
    return not opts["ssh"] and qmp_path(opts).exists() and os.access(qmp_path(opts), os.W_OK)


def thread_roles(c: PveClient, opts: Mapping[str, Any]) -> dict[int, str]:
    """thread id -> role of the VM's vCPU and iothreads."""
    if local_qmp(opts):
        roles = {int(cpu["thread-id"]): ROLE_VCPU for cpu in qmp(opts, "query-cpus-fast") or []}
        roles.update({int(it["thread-id"]): ROLE_IOTHREAD for it in qmp(opts, "query-iothreads") or []})
        return roles
    return parse_hmp_threads(c.monitor("info cpus"), c.monitor("info iothreads"))


def vm_scope(c: PveClient, opts: Mapping[str, Any], roles: Callable[[], dict[int, str]]) -> list[HostScope]:
    """The VM's QEMU process with its threads' roles, read by ``roles`` once the process is known (the backend's
    ``thread_roles``: :func:`thread_roles`), over ``[proxmox] ssh`` when that is set."""
    st = c.status()
    pid = int(st.get("pid") or 0)
    if not pid:
        raise BackendError(f"VM {c.vmid} has no QEMU process (status {st.get('status')!r})")
    threads = {pid: ROLE_MAIN, **roles()}
    return [HostScope(pid=pid, threads=threads, vm=str(st.get("name", c.vmid)), ssh=opts["ssh"] or None)]


def guest_endpoints(opts: Mapping[str, Any]) -> list[GuestEndpoint]:
    """How the executor reaches the guest: ``guest_host`` (and ``guest_port``), or a node-local agent's socket."""
    name = str(opts["vmid"])
    if opts["guest_host"]:
        return [GuestEndpoint(kind="tcp", address=opts["guest_host"], port=opts["guest_port"] or None, name=name)]
    if opts["guest_channel"]:
        path = Path(opts["qemu_server_dir"]) / f"{opts['vmid']}.{opts['guest_channel']}"
        return [GuestEndpoint(kind="local-agent", address=str(path), name=name)]
    raise InputError("[proxmox] says nothing about how to reach the guest: set guest_host (and guest_port) "
                     "for fio-server/WinRM, or guest_channel for a node-local agent on a serial socket")


def drive_blockstats(c: PveClient, opts: Mapping[str, Any], drive_id: str) -> BlockStats:
    """QEMU's block counters of ``drive_id`` (``drive-<bus><slot>``)."""
    if local_qmp(opts):
        for dev in qmp(opts, "query-blockstats") or []:
            if dev.get("device") == drive_id:
                st = dev["stats"]
                return BlockStats(st["rd_bytes"], st["wr_bytes"], st["rd_operations"], st["wr_operations"])
        raise BackendError(f"query-blockstats has no {drive_id}")
    return parse_hmp_blockstats(c.monitor("info blockstats"), drive_id)


def host_collector(node: NodeShell, opts: Mapping[str, Any], cs: CpuScope | None,
                   node_settings: NodeSettings | None, scope: HostScope) -> Any:
    """The host collector for ``scope``: on this machine, or ``linux-host/multicollector.py`` run on the
    node over one ssh session (copied there by prepare), the same remote path as a suite's. ``cs``: the CPU set
    of ``[host] scope = "cpus"`` (None: the QEMU process alone)."""
    if scope.ssh:
        if cs is None or node_settings is None:
            return RemoteProcessesCollector(node, lambda: [scope], remote_dir=opts["ssh_dir"], name_vms=False)
        # [host] scope = "cpus": the set system-wide around the QEMU process, by a collector that runs (with
        # its ssh session) off the set
        return RemoteProcessesCollector(node, lambda: [scope], remote_dir=opts["ssh_dir"],
                                        name_vms=False, cpus=cs.cpus, root=cs.root,
                                        prefix=node_settings.off_set_prefix(opts["ssh_dir"]))
    if cs is not None:  # stormatrix on the node: this process is off the set already (the backend's _steer)
        return CpuSetHostCollector(cs.cpu_list, WindowCollector(scope.pid, dict(scope.threads), root=cs.root),
                                   exclude=(scope.pid,), root=cs.root)
    return WindowCollector(scope.pid, dict(scope.threads))
