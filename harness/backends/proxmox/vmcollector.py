"""The host collector over a suite's VMs (``[suite] host_metrics``, default ``auto``): it measures the QEMU
processes of all the suite's VMs in each point's window (:class:`~stormatrix.collect.ProcessesCollector`), so
``per_mib`` is the whole side's host cost over the bytes all guests moved:

- **local**, when stormatrix runs on the node itself: every VM's ``<qemu_server_dir>/<vmid>.pid`` exists
  here and holds the pid the API reports. The collector runs in this process (``linux-host/collector.py``).
  Thread roles come from each VM's QMP socket (``query-cpus-fast``, ``query-iothreads``), or the API
  monitor (HMP) where the socket is not writable.
- **ssh**, when ``[proxmox] ssh = "root@node"`` is set and the harness is elsewhere: ``linux-host/`` is
  copied to the node when missing, and each window runs ONE ``ssh node -- python3 multicollector.py``
  measuring every VM (:class:`~stormatrix.collect.RemoteProcessesCollector`). Thread roles from the API monitor.
- otherwise the node is not reachable for the collector: the suite runs without host metrics
  (``host`` is null in every point), and the run record and its environment say why;
  ``host_metrics = "require"`` makes that an error instead, ``"off"`` never collects.

The records say which CPU metric they hold (``cpu_metric``: ``cycles`` where perf counts hardware cycles,
else ``cpu_time``), as the collector reports it.

The VMs are those :mod:`.vms` found (their ids, names and the QEMU pids the API reported); this module only
measures them, and says where the node's facts are read (:func:`node_inventory_for`).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...collect import HostCollector, ProcessesCollector, RemoteProcessesCollector
from ...core.errors import CollectorError, MatrixError, PveApiError, StormatrixError
from ...core.scope import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, HostScope
from ...qmp import Qmp
from ...suiteguests import HostInventory, inventory_for
from .api import PveClient
from .node import NodeShell, ensure_remote_collector, node_inventory, parse_hmp_threads
from .settings import REMOTE_COLLECTOR_DIR

if TYPE_CHECKING:
    from .vms import SuiteVm

log = logging.getLogger("stormatrix.suitevms")


class VmProcesses:
    """The QEMU processes of the suite's VMs (``vms``, as discovery filled them in: pids read): where the host
    collector can reach them, and the collector. ``suite``: its ``host_metrics`` and path; ``opts``: the
    ``[proxmox]`` connection; ``clients``/``nodes``: each VM's API client and node."""

    def __init__(self, suite: Any, opts: dict[str, Any], vms: list[SuiteVm], clients: dict[int, PveClient],
                 nodes: dict[int, str]) -> None:
        self.suite = suite
        self.opts = opts
        self.vms = vms
        self.clients = clients
        self.nodes = nodes
        self.roles_source = ""

    def _pidfile(self, vmid: int) -> Path:
        return Path(self.opts["qemu_server_dir"]) / f"{vmid}.pid"

    def on_this_node(self) -> tuple[bool, str]:
        """Does stormatrix run on the VMs' node? Every VM's pid file is here and holds the API's pid."""
        wrong = []
        for vm in self.vms:
            try:
                here = int(self._pidfile(vm.vmid).read_text().strip())
            except (OSError, ValueError):
                wrong.append(f"no {self._pidfile(vm.vmid)}")
                continue
            if here != vm.pid or not Path(f"/proc/{here}").exists():
                wrong.append(f"{self._pidfile(vm.vmid)} holds {here}, the API says {vm.pid}")
        return (not wrong), "; ".join(wrong[:3]) + (" ..." if len(wrong) > 3 else "")

    def _roles(self, vm: SuiteVm, local: bool) -> dict[int, str]:
        """vCPU and iothread ids: the VM's QMP socket here, else HMP through the API monitor."""
        assert vm.pid is not None
        roles: dict[int, str] = {vm.pid: ROLE_MAIN}
        qmp_path = Path(self.opts["qemu_server_dir"]) / f"{vm.vmid}.qmp"
        try:
            if local and qmp_path.exists() and os.access(qmp_path, os.W_OK):
                q = Qmp(qmp_path, timeout=10).connect(time.monotonic() + 10)
                try:
                    roles.update({int(c["thread-id"]): ROLE_VCPU for c in q.execute("query-cpus-fast") or []})
                    roles.update({int(i["thread-id"]): ROLE_IOTHREAD for i in q.execute("query-iothreads") or []})
                finally:
                    q.close()
                self.roles_source = "qmp"
            else:
                c = self.clients[vm.vmid]
                roles.update(parse_hmp_threads(c.monitor("info cpus"), c.monitor("info iothreads")))
                self.roles_source = "hmp"
        except StormatrixError as exc:
            log.warning("VM %s: thread roles unavailable (%s); the collector names the main loop and aio "
                        "workers only", vm.vmid, exc)
            self.roles_source = f"unavailable ({exc})"
        return roles

    def scopes(self, *, local: bool, ssh: str | None, refresh: bool = False) -> list[HostScope]:
        """One scope per VM. ``refresh``: read each VM's pid from the API again first (after a window
        failed: a VM may have restarted); a VM that no longer runs is a CollectorError."""
        if refresh:
            for vm in self.vms:
                try:
                    st = self.clients[vm.vmid].status()
                except PveApiError as exc:
                    raise CollectorError(f"VM {vm.vmid} ({vm.name}): cannot read its QEMU pid: {exc.message}") from None
                if st.get("status") != "running" or not str(st.get("pid", "")).isdigit():
                    raise CollectorError(f"VM {vm.vmid} ({vm.name}) is {st.get('status', 'not running')}: its QEMU "
                                         "process is gone; start it again and re-run the suite (it resumes)")
                vm.pid = int(st["pid"])
        return [HostScope(pid=vm.pid, threads=self._roles(vm, local), vm=vm.name, ssh=ssh)
                for vm in self.vms if vm.pid is not None]

    def host_collector(self) -> tuple[Any, dict[str, Any]]:
        """The collector for every point's window, and what the run record says about it.

        Call after :meth:`.vms.ProxmoxSuiteVms.discover` (which read the pids). Returns ``(None, status)`` when
        the node is not reachable and ``[suite] host_metrics`` is ``auto``; raises MatrixError under ``require``.
        """
        mode = self.suite.host_metrics
        if mode == "off":
            return None, {"mode": "off", "detail": "[suite] host_metrics = \"off\""}
        spread = sorted(set(self.nodes.values()))
        if len(spread) > 1:
            return self._unreachable(f"the VMs run on {len(spread)} nodes ({', '.join(spread)}): one node's host "
                                     "collector would measure part of them")
        if any(vm.pid is None for vm in self.vms):
            missing = ", ".join(str(vm.vmid) for vm in self.vms if vm.pid is None)
            return self._unreachable(f"the API gave no QEMU pid for VM {missing}")

        collector: HostCollector

        local, why_not = self.on_this_node()
        if local:
            scopes = self.scopes(local=True, ssh=None)
            collector = ProcessesCollector(Cached(lambda: self.scopes(local=True, ssh=None, refresh=True),
                                                  scopes))
            return collector, {"mode": "local", "processes": len(scopes), "roles": self.roles_source,
                               "detail": f"{len(scopes)} QEMU processes on this node ({self.opts['node']})"}
        target = self.opts.get("ssh") or ""
        if target:
            config = self.opts.get("ssh_config") or ""
            if config and not Path(config).expanduser().is_file():
                raise MatrixError(self.suite.path, "[proxmox] ssh_config", f"{config!r} is not a file",
                                  "give the path of an ssh_config file, or leave ssh_config empty")
            rdir = self.opts.get("ssh_dir") or REMOTE_COLLECTOR_DIR
            state = ensure_remote_collector(target, rdir, ssh_config=config)  # linux-host/, hash-checked
            scopes = self.scopes(local=False, ssh=target)
            collector = RemoteProcessesCollector(NodeShell(target, config), Cached(
                lambda: self.scopes(local=False, ssh=target, refresh=True), scopes), remote_dir=rdir)
            # ssh_dir/ssh_config: the node's facts are read there too (node_inventory_for)
            where = {"ssh": target, "ssh_dir": rdir, **({"ssh_config": config} if config else {})}
            return collector, {"mode": "ssh", **where,
                               "processes": len(scopes), "roles": self.roles_source,
                               "detail": f"{len(scopes)} QEMU processes on {target} over ssh ({rdir}: {state})"}
        return self._unreachable(f"stormatrix is not on the node ({why_not}) and [proxmox] ssh is not set")

    def _unreachable(self, why: str) -> tuple[None, dict[str, Any]]:
        fix = ("run stormatrix on the Proxmox node, or set [proxmox] ssh = \"root@<node>\" (key login, "
               "BatchMode), or set [suite] host_metrics = \"auto\" to run without host metrics")
        if self.suite.host_metrics == "require":
            raise MatrixError(self.suite.path, "[suite] host_metrics", f"\"require\", but the host collector cannot "
                              f"reach the VMs' QEMU processes: {why}", fix)
        log.warning("no host metrics for this suite: %s", why)
        return None, {"mode": "none", "detail": f"no host metrics: {why}",
                      "fix": "run stormatrix on the Proxmox node, or set [proxmox] ssh = \"root@<node>\""}


def node_inventory_for(host_collector: dict[str, Any], vms: list[dict[str, Any]] | None) -> HostInventory:
    """Where the node's facts are read: where its collector measures (the same ssh, as a matrix run's Proxmox
    backend does). ``ssh``: ``linux-host/inventory.py`` on the node, copied there with the collector; otherwise
    as :func:`stormatrix.suiteguests.inventory_for` (``local``: this machine is the node)."""
    target = str(host_collector.get("ssh") or "")
    if host_collector.get("mode") == "ssh" and target:
        config = str(host_collector.get("ssh_config") or "")
        remote_dir = str(host_collector.get("ssh_dir") or REMOTE_COLLECTOR_DIR)
        return lambda: node_inventory(NodeShell(target, config), remote_dir)
    return inventory_for(host_collector, vms)


class Cached:
    """Scopes taken once before the suite (thread roles cost API calls: not at every window's opening),
    taken anew after a failed window (a VM may have restarted with a new pid): the collectors call
    :meth:`invalidate` then."""

    def __init__(self, fetch: Callable[[], list[HostScope]], first: list[HostScope]) -> None:
        self.fetch = fetch
        self.value: list[HostScope] | None = first

    def __call__(self) -> list[HostScope]:
        if self.value is None:
            self.value = self.fetch()
        return self.value

    def invalidate(self) -> None:
        self.value = None
