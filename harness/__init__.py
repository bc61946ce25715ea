"""stormatrix: how much host CPU and how many context switches each virtual storage configuration
costs per MiB moved, measured end to end and handed over as a spreadsheet.

The package maps the product's fixed top-level folders onto one import namespace:

- ``stormatrix``            -> ``harness/``    (CLI, matrix spec, runner, journal, backends, executors)
- ``stormatrix.analysis``   -> ``analysis/``   (pure pandas functions and the workbook writer)
- ``stormatrix.host``       -> ``linux-host/`` (collector and inventory that also run on a hypervisor node)
"""

from __future__ import annotations

import os as _os
import signal as _signal
import sys as _sys


def exit_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C, SIGTERM or SIGHUP before ``cli.main`` has set up its own handlers (the command is still
    importing): one line and exit 128 + the signal, as the command says it later, never a traceback from
    whichever import the signal landed in (nothing has been done yet, so there is nothing to clean up)."""
    what = "interrupted" if signum == _signal.SIGINT else "terminated"
    try:
        _os.write(2, f"stormatrix: {what} while starting; nothing was done\n".encode())
    except OSError:
        pass
    _os._exit(128 + signum)


def _install_starting_handlers() -> None:
    """The earliest moment the command's own code runs: every import after it is covered. A signal the
    user set to be ignored (``nohup``, a background job's SIGINT) stays ignored."""
    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        try:
            if _signal.getsignal(sig) is not _signal.SIG_IGN:
                _signal.signal(sig, exit_while_starting)
        except (ValueError, OSError):  # not the main thread
            pass


# Only for the command itself (the console script, or ``python -m stormatrix``), never a library user's
# program; before anything else of the package is imported. cli.main replaces these handlers with its own.
_COMMAND = bool(_sys.argv) and _os.path.basename(_sys.argv[0]) in ("stormatrix", "-m")
if _COMMAND:
    _install_starting_handlers()

from .core import __version__  # noqa: E402  (after the handlers: its import is covered too)


def _quiet_interrupt_hook(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """Ctrl-C while the command is still importing (before ``cli.main`` can catch it): one line, no
    traceback; the interpreter then ends with the SIGINT status (130) as for any uncaught Ctrl-C."""
    if issubclass(kind, KeyboardInterrupt):
        try:
            print("stormatrix: interrupted while starting; nothing was done", file=_sys.stderr)
        except (OSError, ValueError):
            pass
        return
    _previous_hook(kind, value, tb)  # type: ignore[arg-type]


# A KeyboardInterrupt raised (not signalled) while the command's imports run: the same one line.
_previous_hook = _sys.excepthook
if _COMMAND:
    _sys.excepthook = _quiet_interrupt_hook  # one version, kept in the leaf layer analysis may import

__all__ = ["__version__"]
