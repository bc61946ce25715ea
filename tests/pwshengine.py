"""Run PowerShell from pytest: the real ``pwsh`` when there is one, else the hosted PowerShell 7.6 engine.

Why: pwsh cannot be installed on the development machines, but the real engine can
(``tests/pwsh/host``, System.Management.Automation 7.6.9 in a console host with pwsh's command line).
Tests that need PowerShell use this module instead of skipping: ``run_pwsh(...)`` runs a script on
whichever is available and ``engine_name()`` says which one ran, so a report can name it.

Choice of engine (``pwsh_argv``):
1. ``$STORMATRIX_REAL_PWSH`` when set (an explicit real pwsh);
2. a ``pwsh`` on PATH, or ``.tools/pwsh/pwsh`` installed by scripts/install-pwsh.sh;
3. the hosted engine through ``tests/pwsh/pwsh``, built once per session by scripts/build-pwsh-host.sh.
``STORMATRIX_PWSH_ENGINE=hosted`` forces 3 even where a real pwsh exists (the engine's own tests).
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "tests" / "pwsh" / "pwsh"
BUILD_SCRIPT = ROOT / "scripts" / "build-pwsh-host.sh"
HOST_DLL = ROOT / ".tools" / "pwsh-host" / "StormatrixPwshHost.dll"
ENGINE_VERSION = "7.6.9"
COMMON_ARGS = ["-NoLogo", "-NoProfile", "-NonInteractive"]

_build_lock = threading.Lock()
_built = False


class PwshUnavailable(RuntimeError):
    """Neither a real pwsh nor the hosted engine can run here (the message says why and what to do)."""


def real_pwsh() -> str | None:
    """The real pwsh to use, or None (see the module docstring for the order)."""
    if os.environ.get("STORMATRIX_PWSH_ENGINE", "").lower() == "hosted":
        return None
    explicit = os.environ.get("STORMATRIX_REAL_PWSH")
    if explicit:
        return explicit
    found = shutil.which("pwsh")
    if found:
        return found
    local = ROOT / ".tools" / "pwsh" / "pwsh"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return None


def build_host() -> None:
    """Build the hosted engine once per process (scripts/build-pwsh-host.sh skips an up-to-date build)."""
    global _built
    with _build_lock:
        if _built:
            return
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0 or not HOST_DLL.is_file():
            raise PwshUnavailable(
                f"building the hosted PowerShell engine failed (scripts/build-pwsh-host.sh, exit {proc.returncode}):\n"
                f"{proc.stdout}{proc.stderr}")
        _built = True


def pwsh_argv() -> list[str]:
    """The command that starts PowerShell with pwsh's command line (add -File/-Command/... yourself)."""
    real = real_pwsh()
    if real:
        return [real]
    build_host()
    return [str(LAUNCHER)]


def engine_name() -> str:
    """What :func:`pwsh_argv` runs, e.g. ``PowerShell engine 7.6.9 (hosted)`` or ``pwsh 7.4.6 (real)``."""
    real = real_pwsh()
    if not real:
        return f"PowerShell engine {ENGINE_VERSION} (hosted)"
    try:
        out = subprocess.run([real, *COMMON_ARGS, "-Command", "$PSVersionTable.PSVersion.ToString()"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "?"
    return f"pwsh {out or '?'} (real)"


def encode_command(script: str) -> str:
    """pwsh's -EncodedCommand form of ``script`` (base64 of UTF-16LE)."""
    return base64.b64encode(script.encode("utf-16-le")).decode("ascii")


def _environment(env: Mapping[str, str | None] | None) -> dict[str, str]:
    merged = dict(os.environ)
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
                              env=_environment(env), capture_output=True, text=True, encoding="utf-8",
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
    return subprocess.run([*argv, *COMMON_ARGS, *extra_args, *tail], cwd=cwd, env=_environment(env),
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout)
