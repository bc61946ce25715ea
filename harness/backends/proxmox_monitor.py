"""Thread ids and block statistics from QEMU's human monitor (HMP), as the Proxmox API's
``POST .../monitor`` returns them, for nodes where the QMP socket is out of reach (the API without ssh).

``info cpus`` and ``info iothreads`` are the text forms of QMP's ``query-cpus-fast`` and
``query-iothreads``; ``info blockstats`` of ``query-blockstats``.
"""

from __future__ import annotations

import re

from ..core.errors import BackendError
from ..core.scope import ROLE_IOTHREAD, ROLE_VCPU, BlockStats

_HMP_CPU = re.compile(r"CPU #(\d+):.*?thread_id=(\d+)")
_HMP_IOTHREAD = re.compile(r"^(\S+):\s*\n\s*thread_id=(\d+)", re.M)


def parse_hmp_threads(cpus: str, iothreads: str) -> dict[int, str]:
    """Thread id -> role from HMP ``info cpus`` / ``info iothreads``."""
    roles = {int(tid): ROLE_VCPU for _, tid in _HMP_CPU.findall(cpus)}
    roles.update({int(tid): ROLE_IOTHREAD for _, tid in _HMP_IOTHREAD.findall(iothreads)})
    return roles


def parse_hmp_blockstats(text: str, drive_id: str) -> BlockStats:
    """The counters of ``drive_id`` (``drive-scsi1``) in HMP ``info blockstats``."""
    for line in text.splitlines():
        if line.startswith(drive_id + ":"):
            vals = dict(re.findall(r"(\w+)=(\d+)", line))
            try:
                return BlockStats(int(vals["rd_bytes"]), int(vals["wr_bytes"]), int(vals["rd_operations"]),
                                  int(vals["wr_operations"]))
            except KeyError as exc:
                raise BackendError(
                    f"the monitor's 'info blockstats' line for {drive_id} has no {exc.args[0]}") from None
    raise BackendError(f"the monitor's 'info blockstats' has no {drive_id}")
