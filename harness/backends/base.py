"""The hypervisor backend interface.

A backend changes how the test disk is attached, makes the change take effect by restarting the VM
(a guest-initiated reboot does not restart QEMU, so pending changes would stay pending), says which
host process and threads the collector must watch, and puts the VM back exactly as it was.

The runner calls the public methods; backends implement the underscore hooks. Retries, logging and
the "always restore" guarantee live here, once (PerfKitBenchmarker's BaseResource pattern).

What the runner drives is a :class:`Target`: a :class:`Backend` (a matrix run's), or a suite's side of guests
(:class:`stormatrix.suiteguests.SuiteGuests`), which reconfigures nothing. What only local QEMU can do, run more
than one VM of the test at once, is the optional :class:`BootsAhead` capability, found by :func:`booting_ahead`.
"""

from __future__ import annotations

import logging
import signal
import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Iterator, Protocol, runtime_checkable

from ..collect import default_collector_factory
from ..core.model import DiskConfig
from ..core.scope import (ROLE_IOTHREAD, ROLE_MAIN, ROLE_OTHER, ROLE_VCPU, ROLE_WORKER, BlockStats, GuestEndpoint,
                          HostScope, format_cpuset, parse_cpuset)
from ..core.settings import RunSettings
from ..core.errors import MatrixError
from ..spec import HostSettings, MatrixSpec, host_settings

log = logging.getLogger("stormatrix.backend")

# The values a backend hands the runner and the collectors live in core (every layer shares them); they
# are named here too because they are this interface's vocabulary.
__all__ = ["ROLE_IOTHREAD", "ROLE_MAIN", "ROLE_OTHER", "ROLE_VCPU", "ROLE_WORKER", "Backend", "BlockStats",
           "BootsAhead", "GuestEndpoint", "HostScope", "PlansAhead", "Target", "booting_ahead", "format_cpuset",
           "parse_cpuset", "plans_boot_ahead", "plans_restore", "sigint_deferred"]


@contextmanager
def sigint_deferred(doing: str) -> Iterator[None]:
    """Hold off Ctrl-C (SIGINT) while ``doing`` runs; raise KeyboardInterrupt afterwards if one came."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        caught.append(signum)
        log.warning("%s: Ctrl-C deferred until it is done", doing)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


class Target(ABC):
    """What a run measures on, as the runner drives it: the VM(s) under test, how their guests are reached and their
    host measured, and what is put back. A :class:`Backend` reconfigures the test disk for each configuration and
    restarts the VM; a suite's side (:class:`stormatrix.suiteguests.SuiteGuests`) measures guests as their platform
    made them. The runner calls the public methods: ``prepare()``, per VM start ``apply()`` and ``stop()``, and at
    the end ``restore()`` and ``close()``."""

    name: ClassVar[str]

    def __init__(self, settings: RunSettings, workdir: Path) -> None:
        #: what the run is of: a matrix (a :class:`~stormatrix.spec.MatrixSpec`, whose backends read its grid too)
        #: or a suite (:meth:`stormatrix.suite.Suite.settings`, for a side's guests)
        self.spec = settings
        self.workdir = Path(workdir)
        self.current: DiskConfig | None = None
        #: how the VM of the last apply() started, where the backend says (local QEMU: {"how": "boot" or
        #: "restore", "state": the saved state's key}); the cell record's ``times.vm_start``
        self.vm_start: dict[str, Any] | None = None

    def prepare(self) -> dict[str, Any]:
        """Check the platform, remember what is to be put back; return environment facts."""
        facts = self._prepare()
        log.info("backend %s prepared", self.name)
        return facts

    @abstractmethod
    def _prepare(self) -> dict[str, Any]: ...

    @abstractmethod
    def apply(self, disk: DiskConfig) -> None:
        """Make ``disk``'s configuration the one the next cells measure (a VM start)."""

    @abstractmethod
    def stop(self) -> None:
        """The cells of a VM start are done."""

    @abstractmethod
    def restore(self) -> None:
        """Put back what the run changed (:meth:`original_config`). Safe to call more than once."""

    def close(self) -> None:
        """Release everything the run started (processes, sessions). Never raises."""
        try:
            self._close()
        except Exception:  # any failure: close runs in finally blocks; log, do not mask the real error
            log.exception("backend %s: error while closing", self.name)

    def _close(self) -> None:
        """What :meth:`close` releases (it logs a failure, never raises)."""

    @abstractmethod
    def scope(self) -> list[HostScope]:
        """The QEMU process(es) of the VM(s) under test, for the collector."""

    @abstractmethod
    def endpoints(self) -> list[GuestEndpoint]:
        """How to reach the running guest(s)."""

    def blockstats(self) -> BlockStats | None:
        """QEMU's accounting of the test disk, or None where the platform has none (ESXi)."""
        return None

    def window_opened(self) -> None:
        """The measurement window opens: nothing but the VM under test may run (local QEMU pauses a VM booting
        ahead)."""

    def window_closed(self) -> dict[str, Any] | None:
        """The window closed: resume what :meth:`window_opened` paused; return what the record must say about what
        else ran or shared the VM's resources (None: nothing; Proxmox: the disks sharing the test disk's
        controller)."""
        return None

    def original_config(self) -> dict[str, Any] | None:
        """What :meth:`restore` will put back; journaled so ``stormatrix restore`` works after a crash."""
        return None

    # --- what the runner may call on every target (defaults, so it never probes with getattr) ----------
    def collector_factory(self, scope: HostScope) -> Any:
        """The host collector for one scope. Default: the local per-thread collector (a backend that
        measures its host otherwise — over ssh, through vSphere — overrides this)."""
        return default_collector_factory(scope)

    def window_collector(self) -> Any | None:
        """One host collector for the whole window, over every VM under test (a suite's side: all its
        guests' QEMU processes), instead of :meth:`collector_factory` per scope; None (the default) for that."""
        return None

    def host_inventory(self) -> dict[str, Any] | None:
        """The measured host's facts for the run record's environment (the keys of
        ``linux-host/inventory.py``, plus ``host_inventory_source`` saying where they came from), or
        ``{"host_inventory_error": why}`` when they could not be read. Called after :meth:`prepare`.

        Default None: the host that is measured is this machine (the qemu backend), so the runner's own
        inventory is the host's. A backend whose host is elsewhere overrides this, so that the workstation's
        CPU and kernel are never reported as the host's."""
        return None

    def console_tail(self, limit: int = 800) -> str:
        """The end of the guest's console, for a failed cell's journal entry ("" where there is none)."""
        return ""


class Backend(Target):
    """A hypervisor backend: attaches the test disk as each configuration says and restarts the VM so that it takes
    effect, and puts the VM's original configuration back. Backends implement the underscore hooks."""

    #: controllers this backend can attach the test disk to
    controllers: ClassVar[frozenset[str]]
    #: executor used when the matrix says executor = "auto"
    default_executor: ClassVar[str] = "local-agent"
    #: ``[host] scope`` when the matrix names none, and the scopes this backend can measure (issue 33)
    default_host_scope: ClassVar[str] = "process"
    host_scopes: ClassVar[frozenset[str]] = frozenset({"process"})
    #: why a scope outside :attr:`host_scopes` cannot be measured here (said with the refusal)
    host_scope_why: ClassVar[str] = ""

    def apply(self, disk: DiskConfig) -> None:
        """Attach the test disk as ``disk`` describes and restart the VM so that it takes effect."""
        log.info("applying %s", disk.key)
        self.vm_start = None
        self._apply(disk)
        self.current = disk

    def stop(self) -> None:
        self._stop()

    def restore(self) -> None:
        """Put the VM back exactly as :meth:`prepare` found it. Safe to call more than once.

        A Ctrl-C in the middle would leave the VM half-restored, so it is deferred until restore ends.
        """
        with sigint_deferred(f"restoring the {self.name} VM's original configuration"):
            self._restore()

    # --- hooks -----------------------------------------------------------------------------------
    @abstractmethod
    def _apply(self, disk: DiskConfig) -> None: ...

    @abstractmethod
    def _stop(self) -> None: ...

    @abstractmethod
    def _restore(self) -> None: ...

    def _close(self) -> None:
        self._stop()

    @classmethod
    def host(cls, spec: MatrixSpec) -> HostSettings:
        """The matrix's ``[host]`` for this backend (its default scope where the matrix names none); a scope it
        cannot measure, or a key of another backend's, is a :class:`MatrixError` (plan and run call this).
        A backend that measures a CPU set checks the set itself (it knows the host)."""
        host = host_settings(spec, cls.default_host_scope)
        if host.scope not in cls.host_scopes:
            why = f": {cls.host_scope_why}" if cls.host_scope_why else ""
            raise MatrixError(spec.path, "[host] scope", f"{host.scope!r} cannot be measured on the {cls.name} backend "
                              f"(it measures: {', '.join(sorted(cls.host_scopes))}){why}",
                              f"set scope = \"{cls.default_host_scope}\" or remove it")
        if host.scope != "cpus" and host.cpus:
            raise MatrixError(spec.path, "[host] cpus", "a CPU set is measured only with scope = \"cpus\" (this "
                              f"matrix measures {host.scope!r})", "remove cpus, or set [host] scope = \"cpus\"")
        return host

    @classmethod
    def plan_notes(cls, spec: MatrixSpec) -> list[str]:
        """Sentences ``plan`` prints about how this backend will run ``spec`` (CPU placement, storage)."""
        return []


# --- an optional capability: more than one VM of the test at once (local QEMU; a real VM exists once) --------------
@runtime_checkable
class BootsAhead(Protocol):
    """A backend that can run the next configurations' VMs while the current one is measured (the qemu backend):
    boot them ahead, hand the measured VM off while its result comes back, and lend a VM booted ahead so that its
    first job is sent ahead. The runner's :class:`~stormatrix.pipeline.Pipeline` uses it where :func:`booting_ahead`
    finds it; a backend without it (Proxmox, ESXi, a suite's guests) has none of these members."""

    #: the next VM may start booting as soon as the current one is applied, while it gets ready, rather than
    #: just before the measurement (the qemu backend's ``[qemu] overlap``)
    overlaps: bool
    #: how many of the next configurations' VMs :meth:`boot_ahead` can have booting at once
    ahead_depth: int
    #: the VM of the last apply() had booted ahead (the cell's boot time was hidden in the one before)
    booted_ahead: bool
    #: the handle :meth:`ahead_ready` gave for the VM the last apply() took, if it took one (else None)
    taken_ahead: Any

    def boot_ahead(self, disk: DiskConfig) -> None:
        """Start booting the VM for ``disk`` now, while the current cell warms up; the next ``apply()`` of the same
        ``disk`` then finds it booted."""

    def hand_off(self) -> Any | None:
        """The window of the VM under test closed: keep it running, out of the way, for its result to come back
        while the next cell's VM is applied, and return a handle for :meth:`release`; None where it cannot now
        (then the runner collects the result first)."""

    def release(self, handle: Any) -> None:
        """Stop a VM :meth:`hand_off` kept (its result is in); before the next window opens at the latest."""

    def ahead_ready(self, disk: DiskConfig, deadline: float) -> Any | None:
        """The VM booting ahead for ``disk`` once it is ready (its guest waits for work; waiting until
        ``deadline`` at most), claimed so that its first cell's job can be sent ahead: a handle for
        :meth:`ahead_endpoints` and :meth:`discard`, which :attr:`taken_ahead` names when apply() takes
        that VM. None where there is none or it is not ready in time."""

    def ahead_endpoints(self, handle: Any) -> list[GuestEndpoint]:
        """How to reach the guest of the VM :meth:`ahead_ready` claimed."""

    def discard(self, handle: Any) -> None:
        """Stop the VM :meth:`ahead_ready` claimed (its job sent ahead is not wanted any more: a failure, a
        retry or a skip changed what runs next); nothing of it stays."""


@runtime_checkable
class PlansAhead(Protocol):
    """The same capability as a backend class declares it for a matrix, before any VM exists (plan, ETA)."""

    @classmethod
    def boots_ahead(cls, spec: MatrixSpec) -> bool:
        """Will this backend boot each next VM during the current cell for ``spec``?"""

    @classmethod
    def restores(cls, spec: MatrixSpec) -> bool:
        """Will this backend start VMs from saved booted states for ``spec``? (local QEMU's ``[qemu] restore``)"""


def booting_ahead(backend: Target) -> BootsAhead | None:
    """``backend`` as a :class:`BootsAhead`, or None where it cannot run more than one VM of the test."""
    return backend if isinstance(backend, BootsAhead) else None


def plans_boot_ahead(cls: type[Backend], spec: MatrixSpec) -> bool:
    """Will a run of ``spec`` on ``cls`` boot each next VM during the current cell? (plan, ETA)"""
    return isinstance(cls, PlansAhead) and bool(cls.boots_ahead(spec))


def plans_restore(cls: type[Backend], spec: MatrixSpec) -> bool:
    """Will a run of ``spec`` on ``cls`` start its VMs from saved booted states? (ETA)"""
    return isinstance(cls, PlansAhead) and bool(cls.restores(spec))
