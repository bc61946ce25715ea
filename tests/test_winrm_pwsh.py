"""The executor end to end with real PowerShell: the WS-Man stand-in hands each command line to the
local pwsh, so the upload scripts, the unpacking, Import-Module, parameter splatting and the guest
module itself really run. Skipped (with the reason) where no pwsh is installed (.tools/pwsh or PATH);
scripts/install-pwsh.sh says why it could not install one."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from winrm.protocol import Protocol

from stormatrix.core.errors import RemoteCommandError
from stormatrix.executors import winrm as w
from tests.standins.wsman import PwshRunner, WSManStandIn, find_pwsh

PWSH = find_pwsh()
pytestmark = [pytest.mark.pwsh,
              pytest.mark.skipif(PWSH is None, reason="pwsh not found in .tools/pwsh or on PATH "
                                                      "(scripts/install-pwsh.sh could not install PowerShell 7)")]
PASSWORD = "pw-for-the-stand-in"


@pytest.fixture()
def server() -> Iterator[WSManStandIn]:
    assert PWSH is not None
    with WSManStandIn(PwshRunner(PWSH), password=PASSWORD) as s:
        yield s


def factory(server: WSManStandIn) -> Callable[[w.WinRMSettings], Any]:
    def make(s: w.WinRMSettings) -> Any:
        return Protocol(server.url, transport="plaintext", username=s.username, password=PASSWORD,
                        read_timeout_sec=s.read_timeout_seconds, operation_timeout_sec=s.operation_timeout_seconds)
    return make


@pytest.fixture()
def executor(server: WSManStandIn) -> Iterator[w.WinRMExecutor]:
    settings = w.WinRMSettings(host="127.0.0.1", username="Administrator", password=w.Secret(PASSWORD),
                               disk_serial="STORMATRIX01", operation_timeout_seconds=5, read_timeout_seconds=10,
                               command_timeout_seconds=120)
    ex = w.WinRMExecutor([], settings=settings, protocol_factory=factory(server))
    yield ex
    ex.close()


def test_module_uploads_and_functions_run(executor: w.WinRMExecutor, server: WSManStandIn) -> None:
    fio = shutil.which("fio") or "/usr/bin/fio"
    version = executor.call("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": fio})
    assert version["Supported"] is True and version["Version"].startswith("fio-3")
    assert all(len(line) <= w.CMD_LIMIT for line in server.command_lines)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_runner_on_a_file_through_winrm(executor: w.WinRMExecutor, tmp_path: Path) -> None:
    result = executor.call("Invoke-StormatrixFio", {
        "FileName": str(tmp_path / "target.dat"), "FileSizeMiB": 4, "IoEngine": "psync", "Direct": 0,
        "FioPath": shutil.which("fio"), "ReadWrite": "randread", "BlockSize": 4096, "IoDepth": 1, "NumJobs": 1,
        "RampSeconds": 0, "RuntimeSeconds": 1, "OutputDirectory": str(tmp_path), "WriteMarkers": True})
    from stormatrix.analysis.fio import parse_fio_json

    doc = parse_fio_json(result["Raw"])
    assert doc["jobs"][0]["jobname"] == "stormatrix"
    assert result["Engine"] == "fio" and result["ExitCode"] == 0


@pytest.mark.parametrize("value", ["'; New-Item -ItemType File -Path /tmp/stormatrix-pwned #",
                                   "$(New-Item -ItemType File -Path /tmp/stormatrix-pwned)",
                                   "\"; New-Item -ItemType File -Path /tmp/stormatrix-pwned; \""])
def test_injected_values_arrive_as_plain_data_in_powershell(executor: w.WinRMExecutor, value: str) -> None:
    marker = Path("/tmp/stormatrix-pwned")
    marker.unlink(missing_ok=True)
    with pytest.raises(RemoteCommandError) as info:
        executor.call("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": value})
    assert info.value.details["error_id"].startswith("Stormatrix.ExecutableNotFound")
    assert value in str(info.value)  # the guest saw the value itself, as one string
    assert not marker.exists()


def test_validation_rejects_a_bad_serial_with_powershell_validation(executor: w.WinRMExecutor) -> None:
    with pytest.raises(RemoteCommandError) as info:
        executor.call("Find-StormatrixTestDisk", {"Serial": "x'; Remove-Item -Recurse C:\\ #"})
    assert "ParameterArgumentValidationError" in info.value.details["error_id"]


def test_a_failing_function_gives_its_error_id(executor: w.WinRMExecutor) -> None:
    start = time.monotonic()
    with pytest.raises(RemoteCommandError) as info:
        executor.call("Invoke-StormatrixFio", {"FileName": "/nonexistent/dir/f", "FileSizeMiB": 1, "IoEngine": "psync",
                                               "Direct": 0, "FioPath": "/nonexistent/fio", "ReadWrite": "read",
                                               "BlockSize": 4096, "RuntimeSeconds": 1, "OutputDirectory": "/tmp"})
    assert info.value.details["error_id"].startswith("Stormatrix.ExecutableNotFound")
    assert time.monotonic() - start < 60
