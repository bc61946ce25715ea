"""A suite on an ESXi fleet (``[fleet] backend = "vmware"``): the workers cloned from a vSphere template, each
datastore under test a side.

A storage is a datastore, the volume a test disk made by ``New-HardDisk`` on it (:mod:`.fleet`), the workers are
always power-cycled (a new controller needs them powered off), their fio version is read through VMware Tools
guest operations (``Invoke-VMScript``, with the guest account ``[fleet] guest_user_env``/``guest_password_env``
name), and their fio servers are at the addresses VMware Tools report. The loop is
:meth:`stormatrix.fleet.suiterun.FleetSuite.run`; this module gives its ESXi stages. Then
:func:`stormatrix.fleet.suiterun.finish`: the comparison workbook, and the fleet removed unless ``--keep``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...executors.fioserver.inputs import FioGuest
from ...fleet.suiterun import FleetSuite, FleetSuiteOutcome
from ...suite import Suite
from ...suiteguests import AddressGuests
from .fleet import VmwareFleet
from .fleetspec import make_runner, vmware_fleet_from_dict


class VmwareFleetSuite(FleetSuite):
    """A fleet of ESXi VMs cloned from a vSphere template; each side's guests are at the addresses VMware Tools
    report (:class:`~stormatrix.suiteguests.AddressGuests`). ``runner``: how the StormatrixVMware module is called
    (a test's fake vCenter; by default pwsh with PowerCLI)."""

    def __init__(self, suite: Suite, *, runner: Any = None) -> None:
        super().__init__(suite)
        self._runner = runner

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """``[fleet]`` and ``[vmware]`` (how to reach vCenter) as an ESXi fleet reads them."""
        vmware_fleet_from_dict(suite.raw, suite.path)
        return suite

    @classmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> VmwareFleet:
        vspec = vmware_fleet_from_dict(raw, path)
        return VmwareFleet(vspec, make_runner(vspec), run_dir, fio=fio)

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[VmwareFleet, tuple[str, ...], str]:
        self.spec = vmware_fleet_from_dict(self.suite.raw, self.suite.path)
        runner = self._runner if self._runner is not None else make_runner(self.spec)
        return VmwareFleet(self.spec, runner, run_dir, fio=fio), self.spec.storages, "side"

    def _before_deploy(self, fleet: Any, stream: Any) -> None:
        fleet.guest_credentials()  # the account that asks each guest for its fio, before anything is created
        print(f"fleet {fleet.fleet_id}: deploying {self.spec.workers} workers from template {self.spec.template} on "
              f"{self.spec.vmhost}", file=stream)

    def _side_guests(self, fleet: Any, storage: str, side: Suite, side_dir: Path, outcome: FleetSuiteOutcome, *,
                     fio: str, stream: Any) -> AddressGuests:
        """A test disk per worker on the datastore, the workers power-cycled (a new controller needs them powered
        off): their fio servers at the addresses VMware Tools report. No host collector: the ESXi host's CPU per
        worker is not collected for a fleet, and the run record says so."""
        print(f"storage {storage}: making and attaching {len(outcome.vmids)} test disks", file=stream)
        fleet.attach(storage, outcome.vmids)
        print(f"storage {storage}: power-cycling the workers", file=stream)
        cycled = fleet.power_cycle(outcome.vmids)
        disks = [d.filename for d in fleet.state().disks.values() if d.datastore == storage and d.filename]
        return AddressGuests(
            side.settings(), [FioGuest(name=str(g["Name"]), host=str(g["IPAddress"]), port=side.port) for g in cycled],
            platform="vmware", status=NO_HOST_CPU,
            vms=[{"name": g["Name"], "id": g["Id"], "address": g["IPAddress"]} for g in cycled],
            storage={"kind": storage, "server": "vmware datastore", "disks": disks, "power_cycle": "side"},
            booting=True)

    def _detach_note(self, keep: bool) -> str:
        return "removing the test disks"


#: what the run record says about host metrics on an ESXi fleet
NO_HOST_CPU = {"mode": "none", "detail": "no host metrics: the ESXi host's CPU per worker is not collected for a "
               "fleet", "fix": "compare the sides by IOPS and latency; host CPU on ESXi needs a matrix run"}
