"""stormatrix: how much host CPU and how many context switches each virtual storage configuration
costs per MiB moved, measured end to end and handed over as a spreadsheet.

The package maps the product's fixed top-level folders onto one import namespace:

- ``stormatrix``            -> ``harness/``    (CLI, matrix spec, runner, journal, backends, executors)
- ``stormatrix.analysis``   -> ``analysis/``   (pure pandas functions and the workbook writer)
- ``stormatrix.host``       -> ``linux-host/`` (collector and inventory that also run on a hypervisor node)
"""

from __future__ import annotations

import sys as _sys

from .core import __version__
from .core.starting import install_starting_handlers, is_the_command, say_stopped_while_starting

# Only for the command itself (the console script, or ``python -m stormatrix``), never a library user's
# program: a signal during the rest of the imports ends in one line (cli.main replaces these handlers).
_COMMAND = is_the_command(_sys.argv)
if _COMMAND:
    install_starting_handlers()


def _quiet_interrupt_hook(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """Ctrl-C while the command is still importing (before ``cli.main`` can catch it): one line, no
    traceback; the interpreter then ends with the SIGINT status (130) as for any uncaught Ctrl-C."""
    if issubclass(kind, KeyboardInterrupt):
        say_stopped_while_starting("interrupted")
        return
    _previous_hook(kind, value, tb)  # type: ignore[arg-type]


# A KeyboardInterrupt raised (not signalled) while the command's imports run: the same one line.
_previous_hook = _sys.excepthook
if _COMMAND:
    _sys.excepthook = _quiet_interrupt_hook  # one version, kept in the leaf layer analysis may import

__all__ = ["__version__"]
