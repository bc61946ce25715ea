"""The qemu backend's saved booted states in use: a VM started from one (``[qemu] restore``), or its state saved once
it has booted and is ready, beside the runner and never inside a measurement window.

:mod:`.state` keeps the states on disk (keys, staging, the cache); :class:`SavedStarts` is the part of
:class:`~stormatrix.backends.qemu.backend.QemuBackend` that restores and saves its VMs with them. A restore that
fails, or a guest that does not answer after it, deletes the state with a warning and the VM boots instead.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ...core.errors import QmpError, VmStartError
from ...spec import MatrixSpec
from .state import StateCache, key_disk, state_key
from .vm import QemuVm, VmSpec

log = logging.getLogger("stormatrix.qemu")

#: how long a restored guest may take to answer (it answers in ~0.1 s), and a save to finish (~2-3 s)
RESTORE_ANSWER_S, SAVE_S, LOAD_S = 20.0, 90.0, 60.0


def peek_ready(sock: socket.socket, deadline: float, cancel: threading.Event | None = None) -> dict[str, str] | None:
    """The guest's READY line's k=v, read without taking it off the socket (``MSG_PEEK``: the executor reads it
    after), or None when the guest said something else first, closed, ``cancel`` was set or ``deadline`` passed."""
    while time.monotonic() < deadline and not (cancel is not None and cancel.is_set()):
        sock.settimeout(min(0.2, max(deadline - time.monotonic(), 0.01)))
        try:
            data = sock.recv(65536, socket.MSG_PEEK)
        except socket.timeout:
            continue
        except OSError:
            return None
        if not data:
            return None
        for line in data.split(b"\n")[:-1]:
            if line.startswith(b"@@SMX READY"):
                words = line.decode("utf-8", "replace").split()[2:]
                return dict(w.split("=", 1) for w in words if "=" in w)
            if line.startswith(b"@@SMX "):
                return None
        time.sleep(0.02)  # a line not complete yet: peeking again at once would spin
    return None


class SavedStarts:
    """Restoring and saving the backend's VMs with their saved booted states (see the module docstring)."""

    spec: MatrixSpec
    opts: dict[str, Any]
    states: StateCache | None
    _binary: dict[str, Any]
    _cv: threading.Condition
    _in_window: bool  # no restore or save starts while a window is open
    _busy: int  # restores and saves running now (a window opens only when none is)
    #: a VM's restore or save running beside the runner (see :meth:`_prepare_vm`), and its cancel
    _prep: dict[QemuVm, tuple[threading.Thread, threading.Event]]

    _launch: Callable[[QemuVm], None]  # the backend's: start the VM's QEMU process

    def state_key(self, spec: VmSpec) -> tuple[str, dict[str, Any]]:
        """The key of ``spec``'s saved state (:func:`.state.state_key`): its command line with aio and
        iothread made equal and the run's own paths left out."""
        probe = QemuVm(replace(spec, disk=key_disk(spec.disk)))
        per_run = {str(spec.run_dir): "RUN", str(spec.disk_image): "DISK", spec.name: "VM"}
        return state_key(probe.argv(), per_run, binary=self._binary, disk_size=int(self.opts["disk_size_mib"]),
                         guest_image=spec.image.image_id)

    @contextmanager
    def _outside_windows(self, cancel: threading.Event | None = None) -> Iterator[bool]:
        """Hold off windows while a restore or save runs; wait first for an open window to close (yields
        False when ``cancel`` was set meanwhile: do nothing)."""
        with self._cv:
            while self._in_window and not (cancel is not None and cancel.is_set()):
                self._cv.wait(0.2)
            go = not (cancel is not None and cancel.is_set())
            if go:
                self._busy += 1
        try:
            yield go
        finally:
            if go:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()

    def _prepare_vm(self, vm: QemuVm, key: str, made_of: dict[str, Any], state: Path | None,
                    cancel: threading.Event) -> None:
        """Beside the runner: restore ``vm`` from ``state`` (booting it instead when that fails), or save its
        state once it has booted and is ready. Never raises: the cache cannot fail a cell."""
        try:
            if state is not None:
                self._restore_vm(vm, key, state)
            else:
                self._save_vm(vm, key, made_of, cancel)
        except Exception as exc:  # a thread's failure must reach the log, not vanish
            log.warning("%s: saved-state handling failed unexpectedly (%s: %s)", vm.spec.name, type(exc).__name__, exc)

    def _restore_vm(self, vm: QemuVm, key: str, state: Path) -> None:
        """Load the state, let the guest run, tell it it was restored (the host's clock; read the disk again)
        and wait for its READY: the same readiness a booted guest shows (an agent answering, a test disk)."""
        assert self.states is not None
        t0 = time.monotonic()
        with self._outside_windows():
            try:
                vm.load_state(state, time.monotonic() + LOAD_S)
                vm.resume()
                sock = vm.listen_agent(time.monotonic() + 5)
                sock.sendall(f"RESUMED {time.time():.0f}\n".encode())
                facts = peek_ready(sock, time.monotonic() + RESTORE_ANSWER_S)
                why = ("its guest did not answer within " f"{RESTORE_ANSWER_S:.0f} s" if facts is None
                       else "its guest found no test disk" if not facts.get("disk") else "")
            except (VmStartError, QmpError, OSError) as exc:
                why = str(exc)
            if not why:
                vm.how["restore_s"] = round(time.monotonic() - t0, 3)
                return
        self.states.discard(key, why)
        vm.stop()
        vm.incoming = False
        vm.how = {"how": "boot", "note": f"the saved state {key} failed ({why[:200]}) and was deleted"}
        self._launch(vm)

    def _save_vm(self, vm: QemuVm, key: str, made_of: dict[str, Any], cancel: threading.Event) -> None:
        """Once the booted VM is ready (its READY line waits on the agent socket, left there for the executor),
        save its state, outside any window, unless the backend closes first (``cancel``)."""
        assert self.states is not None and vm.agent is not None
        started = vm.started_at or time.monotonic()
        facts = peek_ready(vm.agent, started + float(self.spec.run["boot_timeout_seconds"]), cancel)
        if facts is None or not facts.get("disk"):
            return
        with self._outside_windows(cancel) as go:
            if not go or cancel.is_set() or not vm.alive() or self.states.lookup(key) is not None:
                return
            staged = self.states.staging(key)
            t0 = time.monotonic()
            try:
                vm.save_state(staged, t0 + SAVE_S)
            except QmpError as exc:
                staged.unlink(missing_ok=True)
                log.warning("%s: its state was not saved (%s); it will boot again next time", vm.spec.name, exc)
                return
            size = self.states.commit(key, staged, made_of, time.monotonic() - t0)
        vm.how["saved"] = key
        log.info("%s: saved its booted state as %s (%.0f MiB in %.1f s)", vm.spec.name, key, size / 2**20,
                 time.monotonic() - t0)

    def _finish_prep(self, vm: QemuVm, *, cancel: bool = True) -> None:
        """Wait for ``vm``'s restore (always finished) or save (``cancel``: abandoned unless it already began)."""
        entry = self._prep.pop(vm, None)
        if entry is not None:
            if cancel:
                entry[1].set()
            entry[0].join()
