"""A suite on a fleet: deploy the workers, run every storage under test as a side, compare, remove.

The seeds' method (``000_*``/``003_*``): "For each VM, we provision storage using ``pvesm alloc`` and
attach it to the VM with ``qm set``. Before each test run, the VMs are power cycled". Every platform's fleet
suite does the same stages, for each storage of ``[fleet] storages``, in order: attach a volume of the storage
to each worker, power-cycle the workers (which also makes the new disk's options take effect), before the
first point check every worker's fio against the controller's (:func:`check_fio`: exit 2, naming each worker and
the template's fix, before anything is measured), run every point not yet journaled into ``RUN_DIR/<storage>``
(:func:`~stormatrix.suiterun.run_suite`, the side being the storage's id), detach and free the volumes.

This module is the part that knows no platform: :class:`FleetSuite`, what ``stormatrix suite plan|run`` asks of
a fleet's platform; the sides still to run (:func:`pending_sides`: a side whose points are all journaled is not
attached again); and the end (:func:`finish`): the A-vs-B workbook of the first two storages
(``RUN_DIR/comparison.xlsx``) and, unless ``--keep``, everything the fleet created removed. Each platform's
fleet suite lives in its backend's package (:mod:`stormatrix.backends.proxmox.fleetsuite`,
:mod:`stormatrix.backends.vmware.fleetsuite`) and is named in :data:`stormatrix.registry.FLEET_SUITES` by
``[fleet] backend``. Everything is journaled (``RUN_DIR/fleet.ndjson``): after a crash, the same command resumes,
and ``stormatrix fleet destroy`` removes what was created.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from ..core.errors import MatrixError
from ..journal import Journal
from ..suite import Suite
from ..suiterun import SuiteOutcome, write_comparison

log = logging.getLogger("stormatrix.fleet")

WORKBOOK = "comparison.xlsx"


@dataclass
class FleetSuiteOutcome:
    fleet_id: str
    vmids: list[Any] = field(default_factory=list)  # Proxmox VMIDs, or vCenter's VM ids
    sides: dict[str, SuiteOutcome | None] = field(default_factory=dict)  # None: every point was journaled
    workbook: Path | None = None
    destroyed: bool = False

    @property
    def failed(self) -> list[tuple[str, str]]:
        return [f for o in self.sides.values() if o is not None for f in o.failed]


class FleetSuite(ABC):
    """A suite whose sides are the storages a fleet's workers attach in turn: what ``stormatrix suite plan|run``
    and ``stormatrix fleet`` ask of the fleet's platform, picked by :func:`stormatrix.registry.fleet_suite` and
    :func:`stormatrix.registry.open_fleet` (``[fleet] backend``). The platform reads its own ``[fleet]`` keys and
    section: the suite and the registry know only ``backend``."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite

    @classmethod
    @abstractmethod
    def check(cls, suite: Suite) -> Suite:
        """The suite with its ``[fleet]`` (and the platform's own section) validated as this platform reads them,
        when the file is read: a MatrixError (exit 2) names the key and the fix before anything is created."""

    @classmethod
    @abstractmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> Any:
        """The fleet a file's ``[fleet]`` describes (not deployed), for ``stormatrix fleet plan|deploy|destroy``:
        a context manager with ``plan()``, ``check(plan)``, ``deploy(on_step)``, ``destroy(on_step)``, ``owned()``
        (what its journal says it owns), ``journal`` and ``fleet_id``. ``fio`` is the controller's
        ``fio --version`` (None: not checked)."""

    @abstractmethod
    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        """The fleet (not deployed), its storages under test and when its workers are power-cycled."""

    @abstractmethod
    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None) -> FleetSuiteOutcome:
        """Deploy, run each storage as a side, write the comparison, destroy (unless ``keep``)."""

    def plan(self, run_dir: str | None, fio: str | None) -> None:
        """The fleet it would deploy, printed and checked now (exit 2 before anything is created); ``fio`` is the
        controller's ``fio --version``, which the template's declared fio must be."""
        fleet, storages, cycle = self._fleet(run_dir or ".", fio)
        with fleet:
            plan = fleet.plan()
            for line in plan.describe():
                print(line)
            print(f"  sides: {', '.join(storages)} (each storage in turn: allocate, attach, "
                  f"power-cycle: {cycle}, run every point, detach, free)")
            fleet.check(plan)


def check_fio(fleet: Any, vmids: list[Any], controller_fio: str | None, *, keep: bool) -> None:
    """Before the first point: every worker's fio is the controller's (``controller_fio``: its ``fio --version``),
    or MatrixError (exit 2) naming each one; then, unless ``keep``, the workers (cloned from a template of no
    use) are removed before the error rises."""
    try:
        fleet.check_fio_versions(vmids, controller_fio)
    except MatrixError:
        if not keep:
            fleet.destroy()
        fleet.close()
        raise


def pending_sides(suite: Suite, storages: tuple[str, ...], run_dir: Path, fleet: Any, outcome: FleetSuiteOutcome,
                  stream: Any) -> Iterator[tuple[str, Suite, Path]]:
    """Each storage under test in turn: its id, its side of the suite (on the fleet's workers) and its run
    directory; a side whose points are all journaled is skipped (:func:`_side_done`)."""
    for storage in storages:
        side_dir = run_dir / storage
        side = replace(suite, side=storage, vms=tuple(str(v) for v in outcome.vmids))
        if not _side_done(side, side_dir, fleet, outcome, stream):
            yield storage, side, side_dir


def _side_done(side: Suite, side_dir: Path, fleet: Any, outcome: FleetSuiteOutcome, stream: Any) -> bool:
    """Whether every point of the side is journaled (a rerun after a crash); its volumes are then freed."""
    journal = Journal(side_dir)
    done = journal.done_keys() if journal.path.exists() else set()
    if not all(p.key in done for p in side.points()):
        return False
    print(f"storage {side.side}: every point is journaled; not attaching it again", file=stream)
    outcome.sides[side.side] = None
    fleet.detach(side.side)  # a crash after the last point may have left its volumes
    return True


def finish(fleet: Any, storages: tuple[str, ...], run_dir: Path, outcome: FleetSuiteOutcome, *, keep: bool,
           stream: Any) -> FleetSuiteOutcome:
    """The comparison workbook of the first two sides, then (unless ``keep``) everything the fleet made removed."""
    if len(storages) >= 2:
        a, b = storages[:2]
        outcome.workbook = write_comparison((a, run_dir / a), (b, run_dir / b), run_dir / WORKBOOK)
        print(f"comparison workbook: {outcome.workbook}", file=stream)
    if not keep:
        left = fleet.destroy()
        outcome.destroyed = left.empty
        print(f"fleet {fleet.fleet_id}: " + ("everything it created is gone" if left.empty else
              f"{len(left.vms)} VMs and {len(left.volumes)} volumes left; run fleet destroy"), file=stream)
    fleet.close()
    return outcome
