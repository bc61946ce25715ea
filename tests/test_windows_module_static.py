"""Static checks of the PowerShell guest module that need no PowerShell.

This machine cannot install pwsh, so these are the checks that always run: one function per public
file named after it, comment-based help with .SYNOPSIS/.PARAMETER/.EXAMPLE, the manifest exports
exactly the public functions, no syntax newer than Windows PowerShell 5.1, no string-built native
command lines, balanced brackets. The Pester compliance suite repeats the first three with the real
parser where pwsh exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


def join_path_positionals(code: str) -> list[tuple[str, int]]:
    """For each Join-Path call in stripped code: (call text, number of positional arguments)."""
    found = []
    for m in re.finditer(r"Join-Path\b", code):
        j, count = m.end(), 0
        while j < len(code):
            while j < len(code) and code[j] in " \t":
                j += 1
            if j >= len(code) or code[j] in ");|}\n\r":
                break
            if code[j] == "(":
                j = _skip_subexpression(code, j + 1)
                count += 1
            elif code[j] == "-" and code[j + 1:j + 2].isalpha():
                while j < len(code) and code[j] not in " \t);|}\n":
                    j += 1
            else:
                while j < len(code) and code[j] not in " \t);|}\n":
                    j += 1
                count += 1
        found.append((code[m.start():j], count))
    return found


def help_block(text: str) -> str:
    m = re.search(r"<#(.*?)#>", text, flags=re.S)
    return m.group(1) if m else ""


def param_names(text: str) -> list[str]:
    """Names declared in the function's top-level param( ... ) block."""
    start = text.index("param(")
    depth, i = 0, start + len("param")
    while True:
        c = text[i]
        depth += c == "("
        depth -= c == ")"
        i += 1
        if depth == 0:
            break
    block = strip_strings_and_comments(text[start:i])
    return re.findall(r"\]\s*\$([A-Za-z][A-Za-z0-9]*)\s*(?:=|,|\)|\n)", block)


def test_module_has_public_functions() -> None:
    assert len(PUBLIC) >= 8


@pytest.mark.parametrize("path", PUBLIC + PRIVATE, ids=lambda p: p.name)
def test_one_function_per_file_named_after_it(path: Path) -> None:
    code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
    names = re.findall(r"(?im)^\s*function\s+([A-Za-z][\w-]*)", code)
    assert names == [path.stem]


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.name)
def test_public_help_is_complete(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    help_text = help_block(text)
    assert text.index("<#") < text.index("param("), "help comes before param() inside the function"
    for keyword in (".SYNOPSIS", ".DESCRIPTION", ".EXAMPLE", ".OUTPUTS"):
        assert keyword in help_text, f"{path.stem}: {keyword} missing"
    documented = set(re.findall(r"\.PARAMETER\s+(\w+)", help_text))
    assert documented == set(param_names(text)), f"{path.stem}: .PARAMETER entries differ from param()"


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.name)
def test_public_functions_are_advanced_and_typed(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "[CmdletBinding(" in text
    assert "[OutputType(" in text


def test_manifest_exports_exactly_the_public_functions() -> None:
    manifest = (MODULE / "StormatrixGuest.psd1").read_text(encoding="utf-8")
    block = re.search(r"FunctionsToExport\s*=\s*@\((.*?)\)", manifest, flags=re.S)
    assert block
    exported = sorted(re.findall(r"'([^']+)'", block.group(1)))
    assert exported == sorted(p.stem for p in PUBLIC)
    assert "PowerShellVersion    = '5.1'" in manifest
    assert re.search(r"CompatiblePSEditions\s*=\s*@\('Desktop', 'Core'\)", manifest)


def test_every_public_function_has_a_pester_test() -> None:
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests" / "pester").glob("*.Tests.ps1"))
    for path in PUBLIC:
        assert f"Describe '{path.stem}'" in tests, f"no Pester Describe for {path.stem}"


NEWER_THAN_51 = [
    (r"\?\?=?", "null-coalescing ?? / ??= (PowerShell 7)"),
    (r"\?\.|\?\[", "null-conditional ?. / ?[] (PowerShell 7)"),
    (r"&&|\|\|", "pipeline chain && / || (PowerShell 7)"),
    (r"\s-Parallel\b", "ForEach-Object -Parallel (PowerShell 7)"),
    (r"-AsHashtable\b", "ConvertFrom-Json -AsHashtable (PowerShell 6+)"),
    (r"\$IsWindows|\$IsLinux|\$IsMacOS", "$IsWindows and friends (PowerShell 6+)"),
    (r"\bclean\s*\{", "clean block (PowerShell 7.3)"),
]


@pytest.mark.parametrize("path", [p for p in ALL_PS if "windows" in p.parts], ids=lambda p: p.name)
def test_guest_code_has_no_syntax_newer_than_51(path: Path) -> None:
    code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
    for pattern, what in NEWER_THAN_51:
        m = re.search(pattern, code)
        assert not m, f"{path.name}: {what} at ...{code[max(0, m.start() - 40):m.end() + 20]!r}"
    # ternary: a '?' that is an operator (not in $?, not ValidatePattern text, which is stripped)
    for m in re.finditer(r"[^$\s]\s+\?\s+[^:]+\s:\s", code):
        raise AssertionError(f"{path.name}: ternary ? : (PowerShell 7) at {m.group(0)!r}")


@pytest.mark.parametrize("path", [p for p in ALL_PS if "windows" in p.parts], ids=lambda p: p.name)
def test_join_path_takes_two_arguments_on_51(path: Path) -> None:
    """Join-Path with three or more positional parts is PowerShell 6+."""
    code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
    for call, count in join_path_positionals(code):
        assert count <= 2, f"{path.name}: {call!r} has {count} positional parts"


def test_join_path_checker_catches_three_parts() -> None:
    assert [c for _, c in join_path_positionals("Join-Path $a 'b' 'c'")] == [3]
    assert [c for _, c in join_path_positionals("(Join-Path (Join-Path $a 'b') 'c')")] == [2, 2]


def test_stripper_handles_subexpressions_with_quotes() -> None:
    code = strip_strings_and_comments("$x = \"a $(($l | % { $_.S }) -join ', ') b\" # c\n$y = 'it''s'")
    assert code == '$x = "" \n$y = \'\''


@pytest.mark.parametrize("snippet", ["$a = $b ?? 1", "$a ??= 1", "$a?.Name", "Get-X && Get-Y", "Get-X || exit 1",
                                     "1..3 | ForEach-Object -Parallel { $_ }", "$j | ConvertFrom-Json -AsHashtable",
                                     "if ($IsWindows) { }"])
def test_newer_syntax_detector_finds_7_only_code(snippet: str) -> None:
    code = strip_strings_and_comments(snippet)
    assert any(re.search(pattern, code) for pattern, _ in NEWER_THAN_51)


def test_newer_syntax_detector_ignores_strings_and_comments() -> None:
    code = strip_strings_and_comments("$m = 'a ?? b && c' # x || y\n$n = \"$($a) ?. \"")
    assert not any(re.search(pattern, code) for pattern, _ in NEWER_THAN_51)


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
def test_brackets_balance(path: Path) -> None:
    code = strip_strings_and_comments(path.read_text(encoding="utf-8"))
    code = code.replace("`(", "").replace("`)", "")
    for open_, close in ("()", "{}", "[]"):
        assert code.count(open_) == code.count(close), f"{path.name}: {open_}{close} unbalanced"


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


def test_validation_suite_checks_what_a_run_needs() -> None:
    text = (MODULE / "Validation" / "Guest.Validation.Tests.ps1").read_text(encoding="utf-8")
    for it in ("serial", "raw", "offline", "driver bound", "fio present", "DiskSpd present", "power plan",
               "reboot pending"):
        assert re.search(rf"It '[^']*{re.escape(it)}", text, flags=re.I), it
    assert text.count("-Because") >= 9
    assert text.count("Fix:") >= 7
