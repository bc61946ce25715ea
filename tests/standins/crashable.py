"""The real ``stormatrix`` CLI, with phase marks for the crash test (test_reliability_crash.py).

``python tests/standins/crashable.py run m.toml -o DIR`` behaves exactly like ``python -m stormatrix``,
except that it appends ``<phase> <time.monotonic()>`` lines to ``$SMX_PHASE_FILE`` as it enters each
phase, so the test can SIGKILL it at a random moment *inside* a chosen phase:

- ``qemu-start``     QemuVm.start is called (QEMU starting, guest booting)
- ``warm-up``        the fio job is sent to the guest (the ramp runs first)
- ``measure``        the measurement window opened
- ``journal-write``  a cell record is being written: the write is split in two with 0.5 s between the
                     halves, so a kill there leaves a torn last line, as a kill inside one write(2) of a
                     large record can on a real system

Nothing else is changed; the code under test is the shipped code.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

PHASE_FILE = os.environ.get("SMX_PHASE_FILE", "")


def mark(phase: str) -> None:
    if PHASE_FILE:
        with open(PHASE_FILE, "a") as fh:
            fh.write(f"{phase} {time.monotonic():.3f}\n")


def install() -> None:
    from stormatrix import runner
    from stormatrix.backends.qemu import vm as qemu
    from stormatrix.executors import localagent

    start = qemu.QemuVm.start

    def marked_start(self: Any, *a: Any, **kw: Any) -> Any:
        mark("qemu-start")
        return start(self, *a, **kw)

    qemu.QemuVm.start = marked_start  # type: ignore[method-assign]

    send = localagent.AgentChannel.send

    def marked_send(self: Any, line: str) -> None:
        if line.startswith("RUN "):
            mark("warm-up")
        send(self, line)

    localagent.AgentChannel.send = marked_send  # type: ignore[method-assign]

    opened = runner.Window.measure_started

    def marked_open(self: Any) -> None:
        opened(self)
        mark("measure")

    runner.Window.measure_started = marked_open  # type: ignore[method-assign]

    real_write = os.write

    def split_write(fd: int, data: Any) -> int:
        if isinstance(data, (bytes, bytearray)) and data.startswith(b'{"schema": "stormatrix/record-1", "type": "cell"'):
            mark("journal-write")
            half = len(data) // 2
            n = real_write(fd, data[:half])
            time.sleep(0.5)
            return n + real_write(fd, data[half:])
        return real_write(fd, data)

    os.write = split_write  # type: ignore[assignment]


if __name__ == "__main__":
    install()
    from stormatrix.cli import main

    sys.exit(main(sys.argv[1:]))
