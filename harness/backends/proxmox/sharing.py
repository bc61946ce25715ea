"""Which of the VM's other disks a cell's test disk shares its controller with, or moves.

Proxmox has ONE ``scsihw`` per VM (the ``scsihw`` key of ``/nodes/{node}/qemu/{vmid}/config``): every
``scsiN`` device sits on that controller model. A SCSI-controller cell sets ``scsihw`` to its own model,
so a boot disk on ``scsi0`` moves with it: a Windows guest without that model's boot driver stops with
INACCESSIBLE_BOOT_DEVICE (and the user sees only "WinRM did not answer"); with the driver, the boot
disk's I/O runs through the measured controller. So a matrix whose SCSI cells would move or share
another disk is refused before anything changes, unless ``[proxmox] allow_shared_scsihw = true``, and
every cell's record names the disks that share its controller.

Controller instances as qemu-server assigns them (``PVE::QemuServer``, ``print_drivedevice_full``):

- SCSI: ``int(index / maxdev)`` with 7 disks per ``lsi``/``lsi53c810`` controller and 256 per other
  model, except ``virtio-scsi-single``, which gives every disk a controller of its own;
- SATA: one AHCI controller (``ahci0``) for ``sata0``-``sata5``;
- IDE: two disks per IDE bus (``ide0``/``ide1`` on ``ide.0``, ``ide2``/``ide3`` on ``ide.1``);
- virtio-blk: every disk is its own PCI device, shared with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...core.model import CONTROLLERS, SCSIHW_DISKS_PER_CONTROLLER, DiskConfig
from .change import boot_order
from .drives import DEFAULT_SCSIHW, DRIVE_KEY_RE, is_cdrom, parse_drive, split_drive_key

#: disks per controller instance on the buses whose controller holds several
_PER_CONTROLLER = {"sata": 6, "ide": 2}


@dataclass(frozen=True)
class OtherDevice:
    """A drive of the VM other than the test disk, as the original config has it."""

    key: str
    volume: str
    cdrom: bool
    boot: bool  # in the boot order

    def describe(self) -> str:
        kind = "CD-ROM" if self.cdrom else ("boot disk" if self.boot else "disk")
        return f"{self.key} ({kind}, {self.volume})"


def other_devices(config: Mapping[str, Any], test_key: str) -> list[OtherDevice]:
    """Every drive key of ``config`` but the test disk, in slot order."""
    order = boot_order(config.get("boot")) or []
    out = []
    for key in sorted((k for k in config if DRIVE_KEY_RE.match(k) and k != test_key),
                      key=lambda k: (split_drive_key(k)[0], split_drive_key(k)[1])):
        opts = parse_drive(str(config[key]))
        out.append(OtherDevice(key, opts.get("file", "?"), is_cdrom(opts) or opts.get("file") in ("none", "cdrom"),
                               key in order))
    return out


def _instance(bus: str, scsihw: str | None, slot: int) -> int | None:
    """The controller instance a disk at ``bus``/``slot`` sits on; None where every disk has its own."""
    if bus == "scsi":
        per = SCSIHW_DISKS_PER_CONTROLLER.get(scsihw or DEFAULT_SCSIHW, 7)
        return None if per == 1 else slot // per
    if bus in _PER_CONTROLLER:
        return slot // _PER_CONTROLLER[bus]
    return None


def sharing(disk: DiskConfig, slot: int, original: Mapping[str, Any], test_key: str, *,
            scsihw_now: str | None = None) -> dict[str, Any]:
    """What a cell does to the VM's other drives: ``shares`` (same controller instance as the test disk)
    and ``moves`` (SCSI drives on another controller model than the VM had), for the record and the check.

    ``scsihw_now``: the running VM's ``scsihw`` when known. A cell on another bus leaves ``scsihw`` as
    the cell before set it, so the boot disk may sit on a model it never had during a SATA cell too."""
    bus = CONTROLLERS[disk.controller][0]
    before = str(original.get("scsihw") or DEFAULT_SCSIHW)
    now = disk.scsihw if bus == "scsi" else (scsihw_now or before)
    shares: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    mine = _instance(bus, now if bus == "scsi" else None, slot)
    for dev in other_devices(original, test_key):
        dev_bus, dev_slot = split_drive_key(dev.key)
        entry = {"key": dev.key, "volume": dev.volume, "cdrom": dev.cdrom, "boot": dev.boot}
        if dev_bus == "scsi" and now != before:
            moves.append({**entry, "from": before, "to": now})
        if dev_bus == bus and mine is not None and _instance(bus, now if bus == "scsi" else None, dev_slot) == mine:
            shares.append(entry)
    return {"controller": disk.controller, "shares": shares, "moves": moves}


def refused(controllers: list[str], slot: int, original: Mapping[str, Any], test_key: str) -> dict[str, list[str]]:
    """SCSI controllers of the matrix whose cells would move or share another disk (CD-ROMs aside):
    controller -> the disks' descriptions."""
    devices = {d.key: d for d in other_devices(original, test_key)}
    out: dict[str, list[str]] = {}
    for ctrl in controllers:
        if CONTROLLERS[ctrl][0] != "scsi":
            continue
        probe = DiskConfig(ctrl, None, None, None)
        effect = sharing(probe, slot, original, test_key)
        hit = sorted({e["key"] for e in effect["moves"] + effect["shares"] if not e["cdrom"]})
        if hit:
            out[ctrl] = [devices[k].describe() for k in hit]
    return out


def refusal_message(vmid: int, found: dict[str, list[str]], original: Mapping[str, Any]) -> tuple[str, str]:
    """(problem, fix) for :class:`~stormatrix.core.errors.MatrixError`."""
    before = str(original.get("scsihw") or DEFAULT_SCSIHW)
    disks = sorted({d for ds in found.values() for d in ds})
    moved = [c for c in found if CONTROLLERS[c][1] != before]
    shared = [c for c in found if c not in moved]
    parts = []
    if moved:
        parts.append(f"the cells on {', '.join(moved)} would move it from scsihw = {before} to their controller "
                     "(scsihw is one setting per VM; a Windows guest without that controller's boot driver stops "
                     "with INACCESSIBLE_BOOT_DEVICE)")
    if shared:
        parts.append(f"the cells on {', '.join(shared)} would measure the test disk on the controller it shares")
    problem = (f"VM {vmid} has {', '.join(disks)} on its SCSI controller besides the test disk: " + "; ".join(parts))
    fix = ("move that disk to sata, ide or virtio in the VM (qm set / the web UI's Detach + Edit, then fix the boot "
           "order), or drop " + ", ".join(found) + " from [matrix] controllers, or set [proxmox] "
           "allow_shared_scsihw = true to accept it (each cell's record then names the disks that share its "
           "controller)")
    return problem, fix
