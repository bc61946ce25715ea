"""A suite's VM list: guest addresses from the hypervisor, and the host collector over the VMs' QEMU processes.

``[suite] vms = [101, 102, ...]`` instead of ``guests``, with a ``[proxmox]`` section that says how to
reach the node (the backend's connection keys; the per-VM keys of a matrix run do not apply). Before the
first point, for every VM, in the order given:

1. ``GET /nodes/{node}/qemu/{vmid}/status/current``: the VM must be running (the suite never starts,
   stops or reconfigures a VM); its ``name`` becomes the guest's name and its ``pid`` is the QEMU process
   the host collector measures;
2. ``GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces``: the QEMU guest agent's interface list
   (``{"result": [{"name", "hardware-address", "ip-addresses": [{"ip-address", "ip-address-type",
   "prefix"}]}]}``). The guest's address is **the first IPv4 address, in the agent's interface order and
   then address order, that is not loopback (127.0.0.0/8), link-local (169.254.0.0/16), unspecified or
   multicast, and, when ``[suite] network = "10.0.0.0/24"`` is given, lies in that network**. A
   loopback address counts only when ``network`` is itself a loopback network (``127.77.1.0/24``):
   guests reached through port forwards on this machine (local QEMU guests, the test stand-in's bridge).

The guest's name is the VM name when it is a usable name (letters, digits, ``.``, ``_``, ``-``; at most 64)
and unique in the list; two VMs with one name become ``<name>-<vmid>``; an unusable name becomes the VM id.
Every VM is checked before anything is reported, and every problem is named in one
:class:`~stormatrix.core.errors.MatrixError` (exit 2) with its fix: VM stopped or paused, guest agent not
enabled or not running, no matching address, two VMs on one address. Nothing is measured, and nothing
already journaled is touched, until every VM has an address.

The host collector (``[suite] host_metrics``) over the VMs' QEMU processes is :mod:`.vmcollector`'s.

ESXi: address discovery is not supported for the vmware backend; list the guests' fio servers in
``[suite] guests`` instead (the message says so).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ...core.errors import MatrixError, PveApiError, PveAuthError
from ...core.model import Cell
from ...executors.fioserver.inputs import FioGuest, NAME_RE
from ...schema import Section, parse_section
from ...suite import Suite
from ...suiteguests import SuiteGuests
from .api import PveClient
from .settings import PROXMOX_SECTION, check_section, make_transport
from .vmcollector import VmProcesses, node_inventory_for

# [proxmox] keys of a matrix run that name or handle ONE VM; a suite's VMs are [suite] vms.
PER_VM_KEYS = frozenset({"vmid", "test_disk", "restart", "ready", "guest_host", "guest_port", "guest_channel",
                         "pin_cpus", "task_timeout"})


def suite_proxmox_section() -> Section:
    """``[proxmox]`` as a suite reads it: the backend's connection keys, without the per-VM ones."""
    return Section("proxmox", {k: f for k, f in PROXMOX_SECTION.fields.items() if k not in PER_VM_KEYS},
                   help="how to reach the Proxmox node of a suite's VMs")


def check_vm_list(suite: Suite) -> Suite:
    """``[suite] vms`` as Proxmox VM ids, and the ``[proxmox]`` section that says how to reach their node (its
    connection keys only), validated when the suite file is read: the suite with both filled in."""
    path, raw = suite.path, suite.raw
    if "vmware" in raw:
        raise MatrixError(path, "[suite] vms", "discovering guest addresses is not supported for the vmware backend",
                          'list the guests\' fio servers in [suite] guests = ["vm01=10.0.0.11:8765", ...] '
                          'and remove vms')
    if "proxmox" not in raw:
        raise MatrixError(path, "[suite] vms", "a VM list needs a [proxmox] section: the node to ask for the VMs' "
                          "addresses", "add [proxmox] with host, node, token_id and token_secret_env (or transport = "
                          '"local" on the node), or list the guests\' fio servers in [suite] guests')
    backend = raw.get("run", {}).get("backend") if isinstance(raw.get("run"), dict) else None
    if backend not in (None, "proxmox"):
        raise MatrixError(path, "[run] backend", f"{backend!r}, but [suite] vms are Proxmox VMs ([proxmox])",
                          'set backend = "proxmox" or remove it')
    table = raw["proxmox"]
    if isinstance(table, dict):
        for key in sorted(PER_VM_KEYS & set(table)):
            raise MatrixError(path, f"[proxmox] {key}", "does not apply to a suite: it names or handles one VM of "
                              "a matrix run", f"remove {key}; a suite's VMs are [suite] vms, which it never "
                              "reconfigures")
    proxmox = parse_section(path, suite_proxmox_section(), table)  # [proxmox] ssh is checked by its Field
    check_section(proxmox, path)  # the checks across keys (token reference, host)
    ids: list[int] = []
    for i, v in enumerate(raw["suite"]["vms"], start=1):
        text = str(v).strip()
        if not text.isdigit() or not 100 <= int(text) <= 999999999:
            raise MatrixError(path, f"[suite] vms[{i}]", f"{v!r} is not a Proxmox VM id (100-999999999; value {i} "
                              "of the list, counting from 1)",
                              "list the numeric VM ids, as `qm list` shows them: vms = [101, 102]")
        if int(text) in ids:
            raise MatrixError(path, "[suite] vms", f"lists VM {int(text)} twice", "list each VM once")
        ids.append(int(text))
    return replace(suite, vms=tuple(str(i) for i in ids), connection=proxmox)


# --- choosing the address ------------------------------------------------------------------------------

def pick_address(interfaces: Any, network: str | None = None) -> tuple[str | None, list[str]]:
    """The guest's address by the rule in the module docstring, and every IPv4 address seen
    (``"eth0 10.0.0.11/24"``) for the message when none fits. ``interfaces`` is QGA's list."""
    net = ipaddress.ip_network(network, strict=False) if network else None
    seen: list[str] = []
    chosen: str | None = None
    for iface in interfaces if isinstance(interfaces, list) else []:
        if not isinstance(iface, dict):
            continue
        for entry in iface.get("ip-addresses") or []:
            if not isinstance(entry, dict) or entry.get("ip-address-type") != "ipv4":
                continue
            try:
                ip = ipaddress.IPv4Address(str(entry.get("ip-address")))
            except ValueError:
                continue
            seen.append(f"{iface.get('name', '?')} {ip}/{entry.get('prefix', '?')}")
            if chosen is not None or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
                continue
            if net is not None and ip not in net:
                continue
            if ip.is_loopback and not (net is not None and net.is_loopback):
                continue
            chosen = str(ip)
    return chosen, seen


def guest_names(vms: list[tuple[int, str]]) -> dict[int, str]:
    """vmid -> guest name: the VM name if usable and unique, ``<name>-<vmid>`` for shared names, else the id."""
    usable = {vmid: name for vmid, name in vms if name and NAME_RE.match(name)}
    counts: dict[str, int] = {}
    for name in usable.values():
        counts[name] = counts.get(name, 0) + 1
    out = {}
    for vmid, _ in vms:
        label = usable.get(vmid)
        if label is not None and counts[label] > 1:
            label = f"{label}-{vmid}" if len(label) + len(str(vmid)) < 64 else None
        out[vmid] = label or str(vmid)
    taken = list(out.values())
    for vmid, name in out.items():  # a VM named like another's id: both fall back to name-vmid / id
        if taken.count(name) > 1 and name != str(vmid):
            out[vmid] = str(vmid)
    return out


# --- the VMs on a Proxmox node ----------------------------------------------------------------------------

@dataclass
class SuiteVm:
    vmid: int
    name: str = ""
    pid: int | None = None
    address: str | None = None
    interfaces: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"vmid": self.vmid, "name": self.name, "pid": self.pid, "address": self.address}


# problem kinds -> the fix the message gives
_FIXES = {
    "missing": "check [suite] vms and [proxmox] node: every VM must exist on that node",
    "stopped": "start the VMs first (qm start <vmid>): the suite never starts, stops or reconfigures a VM",
    "no-agent": "enable the guest agent in each VM's options (qm set <vmid> --agent enabled=1, then restart "
                "the VM) and run qemu-guest-agent in the guest",
    "agent-down": "install and start the QEMU guest agent in the guest (apt install qemu-guest-agent; "
                  "systemctl enable --now qemu-guest-agent)",
    "no-address": "set [suite] network to the IPv4 network the controller reaches the guests on "
                  "(e.g. network = \"10.0.0.0/24\"), or check the guest's network configuration",
    "shared": "set [suite] network to a network in which each guest has its own address",
    "api": "check the node and the VM, then run again",
}


class ProxmoxSuiteVms:
    """The suite's VMs on a Proxmox node: :meth:`discover` the guests, then :meth:`host_collector`.
    ``nodes`` (vmid -> node): VMs on other nodes than ``[proxmox] node`` (a fleet placed on several);
    their hosts' processes are not measured (one node's collector would describe part of the fleet)."""

    def __init__(self, suite: Any, *, transport: Any = None, nodes: dict[int, str] | None = None) -> None:
        if suite.connection is None:
            raise MatrixError(suite.path, "[proxmox]", "is missing", "add [proxmox] with host, node, token_id and "
                              "token_secret_env (how to reach the node of the suite's VMs)")
        self.suite = suite
        self.opts: dict[str, Any] = dict(suite.connection)
        self.transport = transport if transport is not None else make_transport(self.opts)
        self._own_transport = transport is None  # a transport handed in (a fleet's) stays open for its owner
        self.nodes = {int(v): (nodes or {}).get(int(v), self.opts["node"]) for v in suite.vms}
        self.clients = {vmid: PveClient(self.transport, node, vmid) for vmid, node in self.nodes.items()}
        self.vms: list[SuiteVm] = [SuiteVm(int(v)) for v in suite.vms]

    def close(self) -> None:
        close = getattr(self.transport, "close", None)
        if close is not None and self._own_transport:
            close()

    def __enter__(self) -> "ProxmoxSuiteVms":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- discovery ---------------------------------------------------------------------------------------
    def _problem(self, problems: list[tuple[str, str]], kind: str, text: str) -> None:
        problems.append((kind, text))

    def discover(self) -> list[FioGuest]:
        """Every VM's fio server address, by the module's rule; one MatrixError naming every problem."""
        problems: list[tuple[str, str]] = []
        names: list[tuple[int, str]] = []
        for vm in self.vms:
            c = self.clients[vm.vmid]
            try:
                st = c.status()
            except PveAuthError:
                raise
            except PveApiError as exc:
                kind = "missing" if "does not exist" in str(exc) else "api"
                self._problem(problems, kind, f"VM {vm.vmid}: {exc.message}")
                continue
            vm.name = str(st.get("name") or "")
            names.append((vm.vmid, vm.name))
            label = f"VM {vm.vmid}" + (f" ({vm.name})" if vm.name else "")
            if st.get("status") != "running":
                self._problem(problems, "stopped", f"{label} is {st.get('status', 'not running')}")
                continue
            if st.get("qmpstatus") not in (None, "running"):
                self._problem(problems, "stopped", f"{label} is {st['qmpstatus']} (not running guest code)")
                continue
            vm.pid = int(st["pid"]) if str(st.get("pid", "")).isdigit() else None
            try:
                answer = c.t.request("GET", f"{c.vm_path}/agent/network-get-interfaces")
            except PveAuthError as exc:
                raise PveAuthError(f"{exc.message}; reading guest addresses needs VM.GuestAgent.Audit "
                                   "(Proxmox VE 9) or VM.Monitor (8.x) on each VM", status=exc.details.status) from None
            except PveApiError as exc:
                text = exc.message
                if "No QEMU guest agent configured" in text:
                    self._problem(problems, "no-agent", f"{label}: the guest agent is not enabled in its options")
                elif "guest agent is not running" in text:
                    self._problem(problems, "agent-down", f"{label}: the QEMU guest agent is not running in the guest")
                elif "not running" in text:
                    self._problem(problems, "stopped", f"{label} is not running")
                else:
                    self._problem(problems, "api", f"{label}: the guest agent did not answer ({text})")
                continue
            result = answer.get("result") if isinstance(answer, dict) else None
            if not isinstance(result, list):
                self._problem(problems, "api", f"{label}: unexpected guest agent answer "
                                               f"({json.dumps(answer)[:200]}), expected {{\"result\": [...]}}")
                continue
            vm.address, vm.interfaces = pick_address(result, self.suite.network)
            if vm.address is None:
                where = f" in {self.suite.network}" if self.suite.network else ""
                found = ", ".join(vm.interfaces) or "none"
                self._problem(problems, "no-address", f"{label}: no usable IPv4 address{where} (the guest agent "
                                                      f"reports: {found})")
        by_address: dict[str, list[SuiteVm]] = {}
        for vm in self.vms:
            if vm.address:
                by_address.setdefault(vm.address, []).append(vm)
        for addr, shared in by_address.items():
            if len(shared) > 1:
                self._problem(problems, "shared", f"VMs {', '.join(str(v.vmid) for v in shared)} all report "
                                                  f"{addr}")
        if problems:
            kinds = list(dict.fromkeys(k for k, _ in problems))
            fix = "; ".join(_FIXES[k] for k in kinds) + \
                "; or list the guests' fio servers in [suite] guests instead of vms"
            raise MatrixError(self.suite.path, "[suite] vms",
                              f"{len(problems)} problem(s) finding the guests' addresses: "
                              + "; ".join(text for _, text in problems), fix)
        final = guest_names(names)
        guests = []
        for vm in self.vms:
            vm.name = final[vm.vmid]
            assert vm.address is not None
            guests.append(FioGuest(name=vm.name, host=vm.address, port=self.suite.port))
        return guests

    def record(self) -> list[dict[str, Any]]:
        """For the run record: which VM became which guest at which address, and its QEMU pid."""
        return [vm.record() for vm in self.vms]

    # --- the host collector -------------------------------------------------------------------------------
    def host_collector(self) -> tuple[Any, dict[str, Any]]:
        """The collector for every point's window, and what the run record says about it
        (:meth:`.vmcollector.VmProcesses.host_collector`). Call after :meth:`discover` (which read the pids)."""
        return VmProcesses(self.suite, self.opts, self.vms, self.clients, self.nodes).host_collector()


class ProxmoxVmGuests(SuiteGuests):
    """The suite's guests on Proxmox (:class:`~stormatrix.suiteguests.SuiteGuests`): the VMs of a VM list (or
    of a fleet's workers), found through their guest agents when started, measured by one collector over
    their QEMU processes where the node is reachable (:meth:`ProxmoxSuiteVms.host_collector`).

    ``power_cycle`` (a fleet's ``[fleet] power_cycle = "point"``): runs before each point but the side's
    first, after which the collector takes the workers' new QEMU pids; ``storage``: what served the side's
    disks, for the run record; ``booting``: the guests were just started (the first probe waits for them)."""

    def __init__(self, vms: ProxmoxSuiteVms, *, storage: dict[str, Any] | None = None,
                 power_cycle: Callable[[Cell], None] | None = None, booting: bool = False) -> None:
        super().__init__(vms.suite.settings(), platform="proxmox")
        self.vms = vms
        self._storage = storage
        self._power_cycle = power_cycle
        self.cycles_points = power_cycle is not None
        self.booting = booting
        self._collector: Any = None
        self._status: dict[str, Any] = {}

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        return check_vm_list(suite)

    @classmethod
    def plan_lines(cls, suite: Suite) -> list[str]:
        net = f" in {suite.network}" if suite.network else ""
        node = suite.connection["node"] if suite.connection else "?"
        return [f"  VMs ({len(suite.vms)}, on node {node}; each guest's address = the guest agent's first IPv4{net}): "
                f"{', '.join(suite.vms)}; host metrics: {suite.host_metrics}"]

    @classmethod
    def from_suite(cls, suite: Any) -> SuiteGuests:
        return cls(ProxmoxSuiteVms(suite))

    def _start(self) -> list[FioGuest]:
        guests = self.vms.discover()
        self._collector, self._status = self.vms.host_collector()
        return guests

    def describe(self) -> list[str]:
        return [f"  VM {vm.vmid} -> {g.describe()} (QEMU pid {vm.pid})" for vm, g in zip(self.vms.vms, self.start())]

    def before_point(self, cell: Cell) -> None:
        if self._power_cycle is None:
            return
        self._power_cycle(cell)
        invalidate = getattr(getattr(self._collector, "scopes", None), "invalidate", None)
        if invalidate is not None:
            invalidate()  # the workers' QEMU processes are new: the collector takes their pids anew

    def window_collector(self) -> Any | None:
        return self._collector

    def host_status(self) -> dict[str, Any]:
        return dict(self._status)

    def vms_record(self) -> list[dict[str, Any]] | None:
        return self.vms.record()

    def storage_record(self) -> dict[str, Any] | None:
        return self._storage

    def host_inventory(self) -> dict[str, Any] | None:
        return node_inventory_for(self._status, self.vms.record())()

    def _teardown(self) -> None:
        self.vms.close()
