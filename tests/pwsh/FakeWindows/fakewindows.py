"""The fake Windows guest's state, for tests and for the fake executables in ``bin/``.

A guest is a directory made by :func:`make_guest` from ``guest.json`` (plus the test's changes):

- ``state.json``: the description, updated by every state change (Set-Disk, powercfg /setactive, ...);
- ``C/``: the guest's C: drive (FakeWindows maps the PowerShell drive ``C:`` onto it), holding the
  installed programs from ``Files`` (links to ``bin/fio.exe``, ``bin/diskspd.exe``);
- ``C/Windows/System32/DriverStore/FileRepository/<Folder>/<Inf>``: the staged driver packages of
  ``DriverStore`` (what the guest module lists as installed storage drivers);
- ``HKLM/``: one folder per registry key in ``Registry`` (so ``Test-Path HKLM:\\...`` answers);
- ``disks/diskN.img``: the bytes of each disk, as large as its ``Size``, that the fake fio.exe and
  diskspd.exe read and write when asked for ``\\\\.\\PhysicalDriveN`` / ``#N``;
- ``tmp/``: the guest's %TEMP% (where the executor uploads the module).

:func:`engine_env` is the environment of this guest's powershell.exe, and :func:`powershell_argv` turns a
powershell.exe command line into the real pwsh's: the same arguments, with the command preceded by
``Import-Module FakeWindows -Global; Enter-FakeWindowsGuest`` (the fake cmdlets, the console's OEM code
page 437 and plain-text output, the C: and HKLM: drives), so that the command runs in a session that
looks like the guest's. Only the command forms the executor sends are supported (-Command,
-EncodedCommand); anything else is refused by name rather than run without the guest.
"""

from __future__ import annotations

import base64
import copy
import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
DESCRIPTION = HERE / "guest.json"
STATE_ENV = "STORMATRIX_FAKE_WINDOWS"


def load_description() -> dict[str, Any]:
    return json.loads(DESCRIPTION.read_text(encoding="utf-8"))


def make_guest(root: Path, changes: dict[str, Any] | None = None) -> Path:
    """A new guest under ``root`` (created); ``changes`` replaces top-level keys of the description."""
    data = load_description()
    for key, value in (changes or {}).items():
        data[key] = copy.deepcopy(value)
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("C", "HKLM", "disks", "tmp"):
        (root / sub).mkdir(exist_ok=True)
    for windows_path, program in data.get("Files", {}).items():
        target = root / "C" / windows_path.split(":", 1)[1].lstrip("\\").replace("\\", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(HERE / "bin" / program)  # installed programs are the fakes in bin/
    repository = root / "C" / "Windows" / "System32" / "DriverStore" / "FileRepository"
    repository.mkdir(parents=True, exist_ok=True)
    for package in data.get("DriverStore", []):
        folder = repository / package["Folder"]
        folder.mkdir(exist_ok=True)
        (folder / package["Inf"]).write_text(f"; {package['Inf']} {package.get('Version', '')}\r\n", encoding="ascii")
    for key in data.get("Registry", {}):
        (root / "HKLM" / key.split(":", 1)[1].lstrip("\\").replace("\\", "/")).mkdir(parents=True, exist_ok=True)
    for disk in data["Disks"]:
        image = root / "disks" / f"disk{disk['Number']}.img"
        with open(image, "wb") as f:
            f.truncate(int(disk["Size"]))
    (root / "state.json").write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return root


def engine_env(root: Path, base: dict[str, str] | None = None, temp: Path | None = None) -> dict[str, str]:
    """The environment of a powershell.exe in this guest (run through :func:`powershell_argv`). ``temp``
    replaces the guest's %TEMP%: guests that share one keep the uploaded module (an upload takes ~40
    commands)."""
    temp = temp or root / "tmp"
    env = dict(base or {})
    env.update({
        STATE_ENV: str(root / "state.json"),
        # the fake cmdlets, and the guest's own module folder (C:\Program Files\WindowsPowerShell\Modules,
        # where Initialize-StormatrixGuest -PesterSource installs Pester); pwsh adds its own folders
        "PSModulePath": os.pathsep.join([str(HERE / "Modules"), str(root / "C" / "Program Files" / "WindowsPowerShell" / "Modules")]),
        "PATH": f"{HERE / 'bin'}:/usr/bin:/bin",
        "SystemRoot": "C:\\Windows",  # as on Windows; C: is the guest's drive (Enter-FakeWindowsGuest)
        "ProgramFiles": "C:\\Program Files",
        "TMPDIR": str(temp) + "/",
        "HOME": str(temp),
        "DOTNET_CLI_TELEMETRY_OPTOUT": "1",
        "POWERSHELL_TELEMETRY_OPTOUT": "1",
    })
    for name in ("DOTNET_ROOT",):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


#: what every command of this guest's powershell.exe runs first (FakeWindows.psm1 Enter-FakeWindowsGuest)
BOOT = "Import-Module -Name FakeWindows -Global; Enter-FakeWindowsGuest\n"
_ENCODED = {"-encodedcommand", "-enc", "-ec", "-e"}
_COMMAND = {"-command", "-c"}


def powershell_argv(pwsh: str, args: list[str]) -> list[str]:
    """The real pwsh's argv for ``powershell.exe <args>`` in this guest: the same switches, and the command
    (``-Command ...`` or ``-EncodedCommand <base64 UTF-16LE>``) with :data:`BOOT` before it. pwsh's -Command
    rules then apply to the command as given (``exit N``; 1 when its last statement failed)."""
    for i, arg in enumerate(args):
        word = arg.lower()
        if word in _ENCODED and i + 1 < len(args):
            script = base64.b64decode(args[i + 1]).decode("utf-16-le")
            encoded = base64.b64encode((BOOT + script).encode("utf-16-le")).decode("ascii")
            return [pwsh, *args[:i], arg, encoded, *args[i + 2:]]
        if word in _COMMAND and i + 1 < len(args):
            return [pwsh, *args[:i], arg, BOOT + " ".join(args[i + 1:])]
    raise ValueError(f"the fake Windows guest runs powershell -Command or -EncodedCommand only, not: {args}")


# --- state access from the fake executables -------------------------------------------------------------

def state_path() -> Path:
    value = os.environ.get(STATE_ENV)
    if not value:
        raise SystemExit(f"{STATE_ENV} is not set: this program only runs inside a FakeWindows guest")
    return Path(value)


@contextmanager
def state(write: bool = False) -> Iterator[dict[str, Any]]:
    """The guest's state under a file lock; written back when ``write``."""
    path = state_path()
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text(encoding="utf-8"))
        yield data
        if write:
            path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


def visible_disks(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Disks Windows shows: those on a controller whose driver is installed (no driver, no disk)."""
    bound = {c["InstanceId"] for c in data["Controllers"] if c.get("DriverInstalled")}
    return [d for d in data["Disks"] if d.get("Controller") in bound]


def physical_drive(target: str) -> tuple[dict[str, Any], Path] | None:
    """``\\\\.\\PhysicalDriveN`` (fio) or ``#N`` (DiskSpd) -> (disk, its image), None when not a disk path."""
    text = target.replace("\\:", ":")
    if text.lower().startswith("\\\\.\\physicaldrive"):
        number = text[len("\\\\.\\PhysicalDrive"):]
    elif text.startswith("#"):
        number = text[1:]
    else:
        return None
    if not number.isdigit():
        return None
    with state() as data:
        for disk in visible_disks(data):
            if int(disk["Number"]) == int(number):
                return disk, state_path().parent / "disks" / f"disk{disk['Number']}.img"
    raise FileNotFoundError(target)
