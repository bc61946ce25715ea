"""A Ctrl-C or SIGTERM in the command's first fraction of a second, while it is still starting, ends
as it does later: one line on stderr, exit 130 (SIGINT) or 143 (SIGTERM), no traceback.

The signal is sent the moment the started command shows that the ``stormatrix`` package is imported and
its own imports run (the interpreter's import-time report on stderr, PYTHONPROFILEIMPORTTIME, names the
module it just imported), not after a sleep, so each try lands there on any machine. Python's start-up
before that keeps its default: see :mod:`stormatrix.core.starting`.

The command is the installed console script (or ``python -m stormatrix`` without one)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import paths

SCRIPT = Path(sys.executable).parent / "stormatrix"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "stormatrix"]
IMPORT_TIME = re.compile(r"^import time:")
PACKAGE_IMPORTED = re.compile(r"^import time:.*\|\s+stormatrix\s*$")
TRIES = 3


def signal_while_starting(sig: int, stage: re.Pattern[str]) -> tuple[int, list[str]] | None:
    """Start ``stormatrix plan`` and send ``sig`` at the import-time line ``stage`` matches; returns the
    exit status and the stderr lines that are not the import-time report (None: no such line)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1"}
    with subprocess.Popen([*COMMAND, "plan", str(paths.ROOT / "harness" / "matrices" / "demo.toml")],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        assert proc.stderr is not None
        lines: list[str] = []
        try:
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if stage.match(line):
                    proc.send_signal(sig)
                    break
            else:
                proc.wait(timeout=60)
                return None
            lines += proc.stderr.read().splitlines()
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, [line for line in lines if not IMPORT_TIME.match(line)]


@pytest.mark.parametrize("sig,what", [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_starting_ends_in_one_line_and_its_exit_code(sig: int, what: str) -> None:
    for attempt in range(TRIES):
        outcome = signal_while_starting(sig, PACKAGE_IMPORTED)
        assert outcome is not None, "the command never imported its package"
        code, said = outcome
        assert code == 128 + sig, f"try {attempt + 1}: exit {code} (a negative one: killed by the signal)\n{said}"
        assert not any("Traceback" in line for line in said), "\n".join(said)
        assert len(said) == 1 and said[0].startswith(f"stormatrix: {what}"), said
