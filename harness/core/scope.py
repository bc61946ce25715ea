"""What a backend tells the rest of the harness about the VM it runs: which host process and threads to
measure (:class:`HostScope`), QEMU's own count of the test disk's I/O (:class:`BlockStats`) and how the
guest is reached (:class:`GuestEndpoint`).

These values cross every layer (backends make them, executors and collectors read them, records store
them), so they live here, at the bottom, and nobody needs a backend module to name them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Roles of QEMU threads, as the collector reports them.
ROLE_MAIN = "main-loop"
ROLE_VCPU = "vcpu"
ROLE_IOTHREAD = "iothread"
ROLE_WORKER = "aio-worker"
ROLE_OTHER = "other"


def parse_cpuset(text: str) -> list[int]:
    """``"0-2,5"`` -> ``[0, 1, 2, 5]`` (the kernel's cpulist format); ValueError names the problem."""
    cpus: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise ValueError(f"{text!r} is not a CPU list like 2-3 or 0,2,4")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"{part.strip()!r}: the range goes backwards")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpuset(cpus: Any) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    out: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if out and out[-1][1] == cpu - 1:
            out[-1][1] = cpu
        else:
            out.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


@dataclass(frozen=True)
class HostScope:
    """What the host collector measures: one QEMU process per VM and the roles of its threads.

    ``threads`` maps thread id -> role for the threads QMP names (vCPUs, iothreads); the collector
    classifies the rest itself (main loop = the pid, ``worker`` = thread-pool aio workers).
    ``ssh`` is None when the process runs on this machine.
    """

    pid: int
    threads: dict[int, str] = field(default_factory=dict)
    vm: str = ""
    ssh: str | None = None


@dataclass(frozen=True)
class BlockStats:
    """QEMU's own accounting of the test disk (QMP query-blockstats)."""

    rd_bytes: int
    wr_bytes: int
    rd_operations: int
    wr_operations: int

    def minus(self, other: "BlockStats") -> "BlockStats":
        return BlockStats(self.rd_bytes - other.rd_bytes, self.wr_bytes - other.wr_bytes,
                          self.rd_operations - other.rd_operations, self.wr_operations - other.wr_operations)


@dataclass(frozen=True)
class GuestEndpoint:
    """How a guest executor reaches the guest that the backend started."""

    kind: str  # "local-agent" (serial socket), "tcp" (fio server / WinRM host), ...
    address: str  # socket path, or host name
    port: int | None = None
    name: str = ""
    #: a connection the backend opened already (a guest booted ahead announces READY before any
    #: executor exists; QEMU drops serial output nobody is connected to, so the backend listens early)
    connected: Any = field(default=None, compare=False, repr=False)
    #: how the backend's settings say the executor should drive this guest (the qemu backend's ``[qemu]
    #: prepare_ahead``: ``measure_job_early``); an executor reads only the names it knows
    hints: dict[str, Any] = field(default_factory=dict, compare=False)
