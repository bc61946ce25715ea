"""A side's guests: the capability a platform offers to run a suite, and the backend the runner drives for it.

A suite point runs on every guest of a side at once (:mod:`stormatrix.suiterun`). Where the guests come
from is the platform's business, behind one interface, :class:`SuiteGuests`:

- :meth:`~SuiteGuests.start`: boot or find the guests, and their fio servers' addresses;
- :meth:`~SuiteGuests.endpoints`: how the executor reaches them;
- :meth:`~SuiteGuests.before_point`: what comes before each point but the side's first (a fleet's power
  cycle, ``[fleet] power_cycle = "point"``), when :attr:`~SuiteGuests.cycles_points`;
- :meth:`~SuiteGuests.window_collector` and :meth:`~SuiteGuests.host_status`: one host collector over all
  the side's VMs, and what the run record says about it;
- :meth:`~SuiteGuests.host_inventory`: the host that runs the guests, for the run record's environment;
- :meth:`~SuiteGuests.vms_record`, :meth:`~SuiteGuests.storage_record`: what the run record says of the VMs
  behind the guests and of the storage that served their disks;
- :meth:`~SuiteGuests.close`: stop what :meth:`start` started, release what it holds.

The implementations: :class:`AddressGuests` (guests given by address, ``[suite] guests``; also an ESXi
fleet's workers at the addresses VMware Tools report), :class:`stormatrix.backends.proxmox.vms.ProxmoxVmGuests` (a
Proxmox VM list, a Proxmox fleet's workers), and the qemu backend's ``LocalGuests`` (``backends/qemu/guests.py``:
a local fleet's workers, ``[fleet] backend = "qemu"``, ``stormatrix demo --suite``).
:func:`stormatrix.registry.suite_guests` picks one for a suite file.

A ``SuiteGuests`` is a :class:`~stormatrix.backends.base.Target`, not a Backend: the runner drives it as it drives
a backend (prepare, per VM start apply and stop, the window, restore, close), but there is no configuration to
apply or put back: a side's disks are as the platform attached them; ``apply()`` makes sure the guests are
started.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

from .backends.base import Target
from .core.model import Cell, DiskConfig
from .core.scope import GuestEndpoint, HostScope
from .core.settings import RunSettings
from .executors.fioserver.inputs import FioGuest
from .suite import Suite

#: what a suite's run record says about host metrics when the guests are given by address
NO_VMS = {"mode": "none", "detail": "no host metrics: the guests are given by address ([suite] guests), so "
                                    "there are no VMs whose QEMU processes could be measured"}

#: the environment of a suite whose guests are given by address: the host that runs them is not known
UNKNOWN_HOST = {
    "host_inventory_error": "the host that runs the guests is not described: they are given by address "
                            "([suite] guests), not as VMs of a known host; this machine's facts (the fio "
                            "client's side) are under workstation"}

#: what describes the measured host: None (this machine, see Target.host_inventory) or a function giving
#: its facts or ``{"host_inventory_error": why}``
HostInventory = Callable[[], "dict[str, Any] | None"]


class SuiteGuests(Target):
    """A side's guests (see the module docstring). Subclasses implement :meth:`_start`; the rest has
    defaults for guests that run already and are measured by nobody."""

    name = "suite"  # replaced per instance: the record's backend is the platform (see __init__)
    #: the guests were just started: the first probe is repeated until they answer (within the probe timeout)
    booting: bool = False
    #: :meth:`before_point` runs before each point but the side's first
    cycles_points: bool = False

    def __init__(self, settings: RunSettings, *, platform: str | None, workdir: Path | str = ".") -> None:
        # the suite's settings (Suite.settings()): a side's guests are configured by the suite, not by [run] backend
        super().__init__(settings, Path(workdir))
        # the record's backend is the platform (proxmox, vmware, qemu), or null when the guests are only addresses
        self.name = platform  # type: ignore[misc,assignment]
        self.guests: list[FioGuest] = []
        self.facts: dict[str, Any] = {}  # the run record's environment: the fio client's version
        self._started = False

    # --- the capability ---------------------------------------------------------------------------------
    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """The suite with what these guests read of its file validated (a VM list, its platform's section), when
        the file is read (:func:`stormatrix.registry.suite_from_dict`): a MatrixError names the key and the fix."""
        return suite

    @classmethod
    def from_suite(cls, suite: Any) -> "SuiteGuests":
        """The guests a suite file names (``[suite] guests`` or ``vms``): :func:`stormatrix.registry.suite_guests`."""
        raise NotImplementedError(f"{cls.__name__} is not made from a suite file")

    @classmethod
    def plan_lines(cls, suite: Suite) -> list[str]:
        """What ``stormatrix suite plan`` says of the guests a suite file names, before any is found."""
        return [f"  guests ({len(suite.guests)}): " + ", ".join(g.describe() for g in suite.guests)]

    def start(self) -> list[FioGuest]:
        """The side's guests with their fio servers' addresses, booted or found now (once)."""
        if not self._started:
            self.guests = list(self._start())
            self._started = True
        return self.guests

    @abstractmethod
    def _start(self) -> list[FioGuest]: ...

    def describe(self) -> list[str]:
        """Lines saying what :meth:`start` found (each VM's address, how the host is measured)."""
        return []

    def before_point(self, cell: Cell) -> None:
        """Before each point but the side's first, when :attr:`cycles_points` (a fleet's power cycle)."""

    def host_status(self) -> dict[str, Any]:
        """What the run record says about host metrics: ``{"mode": "local"|"ssh"|"none"|"off"|"given",
        "detail": ..., "fix"?: ...}``."""
        return dict(NO_VMS)

    def vms_record(self) -> list[dict[str, Any]] | None:
        """The VMs behind the guests, for the run record (None: given by address)."""
        return None

    def storage_record(self) -> dict[str, Any] | None:
        """What served the side's test disks, for the run record (None: not known)."""
        return None

    def host_inventory(self) -> dict[str, Any] | None:
        """The host that runs the guests: never this machine's facts as a remote host's (UNKNOWN_HOST)."""
        return dict(UNKNOWN_HOST)

    def _teardown(self) -> None:
        """Stop what :meth:`_start` started, release what it holds (called by close(), which never raises)."""

    def __enter__(self) -> "SuiteGuests":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the target the runner drives ---------------------------------------------------------------------
    def _prepare(self) -> dict[str, Any]:
        self.start()
        status = self.host_status()
        return {**self.facts, "host_collector": f"{status['mode']}: {status.get('detail', '')}"}

    def apply(self, disk: DiskConfig) -> None:
        """A point's VM start: the side's guests, started (once); their disks are as the platform attached them."""
        self.start()
        self.current = disk

    def stop(self) -> None:
        """The guests keep running between points (a fleet cycles them before a point: :meth:`before_point`)."""

    def restore(self) -> None:
        """Nothing of the guests was changed: there is nothing to put back."""

    def _close(self) -> None:
        self._teardown()

    def scope(self) -> list[HostScope]:
        return []  # measured by window_collector() over all the side's VMs, if anything measures them

    def endpoints(self) -> list[GuestEndpoint]:
        return [GuestEndpoint("tcp", g.host, g.port, g.name) for g in self.start()]


class AddressGuests(SuiteGuests):
    """Guests that run already at the given addresses (``[suite] guests``; an ESXi fleet's workers).

    ``collector``: one host collector for every window (a test's, or none); ``status``, ``vms``, ``storage``
    and ``inventory`` what the run record says (by default: no VMs known, the host not described)."""

    def __init__(self, settings: RunSettings, guests: Sequence[FioGuest], *, platform: str | None = None,
                 collector: Any = None, status: dict[str, Any] | None = None, vms: list[dict[str, Any]] | None = None,
                 storage: dict[str, Any] | None = None, inventory: HostInventory | None = None,
                 booting: bool = False) -> None:
        super().__init__(settings, platform=platform)
        self._given = list(guests)
        self._collector = collector
        self._status = status if status is not None else (
            {"mode": "given", "detail": type(collector).__name__} if collector is not None else dict(NO_VMS))
        self._vms = vms
        self._storage = storage
        self._inventory = inventory if inventory is not None else inventory_for(self._status, vms)
        self.booting = booting

    @classmethod
    def from_suite(cls, suite: Any) -> "SuiteGuests":
        return cls(suite.settings(), suite.guests)

    def _start(self) -> list[FioGuest]:
        return self._given

    def window_collector(self) -> Any | None:
        return self._collector

    def host_status(self) -> dict[str, Any]:
        return dict(self._status)

    def vms_record(self) -> list[dict[str, Any]] | None:
        return self._vms

    def storage_record(self) -> dict[str, Any] | None:
        return self._storage

    def host_inventory(self) -> dict[str, Any] | None:
        return self._inventory()


def inventory_for(host_collector: dict[str, Any], vms: list[dict[str, Any]] | None) -> HostInventory:
    """Where the host's facts are read: where its collector measures, so the Environment sheet describes the
    host that was measured.

    ``local`` (stormatrix on the Proxmox node, or the demo's local QEMU guests): this machine is the
    host. A platform that reads its host elsewhere says so itself (a Proxmox VM list's node over the collector's
    ssh: :func:`stormatrix.backends.proxmox.vmcollector.node_inventory_for`). Otherwise the host is not reachable
    from here: the record says why instead of showing this machine's facts.
    """
    mode = host_collector.get("mode")
    if mode == "local":
        return lambda: None
    if vms:
        why = (f"the node that runs the suite's VMs is not described: its facts are read where the host "
               f"collector measures, and there is none ({host_collector.get('detail') or f'host metrics {mode}'})")
        return lambda: {"host_inventory_error": why}
    return lambda: dict(UNKNOWN_HOST)
