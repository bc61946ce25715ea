"""The one place the command's standard streams and termination signals are looked after.

Standard library only, and imported before anything else of the command, so that it also covers the
imports themselves (a Ctrl-C in the first fraction of a second lands in them).

Why each part exists:

- **stdout closed from the start** (``stormatrix plan m.toml >&-``): the first file the command opens
  would get descriptor 1, and every ``print`` would write into it (a workbook, a journal). The free
  standard descriptors are pointed at /dev/null first, and stdout is marked closed: the first line the
  command prints then ends it with "cannot write output: standard output is closed", exit 1, after the
  files it wrote are whole.
- **a closed pipe** (``stormatrix plan m.toml | head -0``): the reader is gone; like any Unix tool the
  command ends quietly with 141 (128 + SIGPIPE), never a BrokenPipeError traceback, and never a second
  "Exception ignored" from the interpreter's final flush.
- **a full device** (``>/dev/full``): one line, "cannot write output: no space left on device", exit 1.
- **SIGTERM and SIGHUP** (a ``kill``, a closed terminal, a CI timeout; Ctrl-Break on Windows): raised in
  the main thread as :class:`Terminated` (a KeyboardInterrupt), so every ``finally`` runs — temporary files
  are removed, a VM is restored — where the default action would end the process on the spot. Exit 128 + the signal.
- **a signal while the command is still starting** (its first 0.1 s): :mod:`stormatrix.core.starting`
  (from the venv's ``.pth`` and the package's first lines) points SIGINT, SIGTERM and SIGHUP at a
  handler that says "interrupted while starting" in one line and exits 128 + the signal;
  :func:`install_signal_handlers` takes over in ``cli.main``.

Every write to stdout goes through :class:`GuardedStdout`, which turns a failing write into
:class:`OutputFailed`: the CLI can tell "stdout failed" apart from an OSError of a file it writes.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from types import FrameType
from typing import Any, TextIO

from .core import oscompat
from .core.starting import exit_while_starting

EXIT_BROKEN_PIPE = 128 + oscompat.SIGPIPE_NUMBER  # (141 on Windows too, which has no SIGPIPE)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C (every ``finally`` runs), exit 128 + ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class OutputFailed(Exception):
    """Writing to standard output failed (``errno``: EPIPE, ENOSPC, EBADF, ...)."""

    def __init__(self, err: int | None, detail: str = "") -> None:
        super().__init__(err)
        self.errno = err
        self.detail = detail

    @property
    def broken_pipe(self) -> bool:
        return self.errno in oscompat.broken_pipe_errnos()

    def message(self) -> str:
        if self.errno == errno.ENOSPC:
            why = "no space left on device"
        elif self.errno == errno.EBADF:
            why = "standard output is closed"
        else:
            why = self.detail or (os.strerror(self.errno) if self.errno else "write failed")
        return f"stormatrix: error: cannot write output: {why}. Every file written before is whole"


class GuardedStdout:
    """``sys.stdout`` as the command sees it: each write and flush that fails raises :class:`OutputFailed`."""

    def __init__(self, stream: TextIO | None, closed: bool = False) -> None:
        self._stream = stream
        self._closed = closed or stream is None

    def write(self, text: str) -> int:
        if self._closed:
            raise OutputFailed(errno.EBADF)
        assert self._stream is not None
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise OutputFailed(exc.errno, exc.strerror or str(exc)) from None

    def flush(self) -> None:
        if self._closed or self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputFailed(exc.errno, exc.strerror or str(exc)) from None
        except ValueError:  # flushed after the stream was closed by someone else
            pass

    def isatty(self) -> bool:
        return bool(self._stream is not None and not self._closed and self._stream.isatty())

    def fileno(self) -> int:
        if self._stream is None or self._closed:
            raise OSError(errno.EBADF, "standard output is closed")
        return self._stream.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer...
        return getattr(self._stream, name)


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def guard_streams() -> bool:
    """Point a closed stdin, stdout or stderr at /dev/null (so no file the command opens takes its number),
    and put :class:`GuardedStdout` in front of stdout. True when stdout was closed from the start."""
    closed = {fd: not _fd_open(fd) for fd in (0, 1, 2)}
    for fd, is_closed in closed.items():
        if is_closed:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if closed[2] or sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace")  # fd 2, now /dev/null
    current = sys.stdout
    for stream in (current, sys.stderr):  # a cp1252 console prints every message too
        oscompat.make_console_safe(stream)
    if not isinstance(current, GuardedStdout):
        sys.stdout = GuardedStdout(current, closed=closed[1] or current is None)  # type: ignore[assignment]
    return closed[1]


def quiet_stdout() -> None:
    """After stdout failed: point descriptor 1 at /dev/null and drop what is buffered, so the interpreter's
    final flush has nothing left to fail on (it would print "Exception ignored ... BrokenPipeError")."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
    real = sys.__stdout__
    if real is not None:
        try:
            real.flush()
        except (OSError, ValueError):
            pass
    sys.stdout = GuardedStdout(None, closed=True)  # type: ignore[assignment]


def say(message: str) -> None:
    """One line on stderr that cannot itself fail the command (stderr may be a closed pipe too)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def install_signal_handlers() -> dict[int, Any]:
    """SIGTERM and SIGHUP (Ctrl-Break on Windows) raise :class:`Terminated` in the main thread (only the main
    thread may set handlers; elsewhere nothing changes). Returns the previous handlers, for
    :func:`restore_signal_handlers`."""
    old: dict[int, Any] = {}
    try:  # the package's handler for the imports (exit at once) gives way to KeyboardInterrupt, which unwinds
        if signal.getsignal(signal.SIGINT) is exit_while_starting:
            old[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    except (ValueError, OSError):  # not the main thread
        pass
    for sig in oscompat.termination_signals():
        try:
            current = signal.getsignal(sig)
            if current is signal.SIG_IGN:  # nohup: the user asked for the hang-up to be ignored
                continue
            old[sig] = signal.signal(sig, _raise_terminated)
        except (ValueError, OSError):  # not the main thread
            pass
    return old


def restore_signal_handlers(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError, TypeError):
            pass


def interrupted_exit_code(exc: KeyboardInterrupt) -> int:
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
