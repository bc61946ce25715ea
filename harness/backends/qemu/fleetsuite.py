"""A suite on the local fleet (``[fleet] backend = "qemu"``): each storage of this machine a side, then the
comparison workbook, then nothing left.

:class:`QemuFleetSuite` is what ``stormatrix suite plan|run`` asks of the local fleet (named by one line of
:data:`stormatrix.registry.FLEET_SUITES`; ``stormatrix demo --suite`` runs its shipped suite file through it).
For each storage of ``[fleet] storages``, in order, unless every point of its side is journaled already:

1. make the workers' volumes and serve them (:meth:`.fleet.LocalFleet.attach`);
2. boot the workers with their volume as test disk, in fio server mode (:class:`.guests.LocalGuests`; with
   ``power_cycle = "point"`` again before every point but the side's first), check that each guest runs the
   controller's fio (its READY line says) and that its test device is ``[suite] filename``;
3. run every point not yet journaled into ``RUN_DIR/<storage>`` (:func:`stormatrix.suiterun.run_suite`; the
   side's label is the protocol's name, the run record names the server that served the disks);
4. stop the workers and the server, remove the volumes (kept with ``--keep`` until ``fleet destroy``).

Then the A-vs-B workbook of the first two storages (``RUN_DIR/comparison.xlsx`` unless told otherwise) and,
unless ``keep``, everything the fleet journaled is removed. The loop is
:meth:`stormatrix.fleet.suiterun.FleetSuite.run` (run in the main thread: the processes' PR_SET_PDEATHSIG follows
the thread that started them); this module gives its local stages.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.errors import GuestNotReady, MatrixError
from ...fleet.suiterun import FleetSuite, FleetSuiteOutcome
from ...suite import Suite
from ...suiteguests import SuiteGuests
from .fleet import SIDE_LABELS, LocalFleet, LocalFleetSpec, local_fleet_from_dict
from .guests import LocalGuests


def check_suite(suite: Suite, spec: LocalFleetSpec) -> None:
    """What ``[suite]`` must say for local workers: their test disk is their only disk, named by the kernel."""
    if suite.filename != spec.device:
        raise MatrixError(suite.path, "[suite] filename", f"{suite.filename}: a local worker's test disk is its only "
                          f"disk, {spec.device} on {spec.disk.controller}", f'set filename = "{spec.device}"')
    if suite.disk is not None and suite.disk != spec.disk:
        raise MatrixError(suite.path, "[suite] controller", f"{suite.disk.key} differs from the disk the local workers "
                          f"attach ([fleet]: {spec.disk.key})", "drop the disk keys from [suite] (the side's disk is "
                          "[fleet]'s), or give [fleet] the same ones")


class QemuFleetSuite(FleetSuite):
    """A suite whose sides are this machine's storages, on 1-4 local QEMU workers (see the module docstring)."""

    def __init__(self, suite: Suite) -> None:
        super().__init__(suite)
        self.spec = local_fleet_from_dict(suite.raw, suite.path)
        check_suite(suite, self.spec)

    @classmethod
    def check(cls, suite: Suite) -> Suite:
        """``[fleet]`` as the local fleet reads it, and what ``[suite]`` must say for local workers."""
        check_suite(suite, local_fleet_from_dict(suite.raw, suite.path))
        return suite

    @classmethod
    def open_fleet(cls, raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> LocalFleet:
        return LocalFleet(local_fleet_from_dict(raw, path), run_dir, fio=fio)

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[LocalFleet, tuple[str, ...], str]:
        return LocalFleet(self.spec, run_dir, fio=fio), self.spec.storages, self.spec.power_cycle

    def side(self, storage: str, outcome: FleetSuiteOutcome) -> Suite:
        """The side is labelled by its protocol's name, on the disk the local workers attach."""
        return replace(self.suite, side=SIDE_LABELS[storage], disk=self.spec.disk)

    def label(self, storage: str) -> str:
        return SIDE_LABELS[storage]

    def _side_guests(self, fleet: Any, storage: str, side: Suite, side_dir: Path, outcome: FleetSuiteOutcome, *,
                     fio: str, stream: Any) -> LocalGuests:
        """The storage's volumes made and served, the workers booted on them in fio server mode."""
        spec, plural = self.spec, "s" if self.spec.workers > 1 else ""
        print(f"storage {storage}: serving {spec.workers} volume{plural} of {spec.disk_size // 2**20} MiB, "
              f"booting {spec.workers} worker{plural} ({spec.disk.key})", file=stream)
        urls = fleet.attach(storage)
        assert fleet.image is not None
        return LocalGuests(side.settings(), storage, spec.disk, side_dir, fleet.image, spec.names(), urls,
                           vcpus=spec.vcpus, memory_mib=spec.memory_mib, boot_timeout_s=spec.boot_timeout, fio=fio,
                           storage=fleet.served(storage), on_start=fleet.on_vm_start(storage),
                           cycle_points=spec.power_cycle == "point")

    def _check_fio(self, fleet: Any, vmids: list[Any], controller_fio: str | None, *, keep: bool) -> None:
        """Nothing before the first point: each side's guests say their fio when they boot (:meth:`_check_side`)."""

    def _check_side(self, guests: SuiteGuests, controller_fio: str | None) -> None:
        assert isinstance(guests, LocalGuests)
        self._check_guests(guests, controller_fio)

    def _detach(self, fleet: Any, storage: str, *, keep: bool) -> None:
        """Stop the workers' server, remove the volumes (kept with ``--keep`` until ``fleet destroy``)."""
        fleet.detach(storage, keep_volumes=keep)

    def _detach_note(self, keep: bool) -> str:
        return "workers and server stopped" + ("" if keep else ", volumes removed")

    def _done_note(self) -> str:
        return "not serving it or booting its workers"

    def _left(self, left: Any) -> str:
        return f"{len(left.processes)} processes and {len(left.volumes)} volumes left"

    def _check_guests(self, guests: LocalGuests, controller_fio: str | None) -> None:
        """Booted: every guest runs the controller's fio and names ``[suite] filename`` as its test disk."""
        found = guests.start()
        problems = []
        for g in found:
            ready = guests.ready.get(g.name, {})
            if controller_fio is not None and ready.get("fio") not in (None, controller_fio):
                problems.append(f"{g.name} runs {ready.get('fio')}, the controller {controller_fio}")
            if g.filename != self.suite.filename:
                problems.append(f"{g.name}'s test disk is {g.filename}, not [suite] filename {self.suite.filename}")
        if problems:
            raise GuestNotReady(f"side {guests.key}: " + "; ".join(problems) + ". Fix: run with --fio /usr/bin/fio "
                                "(the guest image's fio) and the filename the workers report")
