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

The loop is :meth:`stormatrix.fleet.suiterun.FleetSuite.run`; this module gives its Proxmox stages. Then
:func:`stormatrix.fleet.suiterun.finish`: the comparison workbook, and the fleet removed unless ``--keep``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.model import Cell
from ...fleet.suiterun import FleetSuite, FleetSuiteOutcome
from ...suite import Suite
from .fleet import ProxmoxFleet
from .fleetspec import FleetSpec, fleet_from_dict, load_fleet_tables
from .settings import make_transport
from .vms import ProxmoxSuiteVms, ProxmoxVmGuests


def fleet_spec(suite: Suite) -> FleetSpec:
    assert suite.connection is not None
    return fleet_from_dict(suite.raw, suite.path, suite.connection["node"])


class ProxmoxFleetSuite(FleetSuite):
    """A fleet of Proxmox VMs cloned from a template; each side's guests are their VM list
    (:class:`~stormatrix.backends.proxmox.vms.ProxmoxVmGuests`). ``transport``: the API's (a test's stand-in;
    by default the one ``[proxmox]`` describes)."""

    def __init__(self, suite: Suite, *, transport: Any = None) -> None:
        super().__init__(suite)
        self._transport = transport

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """``[fleet]`` and the suite's ``[proxmox]`` (connection keys only), which the run then reaches the node by."""
        _spec, proxmox = load_fleet_tables(suite.raw, suite.path)
        return replace(suite, connection=proxmox)

    @classmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> ProxmoxFleet:
        spec, proxmox = load_fleet_tables(raw, path)
        return ProxmoxFleet(spec, make_transport(proxmox, path), run_dir, fio=fio)

    @property
    def transport(self) -> Any:
        if self._transport is None:
            assert self.suite.connection is not None
            self._transport = make_transport(self.suite.connection, self.suite.path)
        return self._transport

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[ProxmoxFleet, tuple[str, ...], str]:
        self.spec = fleet_spec(self.suite)
        return ProxmoxFleet(self.spec, self.transport, run_dir, fio=fio), self.spec.storages, self.spec.power_cycle

    def _before_deploy(self, fleet: Any, stream: Any) -> None:
        print(f"fleet {fleet.fleet_id}: deploying {self.spec.workers} workers from template {self.spec.template}",
              file=stream)

    def _side_guests(self, fleet: Any, storage: str, side: Suite, side_dir: Path, outcome: FleetSuiteOutcome, *,
                     fio: str, stream: Any) -> ProxmoxVmGuests:
        """Allocate and attach the storage's volumes, power-cycle the workers (``[fleet] power_cycle``): the side's
        VM list, which power-cycles them again before each point with ``power_cycle = "point"``."""
        spec = self.spec
        print(f"storage {storage}: allocating and attaching {len(outcome.vmids)} volumes", file=stream)
        fleet.attach(storage, outcome.vmids)
        print(f"storage {storage}: " + ("power-cycling the workers" if spec.power_cycle != "never" else
                                        "starting the workers that are not running"), file=stream)
        cycle(fleet, outcome.vmids, storage, None, stop=spec.power_cycle != "never")
        vms = ProxmoxSuiteVms(side, transport=self.transport, nodes={v: fleet.node_of(v) for v in outcome.vmids})
        power_cycle = None
        if spec.power_cycle == "point":
            # before each point after the side's first (the cycle above is the first point's)
            def power_cycle(point: Cell, _storage: str = storage) -> None:
                cycle(fleet, outcome.vmids, _storage, point.key, stop=True)
        storage_record = {"kind": storage, "server": "proxmox storage", "volumes": _volumes(fleet, storage),
                          "power_cycle": spec.power_cycle}
        return ProxmoxVmGuests(vms, storage=storage_record, power_cycle=power_cycle, booting=True)


def cycle(fleet: ProxmoxFleet, vmids: list[int], storage: str, point: str | None, *, stop: bool) -> None:
    """Power-cycle the workers (``stop``: stop those running first; else only start those that are not)
    and wait for their agents; journaled in ``fleet.ndjson`` (``power-cycle``: the storage, and the point
    it came before when ``[fleet] power_cycle = "point"``)."""
    fleet.journal.append({"type": "power-cycle", "storage": storage, "point": point, "stop": stop,
                          "vmids": len(vmids)})
    fleet.power_cycle(vmids, actions=("stop", "start") if stop else ("start",))


def _volumes(fleet: ProxmoxFleet, storage: str) -> list[str]:
    return [v.volid for v in fleet.state().live_volumes() if v.storage == storage and v.volid]
