"""The ``proxmox`` backend: reconfigure one VM's test disk through the API (or ``pvesh`` on the node),
apply by restarting QEMU, never lose a volume, always restore.

One cell, in order (REFERENCE.md §1-§2):

1. read the config and its ``digest``; compute the minimal change (:mod:`.pve_config`);
2. stop the VM (API ``stop`` task) so every change applies at once and a bus move is safe;
   with ``restart = "reboot"`` a change that does not move the disk is written while the VM runs
   (it stays pending) and applied by an API ``reboot``;
3. write with ``digest`` each time; a conflict is a :class:`~stormatrix.core.errors.ConfigConflict`, never
   retried. A bus move deletes the old key without ``force`` (the volume becomes ``unusedN``) and
   sets the new key with options valid on the new bus; ``unusedN`` is never deleted; ``boot`` is re-set
   when the delete dropped the disk from it;
4. start (task polled to completion; a failed task's ``exitstatus`` and log tail become the error),
   then check ``GET .../pending`` is empty, ``status/current`` says running, and the running config
   is the cell's;
   (``restart = "reboot"``: the reboot task only shuts the guest down; qemu-server's ``qm cleanup``
   starts the VM again in a ``qmstart`` task of its own, which the backend follows to the end);
5. where the node is reachable (``transport = "local"``, or ``ssh``), check the test disk's QEMU options
   in ``qm showcmd`` and in the running process's ``/proc/<pid>/cmdline`` against the cell, and keep
   both in ``<run dir>/proxmox/``;
6. wait for readiness: guest agent ping, a TCP port (fio server / WinRM), or leave it to the executor;
7. optionally pin the vCPU and iothreads to ``pin_cpus`` (their affinity is put back by ``stop``).

Restore (at the end, on error, on Ctrl-C, and from ``stormatrix restore RUN_DIR`` after a crash)
puts back the test disk on its original key with its original text, ``scsihw`` and ``boot``, reverts
pending changes of those keys, and returns the VM to its original power state. The original config
is journaled (never a secret) through :meth:`ProxmoxBackend.original_config`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import select
import shlex
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from ..core.errors import BackendError, CollectorError, GuestNotReady, InputError, MatrixError, TaskFailed
from ..core.model import CONTROLLERS, DiskConfig
from ..spec import Field, Section, register_section
from . import pve_config as pc
from .base import ROLE_IOTHREAD, ROLE_MAIN, ROLE_VCPU, Backend, BlockStats, GuestEndpoint, HostScope
from .pve_api import (PveAuthError, PveClient, PveshTransport, ProxmoxerTransport, install_log_scrubber,
                      read_secret, upid_starttime)

log = logging.getLogger("stormatrix.backend.proxmox")


def _check_disk_key(value: str) -> None:
    pc.split_drive_key(value)


def _check_cpuset(value: str) -> None:
    if value:
        parse_cpuset(value)


def _check_serial(value: str) -> None:
    if value and not re.fullmatch(r"serial[0-3]", value):
        raise ValueError(f"{value!r} is not serial0-serial3")


_SSH_TARGET_RE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9._:-]*$")


def _check_ssh_target(value: str) -> None:
    if value and not _SSH_TARGET_RE.match(value):
        raise ValueError(f"{value!r} is not an ssh target like root@pve1 (a host, optionally user@)")


def _check_remote_dir(value: str) -> None:
    if not value or value.startswith("-") or any(c in value for c in "\0\n'\"$`\\ "):
        raise ValueError(f"{value!r} is not a plain directory path (no spaces, quotes or $)")


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
    "ssh": Field(str, "", check=_check_ssh_target,
                 help="ssh target (user@node) for the host collector, pinning and qm showcmd; empty = this machine"),
    "ssh_config": Field(str, "", help="an ssh_config file for ssh/scp to the node (Port, IdentityFile, "
                                      "UserKnownHostsFile), passed as ssh -F; empty = your usual ssh configuration"),
    "ssh_dir": Field(str, ".cache/stormatrix/linux-host", check=_check_remote_dir,
                     help="where linux-host/ is copied on the node (relative = the ssh user's home)"),
    "pin_cpus": Field(str, "", check=_check_cpuset,
                      help="pin vCPU and iothreads to these host CPUs during each cell, a list like 2-3 or 0,2,4"),
    "reboot_timeout": Field(int, 60, min=1, max=3600,
                            help="seconds the guest gets to shut down on an API reboot (restart = \"reboot\"); "
                                 "Proxmox's default is 60"),
    "check_cmdline": Field(bool, True, help="before measuring, check the test disk's options in qm showcmd and the "
                                            "running QEMU's command line (where the node is reachable)"),
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
        self._own_upids: set[str] = set()  # tasks this backend started (not the restart after a reboot)
        self._cmdlines = 0
        self.node = NodeShell(self.opts["ssh"], self.opts["ssh_config"])

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
        if self.opts["ssh_config"] and not Path(self.opts["ssh_config"]).expanduser().is_file():
            raise MatrixError(self.spec.path, "[proxmox] ssh_config", f"{self.opts['ssh_config']!r} is not a file",
                              "give the path of an ssh_config file, or leave ssh_config empty")
        facts: dict[str, Any] = {"pve_version": version.get("version"), "node": c.node, "vmid": c.vmid,
                                 "test_disk": key, "volume": volid,
                                 "original_disk": pc.disk_config_of(config, key).key,
                                 "transport": self.opts["transport"]}
        if self.opts["pin_cpus"]:
            facts["pin_cpus"] = ",".join(map(str, self._check_pin_cpus()))
        if self.opts["ssh"]:
            state = ensure_remote_collector(self.opts["ssh"], self.opts["ssh_dir"], ssh_config=self.opts["ssh_config"])
            facts["host_collector"] = f"ssh {self.opts['ssh']}:{self.opts['ssh_dir']} ({state})"
        if self.opts["check_cmdline"] and self._can_showcmd():
            text = self._showcmd()
            self._save_cmdline("original.showcmd", text)
            facts["qemu_cmdline"] = shlex.join(pc.parse_showcmd(text))
        self._original = {
            "kind": "proxmox", "node": c.node, "vmid": c.vmid, "test_disk": key, "volid": volid,
            "status": status.get("status", "stopped"), "config": dict(config), "digest": config["digest"],
            "pve_version": version.get("version"),
        }
        self._restored = False
        return facts

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
            self._reboot(disk.key)
        else:
            if running:
                self._task("stop", "stop")
            self._write_until(lambda cfg: pc.plan_cell(cfg, original, self.test_key, disk, self.slot))
            self._task("start", f"start with {disk.key}")
        target = pc.drive_key(disk.bus, self.slot)
        self._verify(lambda cfg: pc.disk_config_of(cfg, target) == disk if target in cfg else False,
                     f"the test disk as {disk.key} on {target}")
        self._pid = int(c.status().get("pid") or 0) or None
        if self.opts["check_cmdline"]:
            self._check_cmdline(disk, target)
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
        self._own_upids.add(upid)
        self.client.wait_task(upid, what=what)

    def _reboot(self, what: str) -> None:
        """API reboot (qemu-server ``vm_reboot``): the task writes a reboot request and shuts the guest
        down cleanly (guest agent, else the ACPI power button), then ends. qmeventd sees QEMU exit and
        runs ``qm cleanup``, which starts the VM again in a ``qmstart`` task of its own (as root@pam);
        that start applies the pending changes. So the VM is briefly stopped after the reboot task."""
        c = self.client
        pid0 = int(c.status().get("pid") or 0)
        wait = int(self.opts["reboot_timeout"])
        upid = c.power("reboot", timeout=wait)
        self._own_upids.add(upid)
        try:
            c.wait_task(upid, what=f"reboot to apply {what}", timeout=wait + float(self.opts["task_timeout"]))
        except TaskFailed as exc:
            if "powerdown failed" not in str(exc.details.get("exitstatus") or exc.message):
                raise
            raise TaskFailed(
                f"{exc.message}\n  the guest did not shut down within [proxmox] reboot_timeout = {wait} s. An API "
                "reboot is a clean shutdown (guest agent 'guest-shutdown', else the ACPI power button) and a "
                "guest with neither a running agent nor ACPI handling ignores it: use [proxmox] restart = "
                "\"stop-start\", or give the guest the QEMU guest agent (agent: 1) or acpid",
                **exc.details) from None
        self._wait_restart(pid0, upid_starttime(upid), what)

    def _wait_restart(self, pid0: int, since: int, what: str) -> None:
        """Until the VM runs again in a new QEMU process. The ``qmstart`` task of ``qm cleanup`` is
        followed when the token may list the node's tasks (Sys.Audit), so a failed start is an error
        with its log; without that privilege the VM's status is all there is."""
        c = self.client
        timeout = float(self.opts["task_timeout"])
        deadline = time.monotonic() + timeout
        follow = True
        while True:
            st = c.status()
            pid = int(st.get("pid") or 0)
            if st.get("status") == "running" and pid and pid != pid0:
                return
            if follow:
                starts: list[dict[str, Any]] = []
                try:
                    starts = [t for t in c.tasks(typefilter="qmstart", since=since)
                              if str(t.get("upid")) not in self._own_upids]
                except PveAuthError:
                    follow = False
                    log.info("VM %s: the token may not list the node's tasks (Sys.Audit on /nodes/%s): waiting "
                             "for the VM to run again without following its start task", c.vmid, c.node)
                except BackendError as exc:
                    follow = False
                    log.info("VM %s: cannot list the node's tasks (%s): waiting for the VM only", c.vmid, exc)
                if starts:
                    follow = False
                    upid = str(starts[0]["upid"])
                    try:
                        c.wait_task(upid, what=f"the start after the reboot (qm cleanup, to apply {what})",
                                    timeout=max(1.0, deadline - time.monotonic()))
                    except PveAuthError:
                        pass
                    continue
            if time.monotonic() > deadline:
                raise BackendError(
                    f"VM {c.vmid} did not run again within [proxmox] task_timeout = {timeout:g} s after the reboot "
                    f"task ended (status {st.get('status')!r}). qemu-server starts it again from qmeventd's "
                    "'qm cleanup': look for a failed qmstart task in the node's task log")
            time.sleep(c.poll_interval)

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

    def collector_factory(self, scope: HostScope) -> Any:
        """The host collector for ``scope``: on this machine, or ``linux-host/collector.py`` run on the
        node over ssh (copied there by :meth:`prepare`)."""
        if scope.ssh:
            return SshCollector(self.node, self.opts["ssh_dir"], scope.pid, dict(scope.threads))
        from ..host.collector import WindowCollector

        return WindowCollector(scope.pid, dict(scope.threads))

    # --- the QEMU command line ------------------------------------------------------------------
    def _can_showcmd(self) -> bool:
        return self.opts["transport"] == "local" or self.node.remote

    def _showcmd(self) -> str:
        return self.node.run(["qm", "showcmd", str(self.opts["vmid"]), "--pretty"]).stdout

    def _local_pid(self, pid: int) -> bool:
        """Is ``pid`` this VM's QEMU on this machine? (qemu-server's pid file says so.)"""
        pidfile = Path(self.opts["qemu_server_dir"]) / f"{self.opts['vmid']}.pid"
        try:
            return int(pidfile.read_text().strip()) == pid and Path(f"/proc/{pid}").exists()
        except (OSError, ValueError):
            return False

    def _running_cmdline(self, pid: int | None) -> list[str] | None:
        if not pid:
            return None
        if self.node.remote:
            text = self.node.run(["cat", f"/proc/{pid}/cmdline"]).stdout
        elif self._local_pid(pid):
            try:
                text = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
            except OSError:
                return None
        else:
            return None
        return [a for a in text.split("\0") if a] or None

    def _save_cmdline(self, name: str, text: str) -> Path:
        folder = self.workdir / "proxmox"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.txt"
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return path

    def _check_cmdline(self, disk: DiskConfig, key: str) -> None:
        """The test disk as QEMU really gets it must be the cell's: ``qm showcmd`` (what Proxmox makes
        of the config) and the running process's command line, where either can be read. Both are kept
        in ``<run dir>/proxmox/``. A difference (a hookscript, an ``args:`` line, a qemu-server that
        ignores an option) fails the cell before anything is measured."""
        vmid = self.opts["vmid"]
        texts: dict[str, list[str]] = {}
        self._cmdlines += 1
        stem = f"{self._cmdlines:03d}-" + re.sub(r"[^A-Za-z0-9_.=-]+", "_", disk.key)
        if self._can_showcmd():
            text = self._showcmd()
            path = self._save_cmdline(f"{stem}.showcmd", text)
            texts["qm showcmd"] = pc.parse_showcmd(text)
            log.info("VM %s: qm showcmd for %s kept in %s", vmid, disk.key, path)
        running = self._running_cmdline(self._pid)
        if running is not None:
            self._save_cmdline(f"{stem}.running", shlex.join(running).replace(" -", " \\\n  -"))
            texts[f"the running QEMU (pid {self._pid})"] = running
        if not texts:
            log.debug("VM %s: no way to read its QEMU command line here (transport api without ssh, and "
                      "its QEMU is not on this machine)", vmid)
            return
        problems = {where: pc.cmdline_problems(argv, disk, key) for where, argv in texts.items()}
        problems = {where: p for where, p in problems.items() if p}
        if problems:
            raise BackendError(
                f"VM {vmid}: the test disk {key} is not what the cell {disk.key} asked for: "
                + "; ".join(f"{where} has {', '.join(p)}" for where, p in problems.items())
                + ". Nothing was measured. Look for what changes the command line (an args: line, a hookscript, "
                  "an old qemu-server) in the VM's config and on the node")

    # --- pinning ------------------------------------------------------------------------------
    def node_cpus(self) -> list[int]:
        """The node's online CPUs."""
        if self.node.remote:
            text = self.node.run(["cat", "/sys/devices/system/cpu/online"]).stdout
        else:
            try:
                text = Path("/sys/devices/system/cpu/online").read_text()
            except OSError:
                return sorted(os.sched_getaffinity(0))
        return parse_cpuset(text.strip())

    def _check_pin_cpus(self) -> list[int]:
        text = self.opts["pin_cpus"]
        want = parse_cpuset(text)
        online = self.node_cpus()
        missing = sorted(set(want) - set(online))
        if missing:
            where = f"the node ({self.opts['ssh']})" if self.node.remote else "this machine"
            raise MatrixError(self.spec.path, "[proxmox] pin_cpus",
                              f"{text!r} names CPU {format_cpuset(missing)}, which {where} does not have "
                              f"(its online CPUs are {format_cpuset(online)})",
                              f"give host CPUs out of {format_cpuset(online)}, e.g. pin_cpus = \"{online[-1]}\"")
        return want

    def _pin(self, cpus: list[int]) -> None:
        """Pin vCPU and iothreads to ``cpus``; the original affinity of each is kept for :meth:`_unpin`."""
        roles = {tid: role for tid, role in self.thread_roles().items() if role in (ROLE_VCPU, ROLE_IOTHREAD)}
        if not roles:
            raise BackendError(f"VM {self.opts['vmid']}: QEMU named no vCPU or iothreads to pin")
        if not self.node.remote and self._pid and not self._local_pid(self._pid):
            raise BackendError(f"[proxmox] pin_cpus: VM {self.opts['vmid']}'s QEMU (pid {self._pid}) is not on this "
                               "machine; set [proxmox] ssh to pin its threads on the node")
        text = ",".join(map(str, cpus))
        for tid in sorted(roles):
            try:
                if self.node.remote:
                    out = self.node.run(["taskset", "-pc", str(tid)]).stdout
                    before = set(parse_cpuset(out.rsplit(":", 1)[-1].strip()))
                    self.node.run(["taskset", "-pc", text, str(tid)])
                else:
                    before = set(os.sched_getaffinity(tid))
                    os.sched_setaffinity(tid, cpus)
            except OSError as exc:
                raise BackendError(f"pinning {roles[tid]} thread {tid} of VM {self.opts['vmid']} to CPUs {text} "
                                   f"failed: {exc.strerror}") from None
            self._pinned[tid] = before
        log.info("VM %s: pinned %s to CPUs %s", self.opts["vmid"],
                 ", ".join(f"{roles[t]} {t}" for t in sorted(roles)), text)

    def _unpin(self) -> None:
        """Put back the affinity :meth:`_pin` found. A thread that is gone (QEMU restarted) is fine."""
        for tid, cpus in list(self._pinned.items()):
            del self._pinned[tid]
            text = ",".join(map(str, sorted(cpus)))
            try:
                if self.node.remote:
                    proc = self.node.run(["taskset", "-pc", text, str(tid)], check=False)
                    if proc.returncode != 0 and "No such process" not in proc.stderr:
                        log.warning("could not put back the CPU affinity %s of thread %s on %s: %s", text, tid,
                                    self.opts["ssh"], proc.stderr.strip()[-200:])
                else:
                    os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:
                pass
            except (OSError, BackendError) as exc:
                log.warning("could not put back the CPU affinity %s of thread %s: %s", text, tid, exc)

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


# --- commands on the node: here, or over ssh -------------------------------------------------------

# Where linux-host/ goes on the node: the ssh user's home (a fixed /tmp path could be pre-created by
# another local user and its scripts run as root).
REMOTE_COLLECTOR_DIR = ".cache/stormatrix/linux-host"

# ssh's own failures (exit 255 is also what a failing PVE command line tool exits with).
_SSH_FAILURE = re.compile(r"^ssh: |Host key verification failed|Permission denied \(|Connection (refused|closed|reset|"
                          r"timed out)|Could not resolve hostname|No route to host|kex_exchange_identification|"
                          r"Bad configuration option|Can't open user config file|Bad owner or permissions|"
                          r"REMOTE HOST IDENTIFICATION HAS CHANGED", re.M)


class NodeShell:
    """Commands on the Proxmox node: on this machine, or over ``ssh`` (``[proxmox] ssh``/``ssh_config``).

    Remote commands are given as argument lists and quoted here (ssh hands the remote shell one string).
    ``BatchMode=yes``: a password or host-key prompt is an error, never a hang.
    """

    def __init__(self, target: str = "", ssh_config: str = "", *, timeout: float = 60.0) -> None:
        self.target = target
        self.ssh_config = str(Path(ssh_config).expanduser()) if ssh_config else ""
        self.timeout = timeout

    @property
    def remote(self) -> bool:
        return bool(self.target)

    @property
    def where(self) -> str:
        return self.target or "this machine"

    def ssh_options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        return (["-F", self.ssh_config] if self.ssh_config else []) + opts

    def argv(self, argv: list[str]) -> list[str]:
        if not self.target:
            return list(argv)
        return ["ssh", *self.ssh_options(), self.target, "--", shlex.join(argv)]

    def shell_argv(self, command: str) -> list[str]:
        if not self.target:
            return ["sh", "-c", command]
        return ["ssh", *self.ssh_options(), self.target, "--", command]

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None,
            check: bool = True) -> "subprocess.CompletedProcess[str]":
        return self._run(self.argv(argv), " ".join(argv), input, timeout, check)

    def run_shell(self, command: str, *, input: str | None = None, timeout: float | None = None,
                  check: bool = True) -> "subprocess.CompletedProcess[str]":
        return self._run(self.shell_argv(command), command, input, timeout, check)

    def copy(self, files: list[Path], remote_dir: str, *, timeout: float = 120.0) -> None:
        """``scp`` files into ``remote_dir`` on the node (a local copy without ssh)."""
        if not self.target:
            Path(remote_dir).mkdir(parents=True, exist_ok=True)
            for f in files:
                (Path(remote_dir) / f.name).write_bytes(f.read_bytes())
            return
        argv = ["scp", "-q", *self.ssh_options(), *map(str, files), f"{self.target}:{remote_dir}/"]
        proc = self._run(argv, f"scp to {remote_dir}", None, timeout, False)
        if proc.returncode != 0:
            raise BackendError(f"copying {', '.join(f.name for f in files)} to {self.target}:{remote_dir} with scp failed "
                               f"(exit {proc.returncode}): {proc.stderr.strip()[-400:] or 'no message'}. scp needs the "
                               "node's sftp subsystem and write access there ([proxmox] ssh_dir)")

    def _run(self, cmd: list[str], what: str, input: str | None, timeout: float | None,
             check: bool) -> "subprocess.CompletedProcess[str]":
        limit = timeout or self.timeout
        try:
            proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=limit, check=False)
        except FileNotFoundError:
            raise BackendError(f"{cmd[0]} not found on this machine: "
                               + ("install openssh-client" if cmd[0] in ("ssh", "scp") else
                                  f"{cmd[0]} exists on a Proxmox node: run stormatrix there (transport = \"local\"), "
                                  "or reach the node with [proxmox] ssh"
                                  + (", or set [proxmox] check_cmdline = false" if cmd[0] == "qm" else ""))) from None
        except subprocess.TimeoutExpired:
            raise BackendError(f"{what} on {self.where} did not finish within {limit:g} s") from None
        err = proc.stderr.strip()
        if self.target and proc.returncode == 255 and _SSH_FAILURE.search(err):
            raise BackendError(f"ssh to {self.target} failed: {err[-400:]}. Check [proxmox] ssh and ssh_config: the "
                               f"login must work without a prompt (ssh -o BatchMode=yes {self.target} true) and the "
                               "node's host key must be known")
        if check and proc.returncode != 0:
            raise BackendError(f"{what} on {self.where} exited {proc.returncode}: {err[-500:] or '(no message)'}")
        return proc


def format_cpuset(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    out: list[str] = []
    for cpu in sorted(set(cpus)):
        if out and "-" not in out[-1].split(",")[-1] and int(out[-1]) == cpu - 1:
            out[-1] = f"{out[-1]}-{cpu}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == cpu - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{cpu}"
        else:
            out.append(str(cpu))
    return ",".join(out)


def _ssh(target: str, argv: list[str], *, timeout: float = 60) -> str:
    """Run ``argv`` on ``target`` as ssh does (the words joined for the remote shell: quote them yourself)."""
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", target, "--", *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"ssh {target} {' '.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        raise BackendError(f"ssh {target} {' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def collector_files(local_dir: Path | None = None) -> list[Path]:
    """The files of ``linux-host/`` that go to the node."""
    if local_dir is None:
        import stormatrix.host as host

        local_dir = Path(host.__file__).resolve().parent
    return sorted(local_dir.glob("*.py"))


def collector_copy_argv(target: str, local_dir: Path, remote_dir: str = REMOTE_COLLECTOR_DIR, *,
                        ssh_config: str = "") -> list[list[str]]:
    """The commands that put ``linux-host/`` on the node."""
    shell = NodeShell(target, ssh_config)
    files = [str(p) for p in collector_files(local_dir)]
    return [shell.argv(["mkdir", "-p", "-m", "700", remote_dir]),
            ["scp", "-q", *shell.ssh_options(), *files, f"{target}:{remote_dir}/"]]


def remote_hashes(shell: NodeShell, remote_dir: str, names: list[str]) -> dict[str, str]:
    """SHA-256 of each of ``names`` in ``remote_dir`` on the node (missing files and folder: absent)."""
    proc = shell.run_shell(f"cd {shlex.quote(remote_dir)} 2>/dev/null && sha256sum -- "
                           + " ".join(shlex.quote(n) for n in names) + " 2>/dev/null", check=False)
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        digest, _, name = line.partition("  ")
        if re.fullmatch(r"[0-9a-f]{64}", digest) and name in names:
            out[name] = digest
    return out


def ensure_remote_collector(target: str, remote_dir: str = REMOTE_COLLECTOR_DIR, *, ssh_config: str = "") -> str:
    """``linux-host/`` on the node, byte-identical to this stormatrix's: copied when a file is missing or
    differs (SHA-256 of each file, compared on the node), checked again after copying. Returns
    ``"up to date"`` or ``"copied"``."""
    shell = NodeShell(target, ssh_config)
    files = collector_files()
    want = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    if remote_hashes(shell, remote_dir, sorted(want)) == want:
        return "up to date"
    shell.run(["mkdir", "-p", "-m", "700", remote_dir])
    shell.copy(files, remote_dir)
    have = remote_hashes(shell, remote_dir, sorted(want))
    if have != want:
        bad = sorted(n for n in want if have.get(n) != want[n])
        raise BackendError(f"copying linux-host/ to {target}:{remote_dir} did not give the same files ({', '.join(bad)} "
                           "differ): check the space and permissions there, or set [proxmox] ssh_dir")
    log.info("copied linux-host/ to %s:%s", target, remote_dir)
    return "copied"


class SshCollector:
    """``linux-host/collector.py`` run on the node over ssh for one measurement window.

    It prints ``started`` once it measures, and its JSON result when a line arrives on stdin: the same
    result the local collector gives. The thread roles go to the node first, as a file next to it.
    """

    START_TIMEOUT_S = 30.0
    STOP_TIMEOUT_S = 60.0

    def __init__(self, shell: NodeShell, remote_dir: str, pid: int, roles: dict[int, str],
                 python: str = "python3") -> None:
        self.shell = shell
        self.remote_dir = remote_dir
        self.pid = pid
        self.roles = roles
        self.python = python
        self.proc: subprocess.Popen[bytes] | None = None
        self._buf = b""

    def argv(self) -> list[str]:
        return self.shell.argv([self.python, f"{self.remote_dir}/collector.py", "--pid", str(self.pid),
                                "--roles", f"{self.remote_dir}/roles-{self.pid}.json"])

    def start(self) -> None:
        roles = json.dumps({str(tid): role for tid, role in self.roles.items()})
        self.shell.run_shell(f"umask 077 && cat > {shlex.quote(f'{self.remote_dir}/roles-{self.pid}.json')}",
                             input=roles)
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        line = self._readline(time.monotonic() + self.START_TIMEOUT_S)
        if line != "started":
            err = self._end()
            detail = line or err or "no output"
            try:
                detail = json.loads(line)["error"]
            except (ValueError, KeyError, TypeError):
                pass
            raise CollectorError(f"the host collector on {self.shell.where} did not start for pid {self.pid}: "
                                 f"{detail}")

    def stop(self) -> dict[str, Any]:
        if self.proc is None or self.proc.stdin is None:
            raise CollectorError("the ssh collector was stopped before it started")
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass
        line = self._readline(time.monotonic() + self.STOP_TIMEOUT_S)
        err = self._end()
        try:
            data = json.loads(line)
        except ValueError:
            raise CollectorError(f"the host collector on {self.shell.where} gave no result: "
                                 f"{line[:200] or err or 'no output'}") from None
        if not isinstance(data, dict) or "error" in data:
            raise CollectorError(f"the host collector on {self.shell.where} failed: "
                                 f"{data.get('error') if isinstance(data, dict) else data!r}")
        return data

    def abort(self) -> None:
        self._end(kill=True)

    def _readline(self, deadline: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return ""
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode("utf-8", "replace").strip()

    def _end(self, kill: bool = False) -> str:
        """Close the session (stdin EOF ends the remote collector); return its stderr tail."""
        proc, self.proc = self.proc, None
        if proc is None:
            return ""
        if kill:
            proc.terminate()
        try:
            _, err = proc.communicate(timeout=15)  # closes stdin first
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        return (err or b"").decode("utf-8", "replace").strip()[-400:]
