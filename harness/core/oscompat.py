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
(:class:`WindowsPrimitives`) in its place to run the Windows branches on Linux. Standard library only, and
cheap to import (``stormatrix/__init__.py`` imports it through :mod:`.starting` before the handlers for a
signal during the imports are in place): no ``typing`` or ``dataclasses`` at run time (45 ms), and the ``signal``,
``subprocess`` and ``pathlib`` modules are imported where they are used.
"""

from __future__ import annotations

import errno
import os
import sys

import _signal  # type: ignore[import]  # the C module: ``signal`` imports enum first (10-20 ms)

TYPE_CHECKING = False  # (typing's own costs 10 ms; mypy reads this name as typing's)
if TYPE_CHECKING:
    from pathlib import PurePath
    from typing import Any, Protocol

#: the command runs on Windows (the stand-in tests replace :data:`OS`, never this)
WINDOWS = sys.platform == "win32"

#: add to ``os.open`` flags of a file written with ``os.write``: Windows' C runtime opens in text mode by default
#: and would write ``\r\n`` for every ``\n``
O_BINARY: int = getattr(os, "O_BINARY", 0)

#: Windows' signal numbers, which the POSIX build of Python does not define (its C runtime's signal.h)
WIN_SIGBREAK = 21
#: SIGPIPE's number on Linux, the exit status of a command whose reader went away (128 + 13), on every system
SIGPIPE_NUMBER = 13


#: another process holds the lock (a non-blocking :func:`lock` was refused): Python's own name for "would block"
LockHeld = BlockingIOError


class Usage:
    """What an exited child used itself (not its children): seconds of CPU, peak memory in KiB."""

    __slots__ = ("user_s", "system_s", "max_rss_kib")

    def __init__(self, user_s: float, system_s: float, max_rss_kib: float | None) -> None:
        self.user_s, self.system_s, self.max_rss_kib = user_s, system_s, max_rss_kib

    def __repr__(self) -> str:
        return f"Usage(user_s={self.user_s!r}, system_s={self.system_s!r}, max_rss_kib={self.max_rss_kib!r})"

    def as_dict(self) -> dict[str, float]:
        out = {"user_s": self.user_s, "system_s": self.system_s, "cpu_s": self.user_s + self.system_s}
        if self.max_rss_kib is not None:
            out["max_rss_kib"] = self.max_rss_kib
        return out


if TYPE_CHECKING:
    class Popenish(Protocol):
        """What the process-tree functions need of a ``subprocess.Popen``."""

        pid: int
        returncode: Any

        def poll(self) -> int | None: ...

        def kill(self) -> None: ...

        def send_signal(self, sig: int) -> None: ...

    class System(Protocol):
        """One platform's answers; the module's functions below delegate to :data:`OS`."""

        name: str
        broken_pipe_errnos: frozenset[int]
        name_unit: str

        @property
        def termination_signals(self) -> tuple[int, ...]: ...

        def lock(self, fd: int, *, wait: bool) -> None: ...

        def unlock(self, fd: int) -> None: ...

        def write_at(self, fd: int, data: bytes, offset: int) -> None: ...

        def new_group(self) -> dict[str, Any]: ...

        def interrupt_tree(self, proc: Popenish) -> None: ...

        def kill_tree(self, proc: Popenish) -> None: ...

        def reap(self, proc: Popenish) -> tuple[int, Usage | None] | None: ...

        def path_limits(self, folder: str) -> tuple[int, int]: ...

        def name_length(self, name: str) -> int: ...

        def name_problem(self, name: str) -> str | None: ...

        def usable_cpus(self) -> list[int]: ...

        def cache_home(self) -> str: ...

        def pure_path(self, path: str | os.PathLike[str]) -> PurePath: ...

        def load_average(self) -> float | None: ...

        def others_may_read(self, mode: int) -> bool: ...


# --- POSIX -------------------------------------------------------------------------------------------------

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


# --- Windows ----------------------------------------------------------------------------------------------

#: LockFileEx flags and the error a held lock gives (winbase.h, winerror.h)
LOCKFILE_FAIL_IMMEDIATELY = 0x1
LOCKFILE_EXCLUSIVE_LOCK = 0x2
ERROR_LOCK_VIOLATION = 33
ERROR_IO_PENDING = 997
#: the byte a Windows lock covers: past any file stormatrix writes, so readers never touch it (locks are mandatory)
WIN_LOCK_OFFSET = 2**62
#: Windows' reserved device names (a file of that name, with any extension, is the device): Naming Files, Paths,
#: and Namespaces (Microsoft's documentation)
WIN_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                          *(f"LPT{i}" for i in range(1, 10))})
WIN_FORBIDDEN = '<>:"|?*'
#: ``MAX_PATH``, the limit without long paths; with them (LongPathsEnabled) 32767 UTF-16 units
WIN_MAX_PATH = 260
WIN_LONG_PATH = 32767


class WindowsPrimitives:
    """The Windows calls :class:`Windows` makes, each a thin wrapper over its documented API. A test gives a
    stand-in of this class that behaves as the documentation says (a held lock fails with
    ERROR_LOCK_VIOLATION, a killed tree is gone), to run :class:`Windows` on Linux."""

    def lock_file(self, fd: int, offset: int, exclusive: bool, fail_immediately: bool) -> int:
        """``LockFileEx`` on one byte at ``offset``; 0 when locked, else the Windows error code."""
        import ctypes
        import msvcrt
        from ctypes import wintypes

        class Overlapped(ctypes.Structure):
            _fields_ = [("Internal", ctypes.c_void_p), ("InternalHigh", ctypes.c_void_p),
                        ("Offset", wintypes.DWORD), ("OffsetHigh", wintypes.DWORD), ("hEvent", wintypes.HANDLE)]

        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)
        ov = Overlapped(0, 0, offset & 0xFFFFFFFF, offset >> 32, None)
        flags = (LOCKFILE_EXCLUSIVE_LOCK if exclusive else 0) | (LOCKFILE_FAIL_IMMEDIATELY if fail_immediately else 0)
        handle = getattr(msvcrt, "get_osfhandle")(fd)
        if kernel32.LockFileEx(wintypes.HANDLE(handle), flags, 0, 1, 0, ctypes.byref(ov)):
            return 0
        return int(getattr(ctypes, "get_last_error")())

    def unlock_file(self, fd: int, offset: int) -> int:
        import ctypes
        import msvcrt
        from ctypes import wintypes

        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)
        handle = getattr(msvcrt, "get_osfhandle")(fd)
        if kernel32.UnlockFile(wintypes.HANDLE(handle), offset & 0xFFFFFFFF, offset >> 32, 1, 0):
            return 0
        return int(getattr(ctypes, "get_last_error")())

    def group_kwargs(self) -> dict[str, Any]:
        """``subprocess.Popen`` keywords for a new process group (``CREATE_NEW_PROCESS_GROUP``)."""
        return {"creationflags": 0x00000200}  # (subprocess's constant exists on Windows only)

    def ctrl_break(self, proc: Popenish) -> None:
        """``GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT)`` to ``proc``'s process group (Python's send_signal)."""
        import signal

        proc.send_signal(getattr(signal, "CTRL_BREAK_EVENT", 1))

    def taskkill_tree(self, pid: int) -> tuple[int, str]:
        """``taskkill /T /F /PID pid``: the process and every process it started; (exit code, its output)."""
        import subprocess

        done = subprocess.run(["taskkill", "/T", "/F", "/PID", str(pid)], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", check=False)
        return done.returncode, (done.stdout + done.stderr).strip()

    def process_usage(self, proc: Popenish) -> Usage | None:
        """``GetProcessTimes`` and ``K32GetProcessMemoryInfo`` on the (exited) process's handle, which Popen
        keeps open until it is collected."""
        import ctypes
        from ctypes import wintypes

        handle = getattr(proc, "_handle", None)
        if handle is None:
            return None
        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)
        times = [wintypes.FILETIME() for _ in range(4)]
        if not kernel32.GetProcessTimes(wintypes.HANDLE(int(handle)), *(ctypes.byref(t) for t in times)):
            return None

        def seconds(ft: Any) -> float:  # FILETIME: 100 ns units
            return ((ft.dwHighDateTime << 32) | ft.dwLowDateTime) / 1e7

        class Counters(ctypes.Structure):
            _fields_ = [("cb", wintypes.DWORD), ("PageFaultCount", wintypes.DWORD),
                        ("PeakWorkingSetSize", ctypes.c_size_t), ("WorkingSetSize", ctypes.c_size_t),
                        ("QuotaPeakPagedPoolUsage", ctypes.c_size_t), ("QuotaPagedPoolUsage", ctypes.c_size_t),
                        ("QuotaPeakNonPagedPoolUsage", ctypes.c_size_t), ("QuotaNonPagedPoolUsage", ctypes.c_size_t),
                        ("PagefileUsage", ctypes.c_size_t), ("PeakPagefileUsage", ctypes.c_size_t)]

        mem = Counters()
        mem.cb = ctypes.sizeof(Counters)
        peak = None
        if kernel32.K32GetProcessMemoryInfo(wintypes.HANDLE(int(handle)), ctypes.byref(mem), mem.cb):
            peak = mem.PeakWorkingSetSize / 1024
        return Usage(seconds(times[3]), seconds(times[2]), peak)

    def long_paths_enabled(self) -> bool:
        """``HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem`` LongPathsEnabled = 1 (Windows 10 1607+)."""
        try:
            import winreg

            reg: Any = winreg  # (its names exist on Windows only)
            with reg.OpenKey(reg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem") as key:
                return bool(reg.QueryValueEx(key, "LongPathsEnabled")[0])
        except (ImportError, OSError):
            return False


class Windows:
    """Windows 10/11 and Server 2019+, through :class:`WindowsPrimitives` (or a test's stand-in)."""

    name = "windows"
    name_unit = "characters"
    # a write to a pipe whose reader is gone fails with EINVAL on Windows (the C runtime's mapping), or EPIPE
    broken_pipe_errnos = frozenset({errno.EPIPE, errno.EINVAL, errno.ECONNRESET})

    def __init__(self, primitives: WindowsPrimitives | None = None) -> None:
        self.win = primitives or WindowsPrimitives()

    @property
    def termination_signals(self) -> tuple[int, ...]:
        return (int(_signal.SIGTERM), int(getattr(_signal, "SIGBREAK", WIN_SIGBREAK)))

    def lock(self, fd: int, *, wait: bool) -> None:
        err = self.win.lock_file(fd, WIN_LOCK_OFFSET, exclusive=True, fail_immediately=not wait)
        if err == ERROR_LOCK_VIOLATION or err == ERROR_IO_PENDING:
            raise LockHeld(errno.EACCES, "the file is locked by another process")
        if err:
            raise OSError(errno.ENOLCK, f"LockFileEx failed (Windows error {err})")

    def unlock(self, fd: int) -> None:
        err = self.win.unlock_file(fd, WIN_LOCK_OFFSET)
        if err:
            raise OSError(errno.ENOLCK, f"UnlockFile failed (Windows error {err})")

    def write_at(self, fd: int, data: bytes, offset: int) -> None:
        os.lseek(fd, offset, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    def new_group(self) -> dict[str, Any]:
        return self.win.group_kwargs()

    def interrupt_tree(self, proc: Popenish) -> None:
        if proc.poll() is not None:
            return
        try:
            self.win.ctrl_break(proc)
        except OSError:  # exited between the poll and the event
            pass

    def kill_tree(self, proc: Popenish) -> None:
        if proc.poll() is not None:
            return
        code, _ = self.win.taskkill_tree(proc.pid)
        if code != 0 and proc.poll() is None:  # taskkill missing or refused: at least the process itself
            try:
                proc.kill()
            except OSError:
                pass

    def reap(self, proc: Popenish) -> tuple[int, Usage | None] | None:
        rc = proc.poll()
        if rc is None:
            return None
        return rc, self.win.process_usage(proc)

    def path_limits(self, folder: str) -> tuple[int, int]:
        return 255, WIN_LONG_PATH if self.win.long_paths_enabled() else WIN_MAX_PATH

    def name_length(self, name: str) -> int:
        return len(name.encode("utf-16-le")) // 2

    def name_problem(self, name: str) -> str | None:
        bad = sorted({c for c in name if c in WIN_FORBIDDEN or ord(c) < 32})
        if bad:
            return f"the name {name!r} holds {''.join(bad)!r}, which Windows does not allow in a file name"
        if name.rstrip(". ") != name and name not in (".", ".."):
            return f"the name {name!r} ends in a dot or a space, which Windows drops"
        if name.split(".")[0].rstrip(" ").upper() in WIN_RESERVED:
            return f"the name {name!r} is a Windows device name ({name.split('.')[0].upper()})"
        return None

    def usable_cpus(self) -> list[int]:
        return list(range(os.cpu_count() or 1))

    def cache_home(self) -> str:
        return os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")

    def pure_path(self, path: str | os.PathLike[str]) -> PurePath:
        from pathlib import PureWindowsPath

        return PureWindowsPath(os.fspath(path))  # ``C:\\runs\\r1``, ``\\\\server\\share\\r1``, forward slashes too

    def load_average(self) -> float | None:
        return None  # Windows keeps no load average

    def others_may_read(self, mode: int) -> bool:
        return False  # st_mode's bits do not describe a Windows file's ACL (a file in the user's profile is theirs)


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
