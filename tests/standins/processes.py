"""Which QEMU processes of a test are still running: tests assert that none is left behind.

A test's QEMU is recognised by its command line naming the test's run directory (``marker``).
"""

from __future__ import annotations

from pathlib import Path


def qemu_processes(marker: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"qemu-system" in cmd and marker.encode() in cmd:
                pids.append(int(d.name))
    return pids
