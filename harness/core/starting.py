"""What a Ctrl-C, SIGTERM or SIGHUP does while the ``stormatrix`` command is still starting (importing),
before ``cli.main`` sets up its own handlers (:mod:`stormatrix.console`): one line, exit 128 + the
signal, never a traceback from whichever import the signal landed in. Nothing has been done yet, so
there is nothing to clean up.

Standard library only, installed from the package's first lines (``stormatrix/__init__.py``) for
every import of the command. What comes before them — the interpreter's own start-up and its ``site`` step
(with an editable install, its import finder: most of the first 0.1 s) — keeps Python's default: a
signal there ends the process by the signal's default action or with Python's KeyboardInterrupt
traceback. Closing that gap would take code run by every interpreter of the venv (a ``.pth`` hook), which
is not worth a few milliseconds in which nothing has been done.
"""

from __future__ import annotations

import os

import _signal as signal  # type: ignore[import]  # the C module: ``signal`` imports enum first (10-20 ms)

from . import oscompat

#: the signals handled while starting (SIGTERM and SIGHUP; on Windows SIGTERM and Ctrl-Break); cli.main hands
#: SIGINT to KeyboardInterrupt and the others to Terminated
STARTING_SIGNALS = (signal.SIGINT, *oscompat.termination_signals())


def is_the_command(argv: list[str]) -> bool:
    """The console script (``.../stormatrix``) or ``python -m stormatrix`` (argv[0] is ``-m`` while the
    package is imported), never a library user's program or a test runner."""
    return bool(argv) and os.path.basename(argv[0]) in ("stormatrix", "-m")


def say_stopped_while_starting(what: str) -> None:
    """The one line a signal (or a raised KeyboardInterrupt) while starting prints: ``what`` is
    ``interrupted`` or ``terminated``."""
    try:
        os.write(2, f"stormatrix: {what} while starting; nothing was done\n".encode())
    except OSError:
        pass


def exit_while_starting(signum: int, frame: object) -> None:
    say_stopped_while_starting("interrupted" if signum == signal.SIGINT else "terminated")
    os._exit(128 + signum)


def install_starting_handlers() -> None:
    """Point the starting signals at :func:`exit_while_starting`; one the user set to be ignored (``nohup``,
    a background job's SIGINT) stays ignored."""
    for sig in STARTING_SIGNALS:
        try:
            if signal.getsignal(sig) != signal.SIG_IGN:
                signal.signal(sig, exit_while_starting)
        except (ValueError, OSError):  # not the main thread
            pass
