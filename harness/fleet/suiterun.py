"""A suite on a fleet: deploy the workers, run every storage under test as a side, compare, remove.

The seeds' method (``000_*``/``003_*``): "For each VM, we provision storage using ``pvesm alloc`` and
attach it to the VM with ``qm set``. Before each test run, the VMs are power cycled". For each storage
of ``[fleet] storages``, in order:

1. allocate each worker's volume on it and attach it (:meth:`ProxmoxFleet.attach`);
2. power-cycle the workers (``[fleet] power_cycle = "side"``, the default; ``"point"`` cycles them again
   before every point; ``"never"`` only starts those not running), which also makes the new disk's
   options take effect, and wait for every guest agent;
3. before the first point of the run (and before the deploy, against what the template declares:
   :func:`~stormatrix.fleet.template.fio_declaration_problem`), ask every worker's guest for its fio
   version through the agent
   (``fio --version``, :meth:`ProxmoxFleet.check_fio_versions`): a mismatch with the controller's fio is
   named with the template's fix (exit 2) before anything is measured;
4. find each worker's fio server through its agent (the side's guests are a
   :class:`~stormatrix.suitevms.ProxmoxVmGuests`, whose power cycle before each point this supplies) and
   run every point not yet journaled into ``RUN_DIR/<storage>`` (:func:`~stormatrix.suiterun.run_suite`:
   the side is the storage's id; the run record names the storage), probing the servers until they
   answer (they have just booted);
5. detach and free the volumes.

On ESXi (``[fleet] backend = "vmware"``, :mod:`.vmware`, :func:`run_vmware_fleet_suite`) a storage is a
datastore, the volume a test disk made by ``New-HardDisk`` on it, the workers are always power-cycled (a new
controller needs them powered off), their fio version is read through VMware Tools guest operations
(``Invoke-VMScript``, with the guest account ``[fleet] guest_user_env``/``guest_password_env`` name), and their
fio servers are at the addresses VMware Tools report.

Then the A-vs-B workbook of the first two storages is written (``RUN_DIR/comparison.xlsx``) and, unless
``--keep``, everything the fleet created is removed. Everything is journaled (``RUN_DIR/fleet.ndjson``):
after a crash, the same command resumes (a side whose points are all journaled is not attached again),
and ``stormatrix fleet destroy`` removes what was created.
"""

from __future__ import annotations

import logging
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from ..backends.proxmox.settings import make_transport
from ..core.errors import MatrixError
from ..core.model import Cell
from ..executors.fioserver.inputs import FioGuest
from ..journal import Journal
from ..suite import Suite
from ..suiterun import SuiteOutcome, fio_version, run_suite, write_comparison
from ..suiteguests import AddressGuests
from ..suitevms import ProxmoxSuiteVms, ProxmoxVmGuests
from .proxmox import ProxmoxFleet
from .spec import FleetSpec, fleet_from_dict
from .vmware import VmwareFleet, make_runner, vmware_fleet_from_dict

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


def fleet_spec(suite: Suite) -> FleetSpec:
    assert suite.proxmox is not None
    return fleet_from_dict(suite.raw, suite.path, suite.proxmox["node"])


class FleetSuite(ABC):
    """A suite whose sides are the storages a fleet's workers attach in turn: what ``stormatrix suite plan|run``
    asks of the fleet's platform, picked by :func:`stormatrix.registry.fleet_suite` (``[fleet] backend``)."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite

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


class ProxmoxFleetSuite(FleetSuite):
    """A fleet of Proxmox VMs cloned from a template; each side's guests are their VM list
    (:class:`~stormatrix.suitevms.ProxmoxVmGuests`)."""

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        assert self.suite.proxmox is not None
        spec = fleet_spec(self.suite)
        fleet = ProxmoxFleet(spec, make_transport(self.suite.proxmox, self.suite.path), run_dir, fio=fio)
        return fleet, spec.storages, spec.power_cycle

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None) -> FleetSuiteOutcome:
        return run_fleet_suite(self.suite, run_dir, fio=fio, keep=keep, progress=progress, stream=stream)


class VmwareFleetSuite(FleetSuite):
    """A fleet of ESXi VMs cloned from a vSphere template; each side's guests are at the addresses VMware Tools
    report (:class:`~stormatrix.suiteguests.AddressGuests`)."""

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        vspec = vmware_fleet_from_dict(self.suite.raw, self.suite.path)
        return VmwareFleet(vspec, make_runner(vspec), run_dir, fio=fio), vspec.storages, "side"

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None) -> FleetSuiteOutcome:
        return run_vmware_fleet_suite(self.suite, Path(run_dir), fio=fio, keep=keep, progress=progress,
                                      stream=stream or sys.stderr)


def run_fleet_suite(suite: Suite, run_dir: str | Path, *, fio: str = "fio", keep: bool = False,
                    progress: bool = False, transport: Any = None, stream: Any = None) -> FleetSuiteOutcome:
    """On Proxmox: deploy, run each storage as a side, write the comparison, destroy (unless ``keep``)."""
    stream = stream or sys.stderr
    run_dir = Path(run_dir)
    spec = fleet_spec(suite)
    assert suite.proxmox is not None
    transport = transport if transport is not None else make_transport(suite.proxmox, suite.path)
    controller_fio = fio_version(fio)
    fleet = ProxmoxFleet(spec, transport, run_dir, fio=controller_fio)  # a template's declared fio is checked
    with fleet:  # its connection is closed however the run ends (a refused plan, a failed point)
        outcome = FleetSuiteOutcome(fleet.fleet_id)
        print(f"fleet {fleet.fleet_id}: deploying {spec.workers} workers from template {spec.template}", file=stream)
        outcome.vmids = fleet.deploy()
        versions_checked = False
        for storage, side, side_dir in _pending_sides(suite, spec.storages, run_dir, fleet, outcome, stream):
            print(f"storage {storage}: allocating and attaching {len(outcome.vmids)} volumes", file=stream)
            fleet.attach(storage, outcome.vmids)
            print(f"storage {storage}: " + ("power-cycling the workers" if spec.power_cycle != "never" else
                                            "starting the workers that are not running"), file=stream)
            cycle(fleet, outcome.vmids, storage, None, stop=spec.power_cycle != "never")
            if not versions_checked:
                check_fio(fleet, outcome.vmids, controller_fio, keep=keep)
                versions_checked = True
            vms = ProxmoxSuiteVms(side, transport=transport, nodes={v: fleet.node_of(v) for v in outcome.vmids})
            power_cycle = None
            if spec.power_cycle == "point":
                # before each point after the side's first (the cycle above is the first point's)
                def power_cycle(point: Cell, _storage: str = storage) -> None:
                    cycle(fleet, outcome.vmids, _storage, point.key, stop=True)
            storage_record = {"kind": storage, "server": "proxmox storage", "volumes": _volumes(fleet, storage),
                              "power_cycle": spec.power_cycle}
            guests = ProxmoxVmGuests(vms, storage=storage_record, power_cycle=power_cycle, booting=True)
            outcome.sides[storage] = run_suite(side, side_dir, guests, fio=fio, progress=progress)
            print(f"storage {storage}: detaching and freeing the volumes", file=stream)
            fleet.detach(storage)
        return _finish(fleet, spec.storages, run_dir, outcome, keep=keep, stream=stream)


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


def _pending_sides(suite: Suite, storages: tuple[str, ...], run_dir: Path, fleet: Any, outcome: FleetSuiteOutcome,
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


def _finish(fleet: Any, storages: tuple[str, ...], run_dir: Path, outcome: FleetSuiteOutcome, *, keep: bool,
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


def run_vmware_fleet_suite(suite: Suite, run_dir: Path, *, fio: str, keep: bool, progress: bool, stream: Any,
                           runner: Any = None) -> FleetSuiteOutcome:
    """The suite on an ESXi fleet: per datastore, the test disks made, the workers power-cycled, every point
    run on the fio servers at the addresses VMware Tools report, the disks removed. No host collector: the
    ESXi host's CPU per worker is not collected for a fleet, and the run record says so."""
    spec = vmware_fleet_from_dict(suite.raw, suite.path)
    controller_fio = fio_version(fio)
    # a template whose Notes declare another fio is refused by the deploy's plan, before anything is created
    fleet = VmwareFleet(spec, runner if runner is not None else make_runner(spec), run_dir, fio=controller_fio)
    fleet.guest_credentials()  # the account that asks each guest for its fio, before anything is created
    outcome = FleetSuiteOutcome(fleet.fleet_id)
    print(f"fleet {fleet.fleet_id}: deploying {spec.workers} workers from template {spec.template} on "
          f"{spec.vmhost}", file=stream)
    outcome.vmids = fleet.deploy()
    status = {"mode": "none", "detail": "no host metrics: the ESXi host's CPU per worker is not collected for a "
              "fleet", "fix": "compare the sides by IOPS and latency; host CPU on ESXi needs a matrix run"}
    versions_checked = False
    for storage, side, side_dir in _pending_sides(suite, spec.storages, run_dir, fleet, outcome, stream):
        print(f"storage {storage}: making and attaching {len(outcome.vmids)} test disks", file=stream)
        fleet.attach(storage, outcome.vmids)
        print(f"storage {storage}: power-cycling the workers", file=stream)
        cycled = fleet.power_cycle(outcome.vmids)
        if not versions_checked:
            check_fio(fleet, outcome.vmids, controller_fio, keep=keep)
            versions_checked = True
        disks = [d.filename for d in fleet.state().disks.values() if d.datastore == storage and d.filename]
        guests = AddressGuests(
            [FioGuest(name=str(g["Name"]), host=str(g["IPAddress"]), port=side.port) for g in cycled],
            platform="vmware", status=status,
            vms=[{"name": g["Name"], "id": g["Id"], "address": g["IPAddress"]} for g in cycled],
            storage={"kind": storage, "server": "vmware datastore", "disks": disks, "power_cycle": "side"},
            booting=True)
        outcome.sides[storage] = run_suite(side, side_dir, guests, fio=fio, progress=progress)
        print(f"storage {storage}: removing the test disks", file=stream)
        fleet.detach(storage)
    return _finish(fleet, spec.storages, run_dir, outcome, keep=keep, stream=stream)


def cycle(fleet: ProxmoxFleet, vmids: list[int], storage: str, point: str | None, *, stop: bool) -> None:
    """Power-cycle the workers (``stop``: stop those running first; else only start those that are not)
    and wait for their agents; journaled in ``fleet.ndjson`` (``power-cycle``: the storage, and the point
    it came before when ``[fleet] power_cycle = "point"``)."""
    fleet.journal.append({"type": "power-cycle", "storage": storage, "point": point, "stop": stop,
                          "vmids": len(vmids)})
    fleet.power_cycle(vmids, actions=("stop", "start") if stop else ("start",))


def _volumes(fleet: ProxmoxFleet, storage: str) -> list[str]:
    return [v.volid for v in fleet.journal.state().live_volumes() if v.storage == storage and v.volid]
