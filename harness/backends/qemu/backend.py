"""The local ``qemu`` backend: real QEMU, started by the harness, with exactly the test-disk devices
Proxmox's qemu-server generates for the same configuration.

The backend is split by job: :mod:`.settings` is the ``[qemu]`` section, :mod:`.devices` builds the test disk's
devices as qemu-server does, :mod:`.vm` runs one QEMU process, :mod:`.state` keeps the saved booted states and
:mod:`.savedstarts` starts VMs from them (and saves them), :mod:`.ahead` runs VMs beside the one under test (the
BootsAhead capability), :mod:`.pinning` pins its threads for the measurement window. This module is the backend
that ties them together.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ... import guestimage
from ...collect import CpuSetHostCollector
from ...core.errors import EnvironmentProblem, MatrixError, VmStartError
from ...core.model import CONTROLLERS, DiskConfig
from ...core.scope import BlockStats, GuestEndpoint, HostScope, format_cpuset
from ...spec import HostSettings, MatrixSpec
from ...host.collector import WindowCollector
from ..base import Backend
from .ahead import AheadVms
from .pinning import VCPU_OFF_SET_WHY, PinPlan, PlacementCollector, ThreadPinner, plan_placement
from .savedstarts import SavedStarts
from .settings import QEMU_SECTION
from .state import StateCache, binary_identity
from .testdisks import DiskClaim, claim_test_disks
from .vm import QemuVm, VmSpec, qemu_version, socket_path_problem

__all__ = ["QemuBackend"]

log = logging.getLogger("stormatrix.qemu")


class QemuBackend(SavedStarts, AheadVms, Backend):
    """Local QEMU. Every cell's VM is created from the matrix and discarded; nothing to restore.

    **Boot-ahead** (``[qemu] boot_ahead``, on by default): the runner names the next configuration
    while the current cell warms up; its VM boots then, on the other core, from a second copy of the
    test disk (QEMU write-locks an image; two images with the same contents). When the measurement
    window opens the VM booting ahead is paused (QMP ``stop``: no vCPU runs, its virtual clock stands
    still) and resumed when the window closes, so nothing but the VM under test runs in the window;
    the record says so (``overlap``), with the paused VM's CPU time in the window as evidence. This
    takes the ~3.5 s boot out of the time between two cells without shortening any window.

    **Overlap** (``[qemu] overlap``, on by default): the cell's VM is stopped in a background thread
    (QMP ``quit`` and the process reaped) while the next cell's VM is taken over, and the runner starts the
    VM after that booting at once, while the current one gets ready (not just before its measurement):
    on a CPU-bound host the boot that is not done when its turn comes is what a cell waits for. Before a
    window opens every VM being stopped is reaped (:meth:`window_opened`), so no teardown runs in a
    window, and the VM booting ahead is paused there, as before.

    **Placement** (``[host] scope = "cpus"``, the default): for each window QEMU's threads run on the measured
    CPU set and the harness on the others — under ``accel = tcg`` all but the vCPU threads (the emulated guest),
    which run beside the harness; under ``[host] scope = "process"``, ``[qemu] pin_threads`` puts the vCPU on
    its own CPU and the rest of QEMU with the harness. Either way a cell's context switches do not depend on
    where the scheduler happened to put the vCPU and the main loop; the record's ``host.placement`` says where
    every role ran (:mod:`.pinning`).
    """

    name = "qemu"
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "local-agent"
    default_host_scope = "cpus"
    host_scopes = frozenset({"cpus", "process"})
    VM_NAMES = ("stormatrix-vm", "stormatrix-vm-b", "stormatrix-vm-c", "stormatrix-vm-d", "stormatrix-vm-e")
    spec: MatrixSpec  # a matrix run's: the backend reads its grid (the test disk's slot)

    @classmethod
    def linux_only(cls, sections: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """(key, why, fix): this backend runs QEMU/KVM on this machine, which must be a Linux host
        (:func:`stormatrix.registry.check_platform` asks on Windows; key "": the key that names the backend)."""
        return ("", 'backend = "qemu" runs QEMU/KVM on this machine, which needs a Linux host',
                'run it on a Linux host, or measure from here with backend = "proxmox" (over the API) or "vmware"')

    def __init__(self, spec: MatrixSpec, workdir: Path) -> None:
        super().__init__(spec, workdir)
        self.opts = self.options(spec)
        # the BootsAhead capability (backends.base): the runner's pipeline drives it
        self.overlaps = bool(self.opts["overlap"])  # teardown and the next boot off the critical path
        self.booted_ahead = False  # the last apply() took a VM booted ahead
        self.taken_ahead: QemuVm | None = None  # ... and it is the one ahead_ready() lent
        #: two cells in flight (hand_off): the previous VM sends its result while the next one warms up
        self.pipelines = bool(self.overlaps and self.opts["pipeline"] and self.boots_ahead(spec))
        #: the next configuration's first job sent ahead to its VM (ahead_ready), which waits at its warm-up's gate
        self.prepares = bool(self.pipelines and self.opts["prepare_ahead"])
        self._claimed: list[QemuVm] = []  # VMs booted ahead that ahead_ready gave the runner, a job sent ahead
        self.image: guestimage.GuestImage | None = None
        self.vm: QemuVm | None = None
        self.aheads: list[QemuVm] = []  # the next configurations' VMs, booting or booted, in their order
        self.ahead_depth = self.ahead_count(spec)
        self.disk_paths: list[Path] = []  # one image, or one more per VM booting ahead
        self._paused: list[tuple[QemuVm, float]] = []
        self.pin_plan: PinPlan | None = None
        self.pin_note = ""
        self.host_cfg = HostSettings(scope=self.default_host_scope, scope_given=False)
        self._pinner: ThreadPinner | None = None
        self._stopping: list[tuple[QemuVm, threading.Thread]] = []  # VMs being stopped off the critical path
        self._finishing: list[QemuVm] = []  # handed off after their window: sending their result (hand_off)
        self._claim: DiskClaim | None = None  # the cached test-disk images this run holds until it closes
        #: [qemu] restore: the saved states, and the QEMU program they must come from
        self.states: StateCache | None = None
        self._binary: dict[str, Any] = {}
        #: a VM's restore or save running beside the runner (see :meth:`_prepare_vm`), and its cancel
        self._prep: dict[QemuVm, tuple[threading.Thread, threading.Event]] = {}
        self._cv = threading.Condition()
        self._in_window = False  # no restore or save starts while a window is open
        self._busy = 0  # restores and saves running now (a window opens only when none is)

    @staticmethod
    def options(spec: MatrixSpec) -> dict[str, Any]:
        """The matrix's [qemu] section over the section's defaults."""
        return {**{k: f.default for k, f in QEMU_SECTION.fields.items()}, **spec.section("qemu")}

    @classmethod
    def boots_ahead(cls, spec: MatrixSpec) -> bool:
        # a user-given disk_path is one image: a second VM could not open it (QEMU's write lock)
        opts = cls.options(spec)
        return bool(opts["boot_ahead"] and not opts["disk_path"])

    @classmethod
    def restores(cls, spec: MatrixSpec) -> bool:
        """[qemu] restore, unless the test disk is the user's own (disk_path): its guest must boot and probe it
        as it is, partitions and all, not carry over what a saved guest saw of another disk."""
        opts = cls.options(spec)
        return bool(opts["restore"] and not opts["disk_path"])

    @classmethod
    def ahead_count(cls, spec: MatrixSpec) -> int:
        """How many VMs boot ahead at once (0: none)."""
        return int(cls.options(spec)["boot_ahead_depth"]) if cls.boots_ahead(spec) else 0

    @property
    def ahead(self) -> QemuVm | None:
        """The VM booting ahead for the next configuration (the first of :attr:`aheads`)."""
        return self.aheads[0] if self.aheads else None

    @classmethod
    def host(cls, spec: MatrixSpec) -> HostSettings:
        """``[host]`` on this machine: the CPU set checked against the CPUs this process may use (it must exist and
        leave one for the harness); with one usable CPU and no scope in the matrix, the process is measured."""
        host = super().host(spec)
        for key in ("interfaces", "irqs"):
            if getattr(host, key):
                raise MatrixError(spec.path, f"[host] {key}", "is steered on a Proxmox node only: the local backend's "
                                  "test disk is a file QEMU reads itself, with no storage NIC or interrupt to steer",
                                  f"remove {key} (or run on backend = \"proxmox\")")
        plan, _ = cls._placement(spec, host)
        if host.scope == "cpus" and plan is None:
            return replace(host, scope="process")
        return host

    @classmethod
    def _placement(cls, spec: MatrixSpec, host: HostSettings) -> tuple[PinPlan | None, str]:
        raw = spec.raw.get("qemu")
        given = isinstance(raw, dict) and "pin_threads" in raw
        opts = cls.options(spec)
        return plan_placement(opts["pin_threads"], host, spec.path, pin_given=given, accel=opts["accel"])

    @classmethod
    def plan_notes(cls, spec: MatrixSpec) -> list[str]:
        host = cls.host(spec)
        plan, why = cls._placement(spec, host)
        if plan is None:
            notes = [f"QEMU's threads are not pinned ({why}): cells are exposed to the host scheduler's placement; "
                     "the QEMU process is measured"]
        elif plan.whole_qemu:
            notes = [f"each measurement window: {plan.describe()}; each cell's host figures are the set's "
                     "(its interrupts and softirqs outside the set, and the other tasks on it, named), the QEMU "
                     "process's beside them"]
        else:
            notes = [f"each measurement window: {plan.describe()}; the QEMU process is measured ([host] scope = "
                     "\"process\")"]
        if cls.restores(spec):
            notes.append(f"VMs start from their saved booted states in {cls.states_root()} where there is one; a "
                         "device set's first VM boots and saves its state (~2-4 s once)")
        return notes

    def _prepare(self) -> dict[str, Any]:
        # before anything starts: a run folder too deep for a VM's sockets would fail every cell the same way
        # the VM under test, the ones booting ahead, and (pipeline) the previous one sending its result
        count = 1 + self.ahead_depth + (1 if self.pipelines else 0)
        problem = socket_path_problem(self.workdir / "vm", max(self.VM_NAMES[:count], key=len))
        if problem:
            raise EnvironmentProblem(problem)
        self.host_cfg = self.host(self.spec)
        self.pin_plan, self.pin_note = self._placement(self.spec, self.host_cfg)
        version = qemu_version(self.opts["binary"])
        self.image = guestimage.build()
        if self.restores(self.spec):
            self.states = StateCache(self.states_root())
            self._binary = binary_identity(self.opts["binary"], version)
        if self.opts["disk_path"]:
            path = Path(self.opts["disk_path"])
            if not path.exists():
                raise EnvironmentProblem(f"[qemu] disk_path {path} does not exist")
            self.disk_paths = [path]
            if self.opts["boot_ahead"]:
                log.info("[qemu] disk_path is set: one test disk, so no VM boots ahead")
        else:
            size = self.opts["disk_size_mib"]
            if self._claim is not None:
                self._claim.release()
            self._claim = claim_test_disks(guestimage.cache_root() / "disks", size, count)
            self.disk_paths = self._claim.paths
        return {"qemu": version, "accel": self.opts["accel"], "guest_image": self.image.image_id,
                "guest_kernel": self.image.kernel_release, "vcpus": self.opts["vcpus"],
                "memory_mib": self.opts["memory_mib"], "firmware": self.opts["firmware"],
                "guest_args": self.opts["guest_args"],
                "tcg_thread": self.opts["tcg_thread"] if self.opts["accel"] == "tcg" else None,
                "test_disk": str(self.disk_paths[0]), "test_disks": [str(p) for p in self.disk_paths],
                "boot_ahead": len(self.disk_paths) > 1,
                "boot_ahead_depth": self.ahead_depth if len(self.disk_paths) > 1 else 0,
                "restore": ({"states": str(self.states.root)} if self.states is not None
                            else {"off": "[qemu] disk_path is set: the VM boots (the disk is seen as it is)"
                                  if self.opts["restore"] else "[qemu] restore = false: every VM boots"}),
                "pin_threads": ({"vcpu_cpus": format_cpuset(self.pin_plan.vcpu_cpus),
                                 "other_cpus": format_cpuset(self.pin_plan.other_cpus)}
                                if self.pin_plan and not self.pin_plan.whole_qemu else
                                {"off": "[host] scope = cpus: QEMU's threads run on the measured set"
                                        + ("" if self.pin_plan.vcpu_on_set else ", its vCPUs beside the harness")}
                                if self.pin_plan else {"off": self.pin_note}),
                "host_scope": self.host_facts()}

    def host_facts(self) -> dict[str, Any]:
        """The run record's ``environment.host_scope``: which scope every cell measures, and where."""
        plan = self.pin_plan
        if plan is not None and plan.whole_qemu:
            return {"scope": "cpus", "cpus": format_cpuset(plan.vcpu_cpus),
                    "harness_cpus": format_cpuset(plan.other_cpus), "given": self.host_cfg.scope_given,
                    "vcpu_on_set": plan.vcpu_on_set,
                    **({} if plan.vcpu_on_set else {"vcpu_cpus": format_cpuset(plan.other_cpus),
                                                    "why": VCPU_OFF_SET_WHY})}
        return {"scope": "qemu-process", "given": self.host_cfg.scope_given,
                **({"note": self.pin_note} if self.host_cfg.scope == "process" and not self.host_cfg.scope_given
                   and self.default_host_scope == "cpus" else {})}

    @staticmethod
    def states_root() -> Path:
        """The folder of saved VM states ([qemu] restore): ``states/`` in the cache folder."""
        return guestimage.cache_root() / "states"

    def vm_spec(self, disk: DiskConfig, index: int = 0) -> VmSpec:
        assert self.image is not None and self.disk_paths
        return VmSpec(name=self.VM_NAMES[index], disk=disk, disk_image=self.disk_paths[index],
                      run_dir=self.workdir / "vm", image=self.image, slot=self.spec.matrix["disk_slot"],
                      vcpus=self.opts["vcpus"], memory_mib=self.opts["memory_mib"], accel=self.opts["accel"],
                      firmware=self.opts["firmware"], binary=self.opts["binary"],
                      guest_args=self.opts["guest_args"], tcg_thread=self.opts["tcg_thread"])

    def _stop_in_background(self, vm: QemuVm) -> None:
        thread = threading.Thread(target=vm.stop, name=f"stop-{vm.spec.name}", daemon=True)
        thread.start()
        self._stopping.append((vm, thread))

    def _reap(self) -> None:
        """Wait until every VM stopping in the background is gone (its image free, its CPU time spent)."""
        while self._stopping:
            vm, thread = self._stopping.pop(0)
            thread.join()
            if vm.proc is not None:  # the thread failed: stop it here, where a failure is reported
                vm.stop()

    def _start_vm(self, disk: DiskConfig) -> QemuVm:
        """Start a VM on a test-disk image no live VM holds, and listen to its agent at once; with ``[qemu]
        restore``, from its saved state when there is one (the load runs in a thread, see :meth:`_prepare_vm`),
        and a VM booted without one saves its state once it is ready."""
        live = [vm for vm in (self.vm, *self.aheads, *self._finishing) if vm is not None]
        if len(self._stopping) + len(live) >= len(self.disk_paths):
            self._reap()  # the image the new VM needs is still held by a VM being stopped
        busy = {vm.spec.disk_image for vm in live} | {vm.spec.disk_image for vm, _ in self._stopping}
        index = next(i for i, p in enumerate(self.disk_paths) if p not in busy)
        vm = QemuVm(self.vm_spec(disk, index))
        key, made_of, state = "", dict[str, Any](), None
        if self.states is not None:
            key, made_of = self.state_key(vm.spec)
            state = self.states.lookup(key)
            if state is not None:
                vm.incoming, vm.how = True, {"how": "restore", "state": key}
        self._launch(vm)
        if self.states is not None:
            # the restore (or, without a state, the save once the guest is ready) runs beside the runner
            cancel = threading.Event()
            thread = threading.Thread(target=self._prepare_vm, args=(vm, key, made_of, state, cancel),
                                      name=f"prep-{vm.spec.name}", daemon=True)
            self._prep[vm] = (thread, cancel)
            thread.start()
        return vm

    def _launch(self, vm: QemuVm) -> None:
        vm.start()
        if self._pinner is not None and self._pinner.active:  # started inside a window: not on its CPUs
            self._pinner.release(vm.pid)
        try:
            vm.listen_agent(time.monotonic() + 30)
        except OSError as exc:
            vm.stop()
            raise VmStartError(f"cannot connect to the guest agent socket {vm.agent_path}: {exc}") from None

    def _apply(self, disk: DiskConfig) -> None:
        # A new configuration needs a new QEMU process: stop the old one, start with the new devices
        # (or take the one that booted ahead with exactly these devices).
        self.booted_ahead, self.taken_ahead = False, None
        self._stop()
        for vm, _ in self._paused:  # a window a failure left open: nothing stays paused across it
            if vm.alive():
                vm.resume()
        self._paused = []
        with self._cv:  # (a window a failure left open)
            self._in_window = False
            self._cv.notify_all()
        ahead = next((vm for vm in self.aheads if vm.spec.disk == disk), None)
        if ahead is not None:
            # its restore done (or booted instead), or its state saved: a VM taken before it was ready saves
            # then (once per device set: on a busy host a VM booting ahead is seldom ready before its turn)
            self._finish_prep(ahead, cancel=False)
        for dead in [vm for vm in self.aheads if vm not in self._prep and not vm.alive()]:
            dead.stop()
            self.aheads.remove(dead)
        if ahead in self.aheads:
            # VMs booted for other configurations (a retry came first) stay for their turn
            self.aheads.remove(ahead)
            self.vm = ahead
            self.booted_ahead = True
            if ahead in self._claimed:
                self._claimed.remove(ahead)
                self.taken_ahead = ahead
            self.vm_start = dict(ahead.how)
            log.debug("%s: taking the VM that %s ahead", disk.key,
                      "was restored" if ahead.how["how"] == "restore" else "booted")
            return
        self.vm = self._start_vm(disk)
        self._finish_prep(self.vm, cancel=False)
        self.vm_start = dict(self.vm.how)

    def window_opened(self) -> None:
        for vm in self._finishing:  # (the runner releases them before: a safety net, never measured with)
            self._stop_in_background(vm)
        self._finishing = []
        self._reap()  # nothing of the previous cell's VM runs in this window
        with self._cv:  # no restore or save starts now; one under way finishes first (~0.5-3 s)
            self._in_window = True
            while self._busy:
                self._cv.wait()
        for ahead in self.aheads:
            if ahead.alive():
                ahead.pause()
                self._paused.append((ahead, ahead.cpu_seconds()))
        self._pin()

    def _pin(self) -> None:
        """Pin the VM under test's threads and the harness's for the window (see :mod:`.pinning`)."""
        if self.pin_plan is None or self.vm is None:
            return
        self._pinner = self._pinner or ThreadPinner(self.pin_plan)
        try:
            self._pinner.pin(self.vm.pid, self.vm.thread_roles())
            if self.pin_plan.whole_qemu:  # the paused VMs booting ahead are not the VM under test: off the set
                for ahead in self.aheads:
                    if ahead.alive():
                        self._pinner.keep_off(ahead.pid)
        except OSError as exc:
            if self.pin_plan.whole_qemu:
                raise EnvironmentProblem(f"[host] scope = \"cpus\": confining QEMU {self.vm.pid}'s threads to CPU "
                                         f"{format_cpuset(self.pin_plan.vcpu_cpus)} failed: {exc}. Set [host] scope = "
                                         "\"process\" to measure the QEMU process instead") from None
            raise EnvironmentProblem(f"[qemu] pin_threads: pinning QEMU {self.vm.pid}'s threads failed: {exc}. "
                                     "Set pin_threads = \"off\" to measure unpinned") from None

    def _unpin(self) -> None:
        if self._pinner is not None:
            self._pinner.unpin()

    def placement(self) -> dict[str, Any]:
        """Where the window's threads ran (the record's ``host.placement``)."""
        if self._pinner is not None and self._pinner.active:
            return self._pinner.placement()
        return {"pinned": False, "reason": self.pin_note or "the window was not pinned"}

    def collector_factory(self, scope: HostScope) -> Any:
        """The window's host collector, with the placement added: under [host] scope = "cpus" the set measured
        system-wide with the QEMU process's figures beside it, else the QEMU process."""
        if self.pin_plan is not None and self.pin_plan.whole_qemu:
            process = WindowCollector(scope.pid, dict(scope.threads))
            return PlacementCollector(CpuSetHostCollector(list(self.pin_plan.vcpu_cpus), process,
                                                          exclude=(scope.pid,)), self.placement)
        return PlacementCollector(super().collector_factory(scope), self.placement)

    def window_closed(self) -> dict[str, Any] | None:
        """Resume the VMs paused for the window; the record's ``overlap``: their names, and their CPU time in
        the window summed (``cpu_s_in_window``, ~0: evidence they were paused), with each one's under ``vms``."""
        self._unpin()
        with self._cv:
            self._in_window = False
            self._cv.notify_all()
        paused, self._paused = self._paused, []
        if not paused:
            return None
        each: list[dict[str, Any]] = []
        for vm, cpu0 in paused:
            if not vm.alive():
                each.append({"vm": vm.spec.name, "cpu_s_in_window": None,
                             "note": "the VM booting ahead exited during the window"})
                continue
            cpu1 = vm.cpu_seconds()
            vm.resume()
            each.append({"vm": vm.spec.name, "cpu_s_in_window": round(cpu1 - cpu0, 3)})
        cpu = [e["cpu_s_in_window"] for e in each]
        out: dict[str, Any] = {"vm": ", ".join(e["vm"] for e in each), "paused_in_window": True,
                               "cpu_s_in_window": None if None in cpu else round(sum(cpu), 3)}
        notes = [f"{e['vm']}: {e['note']}" for e in each if "note" in e]
        if notes:
            out["note"] = "; ".join(notes)
        if len(each) > 1:
            out["vms"] = each
        return out

    def _stop(self) -> None:
        self._unpin()  # a window a failure left open: the harness's threads get their own CPUs back
        if self.vm is not None:
            if self.overlaps:
                self._stop_in_background(self.vm)
            else:
                self.vm.stop()
            self.vm = None

    def _close(self) -> None:
        self._stop()
        while self._finishing:
            self._stop_in_background(self._finishing.pop())
        self._reap()
        self._pinner = None
        with self._cv:
            self._in_window = False
            self._cv.notify_all()
        self._claimed = []
        while self.aheads:
            vm = self.aheads.pop()
            self._finish_prep(vm)
            vm.stop()
        self._paused = []
        if self._claim is not None:  # after every VM is gone: the images are free for other runs now
            self._claim.release()
            self._claim = None

    def _restore(self) -> None:
        # Nothing persistent was changed: every cell's VM is created from the matrix and discarded.
        self._close()

    def scope(self) -> list[HostScope]:
        assert self.vm is not None
        return [HostScope(pid=self.vm.pid, threads=self.vm.thread_roles(), vm=self.vm.spec.name)]

    def endpoints(self) -> list[GuestEndpoint]:
        assert self.vm is not None
        return [GuestEndpoint(kind="local-agent", address=str(self.vm.agent_path), name=self.vm.spec.name,
                              connected=self.vm.take_agent(), hints=self._hints())]

    def blockstats(self) -> BlockStats | None:
        assert self.vm is not None and self.current is not None
        return self.vm.blockstats(f"drive-{self.current.bus}{self.spec.matrix['disk_slot']}")

    def console_tail(self, limit: int = 800) -> str:
        if self.vm is None:
            return ""
        try:
            return self.vm.console_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""
