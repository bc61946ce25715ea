"""What a Ctrl-C, SIGTERM or SIGHUP does while the ``stormatrix`` command is still starting (importing),
before ``cli.main`` sets up its own handlers (:mod:`stormatrix.console`): one line, exit 128 + the
signal, never a traceback from whichever import the signal landed in. Nothing has been done yet, so
there is nothing to clean up.

Standard library only and self-contained, because it runs twice, as early as each path allows:

- from the package's first lines (``stormatrix/__init__.py``), for every import of the command;
- earlier still, from the venv's ``00-stormatrix-starting.pth`` that ``scripts/setup.sh`` writes: the
  interpreter's ``site`` step runs it (by path, as ``stormatrix_starting``) before the editable install's
  finder and the other ``.pth`` files, which take most of the first 0.1 s. The ``.pth`` blocks the three
  signals before it reads this file and passes the previous mask as ``mask``; restoring it delivers a
  signal that came meanwhile to the handler. Only the interpreter's own start-up (before ``site``) comes
  first; a signal there ends the process by the signal's default action, or with the interpreter's own
  message if its KeyboardInterrupt handler is already set.
"""

from __future__ import annotations

import os
import sys

import _signal as signal  # type: ignore[import]  # the C module: ``signal`` imports enum first (10-20 ms)

#: the signals handled while starting; cli.main hands SIGINT to KeyboardInterrupt and the others to Terminated
STARTING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def is_the_command(argv: list[str]) -> bool:
    """The console script (``.../stormatrix``) or ``python -m stormatrix`` (argv[0] is ``-m`` while the
    package is imported), never a library user's program or a test runner."""
    return bool(argv) and os.path.basename(argv[0]) in ("stormatrix", "-m")


def exit_while_starting(signum: int, frame: object) -> None:
    what = "interrupted" if signum == signal.SIGINT else "terminated"
    try:
        os.write(2, f"stormatrix: {what} while starting; nothing was done\n".encode())
    except OSError:
        pass
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


def started_as_the_command(orig_argv: list[str]) -> bool:
    """The same question from the interpreter's own command line (``sys.orig_argv``; ``sys.argv`` is not
    set yet while ``site`` runs): ``python .../stormatrix ...`` or ``python -m stormatrix ...``."""
    return orig_argv[1:3] == ["-m", "stormatrix"] or (
        len(orig_argv) > 1 and os.path.basename(orig_argv[1]) == "stormatrix")


if __name__ == "stormatrix_starting":  # run by path from the .pth, which blocked the signals while this compiled
    if started_as_the_command(sys.orig_argv):
        install_starting_handlers()
    previous = globals().get("mask")  # the .pth's: the signal mask from before it blocked them
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a signal that came meanwhile is handled now
