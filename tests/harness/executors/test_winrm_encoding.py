"""What the executor sends: command lines within cmd.exe's limit, chunks, parameters as data; and how
it reads what comes back: result/error lines, CLIXML, WS-Man faults mapped to typed errors."""

from __future__ import annotations

import base64
import json
import re

import pytest
import requests
from winrm.exceptions import InvalidCredentialsError, WinRMError, WinRMOperationTimeoutError, WinRMTransportError

from stormatrix.core.errors import AuthenticationFailed, GuestDisconnected, RemoteCommandError, RemoteTimeout
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.executors.winrm import executor as w
from stormatrix.executors.winrm import channel as winrm_channel
from stormatrix.executors.winrm import encoding as winrm_encoding
import paths


def encoded_length(script_chars: int) -> int:
    """Length of the base64 of a script of ``script_chars`` UTF-16 code units (2 bytes each)."""
    return 4 * -(-2 * script_chars // 3)


def decode_command(command: str) -> str:
    """The script in a command line, decoded as powershell.exe decodes -EncodedCommand."""
    assert command.startswith(w.POWERSHELL_PREFIX)
    return base64.b64decode(command[len(w.POWERSHELL_PREFIX):]).decode("utf-16-le")

INJECTIONS = [
    "'; Remove-Item -Recurse C:\\ #",
    "$(Remove-Item C:\\)",
    "`\"; exit 0; \"",
    "a\nb\r\n'@\n\"@",
    "\u2019; Stop-Computer \u201c",  # typographic quotes PowerShell also treats as quotes
    "%COMSPEC% & del /q C:\\ | ^",
]


def test_encoded_length_matches_real_encoding() -> None:
    for n in (0, 1, 2, 3, 100, 2999, 3001):
        script = "x" * n
        assert len(base64.b64encode(script.encode("utf-16-le"))) == encoded_length(n)


def test_max_chunk_is_the_largest_that_keeps_the_margin() -> None:
    """Upload lines stay CMD_MARGIN characters under cmd.exe's 8191 (they were 8190 once: no room
    for anything the shell adds)."""
    assert w.CMD_MARGIN >= 100
    size = w.max_chunk_chars("a" * 12)
    assert 2500 < size < 3100
    fits = w.encode_command(winrm_encoding._chunk_script("A" * size, "a" * 12))
    assert len(fits) <= w.CMD_LIMIT - w.CMD_MARGIN
    too_big = w.POWERSHELL_PREFIX + base64.b64encode(
        winrm_encoding._chunk_script("A" * (size + 2), "a" * 12).encode("utf-16-le")).decode()
    assert len(too_big) > w.CMD_LIMIT - w.CMD_MARGIN


def test_every_upload_line_keeps_the_margin() -> None:
    payload = w.ModulePayload.from_dir(w.default_module_dir())
    lines = [w.encode_command(s) for s in w.upload_scripts(payload)]
    assert max(len(line) for line in lines) <= w.CMD_LIMIT - w.CMD_MARGIN


def test_every_script_starts_with_the_utf8_prelude() -> None:
    """powershell.exe writes redirected output in the OEM code page; the prelude switches it to UTF-8."""
    assert "[Console]::OutputEncoding=$OutputEncoding" in w.PRELUDE and "UTF8Encoding]::new($false)" in w.PRELUDE
    payload = w.ModulePayload.from_dir(w.default_module_dir())
    scripts = [*w.upload_scripts(payload), w.present_script(payload), w.call_script("Get-StormatrixPowerPlan", {}, "0" * 12),
               winrm_encoding.restart_script()]
    assert all(s.startswith(w.PRELUDE) for s in scripts)


def test_encode_command_refuses_what_cmd_exe_would_refuse() -> None:
    with pytest.raises(ValueError, match="cmd.exe accepts 8191"):
        w.encode_command("x" * 3100)
    assert decode_command(w.encode_command("Get-Date")) == "Get-Date"


def test_module_payload_and_upload_scripts_cover_the_whole_module() -> None:
    payload = w.ModulePayload.from_dir(w.default_module_dir())
    assert payload.files >= 15
    scripts = w.upload_scripts(payload)
    commands = [w.encode_command(s) for s in scripts]  # raises if any is too long
    assert all(len(c) <= w.CMD_LIMIT for c in commands)
    chunks = [m.group(1) for s in scripts[1:-1] for m in [re.search(r",'([A-Za-z0-9+/=]*)'\)$", s)] if m]
    assert len(chunks) == len(scripts) - 2
    assert "".join(chunks) == payload.b64
    entries = json.loads(base64.b64decode(payload.b64))
    paths = {"/".join(e["path"]) for e in entries}
    assert "StormatrixGuest/StormatrixGuest.psd1" in paths
    assert "StormatrixGuest/Validation/Guest.Validation.Tests.ps1" in paths
    assert payload.sha256 in scripts[-1]


def test_small_chunks_make_more_commands() -> None:
    payload = w.ModulePayload.from_dir(w.default_module_dir())
    assert len(w.upload_scripts(payload, chunk_chars=1000)) == 2 + -(-len(payload.b64) // 1000)


@pytest.mark.parametrize("value", INJECTIONS)
def test_injected_values_travel_as_data(value: str) -> None:
    """Whatever the value, the script text holds only base64 of its JSON: nothing to break out of."""
    script = w.call_script("Invoke-StormatrixFio", {"Serial": value, "FioPath": value}, "0123456789ab")
    assert value not in script
    literal = re.search(r"FromBase64String\('([^']*)'\)", script)
    assert literal is not None
    assert re.fullmatch(r"[A-Za-z0-9+/=]*", literal.group(1))
    assert json.loads(base64.b64decode(literal.group(1))) == {"Serial": value, "FioPath": value}
    # the command line as a whole is also quote-free outside base64
    assert re.fullmatch(r"[A-Za-z -]+ [A-Za-z0-9+/=]+", w.encode_command(script))


@pytest.mark.parametrize("name", ["Invoke-StormatrixFio; Remove-Item C:\\", "Remove-Item", "Invoke-Stormatrix'Fio", ""])
def test_function_names_are_checked(name: str) -> None:
    with pytest.raises(ValueError):
        w.call_script(name, {}, "0123456789ab")


def test_parameter_names_are_checked() -> None:
    with pytest.raises(ValueError):
        w.encode_parameters({"Serial; rm": 1})


def test_python_calls_match_the_guest_module_parameters() -> None:
    """The names Python sends exist in the PowerShell param blocks (the Pester compliance test checks
    the same with Get-Command where pwsh exists)."""
    public = w.default_module_dir() / "Public"
    for function, params in w.PYTHON_CALLS.items():
        text = (public / f"{function}.ps1").read_text()
        param_block = text[text.index("param("):]
        declared = set(re.findall(r"\]\s*\$([A-Za-z]+)", param_block.split("\n    )\n")[0]))
        assert set(params) <= declared, (function, set(params) - declared)


def make_cell(rw: str = "randread", rate: float | None = None, mix: int | None = None) -> Cell:
    return Cell(DiskConfig("virtio-scsi-single", "native", True, "none"),
                Workload("wl", rw, 65536, 8, 2, rate, mix), 1)


def test_workload_parameters_for_fio_and_diskspd() -> None:
    s = w.WinRMSettings(host="h", username="u", disk_serial="S1")
    fn, p = w.workload_parameters(make_cell("randrw", 32.0, 70), Timing(4.5, 10.0), s)
    assert fn == "Invoke-StormatrixFio"
    assert p == {"Serial": "S1", "WriteMarkers": True, "FioPath": "C:\\Program Files\\fio\\fio.exe",
                 "Workload": {"ReadWrite": "randrw", "BlockSize": 65536, "IoDepth": 8, "NumJobs": 2, "RampSeconds": 5,
                              "RuntimeSeconds": 10, "RateMiBps": 32.0, "RwMixRead": 70}}
    allowed = w.WinRMSettings(host="h", username="u", disk_serial="S1", allow_partitioned_disk=True)
    assert w.workload_parameters(make_cell(), Timing(0, 1), allowed)[1]["AllowPartitioned"] is True
    assert set(p) <= set(w.PYTHON_CALLS[fn])
    fn, p = w.workload_parameters(make_cell(), Timing(0, 1), w.WinRMSettings(host="h", username="u", engine="diskspd"))
    assert fn == "Invoke-StormatrixDiskSpd" and "DiskSpdPath" in p and "FioPath" not in p
    assert set(p) <= set(w.PYTHON_CALLS[fn])


def test_trim_is_refused_for_windows_guests() -> None:
    with pytest.raises(Exception, match="not supported in Windows guests"):
        w.workload_parameters(make_cell("trim"), Timing(0, 1), w.WinRMSettings(host="h", username="u"))


def test_parse_call_output_result_and_noise() -> None:
    out = w.CommandOutput(0, "noise\r\n##stormatrix:engine-started 2026\r\n##stormatrix:result {\"a\":1}\r\n", "")
    assert w.parse_call_output(out, "F") == {"a": 1}


def test_parse_call_output_error_keeps_id_stdout_and_stderr_without_secrets() -> None:
    secret = w.Secret("hunter2")
    out = w.CommandOutput(1, '##stormatrix:error {"message":"no disk hunter2","error_id":"Stormatrix.TestDiskNotFound"}\n',
                          "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">"
                          "<S S=\"Error\">boom hunter2_x000D__x000A_</S></Objs>")
    with pytest.raises(RemoteCommandError) as info:
        w.parse_call_output(out, "Find", [secret])
    err = info.value
    assert err.details.exit_status == 1
    assert err.details.error_id == "Stormatrix.TestDiskNotFound"
    assert "hunter2" not in str(err) and "hunter2" not in err.details.stdout and "hunter2" not in err.details.stderr
    assert err.details.stderr == "boom ***"


def test_parse_call_output_nonzero_without_marker_and_missing_result() -> None:
    with pytest.raises(RemoteCommandError, match="exit 1.*too long"):
        w.parse_call_output(w.CommandOutput(1, "", "The command line is too long.\r\n"), "F")
    with pytest.raises(RemoteCommandError, match="no result line"):
        w.parse_call_output(w.CommandOutput(0, "hello", ""), "F")


S = w.WinRMSettings(host="h", username="u", transport="https")


@pytest.mark.parametrize("exc, kind, text", [
    (InvalidCredentialsError("rejected"), AuthenticationFailed, "rejected the credentials"),
    (WinRMTransportError("http", 401, ""), AuthenticationFailed, "rejected the credentials"),
    (requests.exceptions.SSLError("CERTIFICATE_VERIFY_FAILED"), RemoteCommandError, "cert_validation = false"),
    (requests.exceptions.ReadTimeout("read timed out"), RemoteTimeout, "did not answer"),
    (WinRMOperationTimeoutError(), RemoteTimeout, "did not answer"),
    (requests.exceptions.ConnectionError("refused"), GuestDisconnected, "cannot reach"),
    (WinRMTransportError("http", 503, "busy"), w.WSManServiceError, "HTTP 503"),
    (WinRMTransportError("http", 404, "no"), RemoteCommandError, "HTTP 404"),
    (WinRMError("The request for the Windows Remote Shell with ShellId X failed because the shell was not found "
                "(extended fault data: {'wsmanfault_code': '2150858843'})"), w.WSManServiceError, "shell was not found"),
])
def test_transport_errors_map_to_typed_errors(exc: Exception, kind: type, text: str) -> None:
    mapped = w.map_transport_error(exc, "call", S)
    assert isinstance(mapped, kind)
    assert text in str(mapped)


def test_ssl_error_is_not_an_authentication_or_connection_error() -> None:
    mapped = w.map_transport_error(requests.exceptions.SSLError("bad cert"), "x", S)
    assert not isinstance(mapped, (AuthenticationFailed, GuestDisconnected))
    assert not winrm_channel._is_connect_error(requests.exceptions.SSLError("bad cert"))
    assert winrm_channel._is_connect_error(requests.exceptions.ConnectionError("refused"))


def test_401_names_basic_auth_and_the_token_filter_policy() -> None:
    text = str(w.map_transport_error(InvalidCredentialsError("x"), "call", S))
    assert "Basic" in text and "LocalAccountTokenFilterPolicy" in text and "ntlm" in text


def test_check_report_table() -> None:
    report = w.CheckReport(host="w2022", passed=False, runner="built-in runner", tests=[
        w.CheckResult("Should be offline", "Test disk", "Passed"),
        w.CheckResult("Should use the High performance power plan", "System state", "Failed",
                      "Expected $true, because Fix: powercfg /setactive ..."),
    ])
    table = report.table()
    assert "PASSED  Test disk / Should be offline" in table
    assert "FAILED  System state / Should use the High performance power plan  Expected $true, because Fix" in table
    assert table.endswith("1 passed, 1 failed, 0 skipped -> NOT READY")


def test_diskspd_document_as_data() -> None:
    from pathlib import Path

    from stormatrix.executors.winrm.parse import diskspd_document

    xml = (paths.DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text(encoding="utf-8-sig")
    d = diskspd_document(xml)
    assert d["Results"]["TimeSpan"]["Thread"]["Target"]["ReadCount"] == "937500"
    assert d["Results"]["System"]["ProcessorTopology"]["Group"]["@MaximumProcessors"] == "4"
