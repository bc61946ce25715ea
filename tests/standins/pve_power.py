"""The Proxmox stand-in's VMs, tasks and power actions: start, stop, shutdown, reboot (with qemu-server's
``qm cleanup`` restart), status, the guest agent, the monitor and the task list, as Proxmox's API and
qemu-server document them. A mixin of :class:`~.pve.PveStandin`, which holds the state it uses.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .pve_cmdline import default_aio
from .pve_launch import LaunchFailed, LaunchSpec, RunningQemu
from .pve_schema import ApiError

DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$")


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
    #: the ``affinity`` the running QEMU was started with (qemu-server: ``taskset --cpu-list --all-tasks``), or None
    affinity: str | None = None

    @property
    def running(self) -> bool:
        return self.qemu is not None and self.qemu.alive()


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


class PowerAndTasks:
    """Power actions, tasks, status, agent and monitor endpoints; the state is :class:`~.pve.PveStandin`'s."""

    # the state this part uses, set up by PveStandin.__init__
    lock: Any
    node: str
    vms: dict[int, "Vm"]
    tasks: dict[str, "Task"]
    launcher: Any
    run_dir: Any
    auditors: set[str] | None
    storages: dict[str, dict[str, Any]]
    bridge_addresses: dict[int, str]
    guest_execs: dict[tuple[int, int], dict[str, Any]]
    bridge_address: Callable[[int], str]
    vm_node: dict[int, str]

    def _task(self, ttype: str, vmid: int, user: str, body: Callable[[Task], None]) -> str:
        with self.lock:
            self._task_counter += 1
            now = int(time.time())
            node = self.vm_node.get(vmid, self.node)  # a VM's tasks run on its node
            upid = (f"UPID:{node}:{os.getpid() + self._task_counter:08X}:{self._task_counter:08X}:"
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
            # Long-lived threads fork every QEMU: the qemu backend sets PR_SET_PDEATHSIG, which
            # fires when the forking *thread* ends, so a short-lived task thread would kill QEMU.
            qemu = self._forker.submit(self.launcher.start, spec).result()
        except LaunchFailed as exc:
            task.log.extend(exc.lines[-20:])
            raise ApiError(500, f"start failed: QEMU exited with code {exc.code}") from None
        affinity = vm.conf.get("affinity")
        if affinity:
            try:
                self._taskset(qemu.pid, affinity)
            except ApiError as exc:
                qemu.stop()
                task.log.append(exc.message)
                raise
        with self.lock:
            vm.qemu, vm.started_at, vm.affinity = qemu, time.time(), affinity
        if getattr(self, "node_tree", None) is not None:
            self.node_tree.link_process(qemu.pid)  # the node's /proc shows its QEMU

    def node_cpus(self) -> list[int]:
        """The node's online CPUs: its fake tree's (``node_tree``, tests/standins/pve_nodefs.py), else this machine's."""
        tree = getattr(self, "node_tree", None)
        if tree is not None:
            return list(range(tree.desc.cpus))
        return sorted(os.sched_getaffinity(0))

    def _taskset(self, pid: int, affinity: str) -> None:
        """qemu-server's ``vm_start``: with ``affinity`` set, QEMU runs under ``/usr/bin/taskset --cpu-list
        --all-tasks <affinity>`` (every thread on the set). A CPU the node lacks makes taskset fail ("failed to set
        pid's affinity: Invalid argument") and the start with it. The node's CPUs the real machine also has are set
        on every thread of the "QEMU" process for real."""
        cpus: set[int] = set()
        for part in affinity.split(","):
            lo, _, hi = part.strip().partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
        if not cpus <= set(self.node_cpus()):
            raise ApiError(500, f"start failed: taskset: failed to set pid {pid}'s affinity: Invalid argument")
        real = cpus & set(range(os.cpu_count() or 1))
        if not real:
            return
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            tids = [pid]
        for tid in tids:
            try:
                os.sched_setaffinity(tid, real)
            except OSError:
                continue

    def _stop_vm(self, vm: Vm, task: Task) -> None:
        with self.lock:
            qemu, vm.qemu, vm.affinity = vm.qemu, None, None
        if qemu is not None:
            qemu.stop()
            task.log.append(f"stopped QEMU pid {qemu.pid}")
            if getattr(self, "node_tree", None) is not None:
                self.node_tree.unlink_process(qemu.pid)

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
        scfg = self.storages.get(value.split(",")[0].split(":", 1)[0])
        return LaunchSpec(vmid=vm.vmid, name=vm.conf.get("name", f"vm{vm.vmid}"), controller=controller,
                          aio=opts.get("aio") or default_aio(opts, scfg), iothread=iothread, cache=opts.get("cache", "default"),
                          slot=slot, image=self.volume_path(value.split(",")[0]),
                          cores=int(vm.conf.get("cores", "1")) * int(vm.conf.get("sockets", "1")),
                          memory_mib=int(memory.group(1)) if memory else 512, run_dir=self.run_dir,
                          config=dict(vm.conf), key=key, volumes=volumes,
                          storages={k: dict(v) for k, v in self.storages.items()},
                          address=self.bridge_address(vm.vmid) if "net0" in vm.conf else None)

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
            interfaces = self.guest_interfaces.get(vm.vmid) or self._bridged_interfaces(vm)
        assert qemu is not None
        if down or not self.agent_ready or not qemu.agent_ping():
            raise ApiError(500, "QEMU guest agent is not running")
        return {"result": json.loads(json.dumps(interfaces))}

    def _api_POST_nodes_node_qemu_vmid_agent_exec(self, p: dict[str, Any], *_: Any) -> Any:
        """QGA ``guest-exec`` through qemu-server: the command starts in the guest and the call returns its
        pid at once; ``exec-status`` tells when it has exited, with its output. What runs is the guest's
        own (:meth:`RunningQemu.guest_exec`); a guest without it is an agent without ``guest-exec``."""
        with self.lock:
            vm = self._agent_vm(p)
            qemu = vm.qemu
            down = vm.vmid in self.guest_agent_down
        assert qemu is not None
        if down or not self.agent_ready or not qemu.agent_ping():
            raise ApiError(500, "QEMU guest agent is not running")
        start = getattr(qemu, "guest_exec", None)
        if start is None:
            raise ApiError(500, "Agent error: The command guest-exec has been disabled for this instance")
        command = [str(c) for c in p["command"]]
        try:
            wait = start(command)  # spawned now: a program that is not there fails the call itself
        except FileNotFoundError:
            raise ApiError(500, f"Agent error: Failed to execute child process \u201c{command[0]}\u201d "
                                "(No such file or directory)") from None
        with self.lock:
            self._exec_counter = getattr(self, "_exec_counter", 1000) + 1
            pid = self._exec_counter
            status: dict[str, Any] = {"exited": 0}
            self.guest_execs[(vm.vmid, pid)] = status

        def body() -> None:
            code, out, err = wait()
            with self.lock:
                status.update({"exited": 1, "exitcode": code, **({"out-data": out} if out else {}),
                               **({"err-data": err} if err else {})})

        threading.Thread(target=body, name="guest-exec", daemon=True).start()
        return {"pid": pid}

    def _api_GET_nodes_node_qemu_vmid_agent_exec_status(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            vm = self._agent_vm(p)
            status = self.guest_execs.get((vm.vmid, int(p["pid"])))
            if status is None:
                raise ApiError(500, f"Agent error: Invalid parameter 'pid'")
            return {k: v for k, v in status.items() if k != "error"}

    def _bridged_interfaces(self, vm: Vm) -> list[dict[str, Any]]:
        """What a guest reports by default: loopback, and its address on the bridge when it has net0."""
        lo = guest_interface("lo", "00:00:00:00:00:00", "127.0.0.1/8", "::1/128")
        address = self.bridge_addresses.get(vm.vmid) if "net0" in vm.conf else None
        if address is None:
            return [lo]
        mac = re.search(r"=((?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})", vm.conf["net0"])
        return [lo, guest_interface("eth0", mac.group(1).lower() if mac else None, f"{address}/24")]

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
        if task.upid.split(":")[1] != p["node"]:  # a task's log and status are on the node that runs it
            raise ApiError(500, f"no such task on node '{p['node']}'")
        self._check_task_user(task, user)
        out: dict[str, Any] = {"upid": task.upid, "node": task.upid.split(":")[1], "type": task.type, "id": str(task.vmid),
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
