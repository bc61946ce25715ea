"""The Windows implementation of :mod:`.oscompat` (Windows 10/11, Server 2019+): :class:`Windows`, over
:class:`WindowsPrimitives`, the thin wrappers of the Windows calls it makes (``LockFileEx`` on a byte past
the data, a new process group, ``CTRL_BREAK_EVENT``, ``taskkill /T /F``, ``GetProcessTimes``, the
LongPathsEnabled key), and Windows' constants (its signal numbers, lock flags, reserved names, path limits).

Chosen by ``oscompat.py`` on Windows; a test puts a :class:`Windows` over stand-in primitives (``tests/standins/
windows_os.py``) in :data:`~stormatrix.core.oscompat.OS` to run these branches on Linux. As cheap to import as
``oscompat.py``: ``ctypes``, ``msvcrt``, ``winreg``, ``signal`` and ``subprocess`` are imported where used.
"""

from __future__ import annotations

import errno
import os

import _signal  # type: ignore[import]  # the C module: ``signal`` imports enum first (10-20 ms)

from .osbase import LockHeld, Usage

TYPE_CHECKING = False  # (typing's own costs 10 ms; mypy reads this name as typing's)
if TYPE_CHECKING:
    from pathlib import PurePath
    from typing import Any

    from .osbase import Popenish

#: Windows' signal numbers, which the POSIX build of Python does not define (its C runtime's signal.h)
WIN_SIGBREAK = 21
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
