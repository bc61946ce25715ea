"""Proxmox disk values as data: drive property strings, the options each bus has, a cell's drive.

A drive value is a *property string*: the volume first (the schema's ``default_key`` ``file``), then
``key=value`` options. Proxmox prints the default key first and the rest sorted by name
(``PVE::JSONSchema::print_property_string``); :func:`print_drive` does the same so that a restored
value is byte-identical and the config digest comes back unchanged.

Options differ per bus (``iothread`` exists on scsi/virtio only, ``queues``/``ro``/``product``/
``vendor``/``scsiblock`` on scsi, ``model`` on ide, ``ssd``/``wwn`` not on virtio). Moving a disk keeps
only the options the new bus's schema has; :data:`BUS_OPTIONS` is checked against
``pve-api-qemu.json`` by a test.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ...core.errors import UnsafeChange
from ...core.model import BUS_MAX_SLOTS, DiskConfig, iothread_effective
from .storage import StorageInfo, effective_aio, storage_id_of, storage_implications

# Options of each bus's drive format in the API schema (aliases left out; see the module docstring).
_COMMON = frozenset(
    "aio backup bps bps_max_length bps_rd bps_rd_max_length bps_wr bps_wr_max_length cache "
    "detect_zeroes discard file format import-from iops iops_max iops_max_length iops_rd iops_rd_max "
    "iops_rd_max_length iops_wr iops_wr_max iops_wr_max_length mbps mbps_max mbps_rd mbps_rd_max "
    "mbps_wr mbps_wr_max media replicate rerror serial shared size snapshot werror".split())
BUS_OPTIONS: dict[str, frozenset[str]] = {
    "ide": _COMMON | {"model", "ssd", "wwn"},
    "sata": _COMMON | {"ssd", "wwn"},
    "scsi": _COMMON | {"iothread", "product", "queues", "ro", "scsiblock", "ssd", "vendor", "wwn"},
    "virtio": _COMMON | {"iothread", "ro"},
}
# Alias -> canonical option name (identical on every bus).
DRIVE_ALIASES = {"volume": "file", "bps_rd_length": "bps_rd_max_length", "bps_wr_length": "bps_wr_max_length",
                 "iops_rd_length": "iops_rd_max_length", "iops_wr_length": "iops_wr_max_length"}
BOOLEAN_OPTIONS = frozenset({"backup", "detect_zeroes", "iothread", "replicate", "ro", "scsiblock", "shared",
                             "snapshot", "ssd"})

DRIVE_KEY_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$")
UNUSED_KEY_RE = re.compile(r"^unused(\d+)$")
# qemu-server's aio default on a directory storage (PVE 7.0 on); other storages differ:
# storage.default_aio. And the schema's default for scsihw.
DEFAULT_AIO = "io_uring"
DEFAULT_SCSIHW = "lsi"


def parse_bool(value: str | int | bool) -> bool:
    """Proxmox's boolean parser (``PVE::JSONSchema::parse_boolean``)."""
    text = str(value).strip().lower()
    if text in ("1", "on", "yes", "true"):
        return True
    if text in ("0", "off", "no", "false"):
        return False
    raise ValueError(f"{value!r} is not a boolean")


def parse_drive(value: str) -> dict[str, str]:
    """``local:100/vm-100-disk-1.raw,aio=native,cache=none`` -> ``{"file": ..., "aio": ..., ...}``.

    Keeps values as text (what the API speaks), resolves aliases, and rejects a second volume or a
    repeated option, as Proxmox's property-string parser does.
    """
    out: dict[str, str] = {}
    for part in value.split(","):
        if not part:
            continue
        if "=" in part:
            k, _, v = part.partition("=")
            k = DRIVE_ALIASES.get(k.strip(), k.strip())
        else:
            k, v = "file", part
        if k in out:
            raise ValueError(f"duplicate key in drive string: {k}")
        out[k] = v
    if "file" not in out:
        raise ValueError(f"drive string without a volume: {value!r}")
    return out


def print_drive(opts: Mapping[str, Any]) -> str:
    """The inverse of :func:`parse_drive`, in Proxmox's order: volume first, then options sorted."""
    parts = [str(opts["file"])]
    parts += [f"{k}={opts[k]}" for k in sorted(opts) if k != "file"]
    return ",".join(parts)


def drive_key(bus: str, slot: int) -> str:
    return f"{bus}{slot}"


def split_drive_key(key: str) -> tuple[str, int]:
    m = DRIVE_KEY_RE.match(key)
    if not m:
        raise ValueError(f"{key!r} is not a disk key (ide0-3, sata0-5, scsi0-30, virtio0-15)")
    bus, slot = m.group(1), int(m.group(2))
    if slot >= BUS_MAX_SLOTS[bus]:
        raise ValueError(f"{key!r}: the {bus} bus has slots 0-{BUS_MAX_SLOTS[bus] - 1}")
    return bus, slot


def is_cdrom(opts: Mapping[str, str]) -> bool:
    return opts.get("media") == "cdrom"


def volume_of(value: str) -> str:
    return parse_drive(value)["file"]


def find_volume(config: Mapping[str, Any], volid: str) -> list[str]:
    """Every key (disk or ``unusedN``) that references ``volid``, disks first."""
    disks: list[str] = []
    unused: list[str] = []
    for key, value in config.items():
        if DRIVE_KEY_RE.match(key) or UNUSED_KEY_RE.match(key):
            try:
                vol = volume_of(str(value))
            except ValueError:
                continue
            if vol == volid:
                (unused if key.startswith("unused") else disks).append(key)
    return sorted(disks) + sorted(unused)


def controller_of(bus: str, scsihw: str | None) -> str:
    if bus == "scsi":
        return scsihw or DEFAULT_SCSIHW
    return {"ide": "ide", "sata": "sata", "virtio": "virtio-blk"}[bus]


def disk_config_of(config: Mapping[str, Any], key: str, storage: StorageInfo | None = None) -> DiskConfig:
    """What the disk at ``key`` is, in matrix terms. An unset aio is what qemu-server chooses for the
    disk's ``storage`` (None: a directory storage's io_uring); an unset cache stays ``default``."""
    bus, _ = split_drive_key(key)
    opts = parse_drive(str(config[key]))
    iothread = "iothread" in BUS_OPTIONS[bus] and parse_bool(opts.get("iothread", "0"))
    cache = opts.get("cache", "default")
    return DiskConfig(controller=controller_of(bus, config.get("scsihw")),
                      aio=effective_aio(storage, opts.get("aio"), cache), iothread=iothread, cache=cache)


def drive_for(disk: DiskConfig, base: Mapping[str, str]) -> dict[str, str]:
    """The options of the test disk on ``disk.bus`` for this cell, keeping every other option of ``base``
    that the new bus has (serial, size, discard, throttling...): the one builder of a Proxmox test disk's
    drive value, for the backend's cells and the fleet's volumes alike.

    ``iothread=1`` is written only where qemu-server gives the disk an iothread: virtio-blk, and SCSI on
    ``virtio-scsi-single``. On any other SCSI model the API takes it but qemu-server ignores it with a
    warning (qemu-server's cfg2cmd expectations show an iothread object only for those two), so a
    config saying ``iothread=1`` there would claim an iothread QEMU does not have: refused, like
    ``iothread`` on ide/sata, whose schema has no such option."""
    bus = disk.bus
    if bus not in BUS_OPTIONS:
        raise UnsafeChange(f"controller {disk.controller!r} does not exist on Proxmox")
    if disk.aio is None or disk.cache is None:  # DiskConfig.controller_only: an ESXi controller
        raise UnsafeChange(f"controller {disk.controller!r} has no aio/cache setting to give a Proxmox disk")
    opts = {k: v for k, v in base.items() if k in BUS_OPTIONS[bus]}
    opts["aio"] = disk.aio
    if disk.cache == "default":
        opts.pop("cache", None)
    else:
        opts["cache"] = disk.cache
    if disk.iothread and "iothread" not in BUS_OPTIONS[bus]:
        raise UnsafeChange(f"iothread does not exist on the {bus} bus")
    if disk.iothread and not iothread_effective(disk.controller):
        raise UnsafeChange(f"iothread has no effect on {disk.controller}: qemu-server ignores it there (only "
                           "virtio-blk and virtio-scsi-single get an iothread)")
    if disk.iothread:
        opts["iothread"] = "1"
    else:
        opts.pop("iothread", None)
    return opts


def disk_storage(config: Mapping[str, Any], key: str,
                 storages: Mapping[str, Mapping[str, Any]] | list[Mapping[str, Any]]) -> StorageInfo | None:
    """The storage under the disk at ``key``: ``storages`` is ``GET /storage``'s list (each entry with
    ``storage`` and ``type``) or a mapping storage id -> its config. None for a path (passthrough) or a
    storage the list does not have."""
    sid = storage_id_of(volume_of(str(config[key])))
    if sid is None:
        return StorageInfo(None)
    table = storages if isinstance(storages, Mapping) else {str(s.get("storage")): s for s in storages}
    scfg = table.get(sid)
    return StorageInfo.from_config(sid, scfg) if scfg is not None else None


def describe_test_disk(config: Mapping[str, Any], key: str,
                       storages: Mapping[str, Mapping[str, Any]] | list[Mapping[str, Any]]) -> dict[str, Any]:
    """Which storage the test disk is on and what that implies, for ``plan`` and the environment facts:
    the storage label, qemu-server's aio/O_DIRECT defaults there, and notes (librbd takes no aio, io_uring
    avoided on LVM/CIFS/krbd, btrfs without O_DIRECT)."""
    opts = parse_drive(str(config[key]))
    info = disk_storage(config, key, storages)
    return {"test_disk": key, "volume": opts["file"], **storage_implications(info, opts.get("cache"))}
