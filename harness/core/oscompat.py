"""What differs between Windows and the POSIX systems, in one place: every other module calls these
functions and never asks which system it runs on.

stormatrix runs on a Linux host (the local qemu backend, a Proxmox node) and on a Windows workstation that
drives Proxmox over its API and ESXi through PowerCLI. What differs, and what each side does:

- **locks** (the run directory's writer lock, the journal's append lock): ``flock`` on POSIX; on Windows
  ``LockFileEx`` on one byte far past the end of the file. Windows' byte-range locks are mandatory: a lock
  on the data would make a ``report`` that reads the journal while a run appends fail, so the locked byte
  is one no reader reads. Either lock goes when its holder exits, however it exits.
- **signals**: Ctrl-C is SIGINT everywhere. What ends the command from outside is SIGTERM and SIGHUP on
  POSIX (a ``kill``, a closed terminal), Ctrl-Break (SIGBREAK) on Windows. Each ends with the same one
  line and exit 128 + the signal's number (Ctrl-C 130, SIGTERM 143, SIGHUP 129, Ctrl-Break 149).
- **process trees** (pwsh launched by a .NET tool launcher, fio's client): a new session and ``killpg`` on
  POSIX; on Windows a new process group, ``CTRL_BREAK_EVENT`` to ask it to stop (fio handles SIGBREAK as
  SIGINT) and ``taskkill /T /F`` to end the whole tree.
- **a child's own CPU time**: ``wait4`` on POSIX; ``GetProcessTimes`` on the exited process's handle on Windows.
- **what a file system allows**: ``pathconf`` on POSIX; on Windows names of at most 255 UTF-16 units, paths of
  260 unless long paths are enabled, no reserved device names (``CON``, ``NUL``, ``COM1``...) and none of
  ``<>:"|?*``. Low-level descriptors are opened in binary mode (:data:`O_BINARY`), so the journal stays
  UTF-8 with ``\\n`` line ends on both.
- **the console's encoding**: a cp1252 console (a Windows pipe) cannot encode every character a message
  may hold (a file name in another script, a ``≤``); stdout and stderr write such a character as a
  backslash escape instead of failing the command.
- **CPUs and load**: ``sched_getaffinity`` and ``getloadavg`` exist on Linux only; elsewhere the CPU count
  and no load figure.

The implementation is chosen once (:data:`OS`); a test puts :class:`Windows` with stand-in primitives
(:class:`~stormatrix.core.oswindows.WindowsPrimitives`) in its place to run the Windows branches on Linux.
Standard library only, and cheap to import (``stormatrix/__init__.py`` imports it through :mod:`.starting`
before the handlers for a signal during the imports are in place): no ``typing`` or ``dataclasses`` at run time
(45 ms), and the ``signal``, ``subprocess`` and ``pathlib`` modules are imported where they are used; the same
holds for the modules below.

Where it is: this module holds the functions the rest of stormatrix calls and the choice of :data:`OS`; the
implementations are ``osposix.py`` (:class:`~stormatrix.core.osposix.Posix`) and ``oswindows.py``
(:class:`~stormatrix.core.oswindows.Windows` over its :class:`~stormatrix.core.oswindows.WindowsPrimitives`), and
the contract they fulfil (:class:`~stormatrix.core.osbase.System`, with :class:`Usage` and :data:`LockHeld`)
is ``osbase.py``.
"""

from __future__ import annotations

import errno
import os
import sys

from .osbase import LockHeld, Usage
from .osposix import Posix
from .oswindows import Windows

TYPE_CHECKING = False  # (typing's own costs 10 ms; mypy reads this name as typing's)
if TYPE_CHECKING:
    from pathlib import PurePath
    from typing import Any

    from .osbase import Popenish, System

#: the command runs on Windows (the stand-in tests replace :data:`OS`, never this)
WINDOWS = sys.platform == "win32"

#: add to ``os.open`` flags of a file written with ``os.write``: Windows' C runtime opens in text mode by default
#: and would write ``\r\n`` for every ``\n``
O_BINARY: int = getattr(os, "O_BINARY", 0)

#: SIGPIPE's number on Linux, the exit status of a command whose reader went away (128 + 13), on every system
SIGPIPE_NUMBER = 13

#: the interface (LockHeld and Usage are osbase's, named here as the words of these functions)
__all__ = ["LockHeld", "O_BINARY", "OS", "SIGPIPE_NUMBER", "Usage", "WINDOWS", "broken_pipe_errnos", "cache_home",
           "interrupt_tree", "is_windows", "kill_tree", "load_average", "lock", "locked", "make_console_safe",
           "name_length", "name_problem", "name_unit", "new_group", "others_may_read", "path_limits", "pure_path",
           "reap", "set_thread_affinity", "termination_signals", "thread_affinity", "unlock", "usable_cpus",
           "write_at"]


#: the implementation in use (tests put a :class:`Windows` with stand-in primitives here)
def _native() -> System:
    if WINDOWS:
        return Windows()
    return Posix()


OS: System = _native()


# --- the functions the rest of stormatrix calls -----------------------------------------------------------

def is_windows() -> bool:
    """stormatrix runs on Windows (as :data:`OS` says, so that a test's stand-in counts)."""
    return OS.name == "windows"


def lock(fd: int, *, wait: bool) -> None:
    """An exclusive lock on the open file ``fd``, dropped when it is closed or its holder exits. ``wait``:
    block until it is free; otherwise :class:`LockHeld` at once. Another OSError: this file system has no
    locks (some network mounts)."""
    OS.lock(fd, wait=wait)


def unlock(fd: int) -> None:
    """Drop :func:`lock` before closing (Windows frees a closed file's locks "when resources allow")."""
    try:
        OS.unlock(fd)
    except OSError:
        pass


class locked:
    """``with locked(fd):`` holds an exclusive lock on ``fd`` while the block runs, waiting for it if another
    process has it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        OS.lock(self.fd, wait=True)

    def __exit__(self, *exc: object) -> None:
        unlock(self.fd)


def write_at(fd: int, data: bytes, offset: int) -> None:
    """All of ``data`` at ``offset`` (``os.pwrite`` where there is one)."""
    OS.write_at(fd, data, offset)


def termination_signals() -> tuple[int, ...]:
    """The signals that end the command from outside (besides Ctrl-C's SIGINT), which it unwinds like Ctrl-C."""
    return OS.termination_signals


def broken_pipe_errnos() -> frozenset[int]:
    """The errnos of a write to stdout whose reader went away."""
    return OS.broken_pipe_errnos


def new_group() -> dict[str, Any]:
    """``subprocess.Popen`` keywords that start the child in a process group of its own (one Ctrl-C at the
    console does not reach it; :func:`interrupt_tree` and :func:`kill_tree` reach it and its children)."""
    return OS.new_group()


def interrupt_tree(proc: Popenish) -> None:
    """Ask a child started with :func:`new_group` and its group to stop (SIGINT; Ctrl-Break on Windows)."""
    OS.interrupt_tree(proc)


def kill_tree(proc: Popenish) -> None:
    """End a child started with :func:`new_group` and everything it started, now. A child already gone is fine."""
    OS.kill_tree(proc)


def reap(proc: Popenish) -> tuple[int, Usage | None] | None:
    """(exit code, what the child used itself) once it has exited, None while it runs (never blocks)."""
    return OS.reap(proc)


def path_limits(folder: str) -> tuple[int, int]:
    """(longest name, longest path) on the file system of the existing ``folder``, in :func:`name_unit`."""
    return OS.path_limits(folder)


def name_length(name: str) -> int:
    """A name's length as the file system counts it (bytes on POSIX, UTF-16 units on Windows)."""
    return OS.name_length(name)


def pure_path(path: str | os.PathLike[str]) -> PurePath:
    """``path`` parsed by this system's rules (PureWindowsPath on Windows: a drive, backslashes), for checks of
    its parts that must not depend on where the test runs."""
    return OS.pure_path(path)


def cache_home() -> str:
    """Where a user's caches go: ``$XDG_CACHE_HOME`` or ``~/.cache``; on Windows ``%LOCALAPPDATA%``."""
    return OS.cache_home()


def name_unit() -> str:
    return OS.name_unit


def name_problem(name: str) -> str | None:
    """Why one part of a path cannot be a file name here (a character or a name Windows reserves), or None."""
    return OS.name_problem(name)


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity on Linux, every CPU elsewhere)."""
    return OS.usable_cpus()


def load_average() -> float | None:
    """The 1-minute load average, None where the system keeps none (Windows)."""
    return OS.load_average()


def others_may_read(mode: int) -> bool:
    """A file of ``st_mode`` can be read by other users, as far as the mode says (on Windows it says nothing)."""
    return OS.others_may_read(mode)


def thread_affinity(tid: int) -> set[int]:
    """The CPUs thread ``tid`` of this machine may run on (Linux only: a QEMU thread on the node we run on)."""
    if sys.platform == "win32" or not hasattr(os, "sched_getaffinity"):
        raise OSError(errno.ENOSYS, "a thread's CPU affinity is read on a Linux host only")
    return set(os.sched_getaffinity(tid))


def set_thread_affinity(tid: int, cpus: list[int] | set[int]) -> None:
    if sys.platform == "win32" or not hasattr(os, "sched_setaffinity"):
        raise OSError(errno.ENOSYS, "a thread's CPU affinity is set on a Linux host only")
    os.sched_setaffinity(tid, cpus)


def make_console_safe(stream: Any) -> None:
    """Let ``stream`` (stdout or stderr) write every message: a character its encoding lacks (cp1252 has no
    ``≤``, no Cyrillic file name) is written as a backslash escape instead of raising UnicodeEncodeError."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None or getattr(stream, "errors", None) not in ("strict", None):
        return
    try:
        reconfigure(errors="backslashreplace")
    except (ValueError, OSError, AttributeError):  # closed, or not a text stream after all
        pass
