"""A suite on a fleet: deploy the workers, run every storage under test as a side, compare, remove.

The seeds' method (``000_*``/``003_*``): "For each VM, we provision storage using ``pvesm alloc`` and
attach it to the VM with ``qm set``. Before each test run, the VMs are power cycled". Every platform's fleet
suite does the same stages, for each storage of ``[fleet] storages``, in order: attach a volume of the storage
to each worker, power-cycle the workers (which also makes the new disk's options take effect), before the
first point check every worker's fio against the controller's (:func:`check_fio`: exit 2, naming each worker and
the template's fix, before anything is measured), run every point not yet journaled into ``RUN_DIR/<storage>``
(:func:`~stormatrix.suiterun.run_suite`, the side being the storage's id), detach and free the volumes.

This module is the part that knows no platform: :class:`FleetSuite`, what ``stormatrix suite plan|run`` asks of
a fleet's platform, whose :meth:`FleetSuite.run` is this loop, written once: deploy, then per storage still to run
(:func:`pending_sides`: a side whose points are all journaled is not attached again) the platform's
:meth:`~FleetSuite._side_guests` (attach, power-cycle, the side's guests), the fio check before the first point,
the points, :meth:`~FleetSuite._detach`; and the end (:func:`finish`): the A-vs-B workbook of the first two storages
(``RUN_DIR/comparison.xlsx``) and, unless ``--keep``, everything the fleet created removed. The fleet itself is
typed by :class:`~.interface.Fleet` (and the registry's hand-outs by :mod:`.interface`'s protocols, which every
:class:`FleetSuite` is checked to be). Each platform's fleet suite lives in its backend's package
(:mod:`stormatrix.backends.proxmox.fleetsuite`, :mod:`stormatrix.backends.vmware.fleetsuite`,
:mod:`stormatrix.backends.qemu.fleetsuite`) and is named in :data:`stormatrix.registry.FLEET_SUITES` by
``[fleet] backend``. Everything is journaled (``RUN_DIR/fleet.ndjson``): after a crash, the same command resumes,
and ``stormatrix fleet destroy`` removes what was created.
"""

from __future__ import annotations

import logging
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from ..core.errors import MatrixError
from ..journal import Journal
from ..suite import Suite
from ..suiteguests import SuiteGuests
from ..suiterun import SuiteOutcome, fio_version, run_suite, write_comparison
from .interface import Fleet, FleetSuiteClass

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
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> Fleet:
        """The fleet a file's ``[fleet]`` describes (not deployed), for ``stormatrix fleet plan|deploy|destroy``:
        a context manager with ``plan()``, ``check(plan)``, ``deploy(on_step)``, ``destroy(on_step)``, ``owned()``
        (what its journal says it owns), ``journal`` and ``fleet_id``. ``fio`` is the controller's
        ``fio --version`` (None: not checked)."""

    @abstractmethod
    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Fleet, tuple[str, ...], str]:
        """The fleet (not deployed), its storages under test and when its workers are power-cycled."""

    # --- the loop, written once; the platform's stages are the hooks below -----------------------------------
    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None, workbook: Path | None = None) -> FleetSuiteOutcome:
        """Deploy, run each storage as a side (attach, power-cycle, check fio before the first point, every point
        not yet journaled into ``RUN_DIR/<storage>``, detach), write the comparison (``workbook``, by default
        ``RUN_DIR/comparison.xlsx``), destroy (unless ``keep``). Runs in the main thread (local workers'
        PR_SET_PDEATHSIG follows the thread that started them)."""
        stream, run_dir = stream or sys.stderr, Path(run_dir)
        controller_fio = fio_version(fio)  # a template's declared fio is checked against it by the deploy's plan
        fleet, storages, _ = self._fleet(str(run_dir), controller_fio)
        with fleet:  # its connection is closed however the run ends (a refused plan, a failed point)
            outcome = FleetSuiteOutcome(fleet.fleet_id)
            self._before_deploy(fleet, stream)
            outcome.vmids = fleet.deploy()
            first = True
            for storage, side, side_dir in pending_sides(self, storages, run_dir, fleet, outcome, stream, keep):
                with self._side_guests(fleet, storage, side, side_dir, outcome, fio=fio, stream=stream) as guests:
                    if first:
                        self._check_fio(fleet, outcome.vmids, controller_fio, keep=keep)
                    first = False
                    self._check_side(guests, controller_fio)
                    outcome.sides[storage] = run_suite(side, side_dir, guests, fio=fio, progress=progress)
                print(f"storage {storage}: {self._detach_note(keep)}", file=stream)
                self._detach(fleet, storage, keep=keep)
            return finish(fleet, storages, run_dir, outcome, keep=keep, stream=stream, labels=self.label,
                          workbook=workbook, left=self._left)

    def side(self, storage: str, outcome: FleetSuiteOutcome) -> Suite:
        """The suite's side on ``storage`` (its label the storage's id, its guests the fleet's workers)."""
        return replace(self.suite, side=storage, vms=tuple(str(v) for v in outcome.vmids))

    def label(self, storage: str) -> str:
        """``storage``'s side in the comparison workbook."""
        return storage

    def _before_deploy(self, fleet: Any, stream: Any) -> None:
        """Say what is deployed; check what must hold before anything is created."""

    @abstractmethod
    def _side_guests(self, fleet: Any, storage: str, side: Suite, side_dir: Path, outcome: FleetSuiteOutcome, *,
                     fio: str, stream: Any) -> SuiteGuests:
        """Attach ``storage``'s volumes to the workers, power-cycle them: the side's guests (closed when the side
        ends)."""

    def _check_fio(self, fleet: Any, vmids: list[Any], controller_fio: str | None, *, keep: bool) -> None:
        """Before the first point: every worker's fio is the controller's (:func:`check_fio`)."""
        check_fio(fleet, vmids, controller_fio, keep=keep)

    def _check_side(self, guests: SuiteGuests, controller_fio: str | None) -> None:
        """Before each side's points: what its guests must be (nothing more by default)."""

    def _detach(self, fleet: Any, storage: str, *, keep: bool) -> None:
        """Detach and free ``storage``'s volumes (also for a side whose points were all journaled already)."""
        fleet.detach(storage)

    def _detach_note(self, keep: bool) -> str:
        """What :meth:`_detach` does, said as a side ends."""
        return "detaching and freeing the volumes"

    def _done_note(self) -> str:
        """What a side whose points are all journaled is spared."""
        return "not attaching it again"

    def _left(self, left: Any) -> str:
        """What :meth:`Fleet.destroy` left, said."""
        return f"{len(left.vms)} VMs and {len(left.volumes)} volumes left"

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


def _is_a_fleet_suite_class(cls: type[FleetSuite]) -> FleetSuiteClass:
    """For mypy: every fleet suite class is what the registry hands out as one (:class:`~.interface.FleetSuiteClass`;
    a subclass whose ``open_fleet`` returns no :class:`~.interface.Fleet` fails the type check there)."""
    return cls


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


def pending_sides(fs: FleetSuite, storages: tuple[str, ...], run_dir: Path, fleet: Any, outcome: FleetSuiteOutcome,
                  stream: Any, keep: bool) -> Iterator[tuple[str, Suite, Path]]:
    """Each storage under test in turn: its id, its side of the suite (:meth:`FleetSuite.side`) and its run
    directory; a side whose points are all journaled is skipped (its volumes are then freed: a crash after the last
    point may have left them)."""
    for storage in storages:
        side_dir = run_dir / storage
        side = fs.side(storage, outcome)
        journal = Journal(side_dir)
        done = journal.done_keys() if journal.path.exists() else set()
        if not all(p.key in done for p in side.points()):
            yield storage, side, side_dir
            continue
        print(f"storage {storage}: every point is journaled; {fs._done_note()}", file=stream)
        outcome.sides[storage] = None
        fs._detach(fleet, storage, keep=keep)


def finish(fleet: Any, storages: tuple[str, ...], run_dir: Path, outcome: FleetSuiteOutcome, *, keep: bool,
           stream: Any, labels: Any = str, workbook: Path | None = None, left: Any = None) -> FleetSuiteOutcome:
    """The comparison workbook of the first two sides (``labels``: a storage's side label; ``workbook``: where, by
    default ``RUN_DIR/comparison.xlsx``), then (unless ``keep``) everything the fleet made removed (``left``: what
    is left, said)."""
    if len(storages) >= 2:
        a, b = storages[:2]
        outcome.workbook = write_comparison((labels(a), run_dir / a), (labels(b), run_dir / b),
                                            workbook or run_dir / WORKBOOK)
        print(f"comparison workbook: {outcome.workbook}", file=stream)
    if not keep:
        gone = fleet.destroy()
        outcome.destroyed = gone.empty
        said = left(gone) if left is not None else f"{len(gone.vms)} VMs and {len(gone.volumes)} volumes left"
        print(f"fleet {fleet.fleet_id}: " + ("everything it created is gone" if gone.empty else
              f"{said}; run fleet destroy"), file=stream)
    fleet.close()
    return outcome
