"""A matrix expanded into its cells: the cross product of the ``[matrix]`` axes x the workloads x the repeats,
minus what cannot or need not run, each skip with its reason. Cells that cannot exist are rejected here, at
plan time, never discovered hours into a run:

- ``aio=native`` needs O_DIRECT (``cache=none``/``directsync``/unset); QEMU refuses to start
  otherwise. Such a combination is an error unless ``matrix.skip_invalid = true``.
- ``iothread`` only takes effect on virtio-blk and virtio-scsi-single; elsewhere Proxmox ignores it,
  so the iothread=true twin of such a cell would only duplicate its iothread=false sibling. Those
  twins are always skipped, with that reason, never run.
- bus limits (ide0-3, sata0-5, scsi0-30, virtio0-15; 7 disks per LSI controller).
- controllers the backend cannot build, or the guest OS has no driver for (the Windows rules are
  :mod:`stormatrix.guestdrivers`'s).
- ESXi has no aio, iothread or cache setting: its controllers are planned once each, as the controller
  alone (aio, iothread and cache None), whatever those axes list; the plan says so in a note.

The matrix it expands is a :class:`~stormatrix.spec.MatrixSpec`, validated by :mod:`stormatrix.spec`, which also
holds what ``plan`` and ``run`` check before expanding (:func:`~stormatrix.spec.check_guest_backend`).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable

from .core.errors import MatrixError
from .core.model import (BUS_MAX_SLOTS, CONTROLLERS, Cell, DiskConfig, Plan, SkippedCell, disk_options_apply,
                         iothread_effective, native_aio_problem)
from .guestdrivers import declared_guest_drivers, plan_skip_reason, windows_notes
from .spec import MatrixSpec

# backends whose SCSI disks sit at lun=<slot> (qemu-server's DriveDevice.pm; the local backend builds
# the same device strings)
LUN_AT_SLOT_BACKENDS = ("qemu", "proxmox")


def _combination_problem(d: DiskConfig) -> tuple[str, str] | None:
    """(problem, fix) for a disk configuration QEMU or Proxmox cannot run, else None."""
    problem = native_aio_problem(d.aio, d.cache)
    if problem:
        return (problem,
                "use cache = \"none\" or \"directsync\" with aio=native, or remove 'native' from [matrix] aio"
                " (or set [matrix] skip_invalid = true to skip such cells)")
    return None


def expand(spec: MatrixSpec, *, backend_controllers: Iterable[str] | None = None,
           guest_drivers: Iterable[str] | None = None) -> Plan:
    """The cross product of the matrix axes, minus what cannot or need not run (with reasons)."""
    m, path = spec.matrix, spec.path
    allowed = set(backend_controllers) if backend_controllers is not None else None
    cells: list[Cell] = []
    skipped: list[SkippedCell] = []
    slot = m["disk_slot"]
    for ctrl in m["controllers"]:
        bus = CONTROLLERS[ctrl][0]
        if allowed is not None and ctrl not in allowed:
            raise MatrixError(path, "[matrix] controllers",
                              f"{ctrl!r} is not available on the {spec.run['backend']} backend",
                              f"use one of: {', '.join(sorted(allowed))}")
        if bus in BUS_MAX_SLOTS and slot >= BUS_MAX_SLOTS[bus]:
            raise MatrixError(path, "[matrix] disk_slot",
                              f"slot {slot} does not exist on the {bus} bus ({bus}0-{bus}{BUS_MAX_SLOTS[bus] - 1})",
                              f"use a disk_slot below {BUS_MAX_SLOTS[bus]} or drop {ctrl!r}")
    declared = declared_guest_drivers(spec)
    drivers = None if declared is None and guest_drivers is None else set(declared or ()) | set(guest_drivers or ())
    disks, notes = _disk_configs(spec)
    notes += windows_notes(spec, drivers)
    for d in disks:
        ctrl, iothread = d.controller, d.iothread
        problem = _combination_problem(d)
        if problem:
            if not m["skip_invalid"]:
                raise MatrixError(path, "[matrix] aio/cache", problem[0], problem[1])
            skipped.append(SkippedCell(d, None, problem[0]))
            continue
        if iothread and not iothread_effective(ctrl):
            skipped.append(SkippedCell(d, None, f"iothread has no effect on {ctrl}: Proxmox ignores it "
                                       "(only virtio-blk and virtio-scsi-single use an iothread); "
                                       "the iothread=false cell measures the same thing"))
            continue
        if (ctrl == "megasas" and slot > 0 and spec.run["guest_os"] == "linux"
                and spec.run["backend"] in LUN_AT_SLOT_BACKENDS):
            skipped.append(SkippedCell(d, None, f"megasas puts scsi{slot} at LUN {slot} (qemu-server and the local "
                                       "backend attach it with lun=<slot>); a Linux guest finds no disk there "
                                       "without a LUN 0 (measured with the local guest): use disk_slot = 0"))
            continue
        reason = plan_skip_reason(ctrl, drivers) if spec.run["guest_os"] == "windows2022" else None
        if reason:
            skipped.append(SkippedCell(d, None, reason))
            continue
        for w in spec.workloads:
            for r in range(1, spec.run["repeats"] + 1):
                cells.append(Cell(d, w, r))
    if not cells:
        reasons = "; ".join(sorted({s.reason for s in skipped})) or "the matrix is empty"
        raise MatrixError(path, "[matrix]", f"no cell can run ({reasons})",
                          "widen the matrix axes so at least one combination is valid")
    return Plan(cells=cells, skipped=skipped, notes=notes)


def _disk_configs(spec: MatrixSpec) -> tuple[list[DiskConfig], list[str]]:
    """The disk configurations in plan order (controller by controller), and a note where the matrix's
    aio/iothread/cache axes do not apply.

    A controller without those settings (ESXi: :func:`~stormatrix.core.model.disk_options_apply`) is one
    configuration, the controller alone, however many aio, iothread and cache values the matrix lists:
    crossing it with them would measure the same disk once per value under names it never had.
    """
    m, backend = spec.matrix, spec.run["backend"]
    disks: list[DiskConfig] = []
    plain: list[str] = []
    for ctrl in m["controllers"]:
        if disk_options_apply(ctrl, backend):
            disks += [DiskConfig(ctrl, aio, iothread, cache)
                      for aio, iothread, cache in itertools.product(m["aio"], m["iothread"], m["cache"])]
        else:
            disks.append(DiskConfig.controller_only(ctrl))
            plain.append(ctrl)
    raw: dict[str, Any] = spec.raw["matrix"] if isinstance(spec.raw.get("matrix"), dict) else {}
    given = [k for k in ("aio", "iothread", "cache") if k in raw]
    notes = []
    if plain and given:
        asked = "; ".join(f"{k} = {', '.join(str(v).lower() for v in m[k])}" for k in given)
        others = "; the other controllers are crossed with them" if len(plain) < len(m["controllers"]) else ""
        notes.append(f"[matrix] {'/'.join(given)} ({asked}) do not apply to {', '.join(plain)}: ESXi has no aio, "
                     f"iothread or cache setting for a virtual disk, so each is planned once, as the controller "
                     f"alone (keys like {plain[0]}/{spec.workloads[0].name}/rep1; the journal records aio, iothread "
                     f"and cache as null), not once per value{others}. Leave {', '.join(given)} out of [matrix] "
                     "to silence this note.")
    return disks, notes
