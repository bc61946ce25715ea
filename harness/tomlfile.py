"""Reading a TOML input file (a matrix, a suite, a fleet) into a dict, every way it can be unreadable a
:class:`~stormatrix.core.errors.MatrixError` that names the file and the fix, never a traceback.

Before TOML's parser sees the text: the path must be a regular file of at most :data:`MATRIX_MAX_BYTES` (a FIFO
would block, ``/dev/zero`` never end), UTF-8 (not Notepad's UTF-16, not with a byte-order mark), and without a
Windows path in a double-quoted string, where TOML reads the backslashes as escapes. What the dict holds is
validated by the file's own reader (:func:`stormatrix.spec.spec_from_dict`, :mod:`stormatrix.suite`, a fleet's spec).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .core.errors import MatrixError
from .core.paths import TooLarge, input_problem, looks_utf16, read_bounded

#: no matrix is this large (bench_plan's 25,000 workloads take about 2 MiB); /dev/zero is refused before
MATRIX_MAX_BYTES = 16 * 2**20


# Exceptions a TOML parser raises for malformed text, named here so that a bad file becomes a
# MatrixError, not a traceback.
def load_toml(path: Path) -> dict[str, Any]:
    problem = input_problem(path)
    if problem == "does not exist":
        raise MatrixError(str(path), "", "file not found", "give the path of an existing matrix file")
    if problem:  # a FIFO would block, /dev/zero never end: neither is opened
        raise MatrixError(str(path), "", f"cannot be read: it {problem}", "give the path of a matrix file (TOML)")
    try:
        data = read_bounded(path, MATRIX_MAX_BYTES)
    except TooLarge:
        raise MatrixError(str(path), "", f"is larger than {MATRIX_MAX_BYTES // 2**20} MiB, which no matrix is "
                          "(25,000 workloads take about 2 MiB)", "give the matrix file, not a data file") from None
    except OSError as exc:
        raise MatrixError(str(path), "", f"cannot be read ({exc.strerror})", "check the path and permissions") from None
    if looks_utf16(data):
        raise MatrixError(str(path), "", "is not UTF-8 text: it is saved as UTF-16 (Notepad's 'Unicode', "
                          "PowerShell 5's Out-File and '>')", "save the file as UTF-8 (Notepad: Save As, Encoding "
                          "'UTF-8'; PowerShell: Set-Content -Encoding utf8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(str(path), "", f"is not UTF-8 text (byte {exc.start})", "save the file as UTF-8") from None
    if text.startswith("\ufeff"):  # Notepad's "UTF-8 with BOM": TOML forbids the mark, so say it is the cause
        raise MatrixError(str(path), "", "is not valid TOML: it starts with a UTF-8 byte-order mark (BOM), which "
                          "TOML does not allow (Notepad writes one when saving as 'UTF-8 with BOM')",
                          "save the file as 'UTF-8' without BOM (Notepad: Save As, Encoding 'UTF-8'; VS Code: "
                          "'Save with Encoding', 'UTF-8')")
    windows_path = _escaped_windows_path(text)
    if windows_path:
        line, shown = windows_path
        raise MatrixError(str(path), f"line {line}", f"{shown} is a Windows path in a double-quoted TOML string, where "
                          "a backslash starts an escape (\\t is a tab, \\n a line break, \\U a Unicode escape), so the "
                          "path read would not be the path written",
                          "write it in single quotes (a TOML literal string: 'C:\\Users\\me\\pve.pem'), or double each "
                          "backslash, or use forward slashes (\"C:/Users/me/pve.pem\")")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise MatrixError(str(path), "", "is not a matrix file (arrays or tables nested too deeply to parse)",
                          "write the matrix as in harness/matrices/demo.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(str(path), "", f"is not valid TOML ({exc})",
                          "correct the syntax at that line (duplicate keys and tables are not allowed)") from None


#: a drive letter's path inside a double-quoted TOML string whose first backslash is not doubled: ``"C:\temp"``
_ESCAPED_DRIVE_RE = re.compile(r'"[A-Za-z]:\\(?!\\)[^"\n]*"?')


def _escaped_windows_path(text: str) -> tuple[int, str] | None:
    r"""(line, the string) of the first ``"C:\..."`` a Windows user wrote into a basic string: TOML reads ``\t``
    as a tab and ``\n`` as a line break without a word (``"C:\temp\new"``), or refuses ``\U``/``\d`` with
    "Invalid hex value". Comments are skipped; ``'C:\temp'`` and ``"C:\\temp"`` are what TOML means."""
    if ":\\" not in text:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        m = None if line.lstrip().startswith("#") else _ESCAPED_DRIVE_RE.search(line)
        if m and "'" not in line[:m.start()]:  # (not inside a literal string 'say "C:\x"')
            return number, m.group(0)[:80]
    return None
