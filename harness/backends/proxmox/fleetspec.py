"""``[fleet]``: the worker VMs a comparison suite deploys, and the storages under test they attach in turn.

::

    [fleet]
    template = 9000            # a Proxmox template: a Linux cloud image with the QEMU guest agent and fio
    workers = 32               # 1 to 256
    node = "pve1"              # where the workers run (default: [proxmox] node), or several in turn:
                               # nodes = ["pve1", "pve2"] (the template's disks on shared storage)
    clone = "linked"           # or "full"
    vcpus = 4
    memory_mib = 4096
    name_prefix = "smx-w"      # workers are smx-w01, smx-w02, ...
    vmids = "auto"             # the cluster's next free VMIDs, or a range like "300-331"
    storages = ["bb-iscsi", "bb-nvme"]   # each storage is a side, in this order
    disk_size = "10G"
    controller = "virtio-scsi-single"
    aio = "native"
    iothread = true
    cache = "none"
    power_cycle = "side"       # before each storage's run (as the seeds do), before every "point", or
                               # "never" (workers only started when not running; new disks hot-plugged)

The connection to the node is the suite's ``[proxmox]`` section (host, node, token by reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import MatrixError
from ...core.model import AIO_MODES, CACHE_MODES, CONTROLLERS, DiskConfig, native_aio_problem, parse_size
from ...core.names import label_problem
from ...fleet.spec import MAX_WORKERS, NAME_PREFIX_RE
from ...schema import Field, Section, parse_section
from ...tomlfile import load_toml
from . import settings as proxmox_settings
from .vms import PER_VM_KEYS, suite_proxmox_section

POWER_CYCLE = ("side", "point", "never")
CLONE_MODES = ("linked", "full")


def _vmids_ok(value: str) -> None:
    if value == "auto":
        return
    m = re.fullmatch(r"(\d+)-(\d+)", value)
    if not m or not 100 <= int(m.group(1)) <= int(m.group(2)) <= 999999999:
        raise ValueError(f"{value!r} is neither \"auto\" nor a range like \"300-331\" (VMIDs 100-999999999)")


def _prefix_ok(value: str) -> None:
    if not NAME_PREFIX_RE.match(value):
        raise ValueError(f"{value!r} is not a name prefix: lower-case letters, digits and '-', starting with a letter "
                         "(a worker's name is a DNS name: the prefix and its number)")


def _size_ok(value: Any) -> None:
    size = parse_size(value)
    if not 2**20 <= size <= 2**50:
        raise ValueError(f"{str(value)[:40]} is outside 1 MiB to 1 PiB")


def _storage_ok(value: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9\-_.]*[a-z0-9]", value, re.IGNORECASE):
        raise ValueError(f"{value!r} is not a Proxmox storage id (letters, digits, '-', '_', '.')")
    problem = label_problem(value)
    if problem:
        raise ValueError(problem)


def _node_ok(value: str) -> None:
    if not re.fullmatch(r"[a-zA-Z0-9]([a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?", value):
        raise ValueError(f"{value!r} is not a Proxmox node name (a host name: letters, digits and '-')")


def _controller_ok(value: str) -> None:
    if value not in CONTROLLERS or CONTROLLERS[value][0] == "esxi":
        raise ValueError(f"{value!r} is not a Proxmox controller "
                         f"({', '.join(k for k, v in CONTROLLERS.items() if v[0] != 'esxi')})")


FLEET_SECTION = Section("fleet", {
    "backend": Field(str, "proxmox", choices=("proxmox",), help="where the workers are deployed"),
    "template": Field(int, min=100, max=999999999, help="VMID of the template the workers are cloned from"),
    "workers": Field(int, 4, min=1, max=MAX_WORKERS),
    "node": Field(str, "", help="the node to place the workers on (default: [proxmox] node)"),
    "nodes": Field(str, None, list_of=True, check=_node_ok,
                   help="the nodes to place the workers on, in turn (worker 1 on the first, 2 on the second...)"),
    "clone": Field(str, "linked", choices=CLONE_MODES),
    "vcpus": Field(int, 4, min=1, max=512),
    "memory_mib": Field(int, 4096, min=64, max=4 * 2**20),
    "name_prefix": Field(str, "smx-w", check=_prefix_ok),
    "vmids": Field(str, "auto", check=_vmids_ok, help='"auto" (the cluster\'s next free VMIDs) or "300-331"'),
    "storages": Field(str, list_of=True, check=_storage_ok, help="the storages under test; each is a side"),
    "disk_size": Field((str, int), "10G", check=_size_ok, help="each worker's test volume, like 10G"),
    "controller": Field(str, "virtio-scsi-single", check=_controller_ok),
    "aio": Field(str, "io_uring", choices=AIO_MODES),
    "iothread": Field(bool, True),
    "cache": Field(str, "none", choices=CACHE_MODES),
    "power_cycle": Field(str, "side", choices=POWER_CYCLE,
                         help="stop and start the workers before each storage's run (side), each point, or never"),
    "task_timeout": Field(float, 600.0, min=1, max=86400, help="seconds a clone or destroy task may take"),
}, help="the worker VMs the suite deploys, and the storages under test they attach in turn")


@dataclass(frozen=True)
class FleetSpec:
    path: str
    template: int
    workers: int
    node: str  # the first node of ``nodes``
    clone: str
    vcpus: int
    memory_mib: int
    name_prefix: str
    vmids: str
    storages: tuple[str, ...]
    disk_size: int
    disk: DiskConfig  # how every worker attaches its test volume
    power_cycle: str
    task_timeout: float
    nodes: tuple[str, ...] = ()  # where the workers are placed, in turn (empty: all on ``node``)

    def placement(self) -> list[str]:
        """Each worker's node, in worker order: the nodes in turn."""
        nodes = self.nodes or (self.node,)
        return [nodes[i % len(nodes)] for i in range(self.workers)]

    def names(self) -> list[str]:
        width = max(2, len(str(self.workers)))
        return [f"{self.name_prefix}{i:0{width}d}" for i in range(1, self.workers + 1)]

    def vmid_range(self) -> list[int] | None:
        if self.vmids == "auto":
            return None
        lo, hi = map(int, self.vmids.split("-"))
        return list(range(lo, hi + 1))


def fleet_from_dict(raw: dict[str, Any], path: str, node: str) -> FleetSpec:
    """``[fleet]`` validated; ``node`` is ``[proxmox] node``, the default placement."""
    if "fleet" not in raw:
        raise MatrixError(path, "[fleet]", "is missing", "add a [fleet] section (see `stormatrix fleet --help`)")
    f = parse_section(path, FLEET_SECTION, raw["fleet"])
    if len(set(f["storages"])) != len(f["storages"]):
        raise MatrixError(path, "[fleet] storages", "names a storage twice", "list each storage under test once")
    problem = native_aio_problem(f["aio"], f["cache"])
    if problem:
        raise MatrixError(path, "[fleet] aio", problem, "set cache = \"none\" or \"directsync\" (or leave it "
                          "\"default\"), or aio = \"io_uring\"")
    if f["nodes"] is not None and f["node"]:
        raise MatrixError(path, "[fleet] nodes", "and [fleet] node are both given",
                          "give one node as node = \"pve1\", or several as nodes = [\"pve1\", \"pve2\"]")
    if f["nodes"] is not None and len(set(f["nodes"])) != len(f["nodes"]):
        raise MatrixError(path, "[fleet] nodes", "names a node twice", "list each node once")
    nodes = tuple(f["nodes"] or ())
    spec = FleetSpec(path=path, template=f["template"], workers=f["workers"],
                     node=nodes[0] if nodes else (f["node"] or node), nodes=nodes,
                     clone=f["clone"], vcpus=f["vcpus"], memory_mib=f["memory_mib"], name_prefix=f["name_prefix"],
                     vmids=f["vmids"], storages=tuple(f["storages"]), disk_size=parse_size(f["disk_size"]),
                     disk=DiskConfig(f["controller"], f["aio"], f["iothread"], f["cache"]),
                     power_cycle=f["power_cycle"], task_timeout=f["task_timeout"])
    ids = spec.vmid_range()
    if ids is not None and len(ids) < spec.workers:
        raise MatrixError(path, "[fleet] vmids", f"{spec.vmids} holds {len(ids)} VMIDs for {spec.workers} workers",
                          f"give a range of at least {spec.workers} VMIDs, or \"auto\"")
    if spec.template in (ids or []):
        raise MatrixError(path, "[fleet] vmids", f"{spec.vmids} includes the template {spec.template}",
                          "give a range that does not hold the template's VMID")
    return spec


def load_fleet_file(path: str | Path) -> tuple[dict[str, Any], FleetSpec, dict[str, Any]]:
    """The file's raw tables, its ``[fleet]`` and its ``[proxmox]`` (connection keys only)."""
    raw = load_toml(Path(path))
    spec, proxmox = load_fleet_tables(raw, str(path))
    return raw, spec, proxmox


def load_fleet_tables(raw: dict[str, Any], path: str) -> tuple[FleetSpec, dict[str, Any]]:
    """``[fleet]`` and ``[proxmox]`` (connection keys only) of a file already read."""
    if "proxmox" not in raw or not isinstance(raw["proxmox"], dict):
        raise MatrixError(path, "[proxmox]", "is missing: the fleet is deployed on a Proxmox node",
                          "add [proxmox] with host, node, token_id and token_secret_env (or transport = \"local\")")
    for key in sorted(PER_VM_KEYS & set(raw["proxmox"])):
        raise MatrixError(path, f"[proxmox] {key}", "does not apply to a fleet: it names or handles one VM of a "
                          "matrix run", f"remove {key}; the fleet's VMs are described in [fleet]")
    proxmox = parse_section(path, suite_proxmox_section(), raw["proxmox"])
    proxmox_settings.check_section(proxmox, path)
    spec = fleet_from_dict(raw, path, proxmox["node"])
    return spec, proxmox
