"""Windows' primitives, stood in on Linux, for :class:`stormatrix.core.oswindows.Windows`.

Each call behaves as Microsoft documents the Windows call it stands for, built from the Linux call that has
the same semantics (never from stormatrix's own functions):

- ``LockFileEx`` / ``UnlockFile`` on one byte: a byte-range lock owned by the open file (handle), exclusive,
  released when the handle is closed or its process exits; with ``LOCKFILE_FAIL_IMMEDIATELY`` a held range
  fails with ERROR_LOCK_VIOLATION (33), without it the call waits. Linux's open-file-description locks
  (``F_OFD_SETLK``/``F_OFD_SETLKW``) are exactly that, across processes too. Unlocking a range this handle
  does not hold fails with ERROR_NOT_LOCKED (158).
- ``CREATE_NEW_PROCESS_GROUP``: the child leads a group of its own, which the console's Ctrl-C does not reach
  (a new session on Linux).
- ``GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, group)``: every process of the group gets Ctrl-Break, which a
  program that handles it (fio, Python's SIGBREAK handler) treats like SIGINT: SIGINT to the Linux group.
- ``taskkill /T /F /PID n``: ends ``n`` and every process it started, by parent process id (not by group),
  exit 0; 128 when there is no such process ("ERROR: The process "n" not found.").
- ``GetProcessTimes`` on an exited child's handle: its own user and kernel time. Linux gives an exited
  child's times only to the parent that reaps it, so this stand-in reads them from the reaping (RUSAGE_CHILDREN
  before and after: the tests reap one child at a time).
- ``LongPathsEnabled``: a value the test sets.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import signal
import struct
from dataclasses import dataclass, field
from typing import Any

import psutil

from stormatrix.core.osbase import Usage
from stormatrix.core.oswindows import WindowsPrimitives

ERROR_LOCK_VIOLATION = 33
ERROR_NOT_LOCKED = 158


def _flock(kind: int, offset: int) -> bytes:
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, offset, 1, 0)  # struct flock: l_pid 0 for OFD locks


@dataclass
class StandInWindows(WindowsPrimitives):
    long_paths: bool = False
    calls: list[tuple[str, Any]] = field(default_factory=list)
    _held: set[tuple[int, int]] = field(default_factory=set)
    _children_before: tuple[float, float] = field(default_factory=lambda: (0.0, 0.0))

    def lock_file(self, fd: int, offset: int, exclusive: bool, fail_immediately: bool) -> int:
        self.calls.append(("LockFileEx", (fd, offset, exclusive, fail_immediately)))
        cmd = fcntl.F_OFD_SETLK if fail_immediately else fcntl.F_OFD_SETLKW
        try:
            fcntl.fcntl(fd, cmd, _flock(fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK, offset))
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return ERROR_LOCK_VIOLATION
            raise
        self._held.add((fd, offset))
        return 0

    def unlock_file(self, fd: int, offset: int) -> int:
        self.calls.append(("UnlockFile", (fd, offset)))
        if (fd, offset) not in self._held:
            return ERROR_NOT_LOCKED
        self._held.discard((fd, offset))
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_UNLCK, offset))
        return 0

    def group_kwargs(self) -> dict[str, Any]:
        self.calls.append(("CREATE_NEW_PROCESS_GROUP", None))
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._children_before = (ru.ru_utime, ru.ru_stime)
        return {"start_new_session": True}

    def ctrl_break(self, proc: Any) -> None:
        self.calls.append(("CTRL_BREAK_EVENT", proc.pid))
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            raise OSError(errno.ESRCH, "the process group is gone") from None

    def taskkill_tree(self, pid: int) -> tuple[int, str]:
        self.calls.append(("taskkill /T /F", pid))
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 128, f'ERROR: The process "{pid}" not found.'
        for p in reversed(tree):
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        return 0, f"SUCCESS: The process with PID {pid} has been terminated."

    def process_usage(self, proc: Any) -> Usage | None:
        self.calls.append(("GetProcessTimes", proc.pid))
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return Usage(ru.ru_utime - self._children_before[0], ru.ru_stime - self._children_before[1], None)

    def long_paths_enabled(self) -> bool:
        return self.long_paths
