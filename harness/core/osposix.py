"""The POSIX implementation of :mod:`.oscompat` (Linux, and the other POSIX systems Python runs on): ``flock``,
``pwrite``, sessions and ``killpg``, ``wait4``, ``pathconf``, ``sched_getaffinity`` and ``getloadavg``.

Chosen by ``oscompat.py`` (:data:`~stormatrix.core.oscompat.OS`) where the command does not run on Windows;
nothing else imports it. As cheap to import as ``oscompat.py``.
"""

from __future__ import annotations

import errno
import os
import sys

import _signal  # type: ignore[import]  # the C module: ``signal`` imports enum first (10-20 ms)

from .osbase import LockHeld, Usage

TYPE_CHECKING = False  # (typing's own costs 10 ms; mypy reads this name as typing's)
if TYPE_CHECKING:
    from pathlib import PurePath
    from typing import Any

    from .osbase import Popenish


class Posix:
    """Linux (and the other POSIX systems Python runs on)."""

    name = "posix"
    broken_pipe_errnos = frozenset({errno.EPIPE, errno.ECONNRESET})
    name_unit = "bytes"

    @property
    def termination_signals(self) -> tuple[int, ...]:
        return tuple(getattr(_signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(_signal, n))

    def lock(self, fd: int, *, wait: bool) -> None:
        if sys.platform == "win32":  # (never: for the type checker, which reads this class for Windows too)
            raise OSError(errno.ENOSYS, "flock")
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            if not wait and exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise LockHeld(exc.errno, exc.strerror) from None
            raise

    def unlock(self, fd: int) -> None:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "flock")
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)

    def write_at(self, fd: int, data: bytes, offset: int) -> None:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "pwrite")
        os.pwrite(fd, data, offset)

    def new_group(self) -> dict[str, Any]:
        return {"start_new_session": True}

    def interrupt_tree(self, proc: Popenish) -> None:
        self._signal_group(proc, int(_signal.SIGINT))

    def kill_tree(self, proc: Popenish) -> None:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "killpg")
        self._signal_group(proc, int(_signal.SIGKILL))

    @staticmethod
    def _signal_group(proc: Popenish, sig: int) -> None:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "killpg")
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):  # gone already (a zombie's group may refuse: EPERM)
            pass

    def reap(self, proc: Popenish) -> tuple[int, Usage | None] | None:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "wait4")
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid != proc.pid:
            return None
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, Usage(ru.ru_utime, ru.ru_stime, float(ru.ru_maxrss))

    def path_limits(self, folder: str) -> tuple[int, int]:
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "pathconf")
        return os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX")

    def name_length(self, name: str) -> int:
        return len(os.fsencode(name))

    def name_problem(self, name: str) -> str | None:
        return None  # every byte but NUL and "/" (which no name part holds) is allowed

    def cache_home(self) -> str:
        return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")

    def pure_path(self, path: str | os.PathLike[str]) -> PurePath:
        from pathlib import PurePosixPath

        return PurePosixPath(os.fspath(path))

    def usable_cpus(self) -> list[int]:
        affinity = getattr(os, "sched_getaffinity", None)  # Linux; not macOS
        if affinity is not None:
            try:
                return sorted(affinity(0))
            except OSError:
                pass
        return list(range(os.cpu_count() or 1))

    def load_average(self) -> float | None:
        if sys.platform == "win32":
            return None
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return None

    def others_may_read(self, mode: int) -> bool:
        return bool(mode & 0o077)
