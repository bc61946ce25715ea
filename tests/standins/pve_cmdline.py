"""The disks of a VM config as qemu-server puts them on QEMU's command line (PVE 8, the "drive era"):
the Proxmox stand-in's own source of truth for ``qm showcmd`` and for the QEMU it starts.

Written from qemu-server's own expectations, the ``src/test/cfg2cmd/*.conf`` / ``*.conf.cmd`` pairs of
proxmox/qemu-server (a copy lives in ``tests/data/qemu-server-cfg2cmd/drive-era/``), never from
stormatrix's code: if the product's builder or its reader of command lines is wrong, this is not wrong
with it. ``tests/harness/backends/proxmox/test_proxmox_standin.py`` checks this module against those pairs. What they show:

- drives are emitted bus by bus in qemu-server's order: ide, scsi, virtio, sata (``simple1-template``:
  scsi0 before sata0), each controller just before its first drive (``aio``: ``scsihw1`` before scsi7);
- ``-drive file=PATH,if=none,id=drive-KEY[,cache=X][,discard=on],format=raw[,cache=none],aio=A,
  detect-zeroes=unmap|on``: an explicit cache before discard, qemu-server's ``cache=none`` after the
  format when the disk has none, ``aio`` last but one (io_uring when unset on directory storage),
  ``detect-zeroes=unmap`` with ``discard=on`` and ``on`` without (``aio``, ``simple-btrfs``, ``ide``);
- SCSI: ``-device MODEL,id=scsihwN,bus=pci.0,addr=0x5`` (``0x6`` for the second, ``aio``; the third on
  bridge ``pci.4``, blockdev-era ``scsihw-lsi``), 7 disks per
  ``lsi``/``lsi53c810`` controller and 256 per other model; ``lsi``/``lsi53c810``/``pvscsi`` address a
  disk as ``scsi-id=UNIT``, ``virtio-scsi-pci``/``megasas`` as ``channel=0,scsi-id=0,lun=SLOT``
  (``aio``, ``simple1``, blockdev-era ``scsihw-*``); ``virtio-scsi-single``: one ``virtio-scsi-pci``
  ``virtioscsiN`` per disk on bridge ``pci.3`` (``bus=pci.0,addr=0x5``) at ``addr=N+1``;
- SATA: ``ahci,id=ahci0,multifunction=on,bus=pci.0,addr=0x7`` and ``ide-hd,bus=ahci0.SLOT`` (``simple1-template``);
- IDE: ``ide-hd``/``ide-cd,bus=ide.(SLOT/2),unit=(SLOT%2)`` (``ide``);
- virtio-blk: ``virtio-blk-pci,drive=drive-virtioN,id=virtioN,bus=pci.0,addr=0xa`` (``0xb`` for virtio1),
  ``iothread=iothread-virtioN`` with ``-object iothread,id=iothread-virtioN`` (``simple-virtio-blk``);
- ``bootindex=100+i`` for the i-th device of ``boot: order=``; an empty ``boot:`` gives none; with no
  ``boot`` and the legacy ``bootdisk`` the boot disk gets 100 and CD-ROMs 200, 201, ... (``bootorder``,
  ``bootorder-empty``, ``ide``); bridges ``pci.1``/``pci.2`` always (i440fx).

From qemu-server's code, where no pair shows it: ``iothread=1`` on ``virtio-scsi-single`` puts
``iothread=iothread-virtioscsiN`` on the controller with its ``-object``; qemu-server ignores
``iothread`` on every other SCSI model (with a warning); ``serial=`` goes on the ``-device`` (QEMU
removed ``-drive serial``). A slot whose PCI address no pair shows (virtio2 and up) is refused rather
than guessed.

The storage under a disk (its ``/etc/pve/storage.cfg`` section, ``storage_of``) changes two defaults,
as qemu-server's ``drive_uses_cache_direct`` / ``storage_allows_io_uring_default`` decide and the pairs
show: with no ``cache`` the disk gets ``cache=none`` except on ``btrfs`` without ``nocow``
(``simple-btrfs``: no cache at all); with no ``aio`` it gets ``io_uring`` except on ``lvm`` and
``cifs`` (and ``rbd`` with ``krbd`` when not O_DIRECT), where it gets ``native`` when O_DIRECT and
``threads`` when not (``simple-lvm``, ``simple-cifs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio)(\d+)$")
BUS_ORDER = ("ide", "scsi", "virtio", "sata")
#: qemu_drive_options of qemu-server that the pairs show before ``format`` (in this order)
_DRIVE_OPTIONS = ("media", "cache", "discard")
_VIRTIO_ADDR = {0: 0xA, 1: 0xB}
#: controller index -> (PCI bus, address); the third sits behind bridge pci.4 (blockdev-era scsihw-lsi)
_SCSIHW_ADDR = {0: (0, 0x5), 1: (0, 0x6), 2: (4, 0x1)}
#: bridge -> (its parent bus, address)
_BRIDGES = {1: (0, 0x1E), 2: (0, 0x1F), 3: (0, 0x5), 4: (1, 0x1C)}


class NoExpectation(Exception):
    """The config holds something the stand-in has no qemu-server expectation for."""


@dataclass(frozen=True)
class Drive:
    key: str
    bus: str
    slot: int
    volume: str  # the volume id, "none" or "cdrom"
    opts: dict[str, str]

    @property
    def cdrom(self) -> bool:
        return self.opts.get("media") == "cdrom"


def cache_direct(opts: Mapping[str, str], scfg: Mapping[str, object] | None) -> bool:
    """qemu-server ``drive_uses_cache_direct``: an explicit cache decides, else O_DIRECT but on btrfs
    without nocow."""
    if opts.get("cache"):
        return opts["cache"] in ("off", "none", "directsync")
    if opts.get("media") == "cdrom":
        return False
    return not (scfg is not None and scfg.get("type") == "btrfs" and not _on(scfg.get("nocow")))


def default_aio(opts: Mapping[str, str], scfg: Mapping[str, object] | None) -> str:
    """qemu-server ``aio_cmdline_option`` for a disk without ``aio``."""
    direct = cache_direct(opts, scfg)
    kind = scfg.get("type") if scfg is not None else "dir"
    uring = not (kind in ("lvm", "cifs") or (kind == "rbd" and _on(scfg and scfg.get("krbd")) and not direct))
    return "io_uring" if uring else "native" if direct else "threads"


def _on(value: object) -> bool:
    return str(value).lower() in ("1", "on", "yes", "true")


def drives(conf: Mapping[str, str]) -> list[Drive]:
    """The config's drives in the order qemu-server emits them."""
    out = []
    for key, value in conf.items():
        m = DRIVE_RE.match(key)
        if not m:
            continue
        volume, *rest = str(value).split(",")
        opts = dict(part.split("=", 1) if "=" in part else ("file", part) for part in rest)
        out.append(Drive(key, m.group(1), int(m.group(2)), volume, opts))
    return sorted(out, key=lambda d: (BUS_ORDER.index(d.bus), d.slot))


def boot_indexes(conf: Mapping[str, str], ordered: list[Drive]) -> dict[str, int]:
    boot = str(conf.get("boot", "")).strip()
    m = re.search(r"(?:^|,)order=([^,]*)", boot)
    if m:
        return {dev: 100 + i for i, dev in enumerate(d for d in m.group(1).split(";") if d)}
    if "boot" in conf and not boot:
        return {}  # an empty boot: no boot devices at all (bootorder-empty)
    if boot:
        raise NoExpectation(f"no qemu-server expectation checked for the legacy boot letters {boot!r}")
    out: dict[str, int] = {}
    if conf.get("bootdisk"):
        out[str(conf["bootdisk"])] = 100
    cds = [d.key for d in ordered if d.cdrom]
    out.update({key: 200 + i for i, key in enumerate(cds)})
    return out


def disk_args(conf: Mapping[str, str], volume_path: Callable[[str], Path | str], *,
              override: Mapping[str, Mapping[str, str | None]] | None = None,
              storage_of: Callable[[str], Mapping[str, object] | None] = lambda volid: None) -> list[str]:
    """``-object``/``-device``/``-drive`` arguments for every drive of ``conf`` (bridges included).

    ``override`` replaces options of some drives, None removing one (a launcher that models a
    qemu-server which drops an option); ``storage_of`` gives a volume's storage configuration (None:
    a directory storage)."""
    ordered = drives(conf)
    boot = boot_indexes(conf, ordered)
    scsihw = str(conf.get("scsihw") or "lsi")
    objects: list[str] = []
    bridges = {1, 2}
    body: list[str] = []
    controllers_done: set[str] = set()
    for d in ordered:
        opts = dict(d.opts)
        for name, value in (override or {}).get(d.key, {}).items():
            if value is None:
                opts.pop(name, None)
            else:
                opts[name] = value
        device, controller = _device(d, scsihw, opts, objects, bridges)
        if controller and controller[0] not in controllers_done:
            controllers_done.add(controller[0])
            body += ["-device", controller[1]]
        body += ["-drive", _drive(d, opts, volume_path, storage_of(d.volume)), "-device", _finish_device(device, d, opts, boot)]
    bridge_args: list[str] = []
    for k in sorted(bridges):
        parent, addr = _BRIDGES[k]
        bridge_args += ["-device", f"pci-bridge,id=pci.{k},chassis_nr={k},bus=pci.{parent},addr={addr:#x}"]
    return objects + bridge_args + body


def _drive(d: Drive, opts: Mapping[str, str], volume_path: Callable[[str], Path | str],
           scfg: Mapping[str, object] | None = None) -> str:
    parts = []
    if d.volume not in ("none", "cdrom"):
        parts.append(f"file={volume_path(d.volume)}")
    parts += ["if=none", f"id=drive-{d.key}"]
    parts += [f"{o}={opts[o]}" for o in _DRIVE_OPTIONS if o in opts]
    if d.volume not in ("none", "cdrom"):
        parts.append("format=" + ("qcow2" if d.volume.endswith(".qcow2") else "raw"))
        if "cache" not in opts and not d.cdrom and cache_direct(opts, scfg):
            parts.append("cache=none")
    parts.append(f"aio={opts.get('aio') or default_aio(opts, scfg)}")
    if not d.cdrom:
        parts.append("detect-zeroes=" + ("unmap" if opts.get("discard") == "on" else "on"))
    return ",".join(parts)


def _device(d: Drive, scsihw: str, opts: Mapping[str, str], objects: list[str],
            bridges: set[int]) -> tuple[str, tuple[str, str] | None]:
    """(the drive's -device text without its tail, (controller id, controller -device text) or None)."""
    kind = "cd" if d.cdrom else "hd"
    iothread = opts.get("iothread") in ("1", "on", "yes", "true")
    if d.bus == "ide":
        return f"ide-{kind},bus=ide.{d.slot // 2},unit={d.slot % 2}", None
    if d.bus == "sata":
        return f"ide-{kind},bus=ahci0.{d.slot}", ("ahci0", "ahci,id=ahci0,multifunction=on,bus=pci.0,addr=0x7")
    if d.bus == "virtio":
        if d.slot not in _VIRTIO_ADDR:
            raise NoExpectation(f"no qemu-server expectation for the PCI address of {d.key}")
        text = f"virtio-blk-pci,drive=drive-{d.key},id={d.key},bus=pci.0,addr={_VIRTIO_ADDR[d.slot]:#x}"
        if iothread:
            objects += ["-object", f"iothread,id=iothread-{d.key}"]
            text += f",iothread=iothread-{d.key}"
        return text, None
    if scsihw == "virtio-scsi-single":
        bridges.add(3)
        cid = f"virtioscsi{d.slot}"
        ctrl = f"virtio-scsi-pci,id={cid},bus=pci.3,addr={d.slot + 1:#x}"
        if iothread:
            objects += ["-object", f"iothread,id=iothread-{cid}"]
            ctrl += f",iothread=iothread-{cid}"
        return f"scsi-{kind},bus={cid}.0,channel=0,scsi-id=0,lun={d.slot}", (cid, ctrl)
    maxdev = 7 if scsihw.startswith("lsi") else 256
    index, unit = divmod(d.slot, maxdev)
    if index not in _SCSIHW_ADDR:
        raise NoExpectation(f"no qemu-server expectation for a fourth {scsihw} controller ({d.key})")
    cid = f"scsihw{index}"
    bus, addr = _SCSIHW_ADDR[index]
    if bus:
        bridges.add(bus)
    ctrl = f"{scsihw},id={cid},bus=pci.{bus},addr={addr:#x}"
    if scsihw in ("lsi", "lsi53c810", "pvscsi"):
        return f"scsi-{kind},bus={cid}.0,scsi-id={unit}", (cid, ctrl)
    return f"scsi-{kind},bus={cid}.0,channel=0,scsi-id=0,lun={d.slot}", (cid, ctrl)


def _finish_device(text: str, d: Drive, opts: Mapping[str, str], boot: Mapping[str, int]) -> str:
    if d.bus != "virtio":
        text += f",drive=drive-{d.key},id={d.key}"
    if opts.get("serial"):
        text += f",serial={opts['serial']}"
    if d.key in boot:
        text += f",bootindex={boot[d.key]}"
    return text


def disk_options(argv: list[str], key: str) -> dict[str, str]:
    """The ``-drive`` options of drive ``key`` in ``argv`` (what a test reads back)."""
    for flag, value in zip(argv, argv[1:]):
        if flag == "-drive" and f",id=drive-{key}," in f",{value},":
            return dict(p.split("=", 1) for p in value.split(",") if "=" in p)
    raise KeyError(key)
