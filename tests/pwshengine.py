"""Run PowerShell from pytest: the real pwsh 7.6.9 that scripts/install-pwsh.sh puts in ``.tools/``.

Why one pwsh: `make test` runs the Pester tests on that pwsh, and the Python tests that drive PowerShell
(the WinRM stand-in's fake Windows guest, the VMware backend against the fake vCenter, the checks of the
scripts the executor sends) must run on the same one, so a pass means the same thing in both.

Which pwsh (:func:`pwsh_path`): ``$STORMATRIX_PWSH`` when set (scripts/test.sh exports it), else
``.tools/pwsh/pwsh``, installed on first use by scripts/install-pwsh.sh (pinned versions, no fallback).
When it cannot be installed, :class:`PwshUnavailable` carries the script's message: the tests fail
naming the failing command, they are not skipped.
"""
from __future__ import annotations

import base64
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SCRIPT = ROOT / "scripts" / "install-pwsh.sh"
LOCAL_PWSH = ROOT / ".tools" / "pwsh" / "pwsh"
PWSH_VERSION = "7.6.9"
COMMON_ARGS = ["-NoLogo", "-NoProfile", "-NonInteractive"]

_install_lock = threading.Lock()
_checked: str | None = None


class PwshUnavailable(RuntimeError):
    """pwsh could not be installed (the message is scripts/install-pwsh.sh's: the failing command)."""


def pwsh_path() -> str:
    """The pwsh to run: ``$STORMATRIX_PWSH``, else ``.tools/pwsh/pwsh`` (installed here once if missing)."""
    global _checked
    explicit = os.environ.get("STORMATRIX_PWSH")
    if explicit:
        return explicit
    with _install_lock:
        if _checked is None:
            proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], cwd=ROOT, capture_output=True, text=True)
            if proc.returncode != 0 or not LOCAL_PWSH.is_file():
                raise PwshUnavailable(f"scripts/install-pwsh.sh failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
            _checked = str(LOCAL_PWSH)
        return _checked


def pwsh_argv() -> list[str]:
    """The command that starts pwsh (add -File/-Command/... yourself)."""
    return [pwsh_path()]


def engine_name() -> str:
    """What :func:`pwsh_argv` runs, e.g. ``pwsh 7.6.9``, read from the pwsh itself."""
    try:
        out = subprocess.run([pwsh_path(), *COMMON_ARGS, "-Command", "$PSVersionTable.PSVersion.ToString()"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "?"
    return f"pwsh {out or '?'}"


def encode_command(script: str) -> str:
    """pwsh's -EncodedCommand form of ``script`` (base64 of UTF-16LE)."""
    return base64.b64encode(script.encode("utf-16-le")).decode("ascii")


def environment(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The current environment with ``env`` applied (a None value removes a variable). Output that tests
    parse is plain text: pwsh writes ANSI colour to redirected output unless NO_COLOR is set."""
    merged = dict(os.environ)
    merged.setdefault("NO_COLOR", "1")
    merged.setdefault("POWERSHELL_TELEMETRY_OPTOUT", "1")
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def run_pwsh(script: str | Path, *args: str, env: Mapping[str, str | None] | None = None,
             cwd: str | Path | None = None, timeout: float = 120, input: str | None = None,
             check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run PowerShell as ``pwsh -NoLogo -NoProfile -NonInteractive -File <script> args...``.

    ``script`` is a :class:`~pathlib.Path` of a .ps1 file, or the text of a script (written to a
    temporary .ps1 first, so ``param()``, ``exit N`` and argument binding behave as for a file).
    ``env`` entries are added to the current environment (a None value removes one). Output is text
    (UTF-8) in ``stdout``/``stderr``; ``check`` raises CalledProcessError on a non-zero exit.
    """
    argv = pwsh_argv()
    tmp: Path | None = None
    if isinstance(script, Path):
        target = script
    else:
        fd, name = tempfile.mkstemp(prefix="stormatrix-pwsh-", suffix=".ps1")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(script)
        tmp = target = Path(name)
    try:
        return subprocess.run([*argv, *COMMON_ARGS, "-File", str(target), *args], cwd=cwd,
                              env=environment(env), capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=timeout, input=input, check=check)
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def run_pwsh_command(command: str, *, encoded: bool = False, env: Mapping[str, str | None] | None = None,
                     cwd: str | Path | None = None, timeout: float = 120,
                     extra_args: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``pwsh -Command <command>`` (or ``-EncodedCommand`` when ``encoded``), as the WinRM executor and
    ``pwsh -c`` users do: the exit code follows pwsh's -Command rules (``exit N``; 1 when the last
    statement failed)."""
    argv = pwsh_argv()
    tail = ["-EncodedCommand", encode_command(command)] if encoded else ["-Command", command]
    return subprocess.run([*argv, *COMMON_ARGS, *extra_args, *tail], cwd=cwd, env=environment(env),
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout)
