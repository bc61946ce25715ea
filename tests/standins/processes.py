"""Which QEMU processes of a test are still running: tests assert that none is left behind.

A test's QEMU is recognised by its command line naming the test's run directory (``marker``).
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil


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


def process_gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
