"""A suite on a fleet: deploy the workers, run every storage under test as a side, compare, remove.

The seeds' method (``000_*``/``003_*``): "For each VM, we provision storage using ``pvesm alloc`` and
attach it to the VM with ``qm set``. Before each test run, the VMs are power cycled". For each storage
of ``[fleet] storages``, in order:

1. allocate each worker's volume on it and attach it (:meth:`ProxmoxFleet.attach`);
2. power-cycle the workers (``[fleet] power_cycle = "side"``, the default; ``"never"`` skips it), which
   also makes the new disk's options take effect, and wait for every guest agent;
3. find each worker's fio server through its agent (:class:`~stormatrix.suitevms.ProxmoxSuiteVms`), probe
   them all with the controller's fio (a version mismatch is named with the template's fix), and run
   every point not yet journaled into ``RUN_DIR/<storage>`` (:func:`~stormatrix.suiterun.run_suite`: the
   side is the storage's id; the run record names the storage);
4. detach and free the volumes.

On ESXi (``[fleet] backend = "vmware"``, :mod:`.vmware`) a storage is a datastore, the volume a test disk
made by ``New-HardDisk`` on it, and the workers' addresses are those VMware Tools report after the power cycle.

Then the A-vs-B workbook of the first two storages is written (``RUN_DIR/comparison.xlsx``) and, unless
``--keep``, everything the fleet created is removed. Everything is journaled (``RUN_DIR/fleet.ndjson``):
after a crash, the same command resumes (a side whose points are all journaled is not attached again),
and ``stormatrix fleet destroy`` removes what was created.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..backends.proxmox.settings import make_transport
from ..core.errors import GuestNotReady
from ..executors.fioserver_models import FioGuest
from ..executors.fioserver_probe import require_servers
from ..journal import Journal
from ..suite import Suite
from ..suiterun import SuiteOutcome, run_suite, write_comparison
from ..suitevms import ProxmoxSuiteVms
from .proxmox import ProxmoxFleet
from .spec import FleetSpec, fleet_from_dict
from .vmware import VmwareFleet, is_vmware_fleet, make_runner, vmware_fleet_from_dict

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


class _ProxmoxSides:
    """The Proxmox fleet's side of a suite: workers found through their guest agents, the host collector
    over their QEMU processes."""

    backend = "proxmox"

    def __init__(self, suite: Suite, run_dir: Path, transport: Any) -> None:
        assert suite.proxmox is not None
        self.spec = fleet_spec(suite)
        self.transport = transport if transport is not None else make_transport(suite.proxmox, suite.path)
        self.fleet: Any = ProxmoxFleet(self.spec, self.transport, run_dir)

    def what(self) -> str:
        return f"template {self.spec.template}"

    def power_cycle(self, vmids: list[Any]) -> list[dict[str, Any]]:
        if self.spec.power_cycle != "never":
            self.fleet.power_cycle(vmids)
        return []

    def side(self, side: Suite, storage: str, _cycled: list[dict[str, Any]]) -> tuple[list[FioGuest], dict[str, Any]]:
        vms = ProxmoxSuiteVms(side, transport=self.transport)
        guests = vms.discover()
        collector, status = vms.host_collector()
        volumes = [v.volid for v in self.fleet.journal.state().live_volumes() if v.storage == storage and v.volid]
        return guests, {"collector": collector, "backend": "proxmox", "host_collector": status, "vms": vms.record(),
                        "storage": {"kind": storage, "server": "proxmox storage", "volumes": volumes}}


class _VmwareSides:
    """The ESXi fleet's side of a suite: each worker's fio server at the IPv4 address VMware Tools report
    after the power cycle (always made: a new controller needs the worker powered off); no host collector
    (the ESXi host's CPU per worker is not collected for a fleet yet, and the run record says so)."""

    backend = "vmware"

    def __init__(self, suite: Suite, run_dir: Path, runner: Any) -> None:
        self.spec = vmware_fleet_from_dict(suite.raw, suite.path)
        self.fleet: Any = VmwareFleet(self.spec, runner if runner is not None else make_runner(self.spec), run_dir)

    def what(self) -> str:
        return f"template {self.spec.template} on {self.spec.vmhost}"

    def power_cycle(self, vmids: list[Any]) -> list[dict[str, Any]]:
        return list(self.fleet.power_cycle(vmids))

    def side(self, side: Suite, storage: str, cycled: list[dict[str, Any]]) -> tuple[list[FioGuest], dict[str, Any]]:
        guests = [FioGuest(name=str(g["Name"]), host=str(g["IPAddress"]), port=side.port) for g in cycled]
        disks = [d.filename for d in self.fleet.state().disks.values() if d.datastore == storage and d.filename]
        status = {"mode": "none", "detail": "no host metrics: the ESXi host's CPU per worker is not collected for "
                  "a fleet", "fix": "compare the sides by IOPS and latency; host CPU on ESXi needs a matrix run"}
        vms = [{"name": g["Name"], "id": g["Id"], "address": g["IPAddress"]} for g in cycled]
        return guests, {"collector": None, "backend": "vmware", "host_collector": status, "vms": vms,
                        "storage": {"kind": storage, "server": "vmware datastore", "disks": disks}}


def run_fleet_suite(suite: Suite, run_dir: str | Path, *, fio: str = "fio", keep: bool = False,
                    progress: bool = False, transport: Any = None, stream: Any = None,
                    runner: Any = None) -> FleetSuiteOutcome:
    """Deploy, run each storage as a side, write the comparison, destroy (unless ``keep``). ``[fleet]
    backend`` picks the platform: Proxmox (``transport``) or ESXi (``runner``: the pwsh runner)."""
    stream = stream or sys.stderr
    run_dir = Path(run_dir)
    platform: _ProxmoxSides | _VmwareSides
    if is_vmware_fleet(suite.raw):
        platform = _VmwareSides(suite, run_dir, runner)
    else:
        platform = _ProxmoxSides(suite, run_dir, transport)
    spec, fleet = platform.spec, platform.fleet
    outcome = FleetSuiteOutcome(fleet.fleet_id)
    print(f"fleet {fleet.fleet_id}: deploying {spec.workers} workers from {platform.what()}", file=stream)
    outcome.vmids = fleet.deploy()
    for storage in spec.storages:
        side_dir = run_dir / storage
        side = replace(suite, side=storage, vms=tuple(str(v) for v in outcome.vmids))
        journal = Journal(side_dir)
        done = journal.done_keys() if journal.path.exists() else set()
        if all(p.key in done for p in side.points()):
            print(f"storage {storage}: every point is journaled; not attaching it again", file=stream)
            outcome.sides[storage] = None
            fleet.detach(storage)  # a crash after the last point may have left its volumes
            continue
        print(f"storage {storage}: allocating and attaching {len(outcome.vmids)} volumes", file=stream)
        fleet.attach(storage, outcome.vmids)
        if spec.power_cycle != "never":
            print(f"storage {storage}: power-cycling the workers", file=stream)
        cycled = platform.power_cycle(outcome.vmids)
        guests, how = platform.side(side, storage, cycled)
        check_fio_servers(guests, side_dir / "points" / "fleet-probe", fio=fio)
        outcome.sides[storage] = run_suite(side.with_guests(guests), side_dir, fio=fio, progress=progress, **how)
        print(f"storage {storage}: detaching and freeing the volumes", file=stream)
        fleet.detach(storage)
    if len(spec.storages) >= 2:
        a, b = spec.storages[:2]
        outcome.workbook = write_comparison((a, run_dir / a), (b, run_dir / b), run_dir / WORKBOOK)
        print(f"comparison workbook: {outcome.workbook}", file=stream)
    if not keep:
        left = fleet.destroy()
        outcome.destroyed = left.empty
        print(f"fleet {fleet.fleet_id}: " + ("everything it created is gone" if left.empty else
              f"{len(left.vms)} VMs and {len(left.volumes)} volumes left; run fleet destroy"), file=stream)
    fleet.close()
    return outcome


def check_fio_servers(guests: list[Any], workdir: Path, *, fio: str) -> None:
    """Every worker's fio server answers the controller's fio before the side's first point; a protocol
    mismatch (the guest's fio is another version) is named with the template's fix."""
    try:
        require_servers(guests, workdir, fio=fio)
    except GuestNotReady as exc:
        if "protocol mismatch" in exc.message:
            raise GuestNotReady(exc.message + ". Fix: rebuild the workers' template with the user-data of "
                                "`stormatrix fleet template` (it installs the controller's fio version)",
                                details=exc.details) from None
        raise
