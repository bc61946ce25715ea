"""The qemu backend's VMs beside the one under test: the :class:`~stormatrix.backends.base.BootsAhead` capability,
which only this backend has (a real VM exists once).

The next configurations' VMs boot during the current cell (``[qemu] boot_ahead``, ``boot_ahead_depth``); one that
is ready may be lent to the runner so that its first job is sent ahead (``prepare_ahead``); the VM under test is
handed off once its window closed, its result still to come (``pipeline``). :class:`AheadVms` is that part of
:class:`~stormatrix.backends.qemu.backend.QemuBackend`; the runner's :class:`~stormatrix.pipeline.Pipeline`
drives it.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ...core.errors import EnvironmentProblem, VmStartError
from ...core.model import DiskConfig
from ...core.scope import GuestEndpoint
from .savedstarts import peek_ready
from .vm import QemuVm

log = logging.getLogger("stormatrix.qemu")


class AheadVms:
    """Booting ahead, lending a VM booted ahead, handing the measured VM off (see the module docstring)."""

    opts: dict[str, Any]
    vm: QemuVm | None
    aheads: list[QemuVm]  # the next configurations' VMs, booting or booted, in their order
    ahead_depth: int
    disk_paths: list[Path]
    pipelines: bool  # two cells in flight (hand_off)
    prepares: bool  # the next configuration's first job sent ahead to its VM (ahead_ready)
    _claimed: list[QemuVm]  # VMs booted ahead that ahead_ready gave the runner, a job sent ahead
    _finishing: list[QemuVm]  # handed off after their window: sending their result (hand_off)
    _prep: dict[QemuVm, tuple[threading.Thread, threading.Event]]
    _cv: threading.Condition
    _in_window: bool

    # the backend's own (and SavedStarts'): start a VM, stop one off the critical path, unpin, finish a restore/save
    _start_vm: Callable[[DiskConfig], QemuVm]
    _stop_in_background: Callable[[QemuVm], None]
    _unpin: Callable[[], None]
    _finish_prep: Callable[..., None]

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

    def ahead_ready(self, disk: DiskConfig, deadline: float) -> QemuVm | None:
        """``disk``'s VM booting ahead once its restore (or its state's save) is done and its guest's READY waits
        on the agent socket, until ``deadline`` at most; never claimed inside a window (see the base class)."""
        if not self.prepares:
            return None
        vm = next((v for v in self.aheads if v.spec.disk == disk), None)
        if vm is None or vm in self._claimed:
            return None
        entry = self._prep.get(vm)
        if entry is not None:  # a job must not go to a VM whose state is still being saved: it would be in it
            entry[0].join(max(deadline - time.monotonic(), 0.0))
            if entry[0].is_alive():
                return None
        if vm.agent is None or not vm.alive():
            return None
        facts = peek_ready(vm.agent, max(deadline, time.monotonic() + 0.05))
        if not facts or not facts.get("disk"):
            return None
        with self._cv:
            if self._in_window:
                return None
            self._claimed.append(vm)
        return vm

    def ahead_endpoints(self, handle: Any) -> list[GuestEndpoint]:
        vm: QemuVm = handle
        return [GuestEndpoint(kind="local-agent", address=str(vm.agent_path), name=vm.spec.name,
                              connected=vm.take_agent(), hints=self._hints())]

    def _hints(self) -> dict[str, Any]:
        """What the local-agent executor obeys: [qemu] prepare_ahead also sets the measurement job up early."""
        return {"measure_job_early": bool(self.opts["prepare_ahead"])}

    def discard(self, handle: Any) -> None:
        """Stop a claimed VM booted ahead (in the background, reaped before the next window, as every stop)."""
        if handle in self._claimed:
            self._claimed.remove(handle)
        if handle in self.aheads:
            self.aheads.remove(handle)
            self._finish_prep(handle)
            self._stop_in_background(handle)
            log.info("%s: discarded (the job sent to it ahead is not what runs next)", handle.spec.name)

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
