"""argparse ``type=`` functions shared by the commands: one definition of "a positive number", "a host"
and "a port", so every option that takes one refuses the same nonsense with the same words.

Why they exist at all: ``float("nan")`` parses, and NaN never compares as elapsed or exceeded (a
``--timeout nan`` retried forever); ``inf`` would never end; ``1e309`` is ``inf``; a URL given as a
host silently becomes a host name with a slash in it. Each raises ``argparse.ArgumentTypeError``,
which argparse turns into ``error: argument --x: <message>`` and exit 2.
"""

from __future__ import annotations

import argparse
import math

from ..core.errors import InputError
from ..core.names import host_problem, label_problem
from ..core.paths import ca_bundle_problem, input_problem
from .outputs import check_output_name


def positive_number(text: str, *, unit: str = "", example: str = "0.10") -> float:
    """A finite number above 0; ``unit`` (e.g. "seconds") and ``example`` shape the message."""
    what = f"a number of {unit}" if unit else "a number"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} (e.g. {example})") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be {what} above 0 and finite (e.g. {example})")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0: a deadline that can pass."""
    return positive_number(text, unit="seconds", example="300")


def host_name(text: str) -> str:
    """A host name or an IPv4/IPv6 address (brackets optional) — not a URL (the port and transport have
    their own options), nothing with spaces; brackets are removed."""
    problem = host_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}: give only the name or address (e.g. --host 10.0.0.5), "
                                         "the port with --port, TLS with --tls")
    return text[1:-1] if text.startswith("[") else text


def port_number(text: str) -> int:
    """0 (the transport's default) or a TCP port 1-65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535, or 0 for the default)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1-65535, or 0 for the default)")
    return value


def label(text: str) -> str:
    """A data set's name (``--side``, ``--label``): see :func:`label_problem`; surrounding blanks go."""
    problem = label_problem(text)
    if problem == "is empty":
        raise argparse.ArgumentTypeError("is empty: give a name such as 'Proxmox VE 8.2', or leave the option out")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def ca_bundle(text: str) -> str:
    """The path of a CA bundle: an existing regular file holding PEM certificates (a directory, FIFO,
    device or loop is refused before anything opens it)."""
    problem = ca_bundle_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}: give the PEM file of the CA that signed the "
                                         "guest's certificate")
    return text


def non_empty(text: str) -> str:
    """One line of printable text, not empty (a user name)."""
    if not text.strip() or any(not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError("is empty or holds line breaks or control characters")
    return text


def check_run_dir(flag: str, value: str) -> None:
    """A run directory argument (``-o RUN_DIR``): not empty (Path("") is the current directory), and if
    something is there already, a directory (a file, FIFO, device or link loop is named, exit 2)."""
    import os

    if not value.strip():
        raise InputError(f"{flag} is empty. Fix: give the run directory, e.g. {flag} runs/today (it is created "
                         "if missing)")
    check_output_name(flag, os.path.join(value, "journal.ndjson"))  # the longest name written in it is shorter
    if os.path.lexists(value) and not os.path.isdir(value):
        problem = (input_problem(value) or "is a file").replace("not a regular file", "not a directory")
        raise InputError(f"{flag} {value} {problem}, so it cannot be the run directory. Fix: give the path of a "
                         "directory (it is created if missing)")
