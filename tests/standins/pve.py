"""A loopback Proxmox VE API for tests: HTTPS, token auth, schema validation, real semantics.

It implements the endpoints the proxmox backend uses, the way Proxmox documents them (the API schema
``tests/data/pve-api-qemu.json``, qemu-server's ``API2/Qemu.pm``), independently of the backend's own
code (it has its own property-string parser, and its own QEMU command lines from qemu-server's test
data, ``pve_cmdline.py``) so that a bug in the backend is not mirrored here:

- every request is validated against ``tests/data/pve-api-qemu.json``: unknown parameters, wrong
  types, values outside an enum, malformed drive strings are rejected with HTTP 400
  "Parameter verification failed." and per-parameter ``errors``, like Proxmox;
- ``Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET`` is required (401 otherwise);
- ``GET config`` returns the config with pending values merged and a ``digest`` (SHA1 of the config
  file text, ``[PENDING]`` section included); ``current=1`` gives the running values; a write with a
  stale ``digest`` fails with "detected modified configuration - file changed by other user? Try again.";
- writes to a running VM become *pending* and are applied by an API ``start`` (after ``stop``) or
  ``reboot``. (Real Proxmox hot-plugs some changes when ``hotplug`` allows; the stand-in keeps all of
  them pending, which is what happens for the aio/cache/iothread/scsihw/bus changes the harness makes.)
- ``delete`` of a disk without ``force`` turns it into the first free ``unusedN``; setting a disk to a
  volume listed in ``unusedN`` removes that entry; deleting ``unusedN`` (or a disk with ``force``)
  destroys the volume's file. Deleting a disk drops it from ``boot: order=``; a boot order naming a
  device that does not exist is rejected.
- the fleet's endpoints (clone, template, next free VMID, cluster resources, storages with content types
  and capacity, volume allocation and deletion, destroy) are in ``pve_fleet.py``;
- ``GET /storage/{storage}`` answers like pve-manager (``pve_storage.py``); :meth:`set_storage` makes the
  storage dir, lvm, lvmthin, btrfs, rbd, cifs..., which changes QEMU's command line as qemu-server does.
- ``affinity`` (``pve-cpuset``) is checked like pve-common's ``PVE::CpuSet::parse_cpuset``; like every other
  change to a running VM it stays pending until the next start, where the "QEMU" runs under qemu-server's
  ``taskset --cpu-list --all-tasks`` (a CPU the node lacks fails the start; ``Vm.affinity`` says what it got);
  the node's files (a fake /proc and /sys) are ``pve_nodefs.NodeTree``;
- power actions return UPIDs of tasks that run in the background, finish with ``OK`` or fail with an
  error ``exitstatus`` and a log; ``start`` really launches the VM through a :class:`Launcher`.

Fault switches (:meth:`PveStandin.fail_request`, :meth:`fail_next_task`, :meth:`transient_edit`,
``agent_ready``) let tests inject API 500s, failing tasks, concurrent edits and guests that never come
up. Every request is recorded in :attr:`PveStandin.requests` (never the token).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import hashlib
import ipaddress
import json
import os
import random
import re
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

# The parts: the schema and property strings, how a VM is launched (fast and real QEMU), and the QEMU
# command line qemu-server's test data expects.
from .pve_launch import LaunchFailed, Launcher, LaunchSpec, RunningQemu, SleepLauncher  # noqa: F401 - re-exported
from .pve_qemu import QemuVmLauncher, QemuVmRunning
from .pve_node import NodeTools
from .pve_power import PowerAndTasks, Task, Vm, guest_interface
from .pve_schema import ApiError, Schema, param_error, print_propstring
from .pve_storage import StorageConfig
from .pve_fleet import FleetEndpoints

DIGEST_ERROR = "detected modified configuration - file changed by other user? Try again."
DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$")
UNUSED_RE = re.compile(r"^unused(\d+)$")



class PveStandin(PowerAndTasks, NodeTools, StorageConfig, FleetEndpoints):
    """The Proxmox node ``node`` with its VMs, storage and task list, served over HTTPS on 127.0.0.1."""

    def __init__(self, workdir: Path, *, node: str = "pve", tokens: dict[str, str] | None = None,
                 launcher: Launcher | None = None, storage: str = "local",
                 auditors: set[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.node = node
        # a cluster: other nodes (add_node) and the node each VM is on (default: ``node``)
        self.other_nodes: list[str] = []
        self.vm_node: dict[int, str] = {}
        self.tokens = dict(tokens or {})  # "user@realm!tokenid" -> secret
        # tokens with Sys.Audit on /nodes/<node>: they may list and read other users' tasks (None = all)
        self.auditors = auditors
        self.launcher = launcher or SleepLauncher()
        self.storage = storage
        self.storage_dir = self.workdir / "storage" / storage
        # /etc/pve/storage.cfg: storage id -> its section (Proxmox's storage documentation names the keys)
        self.storages: dict[str, dict[str, Any]] = {
            storage: {"type": "dir", "path": str(self.storage_dir), "content": "images,rootdir"}}
        self.storage_admins: set[str] | None = None  # tokens with Datastore.Allocate on /storage (None = all)
        self.run_dir = self.workdir / "run" / "qemu-server"
        self.schema = Schema()
        self.vms: dict[int, Vm] = {}
        self.tasks: dict[str, Task] = {}
        self.requests: list[dict[str, Any]] = []
        self.destroyed: list[str] = []
        self.destroyed_vms: list[int] = []  # VMs removed by DELETE /nodes/{node}/qemu/{vmid}
        self.storage_capacity: dict[str, int] = {}  # storage -> bytes (pve_fleet; 1 TiB when not set)
        self.volume_sizes: dict[str, int] = {}  # volid -> bytes it takes on its storage (pve_fleet)
        self.lock = threading.RLock()
        self._faults: list[dict[str, Any]] = []
        self._task_faults: dict[str, list[str]] = {}
        self._edits: list[tuple[str, str]] = []
        self._holds: list[dict[str, Any]] = []
        self._held: list[dict[str, Any]] = []
        self.agent_ready = True
        self.qm_cleanup_delay = 0.3  # seconds between QEMU's exit after a reboot and qm cleanup's start
        # guest agent network-get-interfaces: what each VM's agent reports (default: lo only), and
        # the VMs whose agent does not answer (qemu-guest-agent not installed or stopped)
        self.guest_interfaces: dict[int, list[dict[str, Any]]] = {}
        self.guest_agent_down: set[int] = set()
        # the node's bridge (vmbr0): a VM with net0 gets an address in this loopback /24 at its first start,
        # where its guest's fio server is reached (pve_launch.GUEST_FIO_PORT); random, so two stand-ins on
        # one machine do not share addresses
        self.bridge = f"127.{random.randint(64, 254)}.{random.randint(1, 254)}"
        self.bridge_addresses: dict[int, str] = {}
        self.guest_execs: dict[tuple[int, int], dict[str, Any]] = {}  # (vmid, pid) -> guest-exec-status
        self._task_counter = 0
        # long-lived threads fork every QEMU (see PowerAndTasks._start_vm); several, as a node starts VMs in parallel
        self._forker = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="pve-forker")
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.ca_file = self.workdir / "pve-ssl.pem"
        # node-local tools (qm): the fake executables of install_node_tools() talk to this socket
        self.node_socket = self.workdir / "run" / "node.sock"
        self._node_server: Any = None
        #: the node's /proc and /sys (pve_nodefs.NodeTree), when a test gives it one: its CPUs are the node's
        self.node_tree: Any = None

    # --- setup -----------------------------------------------------------------------------------
    def add_volume(self, vmid: int, name: str, size: int = 64 * 1024 * 1024) -> str:
        path = self.storage_dir / "images" / str(vmid) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            with open(path, "wb") as fh:
                fh.truncate(size)
        return f"{self.storage}:{vmid}/{name}"

    def add_vm(self, vmid: int, conf: dict[str, str]) -> None:
        with self.lock:
            fmt = self.schema.match("PUT", f"/nodes/{self.node}/qemu/{vmid}/config")[2]
            parsed = Schema.validate(fmt, {"node": self.node, "vmid": str(vmid), **conf})
            self.vms[vmid] = Vm(vmid, {k: self._canonical(k, parsed[k], fmt) for k in conf})

    def bridge_address(self, vmid: int) -> str:
        """The VM's address on the bridge (kept for the VM's life, like a DHCP lease)."""
        with self.lock:
            if vmid not in self.bridge_addresses:
                used = set(self.bridge_addresses.values())
                self.bridge_addresses[vmid] = next(f"{self.bridge}.{n}" for n in range(2, 255)
                                                   if f"{self.bridge}.{n}" not in used)
            return self.bridge_addresses[vmid]

    @property
    def bridge_network(self) -> str:
        return f"{self.bridge}.0/24"

    # --- fault switches ----------------------------------------------------------------------------
    def fail_request(self, method: str, path_suffix: str, *, status: int = 500, message: str = "internal error",
                     count: int = 1) -> None:
        """The next ``count`` requests ``method`` whose path ends with ``path_suffix`` fail (before any effect)."""
        with self.lock:
            self._faults.append({"method": method, "suffix": path_suffix, "status": status, "message": message,
                                 "count": count})

    def fail_next_task(self, task_type: str, exitstatus: str) -> None:
        """The next task of ``task_type`` (qmstart, qmstop, qmreboot...) fails with ``exitstatus``."""
        with self.lock:
            self._task_faults.setdefault(task_type, []).append(exitstatus)

    def hold_request(self, method: str, path_suffix: str, *, skip: int = 0) -> threading.Event:
        """The matching request after ``skip`` others blocks (before any effect) until the returned event
        is set: lets a test kill the harness in the middle of a multi-step change."""
        event = threading.Event()
        with self.lock:
            self._holds.append({"method": method, "suffix": path_suffix, "event": event, "held": threading.Event(),
                                "skip": skip})
        return event

    def held(self, timeout: float = 30.0) -> bool:
        """Wait until a request is being held by :meth:`hold_request`."""
        with self.lock:
            holds = list(self._holds) + list(self._held)
        return any(h["held"].wait(timeout) for h in holds[:1])

    def transient_edit(self, key: str, value: str) -> None:
        """Another tool sets ``key`` just before the next config write and removes it right after it
        (as a backup job's ``lock`` does): that write meets a changed digest."""
        with self.lock:
            self._edits.append((key, value))

    # --- config file and digest ------------------------------------------------------------------
    def config_text(self, vm: Vm) -> str:
        lines = [f"{k}: {vm.conf[k]}" for k in sorted(vm.conf)]
        if vm.pending or vm.pending_delete:
            lines.append("")
            lines.append("[PENDING]")
            if vm.pending_delete:
                lines.append("delete: " + ",".join(("!" if v == 2 else "") + k for k, v in sorted(vm.pending_delete.items())))
            lines += [f"{k}: {vm.pending[k]}" for k in sorted(vm.pending)]
        return "\n".join(lines) + "\n"

    def digest(self, vmid: int) -> str:
        with self.lock:
            return hashlib.sha1(self.config_text(self.vms[vmid]).encode()).hexdigest()

    def merged(self, vm: Vm) -> dict[str, str]:
        conf = {k: v for k, v in vm.conf.items() if k not in vm.pending_delete}
        conf.update(vm.pending)
        return conf

    def _canonical(self, key: str, value: Any, info: dict[str, Any]) -> str:
        spec = self._prop(info, key)
        if isinstance(value, dict) and spec is not None and isinstance(spec.get("format"), dict):
            return print_propstring(value, spec["format"])
        return str(value)

    @staticmethod
    def _prop(info: dict[str, Any], key: str) -> dict[str, Any] | None:
        props = info["parameters"]["properties"]
        if key in props:
            return props[key]
        m = re.match(r"^([a-z]+)(\d+)$", key)
        return props.get(f"{m.group(1)}[n]") if m else None

    # --- HTTP --------------------------------------------------------------------------------------
    def start(self) -> "PveStandin":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        key_file = self.workdir / "pve-ssl.key"
        make_cert(self.ca_file, key_file)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.ca_file, key_file)
        standin = self

        class Handler(_Handler):
            pass

        Handler.standin = standin
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, name="pve-standin", daemon=True)
        self._thread.start()
        self._start_node_tools()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._node_server is not None:
            self._node_server.shutdown()
            self._node_server.server_close()
            self._node_server = None
            self.node_socket.unlink(missing_ok=True)
        deadline = time.monotonic() + 15
        while any(t.status == "running" for t in self.tasks.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.lock:
            for vm in self.vms.values():
                if vm.qemu is not None:
                    vm.qemu.stop()
                    vm.qemu = None
        self._forker.shutdown(wait=True)

    def __enter__(self) -> "PveStandin":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def handle(self, method: str, path: str, params: dict[str, str], auth: str | None) -> Any:
        """One API call; returns ``data`` or raises ApiError."""
        user = self._authenticate(auth)
        if not path.startswith("/api2/json/"):
            raise ApiError(404, "Not Found")
        path = path[len("/api2/json"):]
        template, path_params, info = self.schema.match(method, path)
        hold = None
        with self.lock:
            for h in self._holds:
                if h["method"] == method and path.endswith(h["suffix"]):
                    if h["skip"] > 0:
                        h["skip"] -= 1
                        break
                    hold = h
                    self._holds.remove(h)
                    self._held.append(h)
                    break
        if hold is not None:
            hold["held"].set()
            hold["event"].wait(120)
        with self.lock:
            self.requests.append({"method": method, "path": path, "params": dict(params)})
            for fault in self._faults:
                if fault["count"] > 0 and fault["method"] == method and path.endswith(fault["suffix"]):
                    fault["count"] -= 1
                    raise ApiError(fault["status"], fault["message"])
        for k in path_params:
            if k in params:
                raise param_error({k: "duplicate parameter (path and body)"})
        parsed = Schema.validate(info, {**params, **path_params})
        node = path_params.get("node", self.node)
        if node not in self.nodes:
            raise ApiError(595, f"no such cluster node '{path_params['node']}'")
        sid = path_params.get("storage")
        if sid in self.storages and not self.storage_on(sid, node):
            raise ApiError(500, f"storage '{sid}' is not available on node '{node}'")
        handler = getattr(self, "_api_" + re.sub(r"\W+", "_", f"{method}{template}").strip("_"))
        return handler(parsed, params, user, info)

    def _authenticate(self, auth: str | None) -> str:
        m = re.fullmatch(r"PVEAPIToken=([^!=\s]+![^=\s]+)=(\S+)", auth or "")
        if not m or self.tokens.get(m.group(1)) != m.group(2):
            raise ApiError(401, "authentication failure")
        return m.group(1)

    @property
    def nodes(self) -> list[str]:
        return [self.node, *self.other_nodes]

    def add_node(self, node: str) -> None:
        """Another node of the cluster: it sees the shared storages; VMs are put there by a clone's target."""
        with self.lock:
            self.other_nodes.append(node)

    def storage_on(self, sid: str, node: str) -> bool:
        """A shared storage is on every node; any other only on the first (``node``)."""
        return node == self.node or bool(self.storages.get(sid, {}).get("shared"))

    def _vm(self, parsed: dict[str, Any]) -> Vm:
        vmid = int(parsed["vmid"])
        vm = self.vms.get(vmid)
        node = str(parsed.get("node") or self.node)
        if vm is None or self.vm_node.get(vmid, self.node) != node:  # a VM's config lives on its own node
            raise ApiError(500, f"Configuration file 'nodes/{node}/qemu-server/{vmid}.conf' does not exist")
        return vm

    # --- endpoints (named after method + path template) --------------------------------------------
    def _api_GET_version(self, *_: Any) -> Any:
        return {"version": "8.2.4", "release": "8.2", "repoid": "faa83925"}

    def _api_GET_nodes_node_qemu_vmid_config(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            vm = self._vm(p)
            conf = dict(vm.conf) if p.get("current") else self.merged(vm)
            conf["digest"] = self.digest(vm.vmid)
            return conf

    def _api_GET_nodes_node_qemu_vmid_pending(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            vm = self._vm(p)
            out = []
            for key in sorted(set(vm.conf) | set(vm.pending) | set(vm.pending_delete)):
                item: dict[str, Any] = {"key": key}
                if key in vm.conf:
                    item["value"] = vm.conf[key]
                if key in vm.pending:
                    item["pending"] = vm.pending[key]
                if key in vm.pending_delete:
                    item["delete"] = vm.pending_delete[key]
                out.append(item)
            return out

    def _api_PUT_nodes_node_qemu_vmid_config(self, p: dict[str, Any], raw: dict[str, str], user: str,
                                             info: dict[str, Any]) -> Any:
        with self.lock:
            vm = self._vm(p)
            edit = self._edits.pop(0) if self._edits else None
            if edit:
                vm.conf[edit[0]] = edit[1]
            try:
                self._update(vm, p, raw, info)
            finally:
                if edit:
                    vm.conf.pop(edit[0], None)
        return None

    def _api_POST_nodes_node_qemu_vmid_config(self, p: dict[str, Any], raw: dict[str, str], user: str,
                                              info: dict[str, Any]) -> Any:
        vm = self._vm(p)
        return self._task("qmconfig", vm.vmid, user, lambda task: self._update(vm, p, raw, info))

    def _update(self, vm: Vm, p: dict[str, Any], raw: dict[str, str], info: dict[str, Any]) -> None:
        """``PVE::API2::Qemu::update_vm_api`` for what the harness (and a careless client) can send."""
        control = {"node", "vmid", "digest", "delete", "force", "revert", "skiplock", "background_delay"}
        sets = {k: v for k, v in p.items() if k not in control}
        deletes = [k for k in re.split(r"[,;\s]+", str(p.get("delete", "")).strip()) if k]
        force = bool(p.get("force"))
        errors = {k: f"you can't use '-{k}' and '-delete {k}' at the same time" for k in deletes if k in sets}
        if errors:
            raise param_error(errors)
        if not sets and not deletes and not p.get("revert"):
            raise ApiError(400, "no options specified")
        if p.get("digest") and p["digest"] != self.digest(vm.vmid):
            raise ApiError(500, DIGEST_ERROR)
        if "lock" in vm.conf:
            raise ApiError(500, f"VM is locked ({vm.conf['lock']})")
        merged = self.merged(vm)
        # boot order devices must exist after this update (qemu-server's check)
        if "boot" in sets:
            order = re.search(r"(?:^|,)order=([^,]*)", raw["boot"])
            for dev in (order.group(1).split(";") if order else []):
                if dev and (dev not in merged and dev not in sets or dev in deletes) and not dev.startswith("net"):
                    raise param_error({"boot": f"invalid bootorder: device '{dev}' does not exist'"})
        for key, value in sets.items():
            if DRIVE_RE.match(key):
                volid = value["file"]
                if volid not in ("none", "cdrom") and not volid.startswith("/"):
                    if not self.volume_path(volid).exists():
                        raise ApiError(500, f"volume '{volid}' does not exist")
                    for other, ov in merged.items():
                        if other != key and other not in deletes and DRIVE_RE.match(other) and \
                                ov.split(",")[0] == volid:
                            raise ApiError(500, f"unable to attach {volid} as {key}: already used by {other}")
            if UNUSED_RE.match(key):
                raise param_error({key: "unused volumes can only be deleted, not set"})
        for key in [k for k in re.split(r"[,;\s]+", str(p.get("revert", "")).strip()) if k]:
            vm.pending.pop(key, None)
            vm.pending_delete.pop(key, None)
        # Like update_vm_api: every change is written as pending; a stopped VM applies all pending at once.
        for key in deletes:
            if key not in merged:
                continue  # Proxmox ignores deleting what is not there
            vm.pending.pop(key, None)
            vm.pending_delete[key] = 2 if force else 1
        for key, value in sets.items():
            vm.pending_delete.pop(key, None)
            vm.pending[key] = self._canonical(key, value, info)
        if not vm.running:
            self._apply_pending(vm)

    def _delete_now(self, vm: Vm, key: str, force: bool) -> None:
        value = vm.conf.pop(key)
        volid = value.split(",")[0]
        if UNUSED_RE.match(key) or (DRIVE_RE.match(key) and force):
            self._destroy(volid)
        elif DRIVE_RE.match(key) and "media=cdrom" not in value and volid not in ("none", "cdrom"):
            still_used = any(v.split(",")[0] == volid for k, v in vm.conf.items() if DRIVE_RE.match(k) or UNUSED_RE.match(k))
            if not still_used:
                n = next(i for i in range(256) if f"unused{i}" not in vm.conf)
                vm.conf[f"unused{n}"] = volid
        if DRIVE_RE.match(key) and "boot" in vm.conf:
            m = re.search(r"(?:^|,)order=([^,]*)", vm.conf["boot"])
            if m and key in m.group(1).split(";"):
                rest = [d for d in m.group(1).split(";") if d and d != key]
                if rest:
                    vm.conf["boot"] = vm.conf["boot"].replace(m.group(0), m.group(0)[: m.group(0).index("=") + 1] + ";".join(rest))
                else:
                    vm.conf.pop("boot")

    def _set_now(self, vm: Vm, key: str, text: str) -> None:
        vm.conf[key] = text
        if DRIVE_RE.match(key):
            volid = text.split(",")[0]
            for k in [k for k, v in vm.conf.items() if UNUSED_RE.match(k) and v.split(",")[0] == volid]:
                del vm.conf[k]

    def _destroy(self, volid: str) -> None:
        try:
            self.volume_path(volid).unlink()
        except FileNotFoundError:
            pass
        self.destroyed.append(volid)

    def _apply_pending(self, vm: Vm) -> None:
        for key, kind in list(vm.pending_delete.items()):
            if key in vm.conf:
                self._delete_now(vm, key, kind == 2)
        vm.pending_delete.clear()
        for key, text in list(vm.pending.items()):
            self._set_now(vm, key, text)
        vm.pending.clear()


def _form(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Form fields; a key given more than once is an array parameter's items (``command=fio&command=-v``)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            out[key] = (out[key] if isinstance(out[key], list) else [out[key]]) + [value]
        else:
            out[key] = value
    return out


class _Handler(BaseHTTPRequestHandler):
    standin: PveStandin
    protocol_version = "HTTP/1.1"
    # headers and body go out as two writes: without TCP_NODELAY, Nagle's algorithm holds the body until
    # the client's delayed ACK (40 ms per request on Linux), which pveproxy does not do
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep stderr quiet
        pass

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        params = _form(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if body:
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                params.update({k: [str(x) for x in v] if isinstance(v, list) else str(v)
                               for k, v in json.loads(body).items()})
            else:
                params.update(_form(parse_qsl(body.decode(), keep_blank_values=True)))
        status, reason, payload = 200, "OK", {"data": None}
        try:
            payload = {"data": self.standin.handle(method, url.path, params, self.headers.get("Authorization"))}
        except ApiError as exc:
            status, reason = exc.status, exc.message.replace("\n", " ")
            payload = {"data": None}
            if exc.errors:
                payload["errors"] = exc.errors
        data = json.dumps(payload).encode()
        self.send_response(status, reason)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


def make_cert(cert_file: Path, key_file: Path) -> None:
    """A self-signed certificate for 127.0.0.1/localhost, made at test time (never stored in git)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pve-standin")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    os.chmod(key_file, 0o600)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


__all__ = ["PveStandin", "SleepLauncher", "LaunchSpec", "LaunchFailed", "ApiError", "Schema", "make_cert"]

__all__ += ["QemuVmLauncher", "QemuVmRunning", "RunningQemu", "guest_interface"]
