"""The PowerShell engine that the tests use behaves like pwsh's command line, and runs what Python sends.

Why: every PowerShell test (tests/pwsh, tests/pester) and the end-to-end tests of the WinRM and VMware
paths go through ``tests/pwshengine.py``; if the host bound -File arguments or reported exit codes
differently from pwsh, those tests would pass on the engine and fail on a real guest. The expectations
here are pwsh's documented behaviour (about_Pwsh), so they hold for a real pwsh as well.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pwshengine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_engine_name_says_which_engine_runs() -> None:
    name = pwshengine.engine_name()
    assert re.fullmatch(r"PowerShell engine \d+\.\d+\.\d+ \(hosted\)|pwsh \S+ \(real\)", name), name


def test_file_exit_code_is_the_scripts_exit_n() -> None:
    assert pwshengine.run_pwsh("exit 7").returncode == 7


def test_file_normal_end_is_zero_even_after_a_failing_native_command() -> None:
    proc = pwshengine.run_pwsh("& sh -c 'exit 3'\n\"last=$LASTEXITCODE\"")
    assert "last=3" in proc.stdout
    assert proc.returncode == 0


def test_file_terminating_error_is_exit_1_on_stderr() -> None:
    proc = pwshengine.run_pwsh("'out'\nthrow 'broken here'")
    assert proc.returncode == 1
    assert "broken here" in proc.stderr
    assert "broken here" not in proc.stdout
    assert "out" in proc.stdout


def test_file_binds_switches_and_quoted_values_like_pwsh() -> None:
    script = 'param([switch]$Force, [string]$Name, [int]$Count)\n"force=$Force name=[$Name] count=$Count rest=[$($args -join "|")]"'
    proc = pwshengine.run_pwsh(script, "-Force", "-Name", "a 'b' $c \"d\"", "-Count:4")
    assert proc.stdout.strip() == "force=True name=[a 'b' $c \"d\"] count=4 rest=[]"
    proc = pwshengine.run_pwsh(script, "-Force:$false", "-Name", "-5")
    assert proc.stdout.strip().startswith("force=False name=[-5]")


def test_missing_file_is_exit_64() -> None:
    proc = subprocess.run([*pwshengine.pwsh_argv(), *pwshengine.COMMON_ARGS, "-File", str(ROOT / "no-such-script.ps1")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 64
    assert "not recognized as the name of a script file" in proc.stderr


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
    from harness.executors import winrm

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


# Cmdlets the Python side may send that the engine deliberately does not stand in, and why.
NOT_STOOD_IN = {
    "Restart-Computer": "restarts the guest; only ever run on a real Windows guest, never on the test engine",
}


def test_every_command_python_sends_resolves_on_the_engine(executor_scripts: list[Path], tmp_path: Path) -> None:
    """A cmdlet the executor's scripts use must exist in the engine or as a stand-in (tests/pwsh/StandIns)."""
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
    missing = [n for n in json.loads(proc.stdout) if n not in NOT_STOOD_IN]
    assert missing == [], f"the executor's scripts use commands the engine lacks: {missing}"


def test_python_sent_upload_and_call_run_on_the_engine(tmp_path: Path) -> None:
    """The executor's upload scripts unpack the module, its present-check finds it, and its call script
    imports it and answers with the error marker a real guest would send (diskspd missing: the one
    public function that needs no Windows-only cmdlet), error id and message intact."""
    from harness.executors import winrm

    payload = winrm.ModulePayload.from_dir(winrm.default_module_dir())
    env = {"TMPDIR": str(tmp_path)}
    # three chunks instead of the cmd.exe-sized dozens: the same scripts, fewer engine starts
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
