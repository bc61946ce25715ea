"""The safety check before a cell's workload: a write never lands on a disk that holds data.

The runner calls :func:`check_write_allowed` on the guest's report before each cell's workload (and before a job is
sent ahead to a VM booted ahead, :mod:`stormatrix.pipeline`), unless ``[run] allow_write`` says the disk's contents may
be destroyed.
"""

from __future__ import annotations

import logging
from typing import Any

from .core.errors import UnsafeWrite
from .core.model import WRITE_MODES, Cell

log = logging.getLogger("stormatrix.runner")


def check_write_allowed(cell: Cell, guest: dict[str, Any], allow_write: bool) -> None:
    """Refuse a write workload on a disk that holds a partition table or a filesystem.

    The guest reports what it found in the disk's first sectors (``signature``: ``none`` for a blank
    or benchmark-pattern disk). A guest that cannot tell (``unknown``/``unreadable``) is treated as
    holding data. Executors that report nothing (fio-server, WinRM: the Windows module checks the
    disk is raw and offline itself) get a warning, not a refusal.
    """
    if allow_write or cell.workload.rw not in WRITE_MODES:
        return
    signature = guest.get("signature")
    if signature is None:
        log.warning("%s: the guest did not report whether %s holds data; writing anyway", cell.key,
                    guest.get("disk", "the test disk"))
        return
    if signature != "none":
        what = {"partitions": "partitions", "unknown": "contents the guest could not inspect",
                "unreadable": "contents the guest could not read"}.get(signature, f"a {signature} signature")
        raise UnsafeWrite(f"refusing the write workload {cell.workload.name!r} (rw={cell.workload.rw}): the test "
                          f"disk {guest.get('disk', '')} holds {what} and would be overwritten. Fix: give the VM a "
                          "blank test disk, or set [run] allow_write = true if its contents may be destroyed",
                          cell=cell.key)
