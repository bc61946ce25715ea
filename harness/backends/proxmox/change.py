"""The minimal change of a Proxmox VM config for one cell, and the way back.

Pure functions over plain dicts (the shape ``GET .../config`` returns), so the dangerous part of the
Proxmox backend — deciding which keys to delete and set — is unit-tested without a server:

- a disk moves between buses by re-referencing its volume: ``delete=<old key>`` without ``force``
  (the volume becomes ``unusedN``), then ``<new key>=<volume>,<options>`` (Proxmox drops the matching
  ``unusedN`` itself). ``unusedN`` keys are never deleted here: that destroys the volume.
- deleting a disk drops it from ``boot: order=...``; the plan re-sets ``boot`` when that happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...core.errors import UnsafeChange
from ...core.model import DiskConfig
from .drives import (DRIVE_KEY_RE, UNUSED_KEY_RE, drive_for, drive_key, find_volume, parse_drive,
                     print_drive, split_drive_key, volume_of)

# --- boot order ---------------------------------------------------------------------------------------


def boot_order(value: str | None) -> list[str] | None:
    """The device list of ``boot: order=a;b``; None for the legacy ``boot: cdn`` form or no boot key."""
    if not value:
        return None
    for part in value.split(","):
        k, eq, v = part.partition("=")
        if eq and k.strip() == "order":
            return [d for d in v.split(";") if d]
    return None


def boot_renamed(original: str | None, old: str, new: str) -> str | None:
    """``boot`` as it should read with the test disk at ``new`` instead of ``old``."""
    order = boot_order(original)
    if original is None or order is None or old not in order or old == new:
        return original
    parts = []
    for part in original.split(","):
        k, eq, _ = part.partition("=")
        if eq and k.strip() == "order":
            part = "order=" + ";".join(new if d == old else d for d in order)
        parts.append(part)
    return ",".join(parts)


# --- the plan ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Write:
    """One ``PUT .../config``: keys to set and keys to delete (never ``unusedN``, never with ``force``)."""

    set: dict[str, str] = field(default_factory=dict)
    delete: tuple[str, ...] = ()

    def params(self) -> dict[str, str]:
        p = dict(self.set)
        if self.delete:
            p["delete"] = ",".join(self.delete)
        return p

    def __bool__(self) -> bool:
        return bool(self.set or self.delete)


@dataclass(frozen=True)
class ChangePlan:
    """The writes that take the VM from its current config to the target, in order.

    A bus move is two writes: first the delete (the volume becomes ``unusedN``), then the new key, each
    with the digest of the config it was computed from. ``boot`` and ``scsihw`` ride on the last one.
    """

    target_key: str
    writes: tuple[Write, ...]
    bus_move: bool

    @property
    def empty(self) -> bool:
        return not any(self.writes)

    def touched(self) -> set[str]:
        keys: set[str] = set()
        for w in self.writes:
            keys |= set(w.set) | set(w.delete)
        return keys


def _check_write(write: Write) -> Write:
    for key in write.delete:
        if UNUSED_KEY_RE.match(key):
            raise UnsafeChange(f"refusing to delete {key}: deleting an unusedN entry destroys its volume")
    for key in write.set:
        if UNUSED_KEY_RE.match(key):
            raise UnsafeChange(f"refusing to write {key}: unusedN entries are Proxmox's own bookkeeping")
    return write


def _occupant_problem(config: Mapping[str, Any], key: str, volid: str) -> str | None:
    if key not in config:
        return None
    try:
        vol = volume_of(str(config[key]))
    except ValueError:
        vol = str(config[key])
    if vol != volid:
        return (f"{key} already holds {vol!r}, not the test volume {volid!r}: the test disk cannot move "
                f"there. Choose another [matrix] disk_slot or free {key}")
    return None


def plan_target(config: Mapping[str, Any], volid: str, target_key: str, want: str,
                *, scsihw: str | None, boot: str | None, set_scsihw: bool) -> ChangePlan:
    """The minimal writes that leave ``volid`` attached at ``target_key`` with the drive string ``want``.

    ``scsihw``/``boot``: the values they must end with (None = key absent) when ``set_scsihw`` /
    the boot order is concerned.
    The volume may currently sit on any disk key or in ``unusedN`` (after a crash between the two
    writes of a move); it is never detached with ``force`` and ``unusedN`` is never deleted.
    """
    split_drive_key(target_key)
    if volume_of(want) != volid:
        raise UnsafeChange(f"internal error: {target_key}={want!r} does not reference the test volume {volid!r}")
    problem = _occupant_problem(config, target_key, volid)
    if problem:
        raise UnsafeChange(problem)
    where = find_volume(config, volid)
    disks = [k for k in where if DRIVE_KEY_RE.match(k)]
    if not where:
        raise UnsafeChange(f"volume {volid!r} is not referenced by the VM config any more (neither as a "
                           "disk nor as unusedN): refusing to touch the VM. Check the storage for the volume")
    if len(disks) > 1:
        raise UnsafeChange(f"volume {volid!r} is attached twice ({', '.join(disks)}); fix the VM config by hand")

    first = Write()
    others = [k for k in disks if k != target_key]
    bus_move = bool(others)
    if others:
        first = _check_write(Write(delete=tuple(others)))

    sets: dict[str, str] = {}
    deletes: list[str] = []
    if config.get(target_key) != want or bus_move:
        sets[target_key] = want
    if set_scsihw:
        current = config.get("scsihw")
        if scsihw is None and current is not None:
            deletes.append("scsihw")
        elif scsihw is not None and current != scsihw:
            sets["scsihw"] = scsihw
    # After the delete, Proxmox has dropped the old key from the boot order: compare with what it will be.
    current_boot = config.get("boot")
    if bus_move:
        current_boot = boot_without(current_boot, others)
    if boot != current_boot:
        if boot is None:
            deletes.append("boot")
        else:
            sets["boot"] = boot
    second = _check_write(Write(set=sets, delete=tuple(deletes)))
    writes = tuple(w for w in (first, second) if w)
    return ChangePlan(target_key=target_key, writes=writes, bus_move=bus_move)


def boot_without(value: str | None, keys: list[str]) -> str | None:
    """``boot`` after Proxmox removed deleted disks from its order (None when nothing remains)."""
    order = boot_order(value)
    if value is None or order is None or not any(k in order for k in keys):
        return value
    parts = []
    for part in value.split(","):
        k, eq, _ = part.partition("=")
        if eq and k.strip() == "order":
            rest = [d for d in order if d not in keys]
            if not rest:
                continue
            part = "order=" + ";".join(rest)
        parts.append(part)
    return ",".join(parts) or None


def plan_cell(config: Mapping[str, Any], original: Mapping[str, Any], test_key: str, disk: DiskConfig,
              slot: int) -> ChangePlan:
    """Writes for one matrix cell, from the config as it is now.

    The test disk's options start from the *original* options (so nothing a cell changed leaks into
    the next), restricted to the new bus. ``boot`` keeps the original order with the test disk renamed.
    """
    volid = volume_of(str(original[test_key]))
    target = drive_key(disk.bus, slot)
    split_drive_key(target)
    opts = drive_for(disk, parse_drive(str(original[test_key])))
    return plan_target(config, volid, target, print_drive(opts), scsihw=disk.scsihw, set_scsihw=disk.bus == "scsi",
                       boot=boot_renamed(original.get("boot"), test_key, target))


# Keys the harness may change; restore puts exactly these back (the test disk's keys come on top).
RESTORED_KEYS = ("scsihw", "boot")


def plan_restore(config: Mapping[str, Any], original: Mapping[str, Any], test_key: str) -> ChangePlan:
    """Writes that put the test disk back on its original key with its original options, and
    ``scsihw``/``boot`` back to their original values (absent keys deleted)."""
    volid = volume_of(str(original[test_key]))
    # The exact original text, even where Proxmox's canonical order would differ (hand-edited files).
    return plan_target(config, volid, test_key, str(original[test_key]), scsihw=original.get("scsihw"),
                       set_scsihw=True, boot=original.get("boot"))


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any],
                ignore: frozenset[str] = frozenset({"digest"})) -> dict[str, tuple[Any, Any]]:
    """Keys whose values differ between two configs: ``key -> (a value, b value)`` (None = absent)."""
    keys = (set(a) | set(b)) - ignore
    return {k: (a.get(k), b.get(k)) for k in sorted(keys) if a.get(k) != b.get(k)}
