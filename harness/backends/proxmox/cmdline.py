"""The test disk as QEMU gets it, read from ``qm showcmd`` or ``/proc/<pid>/cmdline``.

``qm showcmd <vmid> [--pretty]`` prints the command line a fresh start of the *current* config would
run (PVE::Tools::cmd2string: shell-quoted words; --pretty puts " \\\n  " before each " -"); the
running process's is /proc/<pid>/cmdline. Two generations of qemu-server write the test disk
differently:

- up to PVE 8: ``-drive file=...,if=none,id=drive-scsi1,...,cache=none,aio=native,...`` plus ``-device``;
- PVE 9 (QemuServer/Blockdev.pm): a ``-blockdev`` JSON tree, throttle -> format (raw/qcow2) -> protocol
  (file, host_device, rbd, iscsi), with ``aio`` and ``cache.direct``/``cache.no-flush`` on the protocol
  node (none for rbd/iscsi, whose libraries do their own I/O), and ``write-cache=on|off`` on the
  ``-device`` (off for writethrough and directsync).

In both the guest device names its drive ``drive=drive-<key>``. :func:`read_disk` turns either into one
:class:`DiskReading`; :func:`cmdline_problems` compares a reading with a cell. Both are checked against
every config of qemu-server's own expectations (``tests/harness/backends/proxmox/test_pve_cfg2cmd_conformance.py``).
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...core.errors import BackendError
from ...core.model import DiskConfig
from .node import NodeShell, local_process_cmdline
from .storage import StorageInfo, takes_aio, uses_cache_direct


def parse_showcmd(text: str) -> list[str]:
    """The argument vector of ``qm showcmd`` output (with or without ``--pretty``)."""
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
    """aio, cache and driver of a -blockdev tree's protocol node (the innermost ``file``), with aio and
    cache taken from the innermost node that has them."""
    found: dict[str, Any] = {}
    while isinstance(node, dict):
        if "aio" in node:
            found["aio"] = node["aio"]
        if isinstance(node.get("cache"), dict):
            found["cache"] = node["cache"]
        if "driver" in node:
            found["driver"] = node["driver"]
        node = node.get("file")
    return found


def test_disk_cmdline(argv: list[str], key: str) -> dict[str, Any]:
    """What the command line says about the test disk ``key``: its drive options, its guest device and
    (scsi/sata) the controller device it sits on. Raises BackendError when the disk is not there."""
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
                out["blockdev"] = {"aio": flat.get("aio"), "driver": flat.get("file.driver", flat.get("driver")),
                                   "cache": {"direct": flat.get("cache.direct"),
                                             "no-flush": flat.get("cache.no-flush")}}
        elif tree.get("node-name") == drive_id:
            out["blockdev"] = {k: v for k, v in _blockdev_props(tree).items() if v is not None}
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


# (O_DIRECT, no-flush, guest-visible write cache) -> QEMU's cache mode name
_CACHE_MODES = {(True, False, True): "none", (True, False, False): "directsync", (False, False, True): "writeback",
                (False, False, False): "writethrough", (False, True, True): "unsafe"}
_MODE_BITS = {mode: bits for bits, mode in _CACHE_MODES.items()}
_SCSI_CONTROLLERS = {"lsi", "lsi53c810", "megasas", "pvscsi"}


@dataclass(frozen=True)
class DiskReading:
    """What a QEMU command line says about one disk, in the matrix's terms.

    ``aio`` is None where the disk's driver takes none (librbd, libiscsi on PVE 9); ``cache`` is the
    QEMU cache mode the three halves (``direct``, ``no_flush``, ``write_cache``) amount to (``custom``
    for a combination no mode names); ``controller`` is the matrix's controller name, None when the
    device sits on no controller the harness knows.
    """

    key: str
    era: str  # "drive" (-drive, PVE 8 and earlier) or "blockdev" (PVE 9)
    device: str  # scsi-hd, ide-hd, virtio-blk-pci, ide-cd, ...
    controller: str | None
    controller_id: str | None
    driver: str  # the protocol driver: file, host_device, rbd, iscsi, ...
    aio: str | None
    cache: str
    direct: bool
    no_flush: bool
    write_cache: bool
    iothread: bool

    @property
    def cache_set(self) -> bool:
        return self.cache != "custom"


def _drive_driver(drive: dict[str, str]) -> str:
    path = drive.get("file", "")
    if path.startswith("rbd:"):
        return "rbd"
    if path.startswith("iscsi:"):
        return "iscsi"
    return "host_device" if path.startswith("/dev/") else "file"


def _controller_name(device: dict[str, Any], ctrl: dict[str, Any] | None) -> str | None:
    driver, bus = device["driver"], str(device.get("bus", ""))
    if driver == "virtio-blk-pci":
        return "virtio-blk"
    if driver in ("ide-hd", "ide-cd"):
        return "sata" if bus.startswith("ahci") else "ide" if bus.startswith("ide.") else None
    if ctrl is None:
        return None
    if ctrl["driver"] == "virtio-scsi-pci":
        cid = str(ctrl.get("id", ""))
        return "virtio-scsi-single" if cid.startswith("virtioscsi") else "virtio-scsi-pci"
    return ctrl["driver"] if ctrl["driver"] in _SCSI_CONTROLLERS else None


def read_disk(argv: list[str], key: str) -> DiskReading:
    """The disk ``key`` (e.g. ``scsi1``) as the command line ``argv`` gives it to QEMU.
    Raises BackendError when the command line has no such disk."""
    found = test_disk_cmdline(argv, key)
    dev, ctrl = found["device"], found["controller"]
    if found["drive"] is not None:
        drv = found["drive"]
        era, driver, aio = "drive", _drive_driver(drv), drv.get("aio", "threads")
        mode = drv.get("cache", "writeback")  # QEMU's -drive default cache is writeback
        wc: bool | None
        direct, no_flush, wc = _MODE_BITS.get(mode, (mode == "off", False, True))
        wc = _json_bool(dev.get("write-cache")) if "write-cache" in dev else wc
    else:
        bd = found["blockdev"]
        cache = bd.get("cache") or {}
        era, driver = "blockdev", str(bd.get("driver", "file"))
        aio = bd.get("aio") if "aio" in bd else (None if driver not in ("file", "host_device", "host_cdrom")
                                                 else "threads")
        direct = bool(_json_bool(cache.get("direct")))
        no_flush = bool(_json_bool(cache.get("no-flush")))
        wc = _json_bool(dev.get("write-cache")) if "write-cache" in dev else True
    bits = (direct, no_flush, bool(wc))
    iothread = bool(dev.get("iothread") or (ctrl or {}).get("iothread"))
    return DiskReading(key=key, era=era, device=dev["driver"], controller=_controller_name(dev, ctrl),
                       controller_id=(ctrl or {}).get("id"), driver=driver, aio=aio,
                       cache=_CACHE_MODES.get(bits, "custom"), direct=direct, no_flush=no_flush,
                       write_cache=bool(wc), iothread=iothread)


def cmdline_problems(argv: list[str], disk: DiskConfig, key: str, storage: StorageInfo | None = None) -> list[str]:
    """How the test disk on a QEMU command line differs from the cell ``disk`` (empty: it matches).

    Checked: the guest device (and controller) the bus/``scsihw`` give, ``aio`` (not where the disk's
    driver takes none: librbd, libiscsi), ``cache`` (with -blockdev: its ``direct``/``no-flush`` halves
    and the device's write cache) and where the iothread is attached. ``storage`` is the test disk's
    storage (None: a directory storage): it decides whether a cell that leaves cache unset is O_DIRECT.
    """
    found = test_disk_cmdline(argv, key)
    reading = read_disk(argv, key)
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
    want_iothread = disk.iothread and holder is not None
    if reading.iothread != want_iothread:
        problems.append(f"iothread {'attached' if reading.iothread else 'missing'} (the cell has iothread="
                        f"{int(bool(disk.iothread))})")
    if reading.aio is None:
        if takes_aio(storage) and storage is not None:
            problems.append(f"no aio (the cell has aio={disk.aio} on {storage.label})")
    elif reading.aio != disk.aio:
        shown = reading.aio if reading.era == "blockdev" or "aio" in found["drive"] else "(unset: threads)"
        problems.append(f"aio={shown} (the cell has aio={disk.aio})")
    want_direct = uses_cache_direct(disk.cache, storage)
    if found["drive"] is not None:
        cache = found["drive"].get("cache")
        if disk.cache == "default":
            if want_direct and cache not in (None, "none"):
                problems.append(f"cache={cache} (the cell leaves cache unset: direct, no host cache)")
            elif not want_direct and cache not in (None, "writeback"):
                problems.append(f"cache={cache} (the cell leaves cache unset: on {storage.label if storage else '?'} "
                                "qemu-server opens the disk without O_DIRECT)")
        elif cache != disk.cache:
            problems.append(f"cache={cache or '(unset)'} (the cell has cache={disk.cache})")
    else:
        bd = found["blockdev"]
        halves = bd.get("cache") or {}
        direct, no_flush = _json_bool(halves.get("direct")), _json_bool(halves.get("no-flush"))
        if direct is not None and direct != want_direct:
            problems.append(f"cache.direct={direct} (the cell has cache={disk.cache})")
        if no_flush is not None and no_flush != (disk.cache == "unsafe"):
            problems.append(f"cache.no-flush={no_flush} (the cell has cache={disk.cache})")
        if "write-cache" in dev:
            want_wc = _MODE_BITS[disk.cache][2] if disk.cache in _MODE_BITS else True  # unset: write cache on
            if reading.write_cache != want_wc:
                problems.append(f"write-cache={'on' if reading.write_cache else 'off'} (the cell has "
                                f"cache={disk.cache})")
    return problems


# --- The test disk as QEMU really gets it: ``qm showcmd`` (what qemu-server makes of the config) and the ----------
# running QEMU's ``/proc/<pid>/cmdline``, read where the node is reachable (on the node, or over ssh),
# kept in ``<run dir>/proxmox/`` and compared with the cell (:func:`cmdline_problems`).
#
# A difference (a hookscript, an ``args:`` line, a qemu-server that ignores an option) fails the cell
# before anything is measured: a measurement of another configuration than the cell's name says is worse
# than none.
log = logging.getLogger("stormatrix.backend.proxmox")


class CmdlineCheck:
    """Reads, keeps and checks the QEMU command line of one VM (``opts``: the ``[proxmox]`` section)."""

    def __init__(self, node: NodeShell, opts: Mapping[str, Any], workdir: Path) -> None:
        self.node = node
        self.opts = opts
        self.workdir = Path(workdir)
        self.count = 0

    def can_showcmd(self) -> bool:
        """``qm`` is on the node: here with ``transport = "local"``, or over ssh."""
        return self.opts["transport"] == "local" or self.node.remote

    def showcmd(self) -> str:
        return self.node.run(["qm", "showcmd", str(self.opts["vmid"]), "--pretty"]).stdout

    def original(self) -> str:
        """The command line of the VM as found (kept as ``original.showcmd.txt``), one line for the facts."""
        text = self.showcmd()
        self.save("original.showcmd", text)
        return shlex.join(parse_showcmd(text))

    def local_pid(self, pid: int) -> bool:
        """Is ``pid`` this VM's QEMU on this machine? (qemu-server's pid file says so.)"""
        import psutil

        pidfile = Path(self.opts["qemu_server_dir"]) / f"{self.opts['vmid']}.pid"
        try:
            return int(pidfile.read_text().strip()) == pid and psutil.pid_exists(pid)
        except (OSError, ValueError):
            return False

    def running(self, pid: int | None) -> list[str] | None:
        if not pid:
            return None
        if self.node.remote:
            text = self.node.run(["cat", f"/proc/{pid}/cmdline"]).stdout
            return [a for a in text.split("\0") if a] or None
        if self.local_pid(pid):
            return local_process_cmdline(pid)
        return None

    def save(self, name: str, text: str) -> Path:
        folder = self.workdir / "proxmox"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.txt"
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return path

    def check(self, disk: DiskConfig, key: str, pid: int | None, storage: StorageInfo | None = None) -> None:
        """Both command lines that can be read must give the test disk at ``key`` the cell's options;
        ``storage`` (the disk's storage, None: unknown, a directory storage's defaults) decides what a
        cell that leaves cache unset gets (no O_DIRECT on btrfs) and whether aio applies (librbd)."""
        vmid = self.opts["vmid"]
        texts: dict[str, list[str]] = {}
        self.count += 1
        stem = f"{self.count:03d}-" + re.sub(r"[^A-Za-z0-9_.=-]+", "_", disk.key)
        if self.can_showcmd():
            text = self.showcmd()
            path = self.save(f"{stem}.showcmd", text)
            texts["qm showcmd"] = parse_showcmd(text)
            log.info("VM %s: qm showcmd for %s kept in %s", vmid, disk.key, path)
        running = self.running(pid)
        if running is not None:
            self.save(f"{stem}.running", shlex.join(running).replace(" -", " \\\n  -"))
            texts[f"the running QEMU (pid {pid})"] = running
        if not texts:
            log.debug("VM %s: no way to read its QEMU command line here (transport api without ssh, and "
                      "its QEMU is not on this machine)", vmid)
            return
        problems = {where: cmdline_problems(argv, disk, key, storage) for where, argv in texts.items()}
        problems = {where: p for where, p in problems.items() if p}
        if problems:
            raise BackendError(
                f"VM {vmid}: the test disk {key} is not what the cell {disk.key} asked for: "
                + "; ".join(f"{where} has {', '.join(p)}" for where, p in problems.items())
                + ". Nothing was measured. Look for what changes the command line (an args: line, a hookscript, "
                  "an old qemu-server) in the VM's config and on the node")
