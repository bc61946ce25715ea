"""Proxmox VM configuration as data: drive strings, bus moves, the minimal change for a cell.

Everything here is a pure function over plain dicts (the shape ``GET .../config`` returns), so the
dangerous part of the Proxmox backend — deciding which keys to delete and set — is unit-tested
without a server. The rules come from REFERENCE.md §1-§2 and qemu-server:

- a drive value is a *property string*: the volume first (the schema's ``default_key`` ``file``),
  then ``key=value`` options. Proxmox prints the default key first and the rest sorted by name
  (``PVE::JSONSchema::print_property_string``); :func:`print_drive` does the same so that a restored
  value is byte-identical and the config digest comes back unchanged.
- options differ per bus (``iothread`` exists on scsi/virtio only, ``queues``/``ro``/``product``/
  ``vendor``/``scsiblock`` on scsi, ``model`` on ide, ``ssd``/``wwn`` not on virtio). Moving a disk keeps
  only the options the new bus's schema has; :data:`BUS_OPTIONS` is checked against
  ``pve-api-qemu.json`` by a test.
- a disk moves between buses by re-referencing its volume: ``delete=<old key>`` without ``force``
  (the volume becomes ``unusedN``), then ``<new key>=<volume>,<options>`` (Proxmox drops the matching
  ``unusedN`` itself). ``unusedN`` keys are never deleted here: that destroys the volume.
- deleting a disk drops it from ``boot: order=...``; the plan re-sets ``boot`` when that happened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..core.errors import BackendError
from ..core.model import BUS_MAX_SLOTS, DiskConfig

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
# Proxmox's aio default since PVE 7.0 (REFERENCE.md §1) and its schema default for scsihw.
DEFAULT_AIO = "io_uring"
DEFAULT_SCSIHW = "lsi"


class UnsafeChange(BackendError):
    """The requested change would put a volume at risk or clobber a disk the harness does not own."""


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
    disks, unused = [], []
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


def disk_config_of(config: Mapping[str, Any], key: str) -> DiskConfig:
    """What the disk at ``key`` is, in matrix terms (unset aio = Proxmox's default io_uring)."""
    bus, _ = split_drive_key(key)
    opts = parse_drive(str(config[key]))
    iothread = "iothread" in BUS_OPTIONS[bus] and parse_bool(opts.get("iothread", "0"))
    return DiskConfig(controller=controller_of(bus, config.get("scsihw")), aio=opts.get("aio", DEFAULT_AIO),
                      iothread=iothread, cache=opts.get("cache", "default"))


def drive_for(disk: DiskConfig, base: Mapping[str, str]) -> dict[str, str]:
    """The options of the test disk on ``disk.bus`` for this cell, keeping every other option of ``base``
    that the new bus has (serial, size, discard, throttling...)."""
    bus = disk.bus
    if bus not in BUS_OPTIONS:
        raise UnsafeChange(f"controller {disk.controller!r} does not exist on Proxmox")
    opts = {k: v for k, v in base.items() if k in BUS_OPTIONS[bus]}
    opts["aio"] = disk.aio
    if disk.cache == "default":
        opts.pop("cache", None)
    else:
        opts["cache"] = disk.cache
    if "iothread" in BUS_OPTIONS[bus]:
        if disk.iothread:
            opts["iothread"] = "1"
        else:
            opts.pop("iothread", None)
    elif disk.iothread:
        raise UnsafeChange(f"iothread does not exist on the {bus} bus")
    return opts


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


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any], ignore: frozenset[str] = frozenset({"digest"})) -> dict[str, tuple[Any, Any]]:
    """Keys whose values differ between two configs: ``key -> (a value, b value)`` (None = absent)."""
    keys = (set(a) | set(b)) - ignore
    return {k: (a.get(k), b.get(k)) for k in sorted(keys) if a.get(k) != b.get(k)}


# --- the QEMU command line the config becomes --------------------------------------------------------
#
# ``qm showcmd <vmid> [--pretty]`` prints the command line a fresh start of the *current* config would
# run (PVE::Tools::cmd2string: shell-quoted words; --pretty puts " \\\n  " before each " -"); the running
# process's is /proc/<pid>/cmdline (REFERENCE.md §1). Two generations of qemu-server write the test disk
# differently: ``-drive file=...,if=none,id=drive-scsi1,aio=native,cache=none,...`` (up to PVE 8), and
# ``-blockdev {"driver":"throttle","node-name":"drive-scsi1",...,"file":{...,"file":{"driver":"file",
# "aio":"native","cache":{"direct":true,"no-flush":false}}}}`` (PVE 9, QemuServer/Blockdev.pm). In both
# the guest device names its drive ``drive=drive-<key>``.

def parse_showcmd(text: str) -> list[str]:
    """The argument vector of ``qm showcmd`` output (with or without ``--pretty``)."""
    import shlex

    joined = re.sub(r"\s*\\\n\s*", " ", text.strip())
    try:
        return shlex.split(joined)
    except ValueError as exc:
        raise BackendError(f"cannot read the output of qm showcmd ({exc}): {text[:200]!r}") from None


def qemu_opts(text: str) -> tuple[str, dict[str, str]]:
    """QEMU's ``driver,key=value,...`` option string (``,,`` is a literal comma): (first bare word, options)."""
    parts, cur, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if ch == "," and text[i + 1:i + 2] == ",":
            cur += ","
            i += 2
            continue
        if ch == ",":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    head = ""
    opts: dict[str, str] = {}
    for n, part in enumerate(parts):
        k, eq, v = part.partition("=")
        if not eq:
            if n == 0:
                head = part
            else:
                opts[k] = "on"
            continue
        opts[k] = v
    return head, opts


def _args_of(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def _blockdev_props(node: Any) -> dict[str, Any]:
    """aio and cache of a -blockdev tree: the innermost node that has them (the protocol node)."""
    found: dict[str, Any] = {}
    while isinstance(node, dict):
        if "aio" in node:
            found["aio"] = node["aio"]
        if isinstance(node.get("cache"), dict):
            found["cache"] = node["cache"]
        node = node.get("file")
    return found


def test_disk_cmdline(argv: list[str], key: str) -> dict[str, Any]:
    """What the command line says about the test disk ``key``: its drive options, its guest device and
    (scsi/sata) the controller device it sits on. Raises BackendError when the disk is not there."""
    import json

    drive_id = f"drive-{key}"
    out: dict[str, Any] = {"drive": None, "blockdev": None, "device": None, "controller": None}
    for text in _args_of(argv, "-drive"):
        _, opts = qemu_opts(text)
        if opts.get("id") == drive_id:
            out["drive"] = opts
    for text in _args_of(argv, "-blockdev"):
        try:
            tree = json.loads(text) if text.lstrip().startswith("{") else None
        except ValueError:
            tree = None
        if tree is None:
            _, flat = qemu_opts(text)
            if flat.get("node-name") == drive_id:
                out["blockdev"] = {"aio": flat.get("aio"),
                                   "cache": {"direct": flat.get("cache.direct"), "no-flush": flat.get("cache.no-flush")}}
        elif tree.get("node-name") == drive_id:
            out["blockdev"] = _blockdev_props(tree)
    devices = [qemu_opts(text) for text in _args_of(argv, "-device")]
    # -set group.id.key=value (an args: line can carry them) changes an option after the fact
    sets: dict[tuple[str, str], dict[str, str]] = {}
    for text in _args_of(argv, "-set"):
        path, eq, value = text.partition("=")
        group, _, rest = path.partition(".")
        ident, _, key = rest.rpartition(".")
        if eq and ident and key:
            sets.setdefault((group, ident), {})[key] = value
    if out["drive"] is not None:
        out["drive"].update(sets.get(("drive", drive_id), {}))
    for driver, opts in devices:
        if opts.get("drive") == drive_id:
            out["device"] = {"driver": driver, **opts, **sets.get(("device", opts.get("id", "")), {})}
            bus = out["device"].get("bus", "")
            ctrl_id = bus.rsplit(".", 1)[0] if "." in bus else ""
            for cdriver, copts in devices:
                if ctrl_id and copts.get("id") == ctrl_id:
                    out["controller"] = {"driver": cdriver, **copts, **sets.get(("device", ctrl_id), {})}
    if out["device"] is None or (out["drive"] is None and out["blockdev"] is None):
        raise BackendError(f"the QEMU command line has no test disk {key} (no -device with drive={drive_id} "
                           "and its -drive/-blockdev)")
    return out


def _json_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value is None:
        return None
    return str(value).lower() in ("on", "true", "1", "yes")


def cmdline_problems(argv: list[str], disk: DiskConfig, key: str) -> list[str]:
    """How the test disk on a QEMU command line differs from the cell ``disk`` (empty: it matches).

    Checked: the guest device (and controller) the bus/``scsihw`` give (REFERENCE.md §1), ``aio``,
    ``cache`` (with -blockdev: its ``direct``/``no-flush`` halves) and where the iothread is attached.
    """
    found = test_disk_cmdline(argv, key)
    dev, ctrl = found["device"], found["controller"]
    problems: list[str] = []
    want_dev = {"ide": "ide-hd", "sata": "ide-hd", "scsi": "scsi-hd", "virtio": "virtio-blk-pci"}[disk.bus]
    if dev["driver"] != want_dev:
        problems.append(f"device {dev['driver']} (the cell needs {want_dev})")
    if disk.bus == "scsi":
        # qemu-server: virtio-scsi-single is one virtio-scsi-pci per disk, id virtioscsiN; the shared
        # controllers (virtio-scsi-pci too) are scsihwN
        single = disk.scsihw == "virtio-scsi-single"
        want_ctrl = "virtio-scsi-pci" if single else disk.scsihw
        want_id = "virtioscsi" if single else "scsihw"
        if ctrl is None or ctrl["driver"] != want_ctrl:
            problems.append(f"controller {ctrl['driver'] if ctrl else 'none'} (the cell needs {want_ctrl})")
        elif not re.fullmatch(rf"{want_id}\d+", str(ctrl.get("id", ""))):
            problems.append(f"controller {ctrl.get('id')} (the cell needs {want_ctrl} as {want_id}N, "
                            f"{'one per disk' if single else 'shared'})")
    if disk.bus == "sata" and (ctrl is None or ctrl["driver"] != "ahci"):
        problems.append(f"controller {ctrl['driver'] if ctrl else 'none'} (the cell needs ahci)")
    holder = dev if disk.bus == "virtio" else ctrl if disk.scsihw == "virtio-scsi-single" else None
    has_iothread = bool((dev or {}).get("iothread") or (ctrl or {}).get("iothread"))
    want_iothread = disk.iothread and holder is not None
    if has_iothread != want_iothread:
        problems.append(f"iothread {'attached' if has_iothread else 'missing'} (the cell has iothread="
                        f"{int(disk.iothread)})")
    if found["drive"] is not None:
        drv = found["drive"]
        if drv.get("aio", "threads") != disk.aio:
            problems.append(f"aio={drv.get('aio', '(unset: threads)')} (the cell has aio={disk.aio})")
        cache = drv.get("cache")
        if disk.cache == "default":
            if cache not in (None, "none"):
                problems.append(f"cache={cache} (the cell leaves cache unset: direct, no host cache)")
        elif cache != disk.cache:
            problems.append(f"cache={cache or '(unset)'} (the cell has cache={disk.cache})")
    else:
        bd = found["blockdev"]
        if bd.get("aio", "threads") != disk.aio:
            problems.append(f"aio={bd.get('aio', '(unset: threads)')} (the cell has aio={disk.aio})")
        cache = bd.get("cache") or {}
        direct, no_flush = _json_bool(cache.get("direct")), _json_bool(cache.get("no-flush"))
        want_direct = disk.cache in ("none", "directsync", "default")
        if direct is not None and direct != want_direct:
            problems.append(f"cache.direct={direct} (the cell has cache={disk.cache})")
        if no_flush is not None and no_flush != (disk.cache == "unsafe"):
            problems.append(f"cache.no-flush={no_flush} (the cell has cache={disk.cache})")
    return problems
