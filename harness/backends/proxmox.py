"""The ``proxmox`` backend: reconfigure one VM's test disk through the API (or ``pvesh`` on the node),
apply by restarting QEMU, never lose a volume, always restore.

One cell, in order (REFERENCE.md §1-§2):

1. read the config and its ``digest``; compute the minimal change (:mod:`.pve_config`);
2. stop the VM (API ``stop`` task) so every change applies at once and a bus move is safe;
   with ``restart = "reboot"`` a change that does not move the disk is written while the VM runs
   (it stays pending) and applied by an API ``reboot``;
3. write with ``digest`` each time; a conflict is a :class:`~stormatrix.errors.ConfigConflict`, never
   retried. A bus move deletes the old key without ``force`` (the volume becomes ``unusedN``) and
   sets the new key with options valid on the new bus; ``unusedN`` is never deleted; ``boot`` is re-set
   when the delete dropped the disk from it;
4. start (task polled to completion; a failed task's ``exitstatus`` and log tail become the error),
   then check ``GET .../pending`` is empty, ``status/current`` says running, and the running config
   is the cell's;
5. wait for readiness: guest agent ping, a TCP port (fio server / WinRM), or leave it to the executor.

Restore (at the end, on error, on Ctrl-C, and from ``stormatrix restore RUN_DIR`` after a crash)
puts back the test disk on its original key with its original text, ``scsihw`` and ``boot``, reverts
pending changes of those keys, and returns the VM to its original power state. The original config
is journaled (never a secret) through :meth:`ProxmoxBackend.original_config`.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import BackendError, GuestNotReady, InputError, MatrixError
from ..model import CONTROLLERS, DiskConfig
from ..spec import Field, Section, register_section
from . import pve_config as pc
from .base import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, Backend, BlockStats, GuestEndpoint, HostScope
from .pve_api import PveClient, PveshTransport, ProxmoxerTransport, install_log_scrubber, read_secret

log = logging.getLogger("stormatrix.backend.proxmox")


def _check_disk_key(value: str) -> None:
    pc.split_drive_key(value)


def _check_cpuset(value: str) -> None:
    if value:
        parse_cpuset(value)


def _check_serial(value: str) -> None:
    if value and not re.fullmatch(r"serial[0-3]", value):
        raise ValueError(f"{value!r} is not serial0-serial3")


PROXMOX_SECTION = register_section(Section("proxmox", {
    "transport": Field(str, "api", choices=("api", "local"),
                       help="api: REST API over HTTPS with a token; local: pvesh on the node itself"),
    "host": Field(str, "", help="the node's address for the API (transport = \"api\")"),
    "port": Field(int, 8006, min=1, max=65535),
    "node": Field(str, help="the Proxmox node name, as in /nodes/{node}"),
    "vmid": Field(int, min=100, max=999999999, help="the VM under test"),
    "test_disk": Field(str, check=_check_disk_key, help="the VM's test disk key, e.g. scsi1"),
    "user": Field(str, "root@pam", help="the token's user, USER@REALM"),
    "token_id": Field(str, "", help="the API token's id (the part after '!')"),
    "token_secret_env": Field(str, "", help="name of the environment variable holding the token secret"),
    "token_secret_file": Field(str, "", help="path of a file holding the token secret (never the secret itself)"),
    "verify_tls": Field(bool, True, help="verify the node's certificate; false only if you accept MITM risk"),
    "ca_file": Field(str, "", help="CA bundle (or the node's pve-root-ca.pem) to verify the node's certificate"),
    "timeout": Field(float, 60.0, min=1, max=3600, help="seconds per API request (proxmoxer's 5 s is too short)"),
    "task_timeout": Field(float, 300.0, min=5, max=86400, help="seconds a start/stop task may take"),
    "restart": Field(str, "stop-start", choices=("stop-start", "reboot"),
                     help="how pending changes are applied: API stop+start, or API reboot when the disk stays on its bus"),
    "ready": Field(str, "auto", choices=("auto", "agent", "tcp", "executor"),
                   help="readiness: guest agent ping, a TCP port (guest_host:guest_port), or the executor's own"),
    "guest_host": Field(str, "", help="address of the guest for fio-server/WinRM executors"),
    "guest_port": Field(int, 0, min=0, max=65535, help="port the guest executor listens on (fio server 8765, WinRM 5985/5986)"),
    "guest_channel": Field(str, "", check=_check_serial,
                           help="serialN configured as 'socket' that carries the local agent (node-local runs)"),
    "qemu_server_dir": Field(str, "/var/run/qemu-server", help="where the node keeps <vmid>.pid/.qmp/.serialN"),
    "ssh": Field(str, "", help="ssh target (user@node) for the host collector and pinning; empty = this machine"),
    "pin_cpus": Field(str, "", check=_check_cpuset, help="pin vCPU and iothreads to these host CPUs, e.g. 2-3"),
}, help="the Proxmox VE backend: node, VM, test disk, credentials (secrets by reference only)"))


def parse_cpuset(text: str) -> list[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"{text!r} is not a CPU list like 2-3 or 0,2,4")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"{part!r}: range goes backwards")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


# --- thread ids and block stats from QMP, or HMP through the API monitor ---------------------------------

_HMP_CPU = re.compile(r"CPU #(\d+):.*?thread_id=(\d+)")
_HMP_IOTHREAD = re.compile(r"^(\S+):\s*\n\s*thread_id=(\d+)", re.M)


def parse_hmp_threads(cpus: str, iothreads: str) -> dict[int, str]:
    """Thread roles from HMP ``info cpus`` / ``info iothreads`` (the text forms of query-cpus-fast and
    query-iothreads), for nodes where only the API monitor is reachable."""
    roles = {int(tid): ROLE_VCPU for _, tid in _HMP_CPU.findall(cpus)}
    roles.update({int(tid): ROLE_IOTHREAD for _, tid in _HMP_IOTHREAD.findall(iothreads)})
    return roles


def parse_hmp_blockstats(text: str, drive_id: str) -> BlockStats:
    for line in text.splitlines():
        if line.startswith(drive_id + ":"):
            vals = dict(re.findall(r"(\w+)=(\d+)", line))
            return BlockStats(int(vals["rd_bytes"]), int(vals["wr_bytes"]), int(vals["rd_operations"]),
                              int(vals["wr_operations"]))
    raise BackendError(f"the monitor's 'info blockstats' has no {drive_id}")


def make_transport(o: dict[str, Any]) -> Any:
    """The API transport a ``[proxmox]`` section describes: ``pvesh`` on the node, or HTTPS with a token
    (secret by reference, TLS verified unless turned off). Also used by the suite's VM discovery."""
    install_log_scrubber()
    if o["transport"] == "local":
        return PveshTransport(timeout=o["timeout"])
    if not o["host"] or not o["token_id"]:
        raise InputError("[proxmox] transport = \"api\" needs host and token_id "
                         "(and token_secret_env or token_secret_file)")
    secret = read_secret(env=o["token_secret_env"] or None, file=o["token_secret_file"] or None)
    verify: bool | str = (o["ca_file"] or True) if o["verify_tls"] else False
    if not o["verify_tls"]:
        log.warning("TLS verification of %s is turned off ([proxmox] verify_tls = false)", o["host"])
    return ProxmoxerTransport(o["host"], port=o["port"], user=o["user"], token_name=o["token_id"],
                              token_value=secret, verify=verify, timeout=o["timeout"])


class ProxmoxBackend(Backend):
    name = "proxmox"
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "fio-server"

    def __init__(self, spec: Any, workdir: Path) -> None:
        super().__init__(spec, workdir)
        if "proxmox" not in spec.sections:
            raise MatrixError(spec.path, "[proxmox]", "is missing",
                              "add a [proxmox] section with node, vmid, test_disk and the token settings")
        self.opts: dict[str, Any] = dict(spec.section("proxmox"))
        self.slot: int = spec.matrix["disk_slot"]
        self._client: PveClient | None = None
        self._original: dict[str, Any] | None = None
        self._pinned: dict[int, set[int]] = {}  # tid -> original affinity
        self._pid: int | None = None
        self._restored = False

    # --- connection ----------------------------------------------------------------------------
    @property
    def client(self) -> PveClient:
        if self._client is None:
            o = self.opts
            self._client = PveClient(make_transport(o), o["node"], o["vmid"], task_timeout=o["task_timeout"])
        return self._client

    @property
    def test_key(self) -> str:
        return str(self.opts["test_disk"])

    # --- prepare -------------------------------------------------------------------------------
    def _prepare(self) -> dict[str, Any]:
        c = self.client
        version = c.version()
        config = c.config()
        status = c.status()
        busy = [p for p in c.pending() if "pending" in p or "delete" in p]
        if busy:
            raise BackendError(f"VM {c.vmid} has pending changes ({', '.join(p['key'] for p in busy)}): apply or "
                               "revert them first, so that stormatrix knows which configuration to restore")
        if "lock" in config:
            raise BackendError(f"VM {c.vmid} is locked ({config['lock']}): wait for that operation to finish")
        key = self.test_key
        if key not in config:
            disks = sorted(k for k in config if pc.DRIVE_KEY_RE.match(k))
            raise InputError(f"[proxmox] test_disk = {key!r}: VM {c.vmid} has no such disk (disks: {', '.join(disks) or 'none'})")
        opts = pc.parse_drive(config[key])
        if pc.is_cdrom(opts) or opts["file"] in ("none", "cdrom"):
            raise InputError(f"[proxmox] test_disk = {key!r} is a CD-ROM drive, not a disk")
        volid = opts["file"]
        for ctrl in self.spec.matrix["controllers"]:
            target = pc.drive_key(CONTROLLERS[ctrl][0], self.slot)
            if target != key and target in config:
                raise InputError(f"controller {ctrl} needs {target}, which VM {c.vmid} already uses for "
                                 f"{config[target].split(',')[0]!r}: choose another [matrix] disk_slot")
        self._original = {
            "kind": "proxmox", "node": c.node, "vmid": c.vmid, "test_disk": key, "volid": volid,
            "status": status.get("status", "stopped"), "config": dict(config), "digest": config["digest"],
            "pve_version": version.get("version"),
        }
        self._restored = False
        if self.opts["ssh"]:
            ensure_remote_collector(self.opts["ssh"])
        return {"pve_version": version.get("version"), "node": c.node, "vmid": c.vmid, "test_disk": key,
                "volume": volid, "original_disk": pc.disk_config_of(config, key).key,
                "transport": self.opts["transport"]}

    def original_config(self) -> dict[str, Any] | None:
        return self._original

    def load_original(self, original: dict[str, Any]) -> None:
        """For ``stormatrix restore``: the journaled original instead of one read by :meth:`prepare`."""
        if original.get("kind") != "proxmox":
            raise InputError("the journaled original configuration is not a Proxmox one")
        if int(original["vmid"]) != int(self.opts["vmid"]) or original["node"] != self.opts["node"]:
            raise InputError("the journaled original configuration is for another VM than the [proxmox] section")
        self._original = original

    # --- apply ---------------------------------------------------------------------------------
    def _apply(self, disk: DiskConfig) -> None:
        if self._original is None:
            raise BackendError("apply before prepare: the original configuration is not known")
        c = self.client
        self._unpin()
        self._restored = False
        original = self._original["config"]
        config = c.config()
        plan = pc.plan_cell(config, original, self.test_key, disk, self.slot)
        running = c.status().get("status") == "running"
        if self.opts["restart"] == "reboot" and running and not plan.bus_move:
            self._write_until(lambda cfg: pc.plan_cell(cfg, original, self.test_key, disk, self.slot))
            self._task("reboot", f"reboot to apply {disk.key}")
        else:
            if running:
                self._task("stop", "stop")
            self._write_until(lambda cfg: pc.plan_cell(cfg, original, self.test_key, disk, self.slot))
            self._task("start", f"start with {disk.key}")
        target = pc.drive_key(disk.bus, self.slot)
        self._verify(lambda cfg: pc.disk_config_of(cfg, target) == disk if target in cfg else False,
                     f"the test disk as {disk.key} on {target}")
        self._pid = int(c.status().get("pid") or 0) or None
        self._wait_ready()
        if self.opts["pin_cpus"]:
            self._pin(parse_cpuset(self.opts["pin_cpus"]))

    def _write_until(self, planner: Any) -> None:
        """Read, plan, write the first step with the digest just read; again until nothing is left.

        Re-reading between the steps of a bus move means each write carries the digest of the config
        it was computed from, and a crash between them leaves a state the next plan understands."""
        c = self.client
        for _ in range(4):
            config = c.config()
            plan = planner(config)
            if plan.empty:
                return
            write = plan.writes[0]
            log.info("VM %s: set %s delete %s", c.vmid, write.set, ",".join(write.delete) or "-")
            c.update_config(write.params(), config["digest"])
        raise BackendError(f"VM {c.vmid}: the configuration did not converge after 4 writes")

    def _task(self, action: str, what: str) -> None:
        upid = self.client.power(action)
        self.client.wait_task(upid, what=what)

    def _verify(self, check: Any, what: str) -> None:
        c = self.client
        left = [p for p in c.pending() if "pending" in p or "delete" in p]
        if left:
            raise BackendError(f"VM {c.vmid}: changes still pending after the restart: "
                               + ", ".join(f"{p['key']}={p.get('pending', '<delete>')}" for p in left))
        st = c.status()
        if st.get("status") != "running":
            raise BackendError(f"VM {c.vmid} is {st.get('status')!r} after the start task, not running")
        current = c.config(current=True)
        if not check(current):
            raise BackendError(f"VM {c.vmid}: the running configuration is not {what}")

    def _ready_mode(self) -> str:
        mode = self.opts["ready"]
        if mode != "auto":
            return mode
        assert self._original is not None
        agent = str(self._original["config"].get("agent", "0"))
        if re.match(r"(?:enabled=)?(1|on|yes|true)", agent):
            return "agent"
        if self.opts["guest_host"] and self.opts["guest_port"]:
            return "tcp"
        return "executor"

    def _wait_ready(self) -> None:
        mode = self._ready_mode()
        if mode == "executor":
            return
        timeout = float(self.spec.run["boot_timeout_seconds"])
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                if mode == "agent":
                    self.client.agent_ping()
                else:
                    with socket.create_connection((self.opts["guest_host"], self.opts["guest_port"]), timeout=2):
                        pass
                return
            except (BackendError, OSError) as exc:
                last = str(exc)
            time.sleep(1.0)
        what = "the guest agent did not answer" if mode == "agent" else \
            f"nothing listened on {self.opts['guest_host']}:{self.opts['guest_port']}"
        raise GuestNotReady(f"VM {self.client.vmid}: {what} within {timeout:g} s (last: {last})")

    # --- scope, endpoints, block stats ----------------------------------------------------------
    def _qmp_path(self) -> Path:
        return Path(self.opts["qemu_server_dir"]) / f"{self.opts['vmid']}.qmp"

    def _qmp(self, command: str) -> Any:
        """One QMP command on the node's socket (connect, run, close: the way qemu-server does it)."""
        from ..qmp import Qmp

        q = Qmp(self._qmp_path(), timeout=10).connect(time.monotonic() + 10)
        try:
            return q.execute(command)
        finally:
            q.close()

    def _local_qmp(self) -> bool:
        return not self.opts["ssh"] and self._qmp_path().exists() and os.access(self._qmp_path(), os.W_OK)

    def thread_roles(self) -> dict[int, str]:
        if self._local_qmp():
            roles = {int(cpu["thread-id"]): ROLE_VCPU for cpu in self._qmp("query-cpus-fast") or []}
            roles.update({int(it["thread-id"]): ROLE_IOTHREAD for it in self._qmp("query-iothreads") or []})
            return roles
        return parse_hmp_threads(self.client.monitor("info cpus"), self.client.monitor("info iothreads"))

    def scope(self) -> list[HostScope]:
        st = self.client.status()
        pid = int(st.get("pid") or 0)
        if not pid:
            raise BackendError(f"VM {self.client.vmid} has no QEMU process (status {st.get('status')!r})")
        threads = {pid: ROLE_MAIN, **self.thread_roles()}
        return [HostScope(pid=pid, threads=threads, vm=str(st.get("name", self.client.vmid)),
                          ssh=self.opts["ssh"] or None)]

    def endpoints(self) -> list[GuestEndpoint]:
        name = str(self.opts["vmid"])
        if self.opts["guest_host"]:
            return [GuestEndpoint(kind="tcp", address=self.opts["guest_host"], port=self.opts["guest_port"] or None,
                                  name=name)]
        if self.opts["guest_channel"]:
            path = Path(self.opts["qemu_server_dir"]) / f"{self.opts['vmid']}.{self.opts['guest_channel']}"
            return [GuestEndpoint(kind="local-agent", address=str(path), name=name)]
        raise InputError("[proxmox] says nothing about how to reach the guest: set guest_host (and guest_port) "
                         "for fio-server/WinRM, or guest_channel for a node-local agent on a serial socket")

    def blockstats(self) -> BlockStats | None:
        if self.current is None:
            return None
        drive_id = f"drive-{self.current.bus}{self.slot}"
        if self._local_qmp():
            for dev in self._qmp("query-blockstats") or []:
                if dev.get("device") == drive_id:
                    st = dev["stats"]
                    return BlockStats(st["rd_bytes"], st["wr_bytes"], st["rd_operations"], st["wr_operations"])
            raise BackendError(f"query-blockstats has no {drive_id}")
        return parse_hmp_blockstats(self.client.monitor("info blockstats"), drive_id)

    # --- pinning ------------------------------------------------------------------------------
    def _pin(self, cpus: list[int]) -> None:
        """Pin vCPU and iothreads to ``cpus``; the original affinity of each is kept for :meth:`_unpin`."""
        roles = self.thread_roles()
        for tid in sorted(roles):
            if self.opts["ssh"]:
                out = _ssh(self.opts["ssh"], ["taskset", "-pc", str(tid)])
                before = set(parse_cpuset(out.rsplit(":", 1)[-1].strip()))
                _ssh(self.opts["ssh"], ["taskset", "-pc", ",".join(map(str, cpus)), str(tid)])
            else:
                before = set(os.sched_getaffinity(tid))
                os.sched_setaffinity(tid, cpus)
            self._pinned[tid] = before
        log.info("pinned threads %s to CPUs %s", sorted(roles), cpus)

    def _unpin(self) -> None:
        for tid, cpus in list(self._pinned.items()):
            try:
                if self.opts["ssh"]:
                    _ssh(self.opts["ssh"], ["taskset", "-pc", ",".join(map(str, sorted(cpus))), str(tid)])
                else:
                    os.sched_setaffinity(tid, cpus)
            except (OSError, BackendError):
                pass  # the thread is gone (QEMU restarted): nothing left to unpin
            del self._pinned[tid]

    # --- stop, restore, close ---------------------------------------------------------------------
    def _stop(self) -> None:
        """Nothing to do between cells: each apply restarts the VM itself. The VM's final state is
        decided by restore (its original power state)."""
        self._unpin()

    def _restore(self) -> None:
        if self._original is None or self._restored:
            return
        self._unpin()
        restore_vm(self.client, self._original)
        self._restored = True

    def _close(self) -> None:
        self._unpin()
        if self._client is not None:
            self._client.close()
            self._client = None


def restore_vm(c: PveClient, original: dict[str, Any]) -> dict[str, Any]:
    """Put the VM back as ``original`` records it; return the final config. Idempotent.

    Every write carries the digest just read; the disk goes back to its original key with its
    original text, ``scsihw`` and ``boot`` to their original values; pending changes to those keys are
    reverted; the VM ends in its original power state.
    """
    key = original["test_disk"]
    orig_cfg = original["config"]
    status = c.status().get("status")
    ours = {key, "scsihw", "boot"} | {k for k in c.config() if pc.DRIVE_KEY_RE.match(k)}
    pending = [p for p in c.pending() if "pending" in p or "delete" in p]
    plan = pc.plan_restore(c.config(), orig_cfg, key)
    if status == "running" and (not plan.empty or pending):
        upid = c.power("stop")
        c.wait_task(upid, what="stop before restoring")
        status = "stopped"
    if pending:
        cfg = c.config()
        revert = [p["key"] for p in c.pending() if ("pending" in p or "delete" in p) and p["key"] in ours]
        if revert:
            c.update_config({"revert": ",".join(revert)}, cfg["digest"])
    for _ in range(4):
        cfg = c.config()
        plan = pc.plan_restore(cfg, orig_cfg, key)
        if plan.empty:
            break
        write = plan.writes[0]
        log.info("VM %s: restoring: set %s delete %s", c.vmid, write.set, ",".join(write.delete) or "-")
        c.update_config(write.params(), cfg["digest"])
    else:
        raise BackendError(f"VM {c.vmid}: restoring did not converge after 4 writes")
    if original.get("status") == "running" and status != "running":
        c.wait_task(c.power("start"), what="start after restoring")
    elif original.get("status") != "running" and c.status().get("status") == "running":
        c.wait_task(c.power("stop"), what="stop after restoring")
    final = c.config()
    diff = pc.config_diff(final, orig_cfg)
    mine = {k: v for k, v in diff.items() if k in ("scsihw", "boot") or pc.DRIVE_KEY_RE.match(k)
            or (pc.UNUSED_KEY_RE.match(k) and original["volid"] in (v[0] or "", v[1] or ""))}
    if mine:
        raise BackendError(f"VM {c.vmid}: after restoring, these keys still differ from the original: "
                           + ", ".join(f"{k}: {a!r} (original {b!r})" for k, (a, b) in mine.items()))
    if diff:
        log.warning("VM %s: keys stormatrix does not touch changed during the run: %s", c.vmid, ", ".join(diff))
    elif final["digest"] != original["digest"]:
        log.warning("VM %s: config equal to the original but its digest differs", c.vmid)
    return final


# --- the host collector on the node ----------------------------------------------------------------

REMOTE_COLLECTOR_DIR = "/tmp/stormatrix-linux-host"


def _ssh(target: str, argv: list[str], *, timeout: float = 60) -> str:
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", target, "--", *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"ssh {target} {' '.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        raise BackendError(f"ssh {target} {' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def collector_copy_argv(target: str, local_dir: Path, remote_dir: str = REMOTE_COLLECTOR_DIR) -> list[list[str]]:
    """The commands that put ``linux-host/`` on the node (checked first, copied only when missing)."""
    return [["ssh", "-o", "BatchMode=yes", target, "--", "mkdir", "-p", remote_dir],
            ["scp", "-q", "-r", "-o", "BatchMode=yes", *sorted(str(p) for p in local_dir.glob("*.py")),
             f"{target}:{remote_dir}/"]]


def ensure_remote_collector(target: str, remote_dir: str = REMOTE_COLLECTOR_DIR) -> None:
    """Copy ``linux-host/`` to the node unless the same version is there (stdlib + psutil only)."""
    import stormatrix.host as host

    local_dir = Path(host.__file__).resolve().parent
    try:
        _ssh(target, ["test", "-f", f"{remote_dir}/__init__.py"])
        return
    except BackendError:
        pass
    for argv in collector_copy_argv(target, local_dir, remote_dir):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise BackendError(f"copying linux-host/ to {target} failed: {proc.stderr.strip()[-500:]}")
