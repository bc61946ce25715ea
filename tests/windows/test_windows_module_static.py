"""Rules of the PowerShell guest module that are about what the code does, read from its text.

Parse errors, syntax and APIs newer than Windows PowerShell 5.1, help, one function per file, the
manifest and static binding are checked on the real PowerShell engine (tests/pwsh/Checks and
tests/pester/Compliance.Tests.ps1), which reads PowerShell properly. What stays here: no code built
from strings, native calls through one helper that checks the exit code, ASCII-only files (5.1 reads a
BOM-less file as ANSI), disk changes only under ShouldProcess, and what the validation suite checks.
``strip_strings_and_comments`` blanks strings and comments so these text rules look at code only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import paths

ROOT = paths.ROOT
MODULE = ROOT / "windows" / "StormatrixGuest"
PUBLIC = sorted((MODULE / "Public").glob("*.ps1"))
PRIVATE = sorted((MODULE / "Private").glob("*.ps1"))
ALL_PS = sorted(p for p in (ROOT / "windows").rglob("*") if p.suffix in (".ps1", ".psm1", ".psd1")) + \
    sorted((ROOT / "tests" / "pester").glob("*.ps*1"))


def _skip_single(text: str, i: int) -> int:
    """Index after the single-quoted string starting at i ('' is an escaped quote)."""
    j = i + 1
    while j < len(text):
        if text[j] == "'":
            if text[j + 1:j + 2] == "'":
                j += 2
                continue
            return j + 1
        j += 1
    return j


def _skip_subexpression(text: str, j: int) -> int:
    depth = 1
    while j < len(text) and depth:
        c = text[j]
        if c == "'":
            j = _skip_single(text, j)
            continue
        if c == '"':
            j = _skip_double(text, j)
            continue
        depth += c == "("
        depth -= c == ")"
        j += 1
    return j


def _skip_double(text: str, i: int) -> int:
    """Index after the double-quoted string at i, stepping over `x escapes and $( ... ) with quotes inside."""
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "`":
            j += 2
        elif c == '"':
            if text[j + 1:j + 2] == '"':
                j += 2
                continue
            return j + 1
        elif text.startswith("$(", j):
            j = _skip_subexpression(text, j + 2)
        else:
            j += 1
    return j


def strip_strings_and_comments(text: str) -> str:
    """PowerShell source with comments, here-strings and quoted strings blanked, so what is left is code."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("<#", i):
            j = text.find("#>", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text[i] == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("@'\n", i) or text.startswith('@"\n', i):
            j = text.find("\n" + text[i + 1] + "@", i)
            i = n if j < 0 else j + 3
            out.append("''")
        elif text[i] == "'":
            i = _skip_single(text, i)
            out.append("''")
        elif text[i] == '"':
            i = _skip_double(text, i)
            out.append('""')
        elif text[i] == "`":
            out.append(" ")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def test_stripper_handles_subexpressions_with_quotes() -> None:
    code = strip_strings_and_comments("$x = \"a $(($l | % { $_.S }) -join ', ') b\" # c\n$y = 'it''s'")
    assert code == '$x = "" \n$y = \'\''


@pytest.mark.parametrize("path", PUBLIC + PRIVATE, ids=lambda p: p.name)
def test_no_string_built_command_lines(path: Path) -> None:
    code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
    assert "Invoke-Expression" not in code and "iex " not in code
    assert "Start-Process" not in code
    assert "cmd /c" not in code.lower() and "cmd.exe" not in code.lower()


def test_native_calls_go_through_one_helper_that_checks_the_exit_code() -> None:
    helper = (MODULE / "Private" / "Invoke-StormatrixNative.ps1").read_text(encoding="utf-8")
    assert "& $FilePath @ArgumentList" in helper
    assert "$LASTEXITCODE" in helper
    for path in PUBLIC:
        code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
        if "Invoke-StormatrixNative" in code:
            assert ".ExitCode -ne 0" in code, f"{path.stem} ignores the exit code"
        assert not re.search(r"&\s*\$\w*(Path|Exe)\b", code), f"{path.stem} calls an executable directly"


@pytest.mark.parametrize("path", ALL_PS, ids=lambda p: p.name)
def test_files_are_ascii(path: Path) -> None:
    """Windows PowerShell 5.1 reads BOM-less files as ANSI: non-ASCII characters would be mangled."""
    path.read_text(encoding="utf-8").encode("ascii")


def test_mandatory_parameters_that_change_disks_support_whatif() -> None:
    text = (MODULE / "Public" / "Initialize-StormatrixGuest.ps1").read_text(encoding="utf-8")
    assert "SupportsShouldProcess" in text
    code = strip_strings_and_comments(text)
    for cmd in ("Set-Disk", "Clear-Disk", "Copy-Item", "New-WSManInstance"):
        for m in re.finditer(cmd, code):
            before = code[:m.start()]
            assert before.rfind("ShouldProcess(") > before.rfind("function "), f"{cmd} outside ShouldProcess"


def test_validation_checks_what_a_run_needs() -> None:
    """The guest checks are one list (Get-StormatrixGuestCheck), run by the built-in runner and by the
    Pester 5 suite alike; each failure says how to fix it."""
    text = (MODULE / "Private" / "Get-StormatrixGuestCheck.ps1").read_text(encoding="utf-8")
    names = re.findall(r"Name = '([^']*)'", text)
    for it in ("serial", "raw", "offline", "driver bound", "fio present", "DiskSpd present", "power plan",
               "reboot pending"):
        assert any(it.lower() in n.lower() for n in names), it
    assert text.count("Fix:") >= 7, "the failures say how to fix them"
    suite = (MODULE / "Validation" / "Guest.Validation.Tests.ps1").read_text(encoding="utf-8")
    assert "Get-StormatrixGuestCheck" in suite, "the Pester suite runs the same list of checks"
