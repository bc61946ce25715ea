"""The guest module's preparation and disk handling on real pwsh, in a fake Windows guest
(tests/pwsh/FakeWindows), where WinRM adds nothing: Initialize-StormatrixGuest end to end (wipe,
offline, power plan, fio install, HTTPS listener with a certificate naming the IP addresses), -WhatIf,
and the workload's validation. Each script runs in its own pwsh process, as in the guest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.pwshengine import pwsh_path
from tests.standins.wsman import _fakewindows
import paths

ROOT = paths.ROOT
MODULE = ROOT / "windows" / "StormatrixGuest" / "StormatrixGuest.psd1"
pytestmark = [pytest.mark.pwsh]


def guest(tmp_path: Path, **changes: Any) -> Path:
    return _fakewindows().make_guest(tmp_path / "guest", changes)


def run(root: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = _fakewindows().engine_env(root, {"LANG": "C.UTF-8"})
    text = f"$ErrorActionPreference='Stop'; Import-Module '{MODULE}'; " + script
    argv = _fakewindows().powershell_argv(pwsh_path(), ["-NoProfile", "-NonInteractive", "-Command", text])
    return subprocess.run(argv, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=300)


def state(root: Path) -> dict[str, Any]:
    return json.loads((root / "state.json").read_text(encoding="utf-8"))


def test_initialize_prepares_every_step_and_then_changes_nothing(tmp_path: Path) -> None:
    fw = _fakewindows()
    data = fw.load_description()
    disks = data["Disks"]
    disks[1].update(PartitionStyle="GPT", IsOffline=False, IsReadOnly=True, OfflineReason="",
                    Partitions=[{"PartitionNumber": 1, "DriveLetter": "E", "Size": 16777216, "Type": "Basic"}])
    files = {k: v for k, v in data["Files"].items() if "fio" not in k}  # fio not installed yet
    root = guest(tmp_path, Disks=disks, Files=files)
    source = tmp_path / "share with spaces"
    source.mkdir()
    (source / "fio.exe").symlink_to(fw.HERE / "bin" / "fio.exe")
    done = run(root, f"Initialize-StormatrixGuest -Serial STORMATRIX01 -FioSource '{source}' -ClearTestDisk -WinRmHttps "
                     "-Confirm:$false | ConvertTo-Json -Compress")
    assert done.returncode == 0, done.stderr
    steps = {s["Step"]: s for s in json.loads(done.stdout[done.stdout.index("["):])}
    assert {k: v["Status"] for k, v in steps.items()} == {
        "fio": "Changed", "pester": "Skipped", "disk-raw": "Changed", "disk-offline": "Changed",
        "power-plan": "Changed", "winrm-https": "Changed"}
    after = state(root)
    disk = after["Disks"][1]
    assert disk["PartitionStyle"] == "RAW" and disk["Partitions"] == [] and disk["IsOffline"] is True
    assert disk["IsReadOnly"] is False
    assert after["ActivePowerPlan"] == "8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c"
    assert (root / "C" / "Program Files" / "fio" / "fio.exe").exists()
    (cert,) = after["Certificates"]
    names = cert["SubjectAlternativeNames"]
    assert "IPAddress=192.168.50.21" in names and any(n.startswith("DNS=") for n in names)
    assert not any("127.0.0.1" in n or "fe80" in n for n in names)  # loopback and link-local name no one
    https = [listener for listener in after["WSManListeners"] if listener["Transport"] == "HTTPS"]
    assert https[0]["CertificateThumbprint"] == cert["Thumbprint"] and https[0]["Port"] == 5986
    assert after["FirewallRules"][0]["LocalPort"] == ["5986"]

    again = run(root, "Initialize-StormatrixGuest -Serial STORMATRIX01 -WinRmHttps -Confirm:$false | ConvertTo-Json -Compress")
    assert again.returncode == 0, again.stderr
    statuses = {s["Step"]: s["Status"] for s in json.loads(again.stdout[again.stdout.index("["):])}
    assert statuses == {"fio": "Unchanged", "pester": "Skipped", "disk-raw": "Unchanged", "disk-offline": "Unchanged",
                        "power-plan": "Unchanged", "winrm-https": "Unchanged"}


def test_initialize_whatif_changes_nothing(tmp_path: Path) -> None:
    disks = _fakewindows().load_description()["Disks"]
    disks[1].update(PartitionStyle="MBR", IsOffline=False)
    root = guest(tmp_path, Disks=disks)
    before = (root / "state.json").read_text(encoding="utf-8")
    done = run(root, "Initialize-StormatrixGuest -Serial STORMATRIX01 -ClearTestDisk -WinRmHttps -WhatIf | ConvertTo-Json -Compress")
    assert done.returncode == 0, done.stderr
    statuses = [s["Status"] for s in json.loads(done.stdout[done.stdout.index("["):])]
    assert statuses.count("WouldChange") == 4  # wipe, offline, power plan, listener
    assert (root / "state.json").read_text(encoding="utf-8") == before


def test_initialize_refuses_the_system_disk_and_an_unasked_wipe(tmp_path: Path) -> None:
    disks = _fakewindows().load_description()["Disks"]
    disks[1]["PartitionStyle"] = "GPT"
    root = guest(tmp_path, Disks=disks)
    done = run(root, "Initialize-StormatrixGuest -Serial STORMATRIX01 -SkipPowerPlan -Confirm:$false")
    assert done.returncode != 0 and "-ClearTestDisk" in done.stderr
    disks[1].update(PartitionStyle="RAW", IsSystem=True)
    root = guest(tmp_path / "2", Disks=disks)
    done = run(root, "Initialize-StormatrixGuest -Serial STORMATRIX01 -ClearTestDisk -Confirm:$false")
    assert done.returncode != 0 and "boot or system disk" in done.stderr


def pester_source() -> Path:
    """The Pester 5.7.1 module folder that scripts/install-pwsh.sh restored (the one make test runs on)."""
    manifest = Path(os.environ.get("STORMATRIX_PESTER_PSD1") or ROOT / ".tools" / "nuget" / "pester" / "5.7.1" / "tools" / "Pester.psd1")
    pwsh_path()  # installs pwsh and Pester when they are missing
    assert manifest.is_file(), f"{manifest} missing: run bash scripts/install-pwsh.sh"
    return manifest.parent


def test_pester_installed_from_pester_source_runs_the_same_checks_as_the_builtin_runner(tmp_path: Path) -> None:
    """Initialize-StormatrixGuest -PesterSource installs Pester 5 where Windows PowerShell finds modules;
    then the validation runs under Pester (Validation/Guest.Validation.Tests.ps1) with the same result,
    check by check, as the built-in runner, and -Runner Auto picks Pester."""
    root = guest(tmp_path)
    validate = ("$r = @(foreach ($runner in {runners}) {{ Invoke-StormatrixGuestValidation -Serial STORMATRIX01 "
                "-Controller virtio-scsi -Runner $runner }}); [Console]::Out.WriteLine((ConvertTo-Json -InputObject $r -Depth 5 -Compress))")
    before = run(root, validate.format(runners="'Auto'"))
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout.splitlines()[-1])[0]["Runner"] == "built-in runner"  # no Pester 5 in the guest yet

    source = str(pester_source()).replace("'", "''")
    done = run(root, f"Initialize-StormatrixGuest -Serial STORMATRIX01 -PesterSource '{source}' -SkipPowerPlan -Confirm:$false "
                     "| ConvertTo-Json -Compress")
    assert done.returncode == 0, done.stderr
    steps = {s["Step"]: s for s in json.loads(done.stdout[done.stdout.index("["):])}
    assert steps["pester"]["Status"] == "Changed" and "Pester 5.7.1" in steps["pester"]["Detail"]
    assert (root / "C" / "Program Files" / "WindowsPowerShell" / "Modules" / "Pester" / "5.7.1" / "Pester.psd1").is_file()

    both = run(root, validate.format(runners="'Builtin', 'Pester', 'Auto'"))
    assert both.returncode == 0, both.stderr
    builtin, pester, auto = json.loads(both.stdout.splitlines()[-1])
    assert (builtin["Runner"], pester["Runner"], auto["Runner"]) == ("built-in runner", "Pester 5.7.1", "Pester 5.7.1")

    def checks(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
        return [(t["Block"], t["Name"], t["Result"], t["Message"] or "") for t in result["Tests"]]

    assert checks(pester) == checks(builtin) == checks(auto)
    assert {t[2] for t in checks(builtin)} == {"Passed", "Failed", "Skipped"}  # the power plan fails, DiskSpd is skipped
    assert (pester["Passed"], pester["FailedCount"], pester["Total"]) == (builtin["Passed"], builtin["FailedCount"], builtin["Total"])
    again = run(root, f"(Initialize-StormatrixGuest -Serial STORMATRIX01 -PesterSource '{source}' -SkipPowerPlan -Confirm:$false "
                      "| Where-Object Step -eq pester).Status")
    assert again.stdout.strip().splitlines()[-1] == "Unchanged", again.stdout + again.stderr


@pytest.mark.parametrize("workload, error", [
    ("@{ ReadWrite = 'randread'; BlockSize = 1000 }", "Stormatrix.BadBlockSize"),
    ("@{ ReadWrite = 'randomread'; BlockSize = 4096 }", "ParameterArgumentValidationError"),
    ("@{ ReadWrite = 'read'; BlockSize = 4096; IoDepth = 0 }", "ParameterArgumentValidationError"),
    ("@{ ReadWrite = 'read'; BlockSize = 4096; IoDeph = 8 }", "Stormatrix.BadWorkload"),
])
def test_a_bad_workload_is_refused_before_the_disk_is_touched(tmp_path: Path, workload: str, error: str) -> None:
    root = guest(tmp_path)
    done = run(root, "try { Invoke-StormatrixFio -Serial STORMATRIX01 -Workload " + workload + " } "
                     "catch { [Console]::Out.WriteLine($_.FullyQualifiedErrorId); exit 3 }")
    assert done.returncode == 3 and error in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_on_a_file_whose_path_has_spaces_dollars_and_quotes(tmp_path: Path) -> None:
    root = guest(tmp_path)
    folder = tmp_path / "it's a $dir \"x\""
    folder.mkdir()
    target = folder / "t a$rget.dat"
    literal = str(target).replace("'", "''")
    done = run(root, f"$r = Invoke-StormatrixFio -FileName '{literal}' -FileSizeMiB 4 -IoEngine psync -Direct 0 "
                     f"-FioPath '{shutil.which('fio')}' -WriteMarkers "
                     "-Workload @{ ReadWrite = 'randread'; BlockSize = 4096; RuntimeSeconds = 1 }; "
                     "[Console]::Out.WriteLine((ConvertTo-Json -InputObject $r -Compress -Depth 4))")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("##stormatrix:engine-started ") and lines[1].startswith("##stormatrix:engine-ended ")
    result = json.loads(lines[-1])
    assert target.exists() and target.stat().st_size == 4 * 2**20
    assert result["Engine"] == "fio" and result["ExitCode"] == 0 and f"--filename={target}" in result["Arguments"]
    assert json.loads(result["Raw"])["jobs"][0]["read"]["io_bytes"] > 0
