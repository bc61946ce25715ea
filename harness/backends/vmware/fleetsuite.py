"""A suite on an ESXi fleet (``[fleet] backend = "vmware"``): the workers cloned from a vSphere template, each
datastore under test a side.

A storage is a datastore, the volume a test disk made by ``New-HardDisk`` on it (:mod:`.fleet`), the workers are
always power-cycled (a new controller needs them powered off), their fio version is read through VMware Tools
guest operations (``Invoke-VMScript``, with the guest account ``[fleet] guest_user_env``/``guest_password_env``
name), and their fio servers are at the addresses VMware Tools report. Then
:func:`stormatrix.fleet.suiterun.finish`: the comparison workbook, and the fleet removed unless ``--keep``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ...executors.fioserver.inputs import FioGuest
from ...fleet.suiterun import FleetSuite, FleetSuiteOutcome, check_fio, finish, pending_sides
from ...suite import Suite
from ...suiteguests import AddressGuests
from ...suiterun import fio_version, run_suite
from .fleet import VmwareFleet, make_runner, vmware_fleet_from_dict


class VmwareFleetSuite(FleetSuite):
    """A fleet of ESXi VMs cloned from a vSphere template; each side's guests are at the addresses VMware Tools
    report (:class:`~stormatrix.suiteguests.AddressGuests`)."""

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """``[fleet]`` and ``[vmware]`` (how to reach vCenter) as an ESXi fleet reads them."""
        vmware_fleet_from_dict(suite.raw, suite.path)
        return suite

    @classmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> VmwareFleet:
        vspec = vmware_fleet_from_dict(raw, path)
        return VmwareFleet(vspec, make_runner(vspec), run_dir, fio=fio)

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        vspec = vmware_fleet_from_dict(self.suite.raw, self.suite.path)
        return VmwareFleet(vspec, make_runner(vspec), run_dir, fio=fio), vspec.storages, "side"

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None) -> FleetSuiteOutcome:
        return run_vmware_fleet_suite(self.suite, Path(run_dir), fio=fio, keep=keep, progress=progress,
                                      stream=stream or sys.stderr)


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
    for storage, side, side_dir in pending_sides(suite, spec.storages, run_dir, fleet, outcome, stream):
        print(f"storage {storage}: making and attaching {len(outcome.vmids)} test disks", file=stream)
        fleet.attach(storage, outcome.vmids)
        print(f"storage {storage}: power-cycling the workers", file=stream)
        cycled = fleet.power_cycle(outcome.vmids)
        if not versions_checked:
            check_fio(fleet, outcome.vmids, controller_fio, keep=keep)
            versions_checked = True
        disks = [d.filename for d in fleet.state().disks.values() if d.datastore == storage and d.filename]
        guests = AddressGuests(
            side.settings(), [FioGuest(name=str(g["Name"]), host=str(g["IPAddress"]), port=side.port) for g in cycled],
            platform="vmware", status=status,
            vms=[{"name": g["Name"], "id": g["Id"], "address": g["IPAddress"]} for g in cycled],
            storage={"kind": storage, "server": "vmware datastore", "disks": disks, "power_cycle": "side"},
            booting=True)
        outcome.sides[storage] = run_suite(side, side_dir, guests, fio=fio, progress=progress)
        print(f"storage {storage}: removing the test disks", file=stream)
        fleet.detach(storage)
    return finish(fleet, spec.storages, run_dir, outcome, keep=keep, stream=stream)
