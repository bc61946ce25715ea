"""Thread CPU affinities read from /proc, for the tests that pin QEMU and the harness (test_qemu_pinning,
test_qemu_cpuset): what the kernel says each thread may run on, never what the product planned."""

from __future__ import annotations

import os
from pathlib import Path

from stormatrix.backends.base import parse_cpuset


def allowed(pid: int, tid: int) -> list[int]:
    """The CPUs thread ``tid`` of ``pid`` may run on (``Cpus_allowed_list`` of its status)."""
    for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return parse_cpuset(line.split(":", 1)[1].strip())
    raise AssertionError(f"no Cpus_allowed_list for {pid}/{tid}")


def tasks(pid: int) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def affinities(pid: int) -> dict[int, list[int]]:
    """Every thread's allowed CPUs (a thread that ends between listing and reading is left out)."""
    out = {}
    for tid in tasks(pid):
        try:
            out[tid] = allowed(pid, tid)
        except FileNotFoundError:
            pass
    return out


def own_back(before: dict[int, list[int]]) -> bool:
    """The harness's threads have their affinity back: those it had before as they were, and any started since
    (the backend stops a finished VM on a thread of its own) with the main thread's, not confined."""
    now = affinities(os.getpid())
    main = before[os.getpid()]
    return all(now[t] == cpus for t, cpus in before.items() if t in now) and \
        all(cpus == main for t, cpus in now.items() if t not in before)
