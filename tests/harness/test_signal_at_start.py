"""A Ctrl-C or SIGTERM in the command's first fraction of a second, while it is still importing, ends
as it does later: one line on stderr, exit 130 (SIGINT) or 143 (SIGTERM), no traceback.

The signal is sent the moment the started command shows it is importing its own package (the
interpreter's import-time report on stderr, PYTHONPROFILEIMPORTTIME, names the first ``stormatrix``
module), not after a sleep: each try lands in the imports, before ``cli.main`` sets up its handlers, on
any machine. The command is the installed console script (or ``python -m stormatrix`` without one)."""

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
OURS = re.compile(r"^import time:.*\|\s+stormatrix(\.[\w.]+)?\s*$")
TRIES = 3


def signal_while_importing(sig: int) -> tuple[int, list[str]]:
    """Start ``stormatrix plan`` and send ``sig`` at the first import of the package; returns the exit
    status and the stderr lines that are not the import-time report."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1"}
    with subprocess.Popen([*COMMAND, "plan", str(paths.ROOT / "harness" / "matrices" / "demo.toml")],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        assert proc.stderr is not None
        lines: list[str] = []
        try:
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if OURS.match(line):
                    proc.send_signal(sig)
                    break
            else:
                pytest.fail("the command never imported its package:\n" + "\n".join(lines[-20:]))
            lines += proc.stderr.read().splitlines()
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, [line for line in lines if not IMPORT_TIME.match(line)]


@pytest.mark.parametrize("sig,what", [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_importing_ends_in_one_line_and_its_exit_code(sig: int, what: str) -> None:
    for attempt in range(TRIES):
        code, said = signal_while_importing(sig)
        assert code == 128 + sig, f"try {attempt + 1}: exit {code} (a negative one: killed by the signal)\n{said}"
        assert not any("Traceback" in line for line in said), "\n".join(said)
        assert len(said) == 1 and said[0].startswith(f"stormatrix: {what}"), said
