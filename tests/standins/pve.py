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
import re
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "pve-api-qemu.json"
DIGEST_ERROR = "detected modified configuration - file changed by other user? Try again."
DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$")
UNUSED_RE = re.compile(r"^unused(\d+)$")

# Endpoints the backend uses that the subset schema lacks, with Proxmox's documented parameters.
EXTRA_SCHEMA: dict[str, dict[str, Any]] = {
    "/nodes/{node}/tasks/{upid}/log": {"GET": {"parameters": {"additionalProperties": 0, "properties": {
        "node": {"type": "string", "format": "pve-node"},
        "upid": {"type": "string"},
        "start": {"type": "integer", "minimum": 0, "optional": 1},
        "limit": {"type": "integer", "minimum": 0, "optional": 1},
        "download": {"type": "boolean", "optional": 1},
    }}}},
    # pve-manager PVE/API2/Tasks.pm node_tasks
    "/nodes/{node}/tasks": {"GET": {"parameters": {"additionalProperties": 0, "properties": {
        "node": {"type": "string", "format": "pve-node"},
        "start": {"type": "integer", "minimum": 0, "optional": 1},
        "limit": {"type": "integer", "minimum": 0, "optional": 1},
        "userfilter": {"type": "string", "optional": 1},
        "typefilter": {"type": "string", "optional": 1},
        "vmid": {"type": "integer", "minimum": 100, "maximum": 999999999, "optional": 1},
        "errors": {"type": "boolean", "optional": 1},
        "source": {"type": "string", "enum": ["archive", "active", "all"], "optional": 1},
        "since": {"type": "integer", "optional": 1},
        "until": {"type": "integer", "optional": 1},
        "statusfilter": {"type": "string", "optional": 1},
    }}}},
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors


def param_error(errors: dict[str, str]) -> ApiError:
    return ApiError(400, "Parameter verification failed.", errors)


# --- property strings (Proxmox's own rules, reimplemented here on purpose) ---------------------------

def parse_propstring(text: str, fmt: dict[str, Any], name: str) -> dict[str, Any]:
    """Validate and parse like ``PVE::JSONSchema::parse_property_string``; raise ApiError on errors."""
    default_key = next((k for k, v in fmt.items() if v.get("default_key")), None)
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for part in text.split(","):
        if not part:
            continue
        if "=" in part:
            k, _, v = part.partition("=")
        elif default_key:
            k, v = default_key, part
        else:
            errors[name] = f"invalid format - value without key, but schema does not define a default key"
            break
        spec = fmt.get(k)
        if spec is not None and "alias" in spec:
            k, spec = spec["alias"], fmt[spec["alias"]]
        if spec is None:
            errors[f"{name}.{k}"] = "property is not defined in schema and the schema does not allow additional properties"
            continue
        if k in out:
            errors[f"{name}.{k}"] = "duplicate key in comma-separated list property"
            continue
        problem, value = check_value(v, spec)
        if problem:
            errors[f"{name}.{k}"] = problem
        out[k] = value
    for k, spec in fmt.items():
        if "alias" not in spec and not spec.get("optional") and k not in out and "default" not in spec:
            errors[f"{name}.{k}"] = "property is missing and it is not optional"
    if errors:
        errors.setdefault(name, "invalid format - format error")
        raise param_error(errors)
    return out


def print_propstring(data: dict[str, Any], fmt: dict[str, Any]) -> str:
    """``PVE::JSONSchema::print_property_string``: the default key's bare value first, then sorted keys."""
    default_key = next((k for k, v in fmt.items() if v.get("default_key")), None)
    parts = []
    if default_key and default_key in data:
        parts.append(str(data[default_key]))
    parts += [f"{k}={data[k]}" for k in sorted(data) if k != default_key]
    return ",".join(parts)


_BOOL = {"1": 1, "on": 1, "yes": 1, "true": 1, "0": 0, "off": 0, "no": 0, "false": 0}
_CONFIGID = re.compile(r"^[a-z][a-z_\-]*\d*$")


def check_value(raw: Any, spec: dict[str, Any]) -> tuple[str | None, Any]:
    """(problem or None, normalized value) for one scalar against its schema entry."""
    text = str(raw)
    typ = spec.get("type", "string")
    if typ == "boolean":
        if text.lower() not in _BOOL:
            return f"type check ('boolean') failed - got '{text}'", text
        return None, _BOOL[text.lower()]
    if typ == "integer":
        if not re.fullmatch(r"[+-]?\d+", text):
            return f"type check ('integer') failed - got '{text}'", text
        value: Any = int(text)
    elif typ == "number":
        try:
            value = float(text)
        except ValueError:
            return f"type check ('number') failed - got '{text}'", text
    else:
        value = text
    if typ in ("integer", "number"):
        if "minimum" in spec and value < spec["minimum"]:
            return f"value must have a minimum value of {spec['minimum']}", value
        if "maximum" in spec and value > spec["maximum"]:
            return f"value must have a maximum value of {spec['maximum']}", value
        return None, value
    if "enum" in spec and text not in spec["enum"]:
        return f"value '{text}' does not have a value in the enumeration '{', '.join(spec['enum'])}'", text
    if "maxLength" in spec and len(text) > spec["maxLength"]:
        return f"value may only be {spec['maxLength']} characters long", text
    if "pattern" in spec:
        pattern = re.sub(r"^\(\?\^:(.*)\)$", r"\1", spec["pattern"])
        if not re.fullmatch(pattern, text):
            return f"value does not match the regex pattern", text
    fmt = spec.get("format")
    if fmt == "pve-configid-list":
        for item in re.split(r"[,;\s]+", text.strip()):
            if item and not _CONFIGID.match(item):
                return f"invalid format - invalid configuration ID '{item}'", text
    elif fmt == "pve-node":
        if not re.fullmatch(r"[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?", text):
            return f"invalid format - value does not look like a valid node name", text
    return None, value


# --- the schema --------------------------------------------------------------------------------------

class Schema:
    def __init__(self, path: Path = SCHEMA_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(EXTRA_SCHEMA)
        self.routes: list[tuple[re.Pattern[str], str, dict[str, Any]]] = []
        for template, methods in data.items():
            rx = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, methods))

    def match(self, method: str, path: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        for rx, template, methods in self.routes:
            m = rx.match(path)
            if m:
                if method not in methods:
                    raise ApiError(501, f"Method '{method} {path}' not implemented")
                return template, {k: unquote(v) for k, v in m.groupdict().items()}, methods[method]
        raise ApiError(501, f"Method '{method} {path}' not implemented")

    @staticmethod
    def validate(info: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        props: dict[str, Any] = info.get("parameters", {}).get("properties", {})
        indexed = {k[:-3]: v for k, v in props.items() if k.endswith("[n]")}
        errors: dict[str, str] = {}
        out: dict[str, Any] = {}
        for key, raw in params.items():
            spec = props.get(key)
            if spec is None:
                m = re.match(r"^([a-z]+)(\d+)$", key)
                if m and m.group(1) in indexed:
                    spec = indexed[m.group(1)]
                    limit = re.search(r"n is 0 to (\d+)", spec.get("description", ""))
                    if limit and int(m.group(2)) > int(limit.group(1)):
                        spec = None
            if spec is None:
                errors[key] = "property is not defined in schema and the schema does not allow additional properties"
                continue
            if isinstance(spec.get("format"), dict):
                try:
                    out[key] = parse_propstring(str(raw), spec["format"], key)
                except ApiError as exc:
                    errors.update(exc.errors or {})
                continue
            problem, value = check_value(raw, spec)
            if problem:
                errors[key] = problem
            out[key] = value
        for key, spec in props.items():
            if key.endswith("[n]") or spec.get("optional") or key in params:
                continue
            errors[key] = "property is missing and it is not optional"
        for key, spec in props.items():
            req = spec.get("requires")
            if key in params and req and req not in params:
                errors[key] = f"missing property - '{key}' requires this property"
        if errors:
            raise param_error(errors)
        return out


# --- the VM and its QEMU -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchSpec:
    """What a launcher gets: the VM as qemu-server would start it.

    ``controller`` ... ``image`` describe the measured disk: the VM's only disk, or the one disk not in
    its boot order (the stormatrix guest boots from its kernel, never from a disk; a VM with a boot disk
    keeps that in ``boot: order=``). The whole config, every drive included, is ``config``; ``volumes``
    maps each drive's volume id to its file."""

    vmid: int
    name: str
    controller: str  # stormatrix controller name (ide, sata, virtio-blk, lsi, virtio-scsi-single, ...)
    aio: str
    iothread: bool
    cache: str  # "default" when unset
    slot: int
    image: Path
    cores: int
    memory_mib: int
    run_dir: Path
    config: dict[str, str]
    key: str = ""  # the measured disk's config key (scsi1)
    volumes: dict[str, Path] = field(default_factory=dict)

    def disk_args(self) -> list[str]:
        """qemu-server's arguments for every drive of the config (tests/standins/pve_cmdline.py), the
        measured disk with this spec's aio/cache/iothread (a launcher may model a qemu-server that
        changes them)."""
        from .pve_cmdline import disk_args

        override = {self.key: {"aio": self.aio, "iothread": "1" if self.iothread else None,
                               "cache": None if self.cache == "default" else self.cache}}
        return disk_args(self.config, lambda volid: self.volumes[volid], override=override)


class RunningQemu(Protocol):
    pid: int

    def alive(self) -> bool: ...

    def stop(self) -> None: ...

    def hmp(self, command: str) -> str: ...

    def agent_ping(self) -> bool: ...

    def powerdown(self) -> None:
        """QMP ``system_powerdown``: the ACPI power button; the guest decides what to do with it."""

    def guest_shutdown(self) -> None:
        """The guest agent's ``guest-shutdown``."""


class Launcher(Protocol):
    def start(self, spec: LaunchSpec) -> RunningQemu:
        """Start the VM's QEMU or raise LaunchFailed(exit code, stderr lines)."""

    def argv(self, spec: LaunchSpec) -> list[str]:
        """The QEMU command line :meth:`start` runs for ``spec`` (what ``qm showcmd`` prints)."""


class LaunchFailed(Exception):
    def __init__(self, code: int, lines: list[str]) -> None:
        super().__init__(f"QEMU exited with code {code}")
        self.code, self.lines = code, lines


class SleepQemu:
    """A stand-in process for fast tests: a real pid that lives until stopped, no QMP. Its command line
    ends with the QEMU command line ``argv`` (so /proc/<pid>/cmdline shows the devices), and it writes
    ``pidfile`` like QEMU's ``-pidfile``.

    ``acpi``: whether the "guest" powers off on the ACPI power button (a guest without acpid ignores it)."""

    def __init__(self, acpi: bool = True, argv: list[str] | None = None, pidfile: Path | None = None) -> None:
        self.acpi = acpi
        self.pidfile = pidfile
        self.proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(3600)",
                                      *(argv or [])],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        if pidfile is not None:
            pidfile.write_text(f"{self.pid}\n")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pidfile is not None and self.pidfile.exists() and self.pidfile.read_text().strip() == str(self.pid):
            self.pidfile.unlink()

    def hmp(self, command: str) -> str:
        raise ApiError(500, f"VM {self.pid} qmp command 'human-monitor-command' failed - not available in this stand-in")

    def agent_ping(self) -> bool:
        return True

    def _power_off(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the process exits by itself, as QEMU does when its guest powers off

    def powerdown(self) -> None:
        if self.acpi:
            self._power_off()

    def guest_shutdown(self) -> None:
        self._power_off()


class SleepLauncher:
    """Launches :class:`SleepQemu`; refuses what QEMU itself refuses (aio=native without O_DIRECT).

    ``guest_acpi = False`` makes the guests ignore the ACPI power button (no acpid in the guest)."""

    def __init__(self, guest_acpi: bool = True, start_delay: float = 0.0) -> None:
        self.started: list[LaunchSpec] = []
        self.guest_acpi = guest_acpi
        self.start_delay = start_delay  # seconds a start takes (QEMU's own start, storage activation)

    def start(self, spec: LaunchSpec) -> RunningQemu:
        if spec.aio == "native" and spec.cache not in ("none", "directsync", "default"):
            raise LaunchFailed(1, ["kvm: -drive ...: aio=native was specified, but it requires cache.direct=on, "
                                   "which was not specified."])
        time.sleep(self.start_delay)
        self.started.append(spec)
        return SleepQemu(acpi=self.guest_acpi, argv=self.argv(spec), pidfile=spec.run_dir / f"{spec.vmid}.pid")

    def argv(self, spec: LaunchSpec) -> list[str]:
        """qemu-server's command line for the VM (config_to_command), cut down to what the harness
        looks at: every drive's objects, controllers and devices as qemu-server's own test data
        expects them (tests/standins/pve_cmdline.py), never the product's builder."""
        run = spec.run_dir
        return ["/usr/bin/kvm", "-id", str(spec.vmid), "-name", f"{spec.name},debug-threads=on", "-no-shutdown",
                "-chardev", f"socket,id=qmp,path={run}/{spec.vmid}.qmp,server=on,wait=off",
                "-mon", "chardev=qmp,mode=control", "-pidfile", f"{run}/{spec.vmid}.pid", "-daemonize",
                "-smp", f"{spec.cores},sockets=1,cores={spec.cores},maxcpus={spec.cores}", "-nodefaults",
                "-m", str(spec.memory_mib), *spec.disk_args(), "-machine", "type=pc-i440fx-8.1+pve0",
                *extra_args(spec)]


@dataclass
class Task:
    upid: str
    type: str
    vmid: int
    user: str
    starttime: int
    status: str = "running"
    exitstatus: str | None = None
    endtime: int | None = None
    log: list[str] = field(default_factory=list)


@dataclass
class Vm:
    vmid: int
    conf: dict[str, str]
    pending: dict[str, str] = field(default_factory=dict)
    pending_delete: dict[str, int] = field(default_factory=dict)  # key -> 1, or 2 for force
    qemu: RunningQemu | None = None
    started_at: float = 0.0

    @property
    def running(self) -> bool:
        return self.qemu is not None and self.qemu.alive()


class PveStandin:
    """The Proxmox node ``node`` with its VMs, storage and task list, served over HTTPS on 127.0.0.1."""

    def __init__(self, workdir: Path, *, node: str = "pve", tokens: dict[str, str] | None = None,
                 launcher: Launcher | None = None, storage: str = "local",
                 auditors: set[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.node = node
        self.tokens = dict(tokens or {})  # "user@realm!tokenid" -> secret
        # tokens with Sys.Audit on /nodes/<node>: they may list and read other users' tasks (None = all)
        self.auditors = auditors
        self.launcher = launcher or SleepLauncher()
        self.storage = storage
        self.storage_dir = self.workdir / "storage" / storage
        self.run_dir = self.workdir / "run" / "qemu-server"
        self.schema = Schema()
        self.vms: dict[int, Vm] = {}
        self.tasks: dict[str, Task] = {}
        self.requests: list[dict[str, Any]] = []
        self.destroyed: list[str] = []
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
        self._task_counter = 0
        self._forker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pve-forker")
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.ca_file = self.workdir / "pve-ssl.pem"
        # node-local tools (qm): the fake executables of install_node_tools() talk to this socket
        self.node_socket = self.workdir / "run" / "node.sock"
        self._node_server: Any = None

    # --- setup -----------------------------------------------------------------------------------
    def add_volume(self, vmid: int, name: str, size: int = 64 * 1024 * 1024) -> str:
        path = self.storage_dir / "images" / str(vmid) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            with open(path, "wb") as fh:
                fh.truncate(size)
        return f"{self.storage}:{vmid}/{name}"

    def volume_path(self, volid: str) -> Path:
        storage, _, rel = volid.partition(":")
        if storage != self.storage or not rel or "/" not in rel:
            raise ApiError(500, f"unable to parse volume ID '{volid}'")
        vmid, _, name = rel.partition("/")
        return self.storage_dir / "images" / vmid / name

    def volumes(self) -> set[str]:
        base = self.storage_dir / "images"
        return {f"{self.storage}:{p.parent.name}/{p.name}" for p in base.glob("*/*") if p.is_file()}

    def add_vm(self, vmid: int, conf: dict[str, str]) -> None:
        with self.lock:
            fmt = self.schema.match("PUT", f"/nodes/{self.node}/qemu/{vmid}/config")[2]
            parsed = Schema.validate(fmt, {"node": self.node, "vmid": str(vmid), **conf})
            self.vms[vmid] = Vm(vmid, {k: self._canonical(k, parsed[k], fmt) for k in conf})

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

    def _start_node_tools(self) -> None:
        import socketserver

        standin = self

        class NodeHandler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    req = json.loads(self.rfile.readline())
                    rc, out, err = standin.node_command(str(req["tool"]), [str(a) for a in req["argv"]])
                except Exception as exc:  # noqa: BLE001 - reported like a crashing tool
                    rc, out, err = 255, "", f"stand-in error: {type(exc).__name__}: {exc}\n"
                self.wfile.write(json.dumps({"rc": rc, "stdout": out, "stderr": err}).encode())

        self.node_socket.unlink(missing_ok=True)
        server = socketserver.ThreadingUnixStreamServer(str(self.node_socket), NodeHandler)
        server.daemon_threads = True
        self._node_server = server
        threading.Thread(target=server.serve_forever, name="pve-node-tools", daemon=True).start()

    def install_node_tools(self, bindir: Path) -> Path:
        """Write ``qm`` into ``bindir``: a fake that runs the command in this stand-in (as the real one
        runs on the node, reading /etc/pve and /run/qemu-server) and exits with its code."""
        bindir.mkdir(parents=True, exist_ok=True)
        qm = bindir / "qm"
        qm.write_text(NODE_TOOL.format(python=sys.executable, tool="qm", socket=str(self.node_socket)))
        qm.chmod(0o755)
        return qm

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
        if path_params.get("node", self.node) != self.node:
            raise ApiError(595, f"no such cluster node '{path_params['node']}'")
        handler = getattr(self, "_api_" + re.sub(r"\W+", "_", f"{method}{template}").strip("_"))
        return handler(parsed, params, user, info)

    def _authenticate(self, auth: str | None) -> str:
        m = re.fullmatch(r"PVEAPIToken=([^!=\s]+![^=\s]+)=(\S+)", auth or "")
        if not m or self.tokens.get(m.group(1)) != m.group(2):
            raise ApiError(401, "authentication failure")
        return m.group(1)

    def _vm(self, parsed: dict[str, Any]) -> Vm:
        vm = self.vms.get(int(parsed["vmid"]))
        if vm is None:
            raise ApiError(500, f"Configuration file 'nodes/{self.node}/qemu-server/{parsed['vmid']}.conf' does not exist")
        return vm

    # --- node-local tools -------------------------------------------------------------------------
    def node_command(self, tool: str, argv: list[str]) -> tuple[int, str, str]:
        """``tool argv...`` on the node: (exit code, stdout, stderr). PVE's CLI tools exit 255 on errors."""
        if tool != "qm":
            return 127, "", f"{tool}: command not found\n"
        if not argv:
            return 255, "", "ERROR: no command specified\n"
        if argv[0] == "showcmd":
            return self._qm_showcmd(argv[1:])
        return 255, "", f"ERROR: unknown command 'qm {argv[0]}'\n"

    def _qm_showcmd(self, args: list[str]) -> tuple[int, str, str]:
        """``qm showcmd <vmid> [--pretty] [--snapshot <name>]`` (PVE/CLI/qm.pm, QemuServer::vm_commandline):
        the command line a start of the *current* config would run (pending changes left out), as
        ``PVE::Tools::cmd2string`` quotes it; ``--pretty`` puts each option on a new line."""
        usage = "qm showcmd <vmid> [OPTIONS]\n"
        pretty, snapshot, pos = False, None, []
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            if not a.startswith("--"):
                pos.append(a)
                continue
            name, eq, value = a[2:].partition("=")
            if name == "pretty":  # a boolean: --pretty, --pretty=1, --pretty 0
                if not eq and i < len(args) and args[i].lower() in _BOOL:
                    value, i = args[i], i + 1
                if (value or "1").lower() not in _BOOL:
                    return 255, "", f"400 Parameter verification failed.\npretty: type check ('boolean') failed - got '{value}'\n{usage}"
                pretty = _BOOL[(value or "1").lower()] == 1
            elif name == "snapshot":
                if not eq:
                    value, i = (args[i] if i < len(args) else ""), i + 1
                snapshot = value
            else:
                return 255, "", f"Unknown option: {name}\n400 unable to parse option\n{usage}"
        if len(pos) != 1:
            return 255, "", f"400 {'not enough' if not pos else 'too many'} arguments\n{usage}"
        if not re.fullmatch(r"\d+", pos[0]) or not 100 <= int(pos[0]) <= 999999999:
            return 255, "", f"400 Parameter verification failed.\nvmid: invalid format - value does not look like a valid VM ID\n{usage}"
        with self.lock:
            vm = self.vms.get(int(pos[0]))
            if vm is None:
                return 255, "", f"Configuration file 'nodes/{self.node}/qemu-server/{pos[0]}.conf' does not exist\n"
            if snapshot:
                return 255, "", f"snapshot '{snapshot}' does not exist\n"
            try:
                spec = self.launch_spec(vm)
            except ApiError as exc:
                return 255, "", exc.message + "\n"
        text = " ".join(shellquote(a) for a in self.launcher.argv(spec))
        if pretty:
            text = text.replace(" -", " \\\n  -")
        return 0, text + "\n", ""

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

    # --- power and tasks -------------------------------------------------------------------------
    def _task(self, ttype: str, vmid: int, user: str, body: Callable[[Task], None]) -> str:
        with self.lock:
            self._task_counter += 1
            now = int(time.time())
            upid = (f"UPID:{self.node}:{os.getpid() + self._task_counter:08X}:{self._task_counter:08X}:"
                    f"{now:08X}:{ttype}:{vmid}:{user}:")
            task = Task(upid, ttype, vmid, user, now)
            self.tasks[upid] = task
            injected = self._task_faults.get(ttype, [])
            fault = injected.pop(0) if injected else None

        def run() -> None:
            try:
                if fault is not None:
                    time.sleep(0.05)
                    raise ApiError(500, fault)
                body(task)
                task.exitstatus = "OK"
                task.log.append("TASK OK")
            except ApiError as exc:
                task.exitstatus = exc.message.strip()
                task.log.append(f"TASK ERROR: {task.exitstatus}")
            except Exception as exc:  # noqa: BLE001 - a task reports every failure in its exitstatus
                task.exitstatus = f"{type(exc).__name__}: {exc}"
                task.log.append(f"TASK ERROR: {task.exitstatus}")
            finally:
                task.endtime = int(time.time())
                task.status = "stopped"

        threading.Thread(target=run, name=f"task-{ttype}", daemon=True).start()
        return upid

    def _start_vm(self, vm: Vm, task: Task) -> None:
        with self.lock:
            if vm.running:
                raise ApiError(500, f"VM {vm.vmid} already running")
            self._apply_pending(vm)
            spec = self.launch_spec(vm)
        task.log.append(f"starting VM {vm.vmid}: {spec.controller} aio={spec.aio} iothread={int(spec.iothread)} "
                        f"cache={spec.cache} slot={spec.slot}")
        try:
            # One long-lived thread forks every QEMU: the qemu backend sets PR_SET_PDEATHSIG, which
            # fires when the forking *thread* ends, so a short-lived task thread would kill QEMU.
            qemu = self._forker.submit(self.launcher.start, spec).result()
        except LaunchFailed as exc:
            task.log.extend(exc.lines[-20:])
            raise ApiError(500, f"start failed: QEMU exited with code {exc.code}") from None
        with self.lock:
            vm.qemu, vm.started_at = qemu, time.time()

    def _stop_vm(self, vm: Vm, task: Task) -> None:
        with self.lock:
            qemu, vm.qemu = vm.qemu, None
        if qemu is not None:
            qemu.stop()
            task.log.append(f"stopped QEMU pid {qemu.pid}")

    def launch_spec(self, vm: Vm) -> LaunchSpec:
        """How qemu-server would start this config, reduced to what a launcher needs."""
        disks = [(k, v) for k, v in vm.conf.items() if DRIVE_RE.match(k) and "media=cdrom" not in v]
        order = re.search(r"(?:^|,)order=([^,]*)", vm.conf.get("boot", ""))
        booted = set(order.group(1).split(";")) if order else set()
        measured = disks if len(disks) == 1 else [(k, v) for k, v in disks if k not in booted]
        if len(measured) != 1:
            raise ApiError(500, f"stand-in limitation: VM {vm.vmid} must have one disk outside its boot order "
                                f"(the measured one), has {', '.join(k for k, _ in measured) or 'none'}")
        volumes = {v.split(",")[0]: self.volume_path(v.split(",")[0]) for _, v in disks}
        key, value = measured[0]
        m = DRIVE_RE.match(key)
        assert m
        bus, slot = m.group(1), int(m.group(2))
        opts = dict(part.split("=", 1) for part in value.split(",")[1:])
        scsihw = vm.conf.get("scsihw", "lsi")
        controller = {"ide": "ide", "sata": "sata", "virtio": "virtio-blk", "scsi": scsihw}[bus]
        iothread = opts.get("iothread") == "1"
        if iothread and not (bus == "virtio" or scsihw == "virtio-scsi-single"):
            iothread = False  # qemu-server warns and ignores it
        memory = re.match(r"(?:current=)?(\d+)", vm.conf.get("memory", "512"))
        return LaunchSpec(vmid=vm.vmid, name=vm.conf.get("name", f"vm{vm.vmid}"), controller=controller,
                          aio=opts.get("aio", "io_uring"), iothread=iothread, cache=opts.get("cache", "default"),
                          slot=slot, image=self.volume_path(value.split(",")[0]),
                          cores=int(vm.conf.get("cores", "1")) * int(vm.conf.get("sockets", "1")),
                          memory_mib=int(memory.group(1)) if memory else 512, run_dir=self.run_dir,
                          config=dict(vm.conf), key=key, volumes=volumes)

    def _api_POST_nodes_node_qemu_vmid_status_start(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        vm = self._vm(p)
        return self._task("qmstart", vm.vmid, user, lambda t: self._start_vm(vm, t))

    def _api_POST_nodes_node_qemu_vmid_status_stop(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        vm = self._vm(p)
        return self._task("qmstop", vm.vmid, user, lambda t: self._stop_vm(vm, t))

    def _api_POST_nodes_node_qemu_vmid_status_shutdown(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        vm = self._vm(p)
        timeout = int(p["timeout"]) if "timeout" in p else None
        return self._task("qmshutdown", vm.vmid, user,
                          lambda t: self._shutdown_vm(vm, t, timeout=timeout, force=bool(p.get("forceStop"))))

    def reboot_request(self, vmid: int) -> Path:
        """qemu-server's ``/run/qemu-server/<vmid>.reboot`` trigger file."""
        return self.run_dir / f"{vmid}.reboot"

    def _api_POST_nodes_node_qemu_vmid_status_reboot(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        """``vm_reboot`` (qemu-server API2/Qemu.pm, QemuServer.pm): the task writes a reboot request and
        shuts the guest down (guest agent ``guest-shutdown`` when the agent is configured and answers,
        else ACPI ``system_powerdown``), waiting ``timeout`` s (60) for QEMU to exit. The task ends
        there. qmeventd then sees QEMU gone and runs ``qm cleanup``, which (once the reboot task has
        released the config lock) finds the request and starts the VM again in a ``qmstart`` task of
        its own, as root@pam: only that start applies the pending changes, in a new QEMU process."""
        vm = self._vm(p)
        with self.lock:
            if not vm.running:
                raise ApiError(500, f"VM {vm.vmid} not running")
        timeout = int(p["timeout"]) if "timeout" in p else None

        def reboot(task: Task) -> None:
            request = self.reboot_request(vm.vmid)
            request.touch()
            try:
                self._shutdown_vm(vm, task, timeout=timeout, force=False)
            except BaseException:
                request.unlink(missing_ok=True)  # the next normal shutdown must not become a reboot
                raise
            threading.Thread(target=self._qm_cleanup, args=(vm, task), name="qmeventd", daemon=True).start()

        return self._task("qmreboot", vm.vmid, user, reboot)

    def _shutdown_vm(self, vm: Vm, task: Task, *, timeout: int | None, force: bool) -> None:
        """``_do_vm_stop`` with ``shutdown=1``: ask the guest, wait, fail (or SIGTERM with ``force``)."""
        with self.lock:
            qemu = vm.qemu
            agent = bool(re.match(r"(?:enabled=)?(1|on|yes|true)", vm.conf.get("agent", "0")))
        if qemu is None or not qemu.alive():
            return
        if agent and self.agent_ready and qemu.agent_ping():
            qemu.guest_shutdown()
        else:
            qemu.powerdown()
        deadline = time.monotonic() + (60 if timeout is None else timeout)
        while qemu.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if qemu.alive():
            if not force:
                raise ApiError(500, "VM quit/powerdown failed - got timeout")
            task.log.append("VM still running - terminating now with SIGTERM")
        with self.lock:
            if vm.qemu is qemu:
                vm.qemu = None
        qemu.stop()  # reaps the exited process (or terminates it with force)

    def _qm_cleanup(self, vm: Vm, reboot_task: Task) -> None:
        """qmeventd -> ``qm cleanup``: waits for the config lock (the reboot task), then restarts the VM
        if a reboot was requested (``clear_reboot_request``)."""
        while reboot_task.status == "running":
            time.sleep(0.02)
        time.sleep(self.qm_cleanup_delay)  # qmeventd noticing the exit and forking qm cleanup is not instant
        try:
            self.reboot_request(vm.vmid).unlink()
        except FileNotFoundError:
            return
        if self._server is None:
            return  # the stand-in is shutting down
        self._task("qmstart", vm.vmid, "root@pam", lambda t: self._start_vm(vm, t))

    def _api_GET_nodes_node_qemu_vmid_status_current(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            vm = self._vm(p)
            agent = re.match(r"(?:enabled=)?(1|on|yes|true)", vm.conf.get("agent", "0"))
            out: dict[str, Any] = {"vmid": vm.vmid, "name": vm.conf.get("name", f"vm{vm.vmid}"),
                                   "status": "running" if vm.running else "stopped", "ha": {"managed": 0},
                                   "agent": 1 if agent else 0}
            if vm.running:
                assert vm.qemu is not None
                out.update(pid=vm.qemu.pid, qmpstatus="running", uptime=int(time.time() - vm.started_at),
                           **{"running-machine": "pc-i440fx-8.1+pve0", "running-qemu": "8.1.5"})
            else:
                out["qmpstatus"] = "stopped"
            return out

    def _agent_vm(self, p: dict[str, Any]) -> Any:
        """qemu-server's ``assert_agent_available`` up to the agent itself: configured, VM running
        (each a 500 with Proxmox's text). Call with the lock held."""
        vm = self._vm(p)
        if not re.match(r"(?:enabled=)?(1|on|yes|true)", vm.conf.get("agent", "0")):
            raise ApiError(500, "No QEMU guest agent configured")
        if not vm.running:
            raise ApiError(500, f"VM {vm.vmid} is not running")
        return vm

    def _api_POST_nodes_node_qemu_vmid_agent_ping(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            qemu = self._agent_vm(p).qemu
        assert qemu is not None
        if not self.agent_ready or not qemu.agent_ping():
            raise ApiError(500, "QEMU guest agent is not running")
        return {}

    def _api_GET_nodes_node_qemu_vmid_agent_network_get_interfaces(self, p: dict[str, Any], *_: Any) -> Any:
        """qemu-server's agent command: ``assert_agent_available`` (configured, VM running, agent
        answering; each a 500 with Proxmox's text), then QGA's answer wrapped as ``{"result": [...]}``."""
        with self.lock:
            vm = self._agent_vm(p)
            qemu = vm.qemu
            down = vm.vmid in self.guest_agent_down
            interfaces = self.guest_interfaces.get(vm.vmid, [guest_interface("lo", "00:00:00:00:00:00",
                                                                             "127.0.0.1/8", "::1/128")])
        assert qemu is not None
        if down or not self.agent_ready or not qemu.agent_ping():
            raise ApiError(500, "QEMU guest agent is not running")
        return {"result": json.loads(json.dumps(interfaces))}

    def _api_POST_nodes_node_qemu_vmid_monitor(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            vm = self._vm(p)
            if not vm.running:
                raise ApiError(500, f"VM {vm.vmid} is not running")
            qemu = vm.qemu
        assert qemu is not None
        return qemu.hmp(str(p["command"]))

    def _audit_ok(self, user: str) -> bool:
        return self.auditors is None or user in self.auditors

    def _check_task_user(self, task: Task, user: str) -> None:
        """Tasks.pm: a token sees its own tasks, a user its own and its tokens'; others need Sys.Audit."""
        owner = task.user.split("!")[0]
        if task.user == user or (owner == user and "!" not in user) or self._audit_ok(user):
            return
        raise ApiError(403, f"Permission check failed (/nodes/{self.node}, Sys.Audit)")

    def _api_GET_nodes_node_tasks(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        source = p.get("source", "archive")
        start, limit = int(p.get("start", 0)), int(p.get("limit", 50))
        with self.lock:
            tasks = sorted(self.tasks.values(), key=lambda t: t.upid.split(":")[3], reverse=True)
        out: list[dict[str, Any]] = []
        count = 0
        for want_active in ((True, False) if source == "all" else (source == "active",)):
            for t in tasks:
                if (t.status == "running") != want_active:
                    continue
                try:
                    self._check_task_user(t, user)
                except ApiError:
                    continue
                if p.get("userfilter") and str(p["userfilter"]).lower() not in t.user.lower():
                    continue
                if p.get("typefilter") and t.type != p["typefilter"]:
                    continue
                if p.get("vmid") and str(t.vmid) != str(p["vmid"]):
                    continue
                if "since" in p and t.starttime < int(p["since"]):
                    continue
                if "until" in p and t.starttime > int(p["until"]):
                    continue
                if p.get("errors") and t.exitstatus == "OK":
                    continue
                count += 1
                if count <= start or len(out) >= limit:
                    continue
                owner, _, tokenid = t.user.partition("!")
                item: dict[str, Any] = {"upid": t.upid, "node": self.node, "type": t.type, "id": str(t.vmid),
                                        "user": owner, "starttime": t.starttime,
                                        "pid": int(t.upid.split(":")[2], 16), "pstart": int(t.upid.split(":")[3], 16),
                                        "status": "RUNNING" if t.status == "running" else t.exitstatus}
                if tokenid:
                    item["tokenid"] = tokenid
                if t.status != "running" and t.endtime:
                    item["endtime"] = t.endtime
                out.append(item)
        return out

    def _api_GET_nodes_node_tasks_upid_status(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        task = self.tasks.get(str(p["upid"]))
        if task is None:
            raise ApiError(500, f"unable to parse worker upid '{p['upid']}'")
        self._check_task_user(task, user)
        out: dict[str, Any] = {"upid": task.upid, "node": self.node, "type": task.type, "id": str(task.vmid),
                               "user": task.user, "status": task.status, "starttime": task.starttime,
                               "pid": int(task.upid.split(":")[2], 16), "pstart": int(task.upid.split(":")[3], 16)}
        if task.status == "stopped":
            out["exitstatus"] = task.exitstatus
        return out

    def _api_GET_nodes_node_tasks_upid_log(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        task = self.tasks.get(str(p["upid"]))
        if task is None:
            raise ApiError(500, f"unable to parse worker upid '{p['upid']}'")
        self._check_task_user(task, user)
        start, limit = int(p.get("start", 0)), int(p.get("limit", 50))
        return [{"n": i + 1, "t": line} for i, line in enumerate(task.log)][start:start + limit]


def guest_interface(name: str, mac: str | None, *addresses: str) -> dict[str, Any]:
    """One interface as QGA's ``guest-network-get-interfaces`` reports it: ``addresses`` like
    ``"10.0.0.11/24"`` or ``"fe80::1/64"``; an interface without addresses has no ``ip-addresses``."""
    iface: dict[str, Any] = {"name": name}
    if mac is not None:
        iface["hardware-address"] = mac
    if addresses:
        iface["ip-addresses"] = []
        for text in addresses:
            addr = ipaddress.ip_interface(text)
            iface["ip-addresses"].append({"ip-address": str(addr.ip), "ip-address-type": f"ipv{addr.version}",
                                          "prefix": addr.network.prefixlen})
    iface["statistics"] = {"rx-bytes": 0, "rx-dropped": 0, "rx-errs": 0, "rx-packets": 0,
                           "tx-bytes": 0, "tx-dropped": 0, "tx-errs": 0, "tx-packets": 0}
    return iface


class _Handler(BaseHTTPRequestHandler):
    standin: PveStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep stderr quiet
        pass

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if body:
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                params.update({k: str(v) for k, v in json.loads(body).items()})
            else:
                params.update(dict(parse_qsl(body.decode(), keep_blank_values=True)))
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


def extra_args(spec: LaunchSpec) -> list[str]:
    """The config's ``args:`` line, which qemu-server appends to the command line (split_args)."""
    import shlex

    return shlex.split(spec.config.get("args", ""))


def shellquote(arg: str) -> str:
    """String::ShellQuote's shell_quote, as PVE::Tools::cmd2string uses it."""
    if arg == "":
        return "''"
    if re.search(r"[^\w!%+,\-./:=@^]", arg):
        return "'" + arg.replace("'", "'\\''") + "'"
    return arg


# A node-local tool (qm) for tests: forwards its arguments to the stand-in's node socket.
NODE_TOOL = """#!{python}
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({socket!r})
s.sendall(json.dumps({{"tool": {tool!r}, "argv": sys.argv[1:]}}).encode() + b"\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
r = json.loads(data)
sys.stdout.write(r["stdout"])
sys.stderr.write(r["stderr"])
sys.exit(r["rc"])
"""


__all__ = ["PveStandin", "SleepLauncher", "LaunchSpec", "LaunchFailed", "ApiError", "Schema", "make_cert"]


# The real-QEMU launcher lives in pve_qemu.py; imported here so tests keep importing it from standins.pve.
from .pve_qemu import QemuVmLauncher, QemuVmRunning  # noqa: E402 - after the names pve_qemu imports from here

__all__ += ["QemuVmLauncher", "QemuVmRunning"]
