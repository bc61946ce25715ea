"""The ``qm showcmd`` reader and the local backend against qemu-server's own expectations.

``tests/data/qemu-server-cfg2cmd/`` holds
qemu-server's ``src/test/cfg2cmd`` pairs of two eras: a VM config (``X.conf``) and the exact command
line qemu-server prints for it (``X.conf.cmd``). The storages those configs name are defined in
qemu-server's ``src/test/run_config2command_tests.pl`` (``$base_env->{storage_config}``):
:data:`STORAGES` below is that table, as data.

Checked for every disk of every config that has a ``.cmd``:

1. the reader (``backends/proxmox/cmdline.py``, ``read_disk``) recovers controller, aio, cache mode and O_DIRECT, and
   iothread as qemu-server wrote them — cross-checked with a second, deliberately naive reading of
   the raw text in this file;
2. qemu-server's rules for unset aio/cache per storage type (``backends/proxmox/storage.py``) predict exactly what
   the ``.cmd`` has;
3. the cell the disk is (``cmdline_problems``) matches its own command line, and a cell differing in
   aio or in O_DIRECT does not.

And the local qemu backend's test-disk devices equal qemu-server's for every controller it builds.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stormatrix.backends.proxmox.cmdline import cmdline_problems, read_disk
from stormatrix.backends.proxmox.drives import (DEFAULT_AIO, DRIVE_KEY_RE, controller_of, describe_test_disk,
                                                disk_config_of, disk_storage, parse_drive, split_drive_key)
from stormatrix.backends.proxmox.storage import (StorageInfo, default_aio, storage_id_of, storage_implications,
                                                 takes_aio, uses_cache_direct)
from stormatrix.backends.qemu.backend import QemuBackend
from stormatrix.backends.qemu.devices import disk_devices
from stormatrix.core.model import AIO_MODES, DiskConfig
import paths

REF = paths.DATA / "qemu-server-cfg2cmd"

# qemu-server src/test/run_config2command_tests.pl, $base_env->{storage_config}{ids}: id -> (type, krbd, nocow)
STORAGES: dict[str, tuple[str, bool, bool]] = {
    "local": ("dir", False, False), "localsnapext": ("dir", False, False), "noimages": ("dir", False, False),
    "btrfs-store": ("btrfs", False, False), "cifs-store": ("cifs", False, False), "rbd-store": ("rbd", False, False),
    "krbd-store": ("rbd", True, False), "zfs-over-iscsi-store": ("zfs", False, False),
    "lvm-store": ("lvm", False, False), "local-lvm": ("lvmthin", False, False),
}
ERAS = ("drive-era", "blockdev-era")
# Disks (not CD-ROMs, not "none") in configs that have a .cmd: counted once by hand, so a glob or parse
# that silently finds fewer cannot pass.
DISKS_PER_ERA = {"drive-era": 66, "blockdev-era": 94}


@dataclass(frozen=True)
class RefDisk:
    era: str
    conf: str
    key: str
    opts: dict[str, str]
    config: dict[str, str]
    argv: list[str]

    @property
    def storage(self) -> StorageInfo | None:
        sid = storage_id_of(self.opts["file"])
        if sid is None:
            return None
        kind, krbd, nocow = STORAGES[sid]
        return StorageInfo(sid, kind, krbd, nocow)

    @property
    def template(self) -> bool:
        return self.config.get("template") == "1"

    def __str__(self) -> str:
        return f"{self.era}/{self.conf} {self.key}"


def read_conf(path: Path) -> dict[str, str]:
    """The current config of a qemu-server .conf (snapshot sections and comments left out)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("["):
            break
        if line.startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def ref_disks(era: str) -> list[RefDisk]:
    disks = []
    for conf in sorted((REF / era).glob("*.conf")):
        cmd = conf.with_name(conf.name + ".cmd")
        if not cmd.exists():  # an expected-error test: no command line
            continue
        config = read_conf(conf)
        argv = shlex.split(cmd.read_text().replace("\\\n", " "))
        for key, value in config.items():
            if not DRIVE_KEY_RE.match(key):
                continue
            opts = parse_drive(value)
            if opts.get("media") == "cdrom" or opts["file"] in ("none", "cdrom"):
                continue
            disks.append(RefDisk(era, conf.name, key, opts, config, argv))
    return disks


ALL = {era: ref_disks(era) if REF.is_dir() else [] for era in ERAS}


def naive(argv: list[str], key: str) -> dict[str, Any]:
    """A second reading of the raw text, independent of the product's reader: aio and O_DIRECT only."""
    for i, arg in enumerate(argv[:-1]):
        nxt = argv[i + 1]
        if arg == "-drive" and f",id=drive-{key}," in nxt + ",":
            aio = re.search(r",aio=(\w+)", nxt)
            cache = re.search(r",cache=(\w+)", nxt)
            return {"aio": aio.group(1) if aio else None,
                    "direct": bool(cache) and cache.group(1) in ("none", "directsync")}
        if arg == "-blockdev" and f'"node-name":"drive-{key}"' in nxt:
            node, aio, direct = json.loads(nxt), None, None
            while isinstance(node, dict):
                aio = node.get("aio", aio)
                direct = node.get("cache", {}).get("direct", direct) if isinstance(node.get("cache"), dict) else direct
                node = node.get("file")
            return {"aio": aio, "direct": direct}
    raise AssertionError(f"no drive-{key} in the command line")


def expected(d: RefDisk) -> dict[str, Any]:
    """What qemu-server's rules say the disk must be (from the .conf and the storage table)."""
    bus, _ = split_drive_key(d.key)
    cache = d.opts.get("cache")
    direct = uses_cache_direct(cache, d.storage)
    aio = d.opts.get("aio") or default_aio(d.storage, cache)
    if d.era == "blockdev-era" and _blockdev(d) and not takes_aio(d.storage):
        aio = None
    ctrl = controller_of(bus, d.config.get("scsihw"))
    iothread = d.opts.get("iothread") == "1" and (bus == "virtio" or ctrl == "virtio-scsi-single")
    return {"controller": ctrl, "aio": aio, "direct": direct,
            "cache": cache or ("none" if direct else "writeback"), "iothread": iothread}


def _blockdev(d: RefDisk) -> bool:
    """Some blockdev-era configs pin an old machine version and get the -drive form."""
    return any(a == "-blockdev" and f'"node-name":"drive-{d.key}"' in b for a, b in zip(d.argv, d.argv[1:]))


@pytest.mark.parametrize("era", ERAS)
def test_every_disk_of_every_config_is_read_as_qemu_server_wrote_it(era: str) -> None:
    disks = ALL[era]
    assert len(disks) == DISKS_PER_ERA[era]
    wrong = []
    for d in disks:
        r = read_disk(d.argv, d.key)
        raw = naive(d.argv, d.key)
        want = expected(d)
        got = {"controller": r.controller, "aio": r.aio, "direct": r.direct, "cache": r.cache, "iothread": r.iothread}
        if got != want or raw["aio"] != r.aio or raw["direct"] != r.direct:
            wrong.append(f"{d}: read {got}, raw text {raw}, qemu-server's rules {want}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("era", ERAS)
def test_each_disk_matches_its_own_cell_and_not_a_different_one(era: str) -> None:
    problems, blind = [], []
    for d in ALL[era]:
        want = expected(d)
        cache = d.opts.get("cache", "default")
        aio = d.opts.get("aio") or default_aio(d.storage, d.opts.get("cache"))
        cell = DiskConfig(want["controller"], aio, want["iothread"], cache)
        found = cmdline_problems(d.argv, cell, d.key, d.storage)
        # a template's SATA disk is attached read-only as a CD-ROM on PVE 9: a measured cell would refuse it
        allowed = ["device ide-cd (the cell needs ide-hd)"] if d.template and \
            read_disk(d.argv, d.key).device == "ide-cd" else []
        if found != allowed:
            problems.append(f"{d}: {found}")
        for other in AIO_MODES:
            if other != aio and want["aio"] is not None and \
                    not cmdline_problems(d.argv, DiskConfig(cell.controller, other, cell.iothread, cache), d.key,
                                            d.storage):
                blind.append(f"{d}: aio={other} not told apart from aio={aio}")
        flipped = "writeback" if want["direct"] else "none"
        if not cmdline_problems(d.argv, DiskConfig(cell.controller, aio, cell.iothread, flipped), d.key, d.storage):
            blind.append(f"{d}: cache={flipped} not told apart from cache={cache}")
    assert not problems, "\n".join(problems)
    assert not blind, "\n".join(blind)


def test_the_two_pve9_cases_that_were_misjudged() -> None:
    """librbd takes no aio; btrfs without cache is not O_DIRECT. Both are exactly as qemu-server writes them."""
    by_name = {(d.conf, d.key): d for d in ALL["blockdev-era"]}
    rbd = by_name[("simple-rbd.conf", "scsi0")]
    assert read_disk(rbd.argv, "scsi0").aio is None and read_disk(rbd.argv, "scsi0").driver == "rbd"
    assert cmdline_problems(rbd.argv, DiskConfig("virtio-scsi-pci", "io_uring", False, "default"), "scsi0",
                               rbd.storage) == []
    btrfs = by_name[("simple-btrfs.conf", "scsi0")]
    assert not read_disk(btrfs.argv, "scsi0").direct
    assert cmdline_problems(btrfs.argv, DiskConfig("virtio-scsi-pci", "io_uring", False, "default"), "scsi0",
                               btrfs.storage) == []
    # without knowing the storage the reader assumes a directory storage, and then the disk is wrong
    assert cmdline_problems(btrfs.argv, DiskConfig("virtio-scsi-pci", "io_uring", False, "default"), "scsi0") == [
        "cache.direct=False (the cell has cache=default)"]


def test_storage_defaults_and_plan_notes() -> None:
    lvm = StorageInfo("lvm-store", "lvm")
    assert (default_aio(lvm), default_aio(lvm, "writeback")) == ("native", "threads")
    krbd = StorageInfo("krbd-store", "rbd", krbd=True)
    assert (default_aio(krbd), default_aio(krbd, "writeback")) == ("io_uring", "threads")
    assert default_aio(None) == DEFAULT_AIO == "io_uring"
    assert disk_config_of({"scsi1": "lvm-store:vm-1-disk-1"}, "scsi1", lvm).aio == "native"
    note = storage_implications(StorageInfo("rbd-store", "rbd"))
    assert not note["aio_applies"] and "librbd" in note["notes"][0]
    assert storage_implications(lvm)["default_aio"] == "native" and "io_uring" in storage_implications(lvm)[
        "notes"][0]
    assert storage_implications(StorageInfo("b", "btrfs"))["o_direct_when_cache_unset"] is False
    assert storage_implications(None)["notes"] == []
    assert StorageInfo.from_config("krbd-store", {"type": "rbd", "krbd": 1}) == krbd
    # from a VM config and GET /storage's list, as plan output would show it
    cfg = {"scsi1": "cifs-store:100/vm-100-disk-1.raw,cache=writeback", "scsi2": "/dev/sdb", "scsi3": "gone:vm-1"}
    listing = [{"storage": "cifs-store", "type": "cifs"}, {"storage": "local", "type": "dir"}]
    shown = describe_test_disk(cfg, "scsi1", listing)
    assert shown["storage"] == "cifs-store (cifs)" and shown["default_aio"] == "threads" and shown["volume"].startswith(
        "cifs-store:")
    assert disk_storage(cfg, "scsi2", listing) == StorageInfo(None)
    assert disk_storage(cfg, "scsi3", listing) is None and describe_test_disk(cfg, "scsi3", listing)[
        "storage"].startswith("unknown")


# --- the local backend's devices are qemu-server's --------------------------------------------------------

def _arg_after(argv: list[str], flag: str, pred: Any) -> str | None:
    return next((b for a, b in zip(argv, argv[1:]) if a == flag and pred(b)), None)


def _strip(text: str, *names: str) -> str:
    for name in names:
        text = re.sub(rf",{name}=[^,]*", "", text)
    return text


def _local_cell(d: RefDisk) -> DiskConfig:
    want = expected(d)
    return DiskConfig(want["controller"], d.opts.get("aio") or default_aio(d.storage, d.opts.get("cache")),
                      d.opts.get("iothread") == "1", d.opts.get("cache", "default"))


def test_local_backend_devices_equal_qemu_servers_for_every_controller_it_builds() -> None:
    """For every controller the qemu backend builds, every reference disk on it (drive era first; the
    blockdev era where the drive era has none) gets the same -device, controller -device and iothread
    object from the local backend; in the drive era the -drive too. Normalised, and only: the boot disk's
    ``bootindex``, the blockdev era's ``device_id``/``write-cache``, and on -drive the path, ``format``
    (the local disk is raw), ``discard`` (the local disk sets none, so qemu-server's detect-zeroes would be
    ``on``, not ``unmap``)."""
    compared: dict[str, int] = {}
    mismatches = []
    for era in ERAS:
        for d in ALL[era]:
            cell = _local_cell(d)
            if cell.controller not in QemuBackend.controllers:
                continue
            if d.template and (era == "blockdev-era" or cell.bus in ("scsi", "virtio")):
                continue  # a template's disks are read-only (PVE 8: scsi/virtio; PVE 9: all, sata as a CD-ROM)
            if cell.cache == "default" and not uses_cache_direct(None, d.storage):
                continue  # btrfs: the local disk is a directory storage's file, opened O_DIRECT when cache is unset
            if era == "blockdev-era" and compared.get(cell.controller):
                continue  # the drive era had this controller
            slot = split_drive_key(d.key)[1]
            front, drive = disk_devices(cell, "/x.raw", slot)
            ref_dev = _arg_after(d.argv, "-device", lambda s: f",drive=drive-{d.key}," in s + ",")
            ours_dev = drive[3]
            ref_dev = _strip(ref_dev or "", "bootindex", "device_id", "write-cache")
            if ref_dev != ours_dev:
                mismatches.append(f"{d}: device\n  qemu-server {ref_dev}\n  local       {ours_dev}")
            bus = re.search(r"bus=([a-z]+\d+)\.", ours_dev)
            if bus:
                cid = bus.group(1)
                ref_ctrl = _arg_after(d.argv, "-device", lambda s: f",id={cid}," in s + ",")
                ours_ctrl = _arg_after(front, "-device", lambda s: f",id={cid}," in s + ",")
                if ref_ctrl != ours_ctrl:
                    mismatches.append(f"{d}: controller\n  qemu-server {ref_ctrl}\n  local       {ours_ctrl}")
            for obj in (b for a, b in zip(front, front[1:]) if a == "-object"):
                if obj not in d.argv:
                    mismatches.append(f"{d}: -object {obj} is not qemu-server's")
            if era == "drive-era":
                ref_drive = _arg_after(d.argv, "-drive", lambda s: f",id=drive-{d.key}," in s + ",") or ""
                ref_drive = re.sub(r"^file=[^,]*", "file=/x.raw", ref_drive)
                ref_drive = _strip(ref_drive, "discard").replace("format=qcow2", "format=raw")
                ref_drive = ref_drive.replace("detect-zeroes=unmap", "detect-zeroes=on")
                if ref_drive != drive[1]:
                    mismatches.append(f"{d}: drive\n  qemu-server {ref_drive}\n  local       {drive[1]}")
            compared[cell.controller] = compared.get(cell.controller, 0) + 1
    assert not mismatches, "\n".join(mismatches)
    # qemu-server's expectations have no disk on the IDE bus (only CD-ROMs): nothing to compare it with
    assert set(QemuBackend.controllers) - set(compared) == {"ide"}, compared


def test_writethrough_and_writeback_are_told_apart_on_pve9_by_the_devices_write_cache() -> None:
    """Both are cache.direct=false, no-flush=false on PVE 9: only the device's write-cache=off|on differs."""
    told = 0
    for d in ALL["blockdev-era"]:
        mode = d.opts.get("cache")
        if mode not in ("writethrough", "writeback") or not _blockdev(d):
            continue
        other = "writeback" if mode == "writethrough" else "writethrough"
        cell = _local_cell(d)
        assert read_disk(d.argv, d.key).cache == mode, d
        found = cmdline_problems(d.argv, DiskConfig(cell.controller, cell.aio, expected(d)["iothread"], other), d.key,
                                    d.storage)
        assert found == [f"write-cache={'off' if mode == 'writethrough' else 'on'} (the cell has cache={other})"], (d,
                                                                                                                  found)
        told += 1
    assert told >= 10
