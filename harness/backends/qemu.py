"""The local ``qemu`` backend: real QEMU, started by the harness, with exactly the test-disk devices
Proxmox's qemu-server generates for the same configuration.

The backend is split by job: :mod:`.qemu_devices` builds the test disk's devices as qemu-server does,
:mod:`.qemu_vm` runs one QEMU process, :mod:`.qemu_pinning` pins its threads for the measurement
window. This module holds the ``[qemu]`` settings and the backend that ties them together; the names
other modules import from here (``disk_devices``, ``QemuVm``, ``VmSpec``, ...) stay importable here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from .. import guestimage
from ..core.errors import EnvironmentProblem, VmStartError
from ..core.model import CONTROLLERS, DiskConfig
from ..core.paths import disk_image_problem, executable_problem
from ..core.scope import BlockStats, GuestEndpoint, HostScope, format_cpuset
from ..spec import Field, MatrixSpec, Section
from .base import Backend
from .qemu_devices import PCI_ADDR, disk_devices, drive_option, pci_addr
from .qemu_pinning import PinPlan, PlacementCollector, ThreadPinner, check_setting, plan_pinning
from .qemu_vm import (QBOOT, QEMU_BINARY, DiskClaim, QemuVm, VmSpec, claim_test_disks, ensure_test_disk,
                      free_test_disks, image_in_use, kill_stale, qemu_version, socket_path_problem)

__all__ = ["QEMU_SECTION", "QemuBackend", "PCI_ADDR", "disk_devices", "drive_option", "pci_addr", "QBOOT",
           "QEMU_BINARY", "QemuVm", "VmSpec", "ensure_test_disk", "free_test_disks", "image_in_use", "kill_stale",
           "qemu_version", "DiskClaim", "claim_test_disks"]

log = logging.getLogger("stormatrix.qemu")


def _check_binary(value: str) -> None:
    """``[qemu] binary``: a name looked up on PATH when QEMU starts, or a path, which must be an
    executable regular file now (a directory fails only at the first VM start, after plan said yes)."""
    if not value.strip():
        raise ValueError("is empty")
    if "/" not in value and any(c.isspace() for c in value):
        raise ValueError(f"{value[:80]!r} is a command line, not a program name: QEMU's options come from the "
                         "matrix")
    if "/" in value:
        problem = executable_problem(os.path.expanduser(value))
        if problem:
            raise ValueError(f"{value!r} {problem}")


def _check_disk_path(value: str) -> None:
    """``[qemu] disk_path``: a regular file (a raw image) or a block device. A missing one is said by
    spec.check_guest_backend, with the backend in view; what exists must be usable as a disk now."""
    path = os.path.expanduser(value)
    if value and os.path.lexists(path):
        problem = disk_image_problem(path)
        if problem:
            raise ValueError(f"{value!r} {problem}")


QEMU_SECTION = Section("qemu", {
    "binary": Field(str, QEMU_BINARY, check=_check_binary,
                    help="the QEMU program: a name looked up on PATH (qemu-system-x86_64), or the path of an "
                         "executable file"),
    "accel": Field(str, "tcg", choices=("tcg", "kvm"), help="tcg: software emulation (KVM hangs nested)"),
    "vcpus": Field(int, 1, min=1, max=64),
    "memory_mib": Field(int, 512, min=256, max=65536),
    "disk_size_mib": Field(int, 256, min=16, max=1048576, help="size of the raw test disk"),
    "disk_path": Field(str, "", check=_check_disk_path,
                       help="give the path of a raw image file or a block device for the test disk, or leave it "
                            "empty for a disk image in the cache"),
    "firmware": Field(str, "qboot", choices=("qboot", "seabios")),
    "boot_ahead": Field(bool, True, help="boot the next configuration's VM during the current cell's "
                        "warm-up, paused while the measurement window is open"),
    "boot_ahead_depth": Field(int, 2, min=1, max=4,
                              help="with boot_ahead: how many of the next configurations' VMs boot ahead at once "
                                   "(2: the VM for the cell after next too, so each boot gets two cells' warm-ups "
                                   "and result transfers of CPU time); one more test-disk image each"),
    "overlap": Field(bool, True, help="take what need not wait off the time between two cells: the previous "
                     "cell's VM stops in the background, and the next configuration's VM starts booting as soon as "
                     "the current one is taken over, while it gets ready; the stop is done before the window "
                     "opens and the VM booting ahead is paused in it (nothing runs in a window)"),
    "pipeline": Field(bool, True, help="with overlap and boot_ahead: two cells in flight: the next cell's job is "
                      "sent as soon as the current cell's window closes, and the current cell's result is collected, "
                      "cross-checked, journaled and its VM stopped while the next one warms up (never in its window)"),
    "pin_threads": Field(str, "auto", check=check_setting,
                         help="pin QEMU's threads for each measurement window: auto (where the host has two or "
                              "more CPUs: vCPUs on the last CPU, main loop, iothreads, aio workers and the harness "
                              "on the others), on, off, or VCPU_CPUS/OTHER_CPUS such as \"1/0\""),
}, help="the local QEMU backend",
   may_change_on_resume=frozenset({"boot_ahead", "boot_ahead_depth", "overlap", "pipeline"}))


class QemuBackend(Backend):
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

    **Pinning** (``[qemu] pin_threads``, auto by default): for each window the vCPU thread runs on its
    own host CPU and the rest of QEMU and the harness on the others, so a cell's context switches do not
    depend on where the scheduler happened to put the vCPU and the main loop; the record's
    ``host.placement`` says where every role ran (:mod:`.qemu_pinning`).
    """

    name = "qemu"
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "local-agent"
    VM_NAMES = ("stormatrix-vm", "stormatrix-vm-b", "stormatrix-vm-c", "stormatrix-vm-d", "stormatrix-vm-e")

    def __init__(self, spec: MatrixSpec, workdir: Path) -> None:
        super().__init__(spec, workdir)
        self.opts = self.options(spec)
        self.overlaps = bool(self.opts["overlap"])  # teardown and the next boot off the critical path
        #: two cells in flight (hand_off): the previous VM sends its result while the next one warms up
        self.pipelines = bool(self.overlaps and self.opts["pipeline"] and self.boots_ahead(spec))
        self.image: guestimage.GuestImage | None = None
        self.vm: QemuVm | None = None
        self.aheads: list[QemuVm] = []  # the next configurations' VMs, booting or booted, in their order
        self.ahead_depth = self.ahead_count(spec)
        self.disk_paths: list[Path] = []  # one image, or one more per VM booting ahead
        self._paused: list[tuple[QemuVm, float]] = []
        self.pin_plan: PinPlan | None = None
        self.pin_note = ""
        self._pinner: ThreadPinner | None = None
        self._stopping: list[tuple[QemuVm, threading.Thread]] = []  # VMs being stopped off the critical path
        self._finishing: list[QemuVm] = []  # handed off after their window: sending their result (hand_off)
        self._claim: DiskClaim | None = None  # the cached test-disk images this run holds until it closes

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
    def ahead_count(cls, spec: MatrixSpec) -> int:
        """How many VMs boot ahead at once (0: none)."""
        return int(cls.options(spec)["boot_ahead_depth"]) if cls.boots_ahead(spec) else 0

    @property
    def ahead(self) -> QemuVm | None:
        """The VM booting ahead for the next configuration (the first of :attr:`aheads`)."""
        return self.aheads[0] if self.aheads else None

    @classmethod
    def plan_notes(cls, spec: MatrixSpec) -> list[str]:
        plan, why = plan_pinning(cls.options(spec)["pin_threads"], spec.path)
        if plan is None:
            return [f"QEMU's threads are not pinned ({why}): cells are exposed to the host scheduler's placement"]
        return [f"each measurement window: {plan.describe()}"]

    def _prepare(self) -> dict[str, Any]:
        # before anything starts: a run folder too deep for a VM's sockets would fail every cell the same way
        # the VM under test, the ones booting ahead, and (pipeline) the previous one sending its result
        count = 1 + self.ahead_depth + (1 if self.pipelines else 0)
        problem = socket_path_problem(self.workdir / "vm", max(self.VM_NAMES[:count], key=len))
        if problem:
            raise EnvironmentProblem(problem)
        self.pin_plan, self.pin_note = plan_pinning(self.opts["pin_threads"], self.spec.path)
        version = qemu_version(self.opts["binary"])
        self.image = guestimage.build()
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
                "test_disk": str(self.disk_paths[0]), "test_disks": [str(p) for p in self.disk_paths],
                "boot_ahead": len(self.disk_paths) > 1,
                "boot_ahead_depth": self.ahead_depth if len(self.disk_paths) > 1 else 0,
                "pin_threads": ({"vcpu_cpus": format_cpuset(self.pin_plan.vcpu_cpus),
                                 "other_cpus": format_cpuset(self.pin_plan.other_cpus)}
                                if self.pin_plan else {"off": self.pin_note})}

    def vm_spec(self, disk: DiskConfig, index: int = 0) -> VmSpec:
        assert self.image is not None and self.disk_paths
        return VmSpec(name=self.VM_NAMES[index], disk=disk, disk_image=self.disk_paths[index],
                      run_dir=self.workdir / "vm", image=self.image, slot=self.spec.matrix["disk_slot"],
                      vcpus=self.opts["vcpus"], memory_mib=self.opts["memory_mib"], accel=self.opts["accel"],
                      firmware=self.opts["firmware"], binary=self.opts["binary"])

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
        """Start a VM on a test-disk image no live VM holds, and listen to its agent at once."""
        live = [vm for vm in (self.vm, *self.aheads, *self._finishing) if vm is not None]
        if len(self._stopping) + len(live) >= len(self.disk_paths):
            self._reap()  # the image the new VM needs is still held by a VM being stopped
        busy = {vm.spec.disk_image for vm in live} | {vm.spec.disk_image for vm, _ in self._stopping}
        index = next(i for i, p in enumerate(self.disk_paths) if p not in busy)
        vm = QemuVm(self.vm_spec(disk, index))
        vm.start()
        if self._pinner is not None and self._pinner.active:  # started inside a window: not on its CPUs
            self._pinner.release(vm.pid)
        try:
            vm.listen_agent(time.monotonic() + 30)
        except OSError as exc:
            vm.stop()
            raise VmStartError(f"cannot connect to the guest agent socket {vm.agent_path}: {exc}") from None
        return vm

    def _apply(self, disk: DiskConfig) -> None:
        # A new configuration needs a new QEMU process: stop the old one, start with the new devices
        # (or take the one that booted ahead with exactly these devices).
        self._stop()
        for vm, _ in self._paused:  # a window a failure left open: nothing stays paused across it
            if vm.alive():
                vm.resume()
        self._paused = []
        for dead in [vm for vm in self.aheads if not vm.alive()]:
            dead.stop()
            self.aheads.remove(dead)
        ahead = next((vm for vm in self.aheads if vm.spec.disk == disk), None)
        if ahead is not None:
            # VMs booted for other configurations (a retry came first) stay for their turn
            self.aheads.remove(ahead)
            self.vm = ahead
            self.booted_ahead = True
            log.debug("%s: taking the VM that booted ahead", disk.key)
            return
        self.vm = self._start_vm(disk)

    def boot_ahead(self, disk: DiskConfig) -> None:
        """Boot ``disk``'s VM ahead unless one is booting for it already or ``boot_ahead_depth`` VMs are."""
        if self.vm is None or len(self.aheads) >= min(self.ahead_depth, len(self.disk_paths) - 1):
            return
        if any(vm.spec.disk == disk for vm in self.aheads):
            return
        try:
            self.aheads.append(self._start_vm(disk))
        except (VmStartError, EnvironmentProblem) as exc:
            # not fatal: the next apply() starts the VM the ordinary way and reports a real problem
            log.warning("booting %s ahead failed (%s); it will start when its turn comes", disk.key, exc)

    def hand_off(self) -> QemuVm | None:
        """With ``overlap`` and boot-ahead (an image to spare): the VM under test leaves the backend's hands
        still running, so the next cell's VM is taken over and its job sent while this one's result comes back."""
        if self.vm is None or not (self.pipelines and len(self.disk_paths) > 1):
            return None
        vm, self.vm = self.vm, None
        self._unpin()
        self._finishing.append(vm)
        return vm

    def release(self, handle: Any) -> None:
        if handle in self._finishing:
            self._finishing.remove(handle)
            self._stop_in_background(handle)

    def window_opened(self) -> None:
        for vm in self._finishing:  # (the runner releases them before: a safety net, never measured with)
            self._stop_in_background(vm)
        self._finishing = []
        self._reap()  # nothing of the previous cell's VM runs in this window
        for ahead in self.aheads:
            if ahead.alive():
                ahead.pause()
                self._paused.append((ahead, ahead.cpu_seconds()))
        self._pin()

    def _pin(self) -> None:
        """Pin the VM under test's threads and the harness's for the window (see :mod:`.qemu_pinning`)."""
        if self.pin_plan is None or self.vm is None:
            return
        self._pinner = self._pinner or ThreadPinner(self.pin_plan)
        try:
            self._pinner.pin(self.vm.pid, self.vm.thread_roles())
        except OSError as exc:
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
        return PlacementCollector(super().collector_factory(scope), self.placement)

    def window_closed(self) -> dict[str, Any] | None:
        """Resume the VMs paused for the window; the record's ``overlap``: their names, and their CPU time in
        the window summed (``cpu_s_in_window``, ~0: evidence they were paused), with each one's under ``vms``."""
        self._unpin()
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
        while self.aheads:
            self.aheads.pop().stop()
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
                              connected=self.vm.take_agent())]

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
