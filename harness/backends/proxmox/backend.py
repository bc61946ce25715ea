"""The ``proxmox`` backend: reconfigure one VM's test disk through the API (or ``pvesh`` on the node),
apply by restarting QEMU, never lose a volume, always restore.

One cell, in order (Proxmox VE API: /nodes/{node}/qemu/{vmid}/config, status/*, pending; qemu-server):

1. read the config and its ``digest``; compute the minimal change (:mod:`.change`);
2. stop the VM (API ``stop`` task) so every change applies at once and a bus move is safe;
   with ``restart = "reboot"`` a change that does not move the disk is written while the VM runs
   (it stays pending) and applied by an API ``reboot``;
3. write with ``digest`` each time; a conflict is a :class:`~stormatrix.core.errors.ConfigConflictError`, never
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

Steps 3, 4 and 6 are done on the VM by :mod:`.restart` (the writes, the stop/start or reboot tasks, the checks
after them, the readiness); what the runner measures on the running VM (its QEMU process and threads, the test
drive's block counters, the guest's endpoints, the host collector) is read by :mod:`.measure`.

With ``[host] scope = "cpus"`` (:mod:`.hostscope`) the first apply also steers the node onto the set (IRQs,
irqbalance, work queues, RPS/XPS: the previous values were read by prepare and journaled with the original
config) and every apply writes the VM's ``affinity`` = the set before its start.

Restore (at the end, on error, on Ctrl-C, and from ``stormatrix restore RUN_DIR`` after a crash)
puts back the test disk on its original key with its original text, ``scsihw`` and ``boot``, reverts
pending changes of those keys, and returns the VM to its original power state. The original config
is journaled (never a secret) through :meth:`ProxmoxBackend.original_config`.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from ...core import oscompat
from ...core.errors import BackendError, InputError, MatrixError
from ...core.model import CONTROLLERS, DiskConfig
from ...core.recordtypes import RestoredRecord, RunRecord
from ...core.scope import (ROLE_IOTHREAD, ROLE_VCPU, BlockStats, GuestEndpoint, HostScope, format_cpuset,
                           parse_cpuset)
from ...journal import JOURNAL_NAME, read_journal
from ...spec import HostSettings, MatrixSpec
from ..base import Backend
from . import measure, sharing
from .api import PveClient
from .change import plan_cell
from .cmdline import CmdlineCheck
from .drives import DRIVE_KEY_RE, disk_config_of, drive_key, is_cdrom, parse_drive
from .hostscope import CpuScope, NodeSettings, change_lines, check_host, check_reachable, cpu_scope, refusal
from .node import NodeShell, Pinner, ensure_remote_collector, node_cpus, node_inventory
from .restart import reboot, verify_running, wait_ready, write_until
from .restore import check_original, restore_vm
from .settings import check_section, make_transport
from .storage import StorageInfo, read_storage, storage_facts

log = logging.getLogger("stormatrix.backend.proxmox")


class ProxmoxBackend(Backend):
    name = "proxmox"
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "fio-server"
    # technote 004's CPU-set scope needs the node's files ([proxmox] ssh): the QEMU process unless the matrix asks
    default_host_scope = "process"
    host_scopes = frozenset({"cpus", "process"})
    spec: MatrixSpec  # a matrix run's: the backend reads its grid (the controllers a cell may attach)

    @classmethod
    def linux_only(cls, sections: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """(key, why, fix) when the file's ``[proxmox]`` needs stormatrix on the node itself (transport = "local":
        pvesh, qm and the QEMU processes of this machine), else None (:func:`stormatrix.registry.check_platform`)."""
        table = sections.get("proxmox")
        if isinstance(table, Mapping) and table.get("transport") == "local":
            return ("[proxmox] transport", 'transport = "local" runs pvesh and qm on this machine, which must be '
                    "the Proxmox node", 'use transport = "api" with host, node, token_id and token_secret_env, and '
                    "[proxmox] ssh = \"root@NODE\" for the host collector (Windows' own OpenSSH client)")
        return None

    def __init__(self, spec: MatrixSpec, workdir: Path) -> None:
        super().__init__(spec, workdir)
        if "proxmox" not in spec.sections:
            raise MatrixError(spec.path, "[proxmox]", "is missing",
                              "add a [proxmox] section with node, vmid, test_disk and the token settings")
        self.opts: dict[str, Any] = dict(spec.section("proxmox"))
        check_section(self.opts, spec.path)
        self.slot: int = spec.matrix["disk_slot"]
        self._client: PveClient | None = None
        self._original: dict[str, Any] | None = None
        self._pid: int | None = None
        self._scsihw_now: str | None = None  # the running VM's scsihw (a SCSI cell leaves its own behind)
        self._restored = False
        self.storage: StorageInfo | None = None  # the test disk's storage (None: not readable)
        self._own_upids: set[str] = set()  # tasks this backend started (not the restart after a reboot)
        self.node = NodeShell(self.opts["ssh"], self.opts["ssh_config"])
        self.pinner = Pinner(self.node, self.opts["vmid"])
        self.cmdline = CmdlineCheck(self.node, self.opts, self.workdir)
        #: ``[host] scope = "cpus"``: the set, and the node's settings steered onto it (None: the process scope)
        self.cpu_scope: CpuScope | None = cpu_scope(self.host(spec), self.opts)
        self.node_settings = NodeSettings(self.node, self.cpu_scope) if self.cpu_scope else None
        if self.cpu_scope is not None:
            check_reachable(spec.path, self.opts)
        self._steered = False
        #: this process's threads moved off the set (stormatrix runs on the node), with their affinity before
        self._own_affinity: dict[int, set[int]] = {}

    # --- connection ----------------------------------------------------------------------------
    @property
    def client(self) -> PveClient:
        if self._client is None:
            o = self.opts
            self._client = PveClient(make_transport(o, self.spec.path), o["node"], o["vmid"],
                                     task_timeout=o["task_timeout"])
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
            disks = sorted(k for k in config if DRIVE_KEY_RE.match(k))
            raise InputError(
                f"[proxmox] test_disk = {key!r}: VM {c.vmid} has no such disk (disks: {', '.join(disks) or 'none'})")
        opts = parse_drive(config[key])
        if is_cdrom(opts) or opts["file"] in ("none", "cdrom"):
            raise InputError(f"[proxmox] test_disk = {key!r} is a CD-ROM drive, not a disk")
        volid = opts["file"]
        self.storage, why_unknown = read_storage(c, volid)
        for ctrl in self.spec.matrix["controllers"]:
            target = drive_key(CONTROLLERS[ctrl][0], self.slot)
            if target != key and target in config:
                raise InputError(f"controller {ctrl} needs {target}, which VM {c.vmid} already uses for "
                                 f"{config[target].split(',')[0]!r}: choose another [matrix] disk_slot")
        if self.opts["ssh_config"] and not Path(self.opts["ssh_config"]).expanduser().is_file():
            raise MatrixError(self.spec.path, "[proxmox] ssh_config", f"{self.opts['ssh_config']!r} is not a file",
                              "give the path of an ssh_config file, or leave ssh_config empty")
        found = sharing.refused(self.spec.matrix["controllers"], self.slot, config, key)
        if found and not self.opts["allow_shared_scsihw"]:
            raise MatrixError(self.spec.path, "[matrix] controllers", *sharing.refusal_message(c.vmid, found, config))
        facts: dict[str, Any] = {"pve_version": version.get("version"), "node": c.node, "vmid": c.vmid,
                                 "test_disk": key, "volume": volid,
                                 "original_disk": disk_config_of(config, key, self.storage).key,
                                 "transport": self.opts["transport"],
                                 **storage_facts(self.storage, opts.get("cache"), why_unknown)}
        if found:
            # one line of text: the Environment sheet shows facts as they are
            facts["shared_scsihw"] = "; ".join(f"{ctrl}: {', '.join(disks)}" for ctrl, disks in found.items())
            log.warning("VM %s: [proxmox] allow_shared_scsihw = true: %s", c.vmid,
                        "; ".join(f"{ctrl} cells move or share {', '.join(d)}" for ctrl, d in found.items()))
        if self.opts["pin_cpus"]:
            facts["pin_cpus"] = ",".join(map(str, self._check_pin_cpus()))
        if self.opts["ssh"]:
            state = ensure_remote_collector(self.opts["ssh"], self.opts["ssh_dir"], ssh_config=self.opts["ssh_config"])
            facts["host_collector"] = f"ssh {self.opts['ssh']}:{self.opts['ssh_dir']} ({state})"
        if self.opts["check_cmdline"] and self.cmdline.can_showcmd():
            facts["qemu_cmdline"] = self.cmdline.original()
        host_settings: dict[str, Any] | None = None
        if self.cpu_scope is not None and self.node_settings is not None:
            self._refuse_unrestored_node()
            doc = self.node_settings.read()
            if doc["problems"]:
                raise refusal(self.spec.path, self.node.where, doc["problems"])
            facts["host_scope"] = "cpus"
            facts["host_cpus"] = self.cpu_scope.cpus
            facts["host_changes"] = "; ".join(change_lines(c.vmid, self.cpu_scope, doc, self.node.where)[1:])
            host_settings = {"cpus": self.cpu_scope.cpus, "root": self.cpu_scope.root, "state": doc["state"],
                             "affinity": config.get("affinity")}
        self._original = {
            "kind": "proxmox", "node": c.node, "vmid": c.vmid, "test_disk": key, "volid": volid,
            "status": status.get("status", "stopped"), "config": dict(config), "digest": config["digest"],
            "pve_version": version.get("version"),
        }
        if host_settings is not None:
            # journaled in the run record before the first apply changes any of it (restore.py reads it back)
            self._original["host_settings"] = host_settings
        self._restored = False
        self._steered = False
        return facts

    def original_config(self) -> dict[str, Any] | None:
        return self._original

    def host_inventory(self) -> dict[str, Any] | None:
        """The node's facts, read where the host collector runs: over ``[proxmox] ssh`` (inventory.py in
        ``ssh_dir``, copied by :meth:`prepare`), or here when stormatrix runs on the node (transport
        "local", or pveversion on this machine). A workstation that reaches the node only through the
        API cannot describe it: that is said, not filled with the workstation's facts."""
        if self.opts["ssh"]:
            return node_inventory(self.node, self.opts["ssh_dir"])
        if self.opts["transport"] == "local" or shutil.which("pveversion"):
            return None
        return {"host_inventory_error": (
            f"node {self.opts['node']} not described: [proxmox] ssh is empty and this machine is not a Proxmox "
            "node (no pveversion here); set [proxmox] ssh to reach the node, or run stormatrix on it")}

    def load_original(self, original: dict[str, Any]) -> None:
        """For ``stormatrix restore``: the journaled original instead of one read by :meth:`prepare`."""
        check_original(original)
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
        if self.cpu_scope is not None:
            self._steer()
        original = self._original["config"]
        config = c.config()
        plan = plan_cell(config, original, self.test_key, disk, self.slot)
        running = c.status().get("status") == "running"
        if self.cpu_scope is not None:
            self._write_affinity(self.cpu_scope.cpus)
        if self.opts["restart"] == "reboot" and running and not plan.bus_move:
            write_until(c, lambda cfg: plan_cell(cfg, original, self.test_key, disk, self.slot))
            reboot(c, self.opts, disk.key, self._own_upids)
        else:
            if running:
                self._task("stop", "stop")
            write_until(c, lambda cfg: plan_cell(cfg, original, self.test_key, disk, self.slot))
            self._task("start", f"start with {disk.key}")
        target = drive_key(disk.bus, self.slot)
        want_affinity = self.cpu_scope.cpus if self.cpu_scope is not None else None
        current = verify_running(
            c, lambda cfg: (disk_config_of(cfg, target, self.storage) == disk if target in cfg else False)
            and (want_affinity is None or cfg.get("affinity") == want_affinity),
            f"the test disk as {disk.key} on {target}" + (f" with affinity {want_affinity}" if want_affinity else ""))
        self._scsihw_now = current.get("scsihw")
        self._pid = int(c.status().get("pid") or 0) or None
        if self.opts["check_cmdline"]:
            self._check_cmdline(disk, target)
        wait_ready(c, self.opts, original, float(self.spec.run["boot_timeout_seconds"]))
        if self.opts["pin_cpus"]:
            self._pin(parse_cpuset(self.opts["pin_cpus"]))

    def _task(self, action: str, what: str) -> None:
        upid = self.client.power(action)
        self._own_upids.add(upid)
        self.client.wait_task(upid, what=what)

    # --- the CPU-set scope ([host] scope = "cpus") -------------------------------------------------
    def _steer(self) -> None:
        """Once per run, at the first apply (the previous values are journaled by then): the node's IRQs,
        irqbalance, work queues and RPS/XPS onto the set, and this process off it when it runs on the node."""
        if self._steered or self._original is None or "host_settings" not in self._original:
            return
        assert self.node_settings is not None and self.cpu_scope is not None
        self._steered = True  # before the change: restore puts back whatever part of it was made
        done = self.node_settings.apply(self._original["host_settings"]["state"])
        log.info("node %s: steered onto CPUs %s: %s", self.node.where, self.cpu_scope.cpus,
                 "; ".join(done) or "nothing")
        if not self.node.remote:
            self._confine_self(self.cpu_scope.cpu_list)

    def _refuse_unrestored_node(self) -> None:
        """A run directory whose journal holds a CPU-set run that was never put back (killed, power lost): what the
        node has now is that run's set, not its own values, and journaling it as the original would make them
        permanent. The journaled values are put back first, by ``stormatrix restore``."""
        path = self.workdir / JOURNAL_NAME
        if not path.is_file():
            return
        last: str | None = None
        for rec in read_journal(path).typed(path):  # as the resume reads it (a bad line is refused, naming it)
            if isinstance(rec, RunRecord) and isinstance(rec.original_config, dict) \
                    and "host_settings" in rec.original_config:
                last = rec.run_id
            elif isinstance(rec, RestoredRecord) and last is not None and rec.run_id == last:
                last = None
        if last is not None:
            raise BackendError(f"{path}: run {last} steered node {self.node.where} onto CPUs and was not put back "
                               "(it was killed before its end), so the node's settings now are not its own. Fix: "
                               f"stormatrix restore {self.workdir} (it writes back the values that run journaled), "
                               "then run again to resume")

    def _confine_self(self, cpus: list[int]) -> None:
        """stormatrix runs on the node: every thread of this process onto the CPUs outside the set."""
        if not hasattr(os, "sched_setaffinity"):
            return
        rest = set(node_cpus(self.node)) - set(cpus)
        if not rest:
            return
        for tid in (int(t) for t in os.listdir("/proc/self/task")):
            try:
                self._own_affinity.setdefault(tid, oscompat.thread_affinity(tid))
                oscompat.set_thread_affinity(tid, rest)
            except OSError:
                continue

    def _release_self(self) -> None:
        for tid, cpus in list(self._own_affinity.items()):
            del self._own_affinity[tid]
            try:
                oscompat.set_thread_affinity(tid, cpus)
            except OSError:
                continue

    def _write_affinity(self, cpus: str) -> None:
        """``affinity`` = the set (pending while the VM runs; the start or reboot that follows applies it)."""
        c = self.client
        config = c.config()
        if config.get("affinity") != cpus:
            log.info("VM %s: set affinity %s", c.vmid, cpus)
            c.update_config({"affinity": cpus}, config["digest"])

    def _restore_node(self) -> None:
        """The node's settings back from the journaled state (idempotent: nothing is written where they are)."""
        if self._original is None or "host_settings" not in self._original:
            return
        hs = self._original["host_settings"]
        settings = NodeSettings(self.node, CpuScope(str(hs["cpus"]), (), (), str(hs.get("root") or "/")))
        done = settings.restore(hs["state"])
        if done:
            log.info("node %s: host settings put back: %s", self.node.where, "; ".join(done))
        self._steered = False

    # --- scope, endpoints, block stats (:mod:`.measure`) ---------------------------------------------
    def thread_roles(self) -> dict[int, str]:
        return measure.thread_roles(self.client, self.opts)

    def scope(self) -> list[HostScope]:
        return measure.vm_scope(self.client, self.opts, self.thread_roles)

    def endpoints(self) -> list[GuestEndpoint]:
        return measure.guest_endpoints(self.opts)

    def blockstats(self) -> BlockStats | None:
        if self.current is None:
            return None
        return measure.drive_blockstats(self.client, self.opts, f"drive-{self.current.bus}{self.slot}")

    def window_closed(self) -> dict[str, Any] | None:
        """What the cell's record must say about the window: the VM's other drives that share the test
        disk's controller (its I/O runs through the measured controller) or whose SCSI controller the
        cell changed (``scsihw`` is one per VM). Empty lists when there are none; every cell says so."""
        if self.current is None or self._original is None:
            return None
        return {"controller_shared_with": sharing.sharing(self.current, self.slot, self._original["config"],
                                                          self.test_key, scsihw_now=self._scsihw_now)}

    def collector_factory(self, scope: HostScope) -> Any:
        """The host collector for ``scope`` (:func:`.measure.host_collector`): here, or on the node over ssh."""
        return measure.host_collector(self.node, self.opts, self.cpu_scope, self.node_settings, scope)

    # --- the QEMU command line ------------------------------------------------------------------
    def _local_pid(self, pid: int) -> bool:
        return self.cmdline.local_pid(pid)

    def _check_cmdline(self, disk: DiskConfig, key: str) -> None:
        self.cmdline.check(disk, key, self._pid, self.storage)

    # --- pinning ------------------------------------------------------------------------------
    def node_cpus(self) -> list[int]:
        """The node's online CPUs."""
        return node_cpus(self.node)

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
        self.pinner.pin(roles, cpus, local_ok=lambda: not self._pid or self._local_pid(self._pid))

    def _unpin(self) -> None:
        self.pinner.unpin()

    # --- stop, restore, close ---------------------------------------------------------------------
    def _stop(self) -> None:
        """Nothing to do between cells: each apply restarts the VM itself. The VM's final state is
        decided by restore (its original power state)."""
        self._unpin()

    def _restore(self) -> None:
        if self._original is None or self._restored:
            return
        self._unpin()
        try:
            restore_vm(self.client, self._original)
        except BaseException as exc:
            try:  # the node's settings go back even when the VM's did not
                self._restore_node()
            except BackendError as node_exc:
                raise BackendError(f"{exc}; and {node_exc}") from exc
            raise
        self._restore_node()
        self._release_self()
        self._restored = True

    @classmethod
    def host(cls, spec: MatrixSpec) -> HostSettings:
        """``[host]`` on a Proxmox node (:func:`.hostscope.check_host`); the node itself is checked by
        :meth:`plan_notes` and prepare, which read it."""
        return check_host(super().host(spec), spec.path)

    @classmethod
    def plan_notes(cls, spec: MatrixSpec) -> list[str]:
        """With ``[host] scope = "cpus"``: every setting the run will change, read from the node now; a node
        that cannot be steered (a CPU it lacks, no CPU left for the harness, a pattern or interface matching
        nothing, files not writable, irqbalance that cannot be stopped) is refused here with the fix."""
        opts = dict(spec.section("proxmox"))
        scope = cpu_scope(cls.host(spec), opts)
        if scope is None:
            return []
        check_reachable(spec.path, opts)
        shell = NodeShell(opts.get("ssh", ""), opts.get("ssh_config", ""))
        doc = NodeSettings(shell, scope).read()
        if doc["problems"]:
            raise refusal(spec.path, shell.where, doc["problems"])
        return change_lines(int(opts["vmid"]), scope, doc, shell.where)

    def _close(self) -> None:
        self._unpin()
        self._release_self()
        if self._client is not None:
            self._client.close()
            self._client = None
