"""What the storage under a Proxmox disk decides when the disk's config leaves ``aio`` or ``cache`` unset.

qemu-server does not have one aio default: it chooses per storage type (``Drive.pm`` /
``QemuServer.pm``, ``aio_cmdline_option`` with ``storage_allows_io_uring_default``, and
``drive_uses_cache_direct``), and its own test expectations (qemu-server ``src/test/cfg2cmd``,
checked by ``tests/harness/backends/proxmox/test_pve_cfg2cmd_conformance.py``) show the result:

- **O_DIRECT** (``cache.direct``): an explicit ``cache`` decides (none/directsync: direct; writeback,
  writethrough, unsafe: through the host page cache). With no ``cache`` the disk is opened O_DIRECT —
  except on btrfs storage without ``nocow``, where it is not (O_DIRECT on a copy-on-write btrfs file
  can checksum-fail).
- **aio**: an explicit ``aio`` decides. Otherwise io_uring, except on LVM, CIFS, and krbd (rbd with
  ``krbd``) when the disk is not O_DIRECT: there io_uring has hung, so qemu-server takes native when
  the disk is O_DIRECT and threads when it is not.
- **no aio at all**: on PVE 9 (``-blockdev``) a librbd disk (rbd storage, krbd off) is opened by QEMU's
  ``rbd`` driver and a ZFS-over-iSCSI disk by its ``iscsi`` driver; neither takes ``aio`` — the
  library does its own I/O, so a cell's aio setting changes nothing there.

These functions take a :class:`StorageInfo` (what ``GET /storage/{storage}`` says about the disk's
storage); ``None`` stands for an unknown storage and gives qemu-server's plain default (a directory
storage): io_uring, O_DIRECT.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

from ...core.errors import PveAuthError
from .api import PveClient

# Storage types whose disks QEMU opens through a library, with no aio (PVE 9, -blockdev).
# (type "iscsi" is the kernel initiator: a block device; "iscsidirect" and ZFS over iSCSI use libiscsi.)
_LIBRARY_DRIVERS = {"zfs": "libiscsi", "iscsidirect": "libiscsi"}
DIRECT_CACHES = frozenset({"none", "directsync", "off"})


@dataclass(frozen=True)
class StorageInfo:
    """The parts of a storage's configuration (``/etc/pve/storage.cfg``) that change a disk's defaults."""

    storage_id: str | None  # None: a path, not a storage volume (passthrough, /mnt/file.raw)
    type: str = "dir"  # dir, lvm, lvmthin, rbd, cifs, nfs, btrfs, zfspool, zfs (over iSCSI), iscsi...
    krbd: bool = False
    nocow: bool = False

    @classmethod
    def from_config(cls, storage_id: str | None, scfg: Mapping[str, Any] | None) -> "StorageInfo":
        """From one storage's configuration as ``GET /storage/{storage}`` returns it (booleans as 0/1)."""
        if not scfg:
            return cls(storage_id)
        return cls(storage_id, str(scfg.get("type", "dir")), _flag(scfg.get("krbd")), _flag(scfg.get("nocow")))

    @property
    def label(self) -> str:
        if self.storage_id is None:
            return f"a path ({self.type})"
        extra = ", krbd" if self.krbd else ", librbd" if self.type == "rbd" else ""
        extra += ", nocow" if self.nocow else ""
        return f"{self.storage_id} ({self.type}{extra})"


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "on", "yes", "true")


def storage_id_of(volid: str) -> str | None:
    """``local-lvm:vm-100-disk-1`` -> ``local-lvm``; an absolute path (passthrough) -> None."""
    if volid.startswith("/") or ":" not in volid:
        return None
    return volid.split(":", 1)[0]


def _unset(cache: str | None) -> bool:
    return cache in (None, "", "default")


def uses_cache_direct(cache: str | None, storage: StorageInfo | None = None) -> bool:
    """Whether qemu-server opens the disk O_DIRECT (``drive_uses_cache_direct``); ``cache`` None or
    ``"default"`` = the disk sets no cache."""
    if not _unset(cache):
        return cache in DIRECT_CACHES
    return not (storage is not None and storage.type == "btrfs" and not storage.nocow)


def allows_io_uring_default(storage: StorageInfo | None, cache_direct: bool) -> bool:
    """qemu-server's ``storage_allows_io_uring_default``."""
    if storage is None:
        return True
    if storage.type == "rbd" and storage.krbd and not cache_direct:
        return False  # io_uring with writeback/writethrough on krbd hangs
    return storage.type not in ("lvm", "cifs")  # hangs on LVM; CIFS problems since kernel 5.15


def default_aio(storage: StorageInfo | None, cache: str | None = None) -> str:
    """The aio qemu-server gives a disk that sets none (``aio_cmdline_option``)."""
    direct = uses_cache_direct(cache, storage)
    if allows_io_uring_default(storage, direct):
        return "io_uring"
    return "native" if direct else "threads"


def takes_aio(storage: StorageInfo | None, blockdev: bool = True) -> bool:
    """Whether QEMU's driver for this storage takes ``aio`` at all (on PVE 9, ``-blockdev``, librbd and
    libiscsi disks have none; on PVE 8 the -drive line carries one that the driver ignores)."""
    if storage is None or not blockdev:
        return True
    return library_of(storage) is None


def library_of(storage: StorageInfo | None) -> str | None:
    """The user-space library that does the disk's I/O instead of the kernel (None: the kernel does)."""
    if storage is None:
        return None
    if storage.type == "rbd":
        return None if storage.krbd else "librbd"
    return _LIBRARY_DRIVERS.get(storage.type)


def effective_aio(storage: StorageInfo | None, aio: str | None, cache: str | None = None) -> str:
    """The aio QEMU runs the disk with: the explicit one, else qemu-server's default for the storage."""
    return aio if aio else default_aio(storage, cache)


def storage_implications(storage: StorageInfo | None, cache: str | None = None) -> dict[str, Any]:
    """Which storage the test disk is on and what that implies for the cells, for ``plan`` output.

    ``cache`` is the test disk's original cache setting (None = unset). Returns the storage label,
    qemu-server's defaults there, and notes a reader of the plan needs (each a full sentence).
    """
    direct = uses_cache_direct(cache, storage)
    aio = default_aio(storage, cache)
    notes: list[str] = []
    lib = library_of(storage)
    if lib:
        notes.append(f"the test disk is on {storage.label if storage else '?'}: QEMU reaches it through {lib}, which "
                     "takes no aio on PVE 9 (-blockdev) and ignores it on PVE 8, so cells that differ only in aio "
                     "measure the same I/O path")
    if storage is not None and not allows_io_uring_default(storage, direct):
        notes.append(f"qemu-server does not choose io_uring on {storage.type} storage (it has hung there); its "
                     f"default is aio={aio}, and aio=io_uring cells measure a mode Proxmox avoids there")
    if storage is not None and storage.type == "btrfs" and not storage.nocow:
        notes.append("btrfs without nocow: a disk with no cache setting is opened without O_DIRECT (host page "
                     "cache), so cache=default cells are not cache=none cells there")
    return {"storage": storage.label if storage else "unknown (qemu-server's directory defaults assumed)",
            "type": storage.type if storage else None, "default_aio": aio, "o_direct_when_cache_unset":
            uses_cache_direct(None, storage), "aio_applies": lib is None, "notes": notes}


# --- The storage under the Proxmox test disk: read once at prepare (``GET /storage/{storage}``), because it ----------
# decides what a disk that leaves ``aio`` or ``cache`` unset really gets from qemu-server (io_uring or
# native/threads, O_DIRECT or the host page cache: the functions above).
#
# Without it an unset cache on btrfs storage (no O_DIRECT) would fail the command-line check, and an
# original disk on LVM would be journaled as aio=io_uring when it runs with aio=native. Reading a storage's
# configuration needs ``Datastore.Allocate`` on ``/storage/{storage}`` (pve-manager
# ``PVE/API2/Storage/Config.pm``); a token without it gets qemu-server's directory defaults assumed, a
# warning, and the journal says so.
log = logging.getLogger("stormatrix.backend.proxmox")


def read_storage(client: PveClient, volid: str) -> tuple[StorageInfo | None, str]:
    """(the storage of volume ``volid``, or None when it cannot be read; why not, or "")."""
    sid = storage_id_of(volid)
    if sid is None:
        return StorageInfo(None), ""
    try:
        scfg = client.t.request("GET", f"/storage/{sid}")
    except PveAuthError:
        why = (f"the token may not read storage {sid!r} (GET /storage/{sid} needs Datastore.Allocate on "
               f"/storage/{sid}): qemu-server's directory defaults are assumed for the test disk; grant that "
               "privilege if the storage is LVM, CIFS, btrfs or rbd, whose defaults differ")
        log.warning("VM %s: %s", client.vmid, why)
        return None, why
    if not isinstance(scfg, dict) or "type" not in scfg:
        why = f"GET /storage/{sid} gave no storage type ({type(scfg).__name__}): directory defaults assumed"
        log.warning("VM %s: %s", client.vmid, why)
        return None, why
    return StorageInfo.from_config(sid, scfg), ""


def storage_facts(storage: StorageInfo | None, cache: str | None, why_unknown: str = "") -> dict[str, Any]:
    """Environment facts (one line of text each: the Environment sheet shows facts as they are): which
    storage the test disk is on and what qemu-server does there when a cell leaves aio or cache unset."""
    imp = storage_implications(storage, cache)
    direct = "O_DIRECT" if imp["o_direct_when_cache_unset"] else "the host page cache (no O_DIRECT)"
    text = (f"with no aio qemu-server gives aio={imp['default_aio']}"
            + ("" if imp["aio_applies"] else " (which its I/O library ignores)")
            + f"; with no cache the disk is opened with {direct}")
    notes = list(imp["notes"]) + ([why_unknown] if why_unknown else [])
    facts = {"test_disk_storage": imp["storage"], "test_disk_storage_defaults": text}
    if notes:
        facts["test_disk_storage_notes"] = " ".join(n[0].upper() + n[1:] + "." for n in notes)
    return facts
