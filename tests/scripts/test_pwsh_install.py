"""scripts/install-pwsh.sh and scripts/test.sh when PowerShell or Pester cannot be had: `make test` stops at
once, naming the command that failed and its error; nothing falls back to another engine or version.

The scripts run from a copy of scripts/ in a temporary tree (so the checkout's .tools/ is not touched),
with a stand-in ``dotnet`` on PATH that answers as the .NET CLI does when a feed lacks the package
(``error NU1101``) or, for Pester, when the restore fails.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
import paths

ROOT = paths.ROOT


def tree(tmp_path: Path, dotnet: str | None) -> tuple[Path, dict[str, str]]:
    """A checkout-like folder with scripts/, and PATH holding the stand-in dotnet (or none at all)."""
    scripts = tmp_path / "repo" / "scripts"
    scripts.mkdir(parents=True)
    for name in ("install-pwsh.sh", "test.sh"):
        shutil.copy(ROOT / "scripts" / name, scripts / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "mktemp", "timeout", "tail", "sed", "rm", "mkdir", "cat", "grep", "dirname"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    if dotnet is not None:
        (bin_dir / "dotnet").write_text("#!/bin/sh\n" + dotnet)
        (bin_dir / "dotnet").chmod(0o755)
    return scripts.parent, {"PATH": str(bin_dir), "HOME": str(tmp_path)}


NU1101 = ('echo "$*" >> "$HOME/dotnet-calls"\n'
          'echo "Tool \'powershell\' failed to update due to the following:"\n'
          'echo "error NU1101: Unable to find package PowerShell with version (= 7.6.9)" >&2\nexit 1\n')


def test_a_package_the_feed_lacks_fails_naming_the_command_and_its_error(tmp_path: Path) -> None:
    repo, env = tree(tmp_path, NU1101)
    proc = subprocess.run(["bash", str(repo / "scripts" / "install-pwsh.sh")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3
    assert "FAILED (exit 1): dotnet tool install PowerShell --version 7.6.9 --tool-path" in proc.stderr
    assert "error NU1101: Unable to find package PowerShell with version (= 7.6.9)" in proc.stderr
    calls = (tmp_path / "dotnet-calls").read_text().splitlines()
    assert calls == [f"tool install PowerShell --version 7.6.9 --tool-path {repo}/.tools/pwsh"]  # pinned, no retry
    assert not (repo / ".tools" / "env.sh").exists()


def test_without_dotnet_it_says_what_to_install(tmp_path: Path) -> None:
    repo, env = tree(tmp_path, None)
    proc = subprocess.run(["bash", str(repo / "scripts" / "install-pwsh.sh")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3
    assert "dotnet not found" in proc.stderr and ".NET SDK" in proc.stderr


def test_make_tests_script_stops_before_any_test_when_the_install_fails(tmp_path: Path) -> None:
    repo, env = tree(tmp_path, NU1101)
    proc = subprocess.run(["bash", str(repo / "scripts" / "test.sh")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    assert "error NU1101" in proc.stderr
    assert "cannot run the tests without PowerShell and Pester" in proc.stderr
    # nothing ran after the install step
    assert proc.stdout.splitlines() == ["== PowerShell 7.6.9 and Pester 5.7.1 (scripts/install-pwsh.sh) =="]
