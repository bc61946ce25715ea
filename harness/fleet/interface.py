"""What a platform's fleet and its fleet suite are, typed: the interface the registry hands out and the commands use.

:class:`Fleet` is one platform's fleet of workers (Proxmox, ESXi, local QEMU) as ``stormatrix fleet`` and the fleet
suite's loop use it; :class:`FleetSuiteClass` is what :data:`stormatrix.registry.FLEET_SUITES` names (a
:class:`~stormatrix.fleet.suiterun.FleetSuite` subclass), and :class:`FleetSuiteRun` one of its instances, which
``stormatrix suite plan|run`` and ``demo --suite`` drive. They are protocols, here below the registry, so that the
registry's :func:`~stormatrix.registry.fleet_suite` and :func:`~stormatrix.registry.open_fleet` are typed without
importing the run loop (:mod:`.suiterun`, above the registry), which checks that every fleet suite is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sized

from ..suite import Suite
from .journal import FleetJournal


class FleetOwned(Protocol):
    """What a fleet's journal says it owns (:meth:`Fleet.owned`), or what is left after :meth:`Fleet.destroy`."""

    @property
    def empty(self) -> bool: ...

    @property
    def vms(self) -> Sized: ...

    @property
    def volumes(self) -> Sized: ...


class Fleet(Protocol):
    """A platform's fleet of workers as the fleet suite and ``stormatrix fleet`` use it (Proxmox, ESXi, local QEMU;
    each attaches a storage's volumes its own way, in its :meth:`FleetSuite._side_guests`). Every VM and volume is
    journaled before the call that creates it; :meth:`destroy` removes exactly what the journal says it made."""

    fleet_id: str
    journal: FleetJournal
    spec: Any  # the platform's [fleet], validated

    def __enter__(self) -> Fleet: ...

    def __exit__(self, *exc: object) -> None: ...

    def plan(self) -> Any:
        """What a deploy would create (a plan whose ``describe()`` lines ``suite plan`` prints)."""

    def check(self, plan: Any) -> None:
        """Refuse (MatrixError, exit 2) a plan that cannot be deployed, before anything is created."""

    def deploy(self, *, on_step: Any = None) -> list[Any]:
        """Create the workers; their ids (Proxmox VMIDs, vCenter's VM ids, local names)."""

    def owned(self) -> FleetOwned:
        """What the journal says the fleet owns (its records replayed)."""

    def destroy(self, *, on_step: Any = None) -> FleetOwned:
        """Remove everything the journal says the fleet made; what is left."""

    def record_fio(self, version_line: str) -> str:
        """``stormatrix fleet template --record``: declare the controller's fio in the template (or refuse)."""

    def close(self) -> None:
        """Close the connection (a session, the storage servers this process runs)."""


class FleetOutcome(Protocol):
    """What a fleet suite's run did (:class:`~stormatrix.fleet.suiterun.FleetSuiteOutcome`)."""

    fleet_id: str
    sides: dict[str, Any]  # storage -> its side's outcome (None: every point was journaled already)
    workbook: Path | None

    @property
    def failed(self) -> list[tuple[str, str]]: ...


class FleetSuiteRun(Protocol):
    """A suite on a fleet, each storage a side: what ``stormatrix suite plan|run`` asks of it."""

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None, workbook: Path | None = None) -> FleetOutcome: ...

    def plan(self, run_dir: str | None, fio: str | None) -> None: ...


class FleetSuiteClass(Protocol):
    """A platform's fleet suite class, as :data:`stormatrix.registry.FLEET_SUITES` names it."""

    def __call__(self, suite: Suite) -> FleetSuiteRun: ...

    def check(self, suite: Suite) -> Suite: ...

    def open_fleet(self, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> Fleet: ...
