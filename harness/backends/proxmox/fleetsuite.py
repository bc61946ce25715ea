"""A suite on a Proxmox fleet: the workers cloned from a template, each storage under test a side.

For each storage of ``[fleet] storages``, in order:

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
   :class:`~stormatrix.backends.proxmox.vms.ProxmoxVmGuests`, whose power cycle before each point this supplies)
   and run every point not yet journaled into ``RUN_DIR/<storage>`` (:func:`~stormatrix.suiterun.run_suite`:
   the side is the storage's id; the run record names the storage), probing the servers until they
   answer (they have just booted);
5. detach and free the volumes.

Then :func:`stormatrix.fleet.suiterun.finish`: the comparison workbook, and the fleet removed unless ``--keep``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.model import Cell
from ...fleet.suiterun import FleetSuite, FleetSuiteOutcome, check_fio, finish, pending_sides
from ...suite import Suite
from ...suiterun import fio_version, run_suite
from .fleet import ProxmoxFleet
from .fleetspec import FleetSpec, fleet_from_dict, load_fleet_tables
from .settings import make_transport
from .vms import ProxmoxSuiteVms, ProxmoxVmGuests


def fleet_spec(suite: Suite) -> FleetSpec:
    assert suite.connection is not None
    return fleet_from_dict(suite.raw, suite.path, suite.connection["node"])


class ProxmoxFleetSuite(FleetSuite):
    """A fleet of Proxmox VMs cloned from a template; each side's guests are their VM list
    (:class:`~stormatrix.backends.proxmox.vms.ProxmoxVmGuests`)."""

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """``[fleet]`` and the suite's ``[proxmox]`` (connection keys only), which the run then reaches the node by."""
        _spec, proxmox = load_fleet_tables(suite.raw, suite.path)
        return replace(suite, connection=proxmox)

    @classmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> ProxmoxFleet:
        spec, proxmox = load_fleet_tables(raw, path)
        return ProxmoxFleet(spec, make_transport(proxmox, path), run_dir, fio=fio)

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        assert self.suite.connection is not None
        spec = fleet_spec(self.suite)
        fleet = ProxmoxFleet(spec, make_transport(self.suite.connection, self.suite.path), run_dir, fio=fio)
        return fleet, spec.storages, spec.power_cycle

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None) -> FleetSuiteOutcome:
        return run_fleet_suite(self.suite, run_dir, fio=fio, keep=keep, progress=progress, stream=stream)


def run_fleet_suite(suite: Suite, run_dir: str | Path, *, fio: str = "fio", keep: bool = False,
                    progress: bool = False, transport: Any = None, stream: Any = None) -> FleetSuiteOutcome:
    """On Proxmox: deploy, run each storage as a side, write the comparison, destroy (unless ``keep``)."""
    stream = stream or sys.stderr
    run_dir = Path(run_dir)
    spec = fleet_spec(suite)
    assert suite.connection is not None
    transport = transport if transport is not None else make_transport(suite.connection, suite.path)
    controller_fio = fio_version(fio)
    fleet = ProxmoxFleet(spec, transport, run_dir, fio=controller_fio)  # a template's declared fio is checked
    with fleet:  # its connection is closed however the run ends (a refused plan, a failed point)
        outcome = FleetSuiteOutcome(fleet.fleet_id)
        print(f"fleet {fleet.fleet_id}: deploying {spec.workers} workers from template {spec.template}", file=stream)
        outcome.vmids = fleet.deploy()
        versions_checked = False
        for storage, side, side_dir in pending_sides(suite, spec.storages, run_dir, fleet, outcome, stream):
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
        return finish(fleet, spec.storages, run_dir, outcome, keep=keep, stream=stream)


def cycle(fleet: ProxmoxFleet, vmids: list[int], storage: str, point: str | None, *, stop: bool) -> None:
    """Power-cycle the workers (``stop``: stop those running first; else only start those that are not)
    and wait for their agents; journaled in ``fleet.ndjson`` (``power-cycle``: the storage, and the point
    it came before when ``[fleet] power_cycle = "point"``)."""
    fleet.journal.append({"type": "power-cycle", "storage": storage, "point": point, "stop": stop,
                          "vmids": len(vmids)})
    fleet.power_cycle(vmids, actions=("stop", "start") if stop else ("start",))


def _volumes(fleet: ProxmoxFleet, storage: str) -> list[str]:
    return [v.volid for v in fleet.journal.state().live_volumes() if v.storage == storage and v.volid]
