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
unless ``keep``, everything the fleet journaled is removed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.errors import GuestNotReady, MatrixError
from ...fleet.suiterun import WORKBOOK, FleetSuite, FleetSuiteOutcome
from ...journal import Journal
from ...suite import Suite
from ...suiterun import fio_version, run_suite, write_comparison
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

    def _fleet(self, run_dir: str, fio: str | None) -> tuple[Any, tuple[str, ...], str]:
        return LocalFleet(self.spec, run_dir, fio=fio), self.spec.storages, self.spec.power_cycle

    def run(self, run_dir: str | Path, *, fio: str = "fio", keep: bool = False, progress: bool = False,
            stream: Any = None, workbook: Path | None = None) -> FleetSuiteOutcome:
        """Deploy, run each storage as a side, write the comparison (``workbook``, by default
        ``RUN_DIR/comparison.xlsx``), remove everything (unless ``keep``: the volumes stay for ``fleet
        destroy``; the workers and servers cannot outlive the harness). Runs in the main thread (the
        processes' PR_SET_PDEATHSIG follows the thread that started them)."""
        stream = stream or sys.stderr
        run_dir = Path(run_dir)
        controller_fio = fio_version(fio)
        spec = self.spec
        with LocalFleet(spec, run_dir, fio=controller_fio) as fleet:
            outcome = FleetSuiteOutcome(fleet.fleet_id)
            outcome.vmids = fleet.deploy()
            for storage in spec.storages:
                side = replace(self.suite, side=SIDE_LABELS[storage], disk=spec.disk)
                side_dir = run_dir / storage
                journal = Journal(side_dir)
                done = journal.done_keys() if journal.path.exists() else set()
                if all(p.key in done for p in side.points()):
                    print(f"storage {storage}: every point is journaled; not serving it or booting its workers",
                          file=stream)
                    outcome.sides[storage] = None
                    fleet.detach(storage, keep_volumes=keep)  # a crash after the last point may have left them
                    continue
                plural = "s" if spec.workers > 1 else ""
                print(f"storage {storage}: serving {spec.workers} volume{plural} of {spec.disk_size // 2**20} MiB, "
                      f"booting {spec.workers} worker{plural} ({spec.disk.key})", file=stream)
                urls = fleet.attach(storage)
                assert fleet.image is not None
                guests = LocalGuests(side.settings(), storage, spec.disk, side_dir, fleet.image, spec.names(), urls,
                                     vcpus=spec.vcpus, memory_mib=spec.memory_mib, boot_timeout_s=spec.boot_timeout,
                                     fio=fio,
                                     storage=fleet.served(storage), on_start=fleet.on_vm_start(storage),
                                     cycle_points=spec.power_cycle == "point")
                with guests:
                    self._check_guests(guests, controller_fio)
                    outcome.sides[storage] = run_suite(side, side_dir, guests, fio=fio, progress=progress)
                print(f"storage {storage}: workers and server stopped"
                      + ("" if keep else ", volumes removed"), file=stream)
                fleet.detach(storage, keep_volumes=keep)
            if len(spec.storages) >= 2:
                a, b = spec.storages[:2]
                outcome.workbook = write_comparison((SIDE_LABELS[a], run_dir / a), (SIDE_LABELS[b], run_dir / b),
                                                    workbook or run_dir / WORKBOOK)
                print(f"comparison workbook: {outcome.workbook}", file=stream)
            if not keep:
                left = fleet.destroy()
                outcome.destroyed = left.empty
                print(f"fleet {fleet.fleet_id}: " + ("everything it created is gone" if left.empty else
                      f"{len(left.processes)} processes and {len(left.volumes)} volumes left; run fleet destroy"),
                      file=stream)
        return outcome

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
