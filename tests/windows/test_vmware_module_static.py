"""Rules of the StormatrixVMware module that are about what the code does, read from its text: no
string-built code, the entry script reads only stdin, dispatch by an allow-list matching what Python
calls, secrets never written to a stream, certificate validation on by default, PowerCLI calls that
stop on error, state changes only under ShouldProcess, disks never removed.
Parse errors, help, layout, the manifest and the binding of what Python sends are checked on the real
PowerShell engine (tests/pwsh/Checks, tests/pester/Compliance.Tests.ps1, tests/windows/test_pwsh_sent_scripts.py);
ASCII for every file under windows/ by tests/windows/test_windows_module_static.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_windows_module_static import strip_strings_and_comments  # noqa: E402

from stormatrix.backends.vmware.backend import ENTRY_SCRIPT, PYTHON_CALLS  # noqa: E402
import paths

ROOT = paths.ROOT
MODULE = ROOT / "windows" / "StormatrixVMware"
PUBLIC = sorted((MODULE / "Public").glob("*.ps1"))
PRIVATE = sorted((MODULE / "Private").glob("*.ps1"))
POWERCLI_CALLS = ("Get-VM", "Get-HardDisk", "Get-ScsiController", "Get-NvmeController", "New-ScsiController",
                  "New-NvmeController", "Set-HardDisk", "Stop-VM", "Start-VM", "Wait-Tools", "Get-EsxCli", "Get-Stat",
                  "Get-VMHost", "Connect-VIServer", "Disconnect-VIServer", "Set-PowerCLIConfiguration",
                  # the worker fleet's
                  "Get-Template", "Get-Datastore", "New-VM", "Wait-Task", "Set-VM", "New-HardDisk", "Remove-HardDisk",
                  "Remove-VM", "Get-VMGuest")
CHANGES = ("Set-StormatrixVMwarePower", "Move-StormatrixVMwareDisk", "Remove-StormatrixVMwareController")


def code_of(path: Path) -> str:
    return strip_strings_and_comments(path.read_text(encoding="utf-8"))


def test_request_allowlist_matches_what_python_calls() -> None:
    text = (MODULE / "Public" / "Invoke-StormatrixVMwareRequest.ps1").read_text(encoding="utf-8")
    block = re.search(r"\$allowed = @\((.*?)\)", text, flags=re.S)
    assert block
    assert set(re.findall(r"'([^']+)'", block.group(1))) == set(PYTHON_CALLS) - {"Connect-StormatrixVMware"}


@pytest.mark.parametrize("path", PUBLIC + PRIVATE + [MODULE / ENTRY_SCRIPT], ids=lambda p: p.name)
def test_no_code_is_built_from_strings(path: Path) -> None:
    code = code_of(path)
    for bad in ("Invoke-Expression", "iex ", "[scriptblock]::Create", "Start-Process", "AddScript", "ExpandString"):
        assert bad.lower() not in code.lower(), f"{path.name}: {bad}"
    assert not re.search(r"\s-Command\b", code), f"{path.name}: pwsh -Command"


def test_entry_script_reads_the_request_from_stdin_only() -> None:
    text = (MODULE / ENTRY_SCRIPT).read_text(encoding="utf-8")
    code = strip_strings_and_comments(text)
    # (a UTF-8 reader of standard input: [Console]::In would decode it with Windows' console code page)
    assert "$stdin = [System.IO.StreamReader]::new([Console]::OpenStandardInput(), $utf8)" in code
    assert "$requestText = $stdin.ReadToEnd()" in code and "$utf8 = [System.Text.UTF8Encoding]::new($false)" in code
    assert "param(" not in code and "$args" not in code, "the entry script takes no arguments"
    assert "Invoke-StormatrixVMwareRequest -RequestJson $requestText" in code


def test_the_dispatch_is_by_allowlisted_name_and_splatting() -> None:
    code = code_of(MODULE / "Public" / "Invoke-StormatrixVMwareRequest.ps1")
    assert "$allowed -notcontains $command" in code
    assert code.index("$allowed -notcontains $command") < code.index("& $command @parameters")
    assert "Connect-StormatrixVMware @connection" in code


#: the one function that reads a password from the environment (Private/), and the functions that get
#: their credential from it: vCenter's, and the workers' guest account's
PASSWORD_READER = "Get-StormatrixVMwareEnvironmentCredential"
CREDENTIAL_USERS = ("Connect-StormatrixVMware", "Get-StormatrixVMwareFleetFioVersion")


def test_password_is_never_written_to_a_stream() -> None:
    text = (MODULE / "Private" / f"{PASSWORD_READER}.ps1").read_text(encoding="utf-8")
    code = strip_strings_and_comments(text)
    assert "ConvertTo-SecureString -String $password -AsPlainText -Force" in text
    assert code.index("ConvertTo-SecureString") < code.index("$password = $null", code.index("ConvertTo-SecureString")), \
        "the plain-text password is cleared right after it became a SecureString"
    assert "System.Management.Automation.PSCredential -ArgumentList $user, $secure" in text
    for line in text.splitlines():
        if re.search(r"Write-(Host|Output|Verbose|Warning|Information|Debug)|throw|-Message|Out-|Export-|Set-Content", line):
            assert "$password" not in line, line.strip()
    for name in CREDENTIAL_USERS:
        user = code_of(MODULE / "Public" / f"{name}.ps1")
        assert f"{PASSWORD_READER} -UserVariable" in user, f"{name} builds its credential elsewhere"
    for path in PUBLIC + PRIVATE:
        if path.stem != PASSWORD_READER:
            text = path.read_text(encoding="utf-8")
            assert "$password" not in text.lower().replace("passwordvariable", ""), path.name
            assert "ConvertTo-SecureString" not in text and "GetEnvironmentVariable" not in text, \
                f"{path.name}: reads a secret outside {PASSWORD_READER}"


def test_certificate_validation_is_on_unless_turned_off() -> None:
    text = (MODULE / "Public" / "Connect-StormatrixVMware.ps1").read_text(encoding="utf-8")
    assert "[bool]$VerifyCertificate = $true" in text
    assert "$action = 'Fail'" in text and "-Scope Session" in text


@pytest.mark.parametrize("path", PUBLIC + PRIVATE, ids=lambda p: p.name)
def test_powercli_calls_stop_on_error(path: Path) -> None:
    """A PowerCLI cmdlet that only writes a non-terminating error would let the next step run on a
    half-changed VM; every call must be -ErrorAction Stop (or SilentlyContinue for a look-up)."""
    code = code_of(path)
    for cmd in POWERCLI_CALLS:
        for m in re.finditer(rf"(?<![\w-]){re.escape(cmd)}\s", code):
            line = code[m.start():code.find("\n", m.start())]
            if "Get-Command" in code[max(0, m.start() - 40):m.start()]:
                continue
            assert "-ErrorAction" in line, f"{path.name}: {line.strip()}"


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.name)
def test_public_functions_that_change_the_vm_support_whatif(path: Path) -> None:
    code = code_of(path)
    changes = [c for c in CHANGES if c in code]
    if path.stem.startswith(("Set-", "Restore-")):
        changes += [c for c in ("Invoke-StormatrixEsxCli",) if c in code]
    if path.stem == "Invoke-StormatrixVMwareRequest":
        return
    if changes:
        assert "SupportsShouldProcess" in path.read_text(encoding="utf-8"), path.stem
        first = min(code.index(c) for c in changes)
        assert code.find("ShouldProcess(") != -1 and code.index("ShouldProcess(") < first, \
            f"{path.stem}: changes the VM before asking ShouldProcess"


def test_disks_are_never_removed() -> None:
    """The matrix backend never removes a disk (the test disk is the user's); only the worker fleet's own
    functions delete what the fleet made, and each of them checks the fleet's annotation before it does."""
    fleet_removers = []
    for path in PUBLIC + PRIVATE:
        code = code_of(path)
        removes = "Remove-HardDisk" in code or "DeletePermanently" in code or "Remove-VM " in code
        if "Fleet" in path.stem:
            if removes:
                fleet_removers.append(path.stem)
                first = min(code.index(c) for c in ("Remove-HardDisk", "Remove-VM ") if c in code)
                assert "Test-StormatrixVMwareFleetOwner" in code[:first], f"{path.stem}: removes before checking ownership"
            continue
        assert not removes, path.name
    assert sorted(fleet_removers) == ["Remove-StormatrixVMwareFleet", "Remove-StormatrixVMwareFleetDisk"]
    remove = (MODULE / "Private" / "Remove-StormatrixVMwareController.ps1").read_text(encoding="utf-8")
    assert remove.index("ControllerNotEmpty") < remove.index(".ReconfigVM("), "an occupied controller is refused first"
