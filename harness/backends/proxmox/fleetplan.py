"""A Proxmox fleet's plan: what a deploy would create, checked against the cluster before anything is created.

Read-only (``GET /cluster/resources``, ``GET /cluster/nextid``, the template's ``config``, ``GET
/nodes/{node}/storage`` and each storage's ``status``): the template must be a template with the QEMU guest
agent and the declared fio; the VMIDs are the journal's (a fleet deployed in part keeps them), the ``[fleet]
vmids`` range, or the cluster's next free ones, none taken by a VM the fleet did not create; each storage under
test must exist on each worker's node, hold VM disks, be active and have room for the workers placed there.
Every problem is listed (``FleetPlan.problems``), for one refusal naming them all (:meth:`.fleet.ProxmoxFleet.check`).
What a deploy then does is :mod:`.fleet`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...core.errors import PveApiError
from ...fleet.template import fio_declaration_note, fio_declaration_problem
from .fleetspec import FleetSpec
from .fleetstate import ProxmoxFleetState


@dataclass
class FleetPlan:
    """What a deploy would create, and what it needs from the node; ``problems`` refuse it."""

    node: str
    template: int
    vmids: list[int]
    names: list[str]
    storages: list[dict[str, Any]] = field(default_factory=list)  # per storage: id, type, avail, needed, content
    problems: list[tuple[str, str]] = field(default_factory=list)  # (key, problem and fix)
    fio: str = ""  # what the template declares about its fio (template.fio_declaration_note)
    placed: list[str] = field(default_factory=list)  # each worker's node

    def describe(self) -> list[str]:
        placed = self.placed or [self.node] * len(self.vmids)
        nodes = list(dict.fromkeys(placed))
        where = f"node {nodes[0]}" if len(nodes) == 1 else f"nodes {', '.join(nodes)} in turn"
        lines = [f"{where}: {len(self.vmids)} workers cloned from template {self.template}",
                 "  " + ", ".join(f"{v} {n}" + (f" ({p})" if len(nodes) > 1 else "")
                                  for v, n, p in zip(self.vmids, self.names, placed))]
        if self.fio:
            lines.append(f"  fio: {self.fio}")
        for s in self.storages:
            lines.append(f"  storage {s['storage']} ({s.get('type', '?')}): needs {s['needed'] / 2**30:.1f} GiB, "
                         f"{s.get('avail', 0) / 2**30:.1f} GiB free, content {s.get('content', '?')}")
        return lines


def plan_fleet(spec: FleetSpec, state: ProxmoxFleetState, get: Callable[..., Any],
               config: Callable[[int], dict[str, Any] | None], vm_nodes: dict[int, str], *, node: str,
               fio: str | None) -> FleetPlan:
    """Everything a deploy needs, checked before anything is created; every problem is listed. ``state``: what the
    fleet's journal owns; ``get(path, params)``: an API read; ``config(vmid)``: a VM's config on its node, which
    ``vm_nodes`` (vmid -> node) says and which learns here the template's; ``node``: the fleet's node; ``fio``: the
    controller's ``fio --version`` line (None: not checked)."""
    s = spec
    problems: list[tuple[str, str]] = []
    resources = get("/cluster/resources", {"type": "vm"}) or []
    taken = {int(r["vmid"]): r for r in resources if "vmid" in r}
    template = taken.get(s.template)
    fio_note = ""
    if template is None:
        problems.append(("template", f"VM {s.template} does not exist on the cluster; give the VMID of a "
                                     "template (a Linux cloud image with the QEMU guest agent and fio)"))
    else:
        vm_nodes[s.template] = str(template.get("node") or node)
        conf = config(s.template) or {}
        if str(conf.get("template", "0")) != "1":
            problems.append(("template", f"VM {s.template} ({template.get('name', '?')}) is not a template: "
                                         f"convert it (qm template {s.template}) or name a template"))
        if not str(conf.get("agent", "0")).split(",")[0] in ("1", "enabled=1"):
            problems.append(("template", f"template {s.template} has no QEMU guest agent enabled (agent: "
                                         f"{conf.get('agent', 'unset')}); the workers' addresses and readiness "
                                         f"come from it: qm set {s.template} --agent enabled=1, with "
                                         "qemu-guest-agent installed in the image"))
        fio_problem = fio_declaration_problem(f"template {s.template}", conf.get("description"), fio)
        if fio_problem:
            problems.append(("template", fio_problem))
        fio_note = fio_declaration_note(f"template {s.template}", conf.get("description"), fio)
    mine = set(state.vms)
    wanted = s.vmid_range()
    if state.header is not None:  # a fleet deployed (in part) already keeps its VMIDs
        vmids = list(state.header.vmids)
        clash = [v for v in vmids if v in taken and v not in mine]
        if clash:
            problems.append(("vmids", f"VMIDs {', '.join(map(str, clash))} of this fleet are in use by VMs it did "
                                      "not create; run fleet destroy and deploy anew in another run directory"))
    elif wanted is not None:
        vmids = wanted[:s.workers]
        clash = [v for v in vmids if v in taken and v not in mine]
        if clash:
            problems.append(("vmids", f"VMIDs {', '.join(map(str, clash))} of {s.vmids} are in use by VMs this "
                                      "fleet did not create; give a free range, or vmids = \"auto\""))
    else:
        vmids = sorted(mine)[:s.workers]
        candidate = int(get("/cluster/nextid") or 100)
        while len(vmids) < s.workers:
            if candidate not in taken and candidate not in vmids and candidate != s.template:
                vmids.append(candidate)
            candidate += 1
    placed = [str(state.vms[v].node or node) if v in state.vms else p
              for v, p in zip(vmids, s.placement())]
    plan = FleetPlan(node, s.template, vmids, s.names(), fio=fio_note, placed=placed)
    for at in dict.fromkeys(placed):
        _plan_storages(spec, get, plan, at, placed.count(at), problems)
    plan.problems = problems
    return plan


def _plan_storages(spec: FleetSpec, get: Callable[..., Any], plan: FleetPlan, node: str, workers: int,
                   problems: list[tuple[str, str]]) -> None:
    """Each storage under test as ``node`` sees it: there, holding VM disks, with room for the volumes
    of the ``workers`` placed on it."""
    s = spec
    storages = {str(x.get("storage")): x for x in (get(f"/nodes/{node}/storage") or [])}
    needed = workers * s.disk_size
    for sid in s.storages:
        st = storages.get(sid)
        if st is None:
            problems.append(("storages", f"storage {sid!r} does not exist on node {node} (it has: "
                                         f"{', '.join(sorted(storages)) or 'none'})"))
            continue
        try:
            status = dict(get(f"/nodes/{node}/storage/{sid}/status") or {})
        except PveApiError as exc:
            problems.append(("storages", f"storage {sid}: its status cannot be read: {exc.message}"))
            continue
        content = str(status.get("content", st.get("content", "")))
        avail = int(status.get("avail", 0))
        plan.storages.append({"storage": sid, "type": status.get("type"), "content": content, "avail": avail,
                              "needed": needed, "node": node})
        if "images" not in content.split(","):
            problems.append(("storages", f"storage {sid} does not hold VM disks (content: {content or 'none'}); "
                                         f"add 'images' to its content types, or name another storage"))
        if not status.get("active", 1):
            problems.append(("storages", f"storage {sid} is not active on node {node}"))
        if avail < needed:
            on = f" on node {node}" if s.nodes else ""
            problems.append(("storages", f"storage {sid}{on} has {avail / 2**30:.1f} GiB free, the fleet needs "
                                         f"{needed / 2**30:.1f} GiB ({workers} x {s.disk_size / 2**30:g} GiB); "
                                         "free space, or lower workers or disk_size"))
