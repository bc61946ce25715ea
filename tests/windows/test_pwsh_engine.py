"""The pwsh the tests use is the pinned one, and runs what Python sends as the executor relies on.

Why: every PowerShell-driving Python test goes through ``tests/pwshengine.py``; the executor relies on
pwsh's -Command / -EncodedCommand exit codes and UTF-16LE decoding (about_Pwsh), and the VMware CPU
window on ConvertFrom-Json's dates; those assumptions are checked here, on the same pwsh as Pester's.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import pwshengine


def test_the_tests_run_on_the_pinned_pwsh() -> None:
    assert pwshengine.engine_name() == f"pwsh {pwshengine.PWSH_VERSION}"


def test_command_exit_codes_follow_the_last_statement() -> None:
    assert pwshengine.run_pwsh_command("exit 5").returncode == 5
    assert pwshengine.run_pwsh_command("'fine'").returncode == 0
    assert pwshengine.run_pwsh_command("Write-Error 'x'").returncode == 1
    assert pwshengine.run_pwsh_command("throw 'y'").returncode == 1


def test_encoded_command_runs_utf16le_base64_with_non_ascii_output() -> None:
    proc = pwshengine.run_pwsh_command("[Console]::Out.WriteLine('Grüße 日本'); 'piped é'; exit 3", encoded=True)
    assert proc.returncode == 3
    assert "Grüße 日本" in proc.stdout
    assert "piped é" in proc.stdout


def test_convertfrom_json_gives_datetimes_as_pwsh_7_does() -> None:
    # the VMware CPU-usage defect depends on this: ISO strings become [datetime], zone and ms kept
    proc = pwshengine.run_pwsh(
        "$o = '{\"t\":\"2026-11-24T01:02:03.456Z\"}' | ConvertFrom-Json\n"
        "\"$($o.t.GetType().Name) $($o.t.Kind) $($o.t.ToString('o'))\"")
    assert proc.stdout.strip() == "DateTime Utc 2026-11-24T01:02:03.4560000Z", proc.stderr


@pytest.fixture(scope="module")
def executor_scripts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The scripts the WinRM executor sends, as files (built by the executor itself)."""
    from stormatrix.executors.winrm import executor as winrm

    payload = winrm.ModulePayload.from_dir(winrm.default_module_dir())
    texts = [*winrm.upload_scripts(payload), winrm.present_script(payload),
             winrm.call_script("Get-StormatrixGuestFacts", {"Serial": "S1"}, payload.digest)]
    out = tmp_path_factory.mktemp("sent")
    paths = []
    for i, text in enumerate(texts):
        path = out / f"sent{i}.ps1"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


# Cmdlets the Python side may send that pwsh on Linux does not have, and why.
WINDOWS_ONLY = {
    "Restart-Computer": "restarts the guest; only ever run on a real Windows guest (pwsh on Linux has none)",
}


def test_every_command_python_sends_resolves_on_pwsh(executor_scripts: list[Path], tmp_path: Path) -> None:
    """A cmdlet the executor's scripts use must exist in pwsh (or be Windows-only, listed above)."""
    listing = tmp_path / "files.txt"
    listing.write_text("\n".join(str(p) for p in executor_scripts), encoding="utf-8")
    probe = (
        "param([string]$List)\n"
        "$bad = @()\n"
        "foreach ($f in [IO.File]::ReadAllLines($List)) {\n"
        "  $errors = $null\n"
        "  $ast = [System.Management.Automation.Language.Parser]::ParseFile($f, [ref]$null, [ref]$errors)\n"
        "  foreach ($e in $errors) { $bad += \"parse ${f}: $($e.Message)\" }\n"
        "  foreach ($c in $ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.CommandAst] }, $true)) {\n"
        "    $n = $c.GetCommandName()\n"
        "    if ($n -and $n -notlike '*-Stormatrix*' -and -not (Get-Command -Name $n -ErrorAction Ignore)) { $bad += $n }\n"
        "  }\n"
        "}\n"
        "ConvertTo-Json -InputObject @($bad | Sort-Object -Unique) -Compress\n")
    proc = pwshengine.run_pwsh(probe, "-List", str(listing))
    assert proc.returncode == 0, proc.stderr
    missing = [n for n in json.loads(proc.stdout) if n not in WINDOWS_ONLY]
    assert missing == [], f"the executor's scripts use commands pwsh lacks: {missing}"


def test_python_sent_upload_and_call_run_on_pwsh(tmp_path: Path) -> None:
    """The executor's upload scripts unpack the module, its present-check finds it, and its call script
    imports it and answers with the error marker a real guest would send (diskspd missing: the one
    public function that needs no Windows-only cmdlet), error id and message intact."""
    from stormatrix.executors.winrm import executor as winrm

    payload = winrm.ModulePayload.from_dir(winrm.default_module_dir())
    env = {"TMPDIR": str(tmp_path)}
    # three chunks instead of the cmd.exe-sized dozens: the same scripts, fewer pwsh starts
    for script in winrm.upload_scripts(payload, chunk_chars=len(payload.b64) // 3 + 1):
        proc = pwshengine.run_pwsh_command(script, encoded=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "##stormatrix:uploaded" in proc.stdout
    present = pwshengine.run_pwsh_command(winrm.present_script(payload), encoded=True, env=env)
    assert "##stormatrix:present" in present.stdout, present.stdout + present.stderr
    missing = tmp_path / "no such dir" / "diskspd.exe"
    call = winrm.call_script("Get-StormatrixEngineVersion", {"Engine": "diskspd", "Path": str(missing)}, payload.digest)
    proc = pwshengine.run_pwsh_command(call, encoded=True, env=env)
    marks = [line for line in proc.stdout.splitlines() if line.startswith("##stormatrix:")]
    assert marks and marks[-1].startswith("##stormatrix:error "), proc.stdout + proc.stderr
    error = json.loads(marks[-1].partition(" ")[2])
    assert "ExecutableNotFound" in error["error_id"]
    assert str(missing) in error["message"]
    assert proc.returncode == 1
