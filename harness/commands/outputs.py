"""Output planning: every file a command will write, checked against every file it reads, before anything
is created.

One planner for ``report``, ``compare`` and ``demo`` (and the run-directory checks of ``run``/``suite``
share its name-length rule). Why it knows *every* input, not just the paths on the command line: a
report of ``DIR/r.json`` also reads the perf sidecar ``DIR/r.csv``, which is exactly where the tidy
CSV of ``-o DIR/r.xlsx`` goes by default; a directory input holds hundreds of files. An output that
would replace any of them is refused (exit 2) naming both, and nothing is written.

Two steps, because the full list of inputs is known only once discovery has walked them (reading
creates nothing): :func:`plan_outputs` before anything is read (names, places, the paths given), then
:func:`refuse_inputs` with every file ingest read, before the first byte is written.
"""

from __future__ import annotations

import glob
import os
import stat
from pathlib import Path
from typing import Iterable

from ..core import oscompat
from ..core.errors import InputError
from ..core.journalfile import JOURNAL_NAME
from ..core.paths import input_problem

#: room a temporary name needs next to an output: ``.<name>.<pid>.part`` written through
#: ``.<that>.<pid>.tmp`` (pids up to 7 digits), with some to spare
TEMP_ROOM = 40


def real(path: str | Path) -> Path:
    """``path`` with links resolved; a loop somewhere in it leaves it as given (absolute)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(path).absolute()


def _limits(path: Path) -> tuple[int, int]:
    """(longest name, longest path) on the file system of the nearest existing folder above ``path`` (the file
    system the file goes to): ``pathconf``, or Windows' rules (:func:`stormatrix.core.oscompat.path_limits`)."""
    folder = path.absolute().parent
    while True:
        try:
            return oscompat.path_limits(str(folder))
        except (OSError, ValueError):
            if folder.parent == folder:
                return 255, 4096
            folder = folder.parent


def name_problem(path: str | Path, room: int = TEMP_ROOM) -> str | None:
    """Why ``path`` cannot be created on its file system because of its length (a name or the whole path
    too long, counting the ``room`` its temporary name needs), or None."""
    p = oscompat.pure_path(path)  # (the system's own rules: a drive and backslashes on Windows)
    name_max, path_max = _limits(Path(path))
    unit = oscompat.name_unit()
    parts = p.parts
    for i, part in enumerate(parts):
        if i == 0 and p.anchor == part:  # the root, or a drive (``C:\\``), is no name
            continue
        need = oscompat.name_length(part) + (room if i == len(parts) - 1 else 0)
        if need > name_max:
            extra = f" (plus {room} for its temporary name)" if i == len(parts) - 1 else ""
            return (f"the name {part[:40]!r}... is {oscompat.name_length(part)} {unit} long{extra}; this file "
                    f"system allows {name_max}")
    whole = oscompat.name_length(str(p) if p.is_absolute() else str(Path(path).absolute()))
    if whole + room >= path_max:
        return f"the path is {whole} {unit} long; this system allows {path_max}"
    return None


def _writable_place(flag: str, path: Path) -> None:
    """Refuse an output that cannot be a file: one under a path whose parent is a regular file, or one that
    exists as a device, pipe or socket (renaming over it would replace the device node, e.g. /dev/null)."""
    parent = path.parent
    while True:
        try:
            st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            if parent.parent == parent:
                return
            parent = parent.parent
            continue
        except OSError as exc:
            raise InputError(f"{flag} {path}: {parent} cannot be used ({exc.strerror}). "
                             "Fix: write the output elsewhere") from None
        if not stat.S_ISDIR(st.st_mode):
            raise InputError(f"{flag} {path}: {parent} is a file, not a directory. "
                             "Fix: give a path in a directory (or remove that file)")
        break
    try:
        mode = path.lstat().st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        raise InputError(f"{flag} {path} is not a regular file (a device, pipe or socket). "
                         "Fix: give the name of a file to write")


def _given(inputs: Iterable[str | Path]) -> list[Path]:
    """The input paths as given (globs expanded) that exist."""
    out = []
    for given in inputs:
        for name in glob.glob(str(given)) or [str(given)]:
            try:
                if Path(name).exists():
                    out.append(Path(name))
            except OSError:
                continue
    return out


def check_output_name(flag: str, path: str | Path) -> None:
    """An output (a file or a run directory) whose name the file system cannot hold: exit 2, before anything
    is created, instead of an OSError after the work is done."""
    shown = str(path) if len(str(path)) <= 120 else str(path)[:100] + "..."
    p = oscompat.pure_path(path)
    for part in p.parts[1:] if p.anchor else p.parts:
        bad = oscompat.name_problem(part)  # (Windows: <>:"|?*, CON, NUL, a trailing dot)
        if bad:
            raise InputError(f"{flag} {shown}: {bad}. Fix: give another name")
    problem = name_problem(path)
    if problem:
        raise InputError(f"{flag} {shown}: {problem}. Fix: give a shorter name")


def plan_outputs(outputs: list[tuple[str, Path]], inputs: Iterable[str | Path] = ()) -> None:
    """Refuse, before anything is read, outputs that cannot be written or would destroy an input given on
    the command line: a name too long, a directory, a path under a file, a device, a dangling or looping
    link, a run journal, one of the inputs, or two outputs that are one file. ``outputs`` holds (the option
    that named it, path)."""
    for flag, path in outputs:
        check_output_name(flag, path)
        if os.path.islink(path):  # a loop or a dangling link: resolving or renaming over it is no answer
            problem = input_problem(path)
            if problem and "symbolic link" in problem:
                raise InputError(f"{flag} {path} {problem}. Fix: remove the link or give another file name")
    seen: dict[Path, str] = {}
    for flag, path in outputs:
        mine = real(path)
        if mine in seen:
            raise InputError(f"{flag} {path} is also {seen[mine]}'s file. Fix: give each output its own name")
        seen[mine] = flag
    given = [real(g) for g in _given(inputs)]
    for flag, path in outputs:
        _writable_place(flag, path)
        if path.is_dir():
            raise InputError(f"{flag} {path} is a directory. Fix: give a file name")
        if path.name == JOURNAL_NAME:
            raise InputError(f"{flag} {path} would overwrite a run journal. Fix: write the output elsewhere")
        if real(path) in given:
            raise InputError(f"{flag} {path} is one of the input files and would be overwritten. "
                             "Fix: write the output elsewhere")


def refuse_inputs(outputs: list[tuple[str, Path]], files: Iterable[str], how: str = "read") -> None:
    """Refuse outputs that are any file the command reads (``files``: every journal, result file and perf
    CSV discovery found, the sidecars included), naming the file: exit 2, nothing written."""
    mine = {real(path): (flag, path) for flag, path in outputs}
    for name in files:
        hit = mine.get(real(name))
        if hit is not None:
            flag, path = hit
            raise InputError(f"{flag} {path} is {name}, which this command {how}s as an input (a perf sidecar "
                             "of a result file, or a result file in a folder given); writing it would replace "
                             "a measurement. Fix: write the output elsewhere, or give --csv another name")
