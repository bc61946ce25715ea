"""The storage under the Proxmox test disk: read once at prepare (``GET /storage/{storage}``), because it
decides what a disk that leaves ``aio`` or ``cache`` unset really gets from qemu-server (io_uring or
native/threads, O_DIRECT or the host page cache: :mod:`.pve_cfg_storage`).

Without it an unset cache on btrfs storage (no O_DIRECT) would fail the command-line check, and an
original disk on LVM would be journaled as aio=io_uring when it runs with aio=native. Reading a storage's
configuration needs ``Datastore.Allocate`` on ``/storage/{storage}`` (pve-manager
``PVE/API2/Storage/Config.pm``); a token without it gets qemu-server's directory defaults assumed, a
warning, and the journal says so.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.errors import PveAuthError
from . import pve_config as pc
from .pve_api import PveClient

log = logging.getLogger("stormatrix.backend.proxmox")


def read_storage(client: PveClient, volid: str) -> tuple[pc.StorageInfo | None, str]:
    """(the storage of volume ``volid``, or None when it cannot be read; why not, or "")."""
    sid = pc.storage_id_of(volid)
    if sid is None:
        return pc.StorageInfo(None), ""
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
    return pc.StorageInfo.from_config(sid, scfg), ""


def storage_facts(storage: pc.StorageInfo | None, cache: str | None, why_unknown: str = "") -> dict[str, Any]:
    """Environment facts (one line of text each: the Environment sheet shows facts as they are): which
    storage the test disk is on and what qemu-server does there when a cell leaves aio or cache unset."""
    imp = pc.storage_implications(storage, cache)
    direct = "O_DIRECT" if imp["o_direct_when_cache_unset"] else "the host page cache (no O_DIRECT)"
    text = (f"with no aio qemu-server gives aio={imp['default_aio']}"
            + ("" if imp["aio_applies"] else " (which its I/O library ignores)")
            + f"; with no cache the disk is opened with {direct}")
    notes = list(imp["notes"]) + ([why_unknown] if why_unknown else [])
    facts = {"test_disk_storage": imp["storage"], "test_disk_storage_defaults": text}
    if notes:
        facts["test_disk_storage_notes"] = " ".join(n[0].upper() + n[1:] + "." for n in notes)
    return facts
