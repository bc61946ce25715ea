"""The executor end to end over real HTTP against the loopback WS-Man stand-in, with pywinrm as the
client. No pwsh needed: the "guest" is a Python fake that understands the few script shapes the
executor sends (it decodes them exactly as PowerShell would: UTF-16LE base64, then base64 JSON
parameters), and answers Invoke-StormatrixFio by running the real Linux fio."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from winrm.protocol import Protocol

from stormatrix.core.errors import AuthenticationFailed, GuestDisconnected, RemoteCommandError, RemoteTimeout, WorkloadFailed
from stormatrix.executors import winrm as w
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.spec import spec_from_dict
from tests.standins.wsman import CommandRun, WSManStandIn, self_signed_cert

PASSWORD = "Str0ng'pa$$\"word"
ENV = {"STORMATRIX_PW": PASSWORD}
INJECTION = "'; Remove-Item -Recurse C:\\ #"


class FakeGuest:
    """Interprets the executor's scripts: upload (reset/chunk/unpack), presence check, calls, restart."""

    def __init__(self) -> None:
        self.buffer = ""
        self.installed: dict[str, str] = {}  # digest -> sha256
        self.files: dict[str, str] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.functions: dict[str, Callable[[dict[str, Any], CommandRun], Any]] = {}
        self.boot = "2026-01-01T00:00:00Z"
        self.server: WSManStandIn | None = None

    def __call__(self, line: str, run: CommandRun) -> None:
        script = w.decode_command(line)
        digest = re.search(r"'stormatrix'\) '([0-9a-f]{12})'", script)
        if "##stormatrix:present" in script:
            run.write(b"##stormatrix:present\r\n" if digest and digest.group(1) in self.installed else b"##stormatrix:absent\r\n")
            return run.finish(0)
        if "WriteAllText((Join-Path $d 'payload.b64'),'')" in script:
            self.buffer = ""
            return run.finish(0)
        chunk = re.search(r"AppendAllText\(\(Join-Path \$d 'payload.b64'\),'([A-Za-z0-9+/=]*)'\)$", script)
        if chunk:
            self.buffer += chunk.group(1)
            return run.finish(0)
        if "ComputeHash" in script:
            want = re.search(r"\$h -ne '([0-9a-f]{64})'", script)
            raw = base64.b64decode(self.buffer)
            if not want or hashlib.sha256(raw).hexdigest() != want.group(1):
                run.write(b'##stormatrix:error {"message":"upload corrupted"}\r\n')
                return run.finish(3)
            for entry in json.loads(raw):
                self.files["/".join(entry["path"])] = entry["text"]
            assert digest
            self.installed[digest.group(1)] = want.group(1)
            run.write(b"##stormatrix:uploaded\r\n")
            return run.finish(0)
        if "Restart-Computer" in script:
            assert self.server is not None
            self.boot = "2026-01-02T00:00:00Z"
            self.server.down = True
            threading.Timer(0.5, lambda: setattr(self.server, "down", False)).start()
            return run.finish(0)
        call = re.search(r"& '([A-Za-z-]+)' @a", script)
        data = re.search(r"FromBase64String\('([A-Za-z0-9+/=]*)'\)", script)
        if call and data:
            assert digest and digest.group(1) in self.installed, "call before upload"
            params = json.loads(base64.b64decode(data.group(1)))
            self.calls.append((call.group(1), params))
            try:
                result = self.functions[call.group(1)](params, run)
            except Exception as exc:  # the guest's catch block
                run.write(("##stormatrix:error " + json.dumps({"message": str(exc), "error_id": "Stormatrix.Test"}) + "\r\n").encode())
                return run.finish(1)
            run.write(("##stormatrix:result " + json.dumps(result) + "\r\n").encode())
            return run.finish(0)
        run.write(b"unknown script\r\n", "stderr")
        run.finish(99)


@pytest.fixture()
def guest() -> Iterator[tuple[FakeGuest, WSManStandIn]]:
    fake = FakeGuest()
    fake.functions["Get-StormatrixGuestFacts"] = lambda p, r: {"OsBuild": "20348", "LastBootUpTime": fake.boot,
                                                                "TestDisk": 1, "Serial": p.get("Serial")}
    with WSManStandIn(fake, username="Administrator", password=PASSWORD) as server:
        fake.server = server
        yield fake, server


def plaintext_factory(server: WSManStandIn) -> Callable[[w.WinRMSettings], Any]:
    """Basic over HTTP: what the stand-in speaks without TLS (pywinrm's 'plaintext')."""
    def make(s: w.WinRMSettings) -> Any:
        assert s.password is not None
        return Protocol(server.url, transport="plaintext", username=s.username, password=s.password.reveal(),
                        read_timeout_sec=s.read_timeout_seconds, operation_timeout_sec=s.operation_timeout_seconds)
    return make


OPEN: list[w.WinRMExecutor] = []


@pytest.fixture(autouse=True)
def _close_executors() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def executor(server: WSManStandIn, password: str = PASSWORD, **over: Any) -> w.WinRMExecutor:
    section: dict[str, Any] = {"host": "127.0.0.1", "username": "Administrator", "password_env": "STORMATRIX_PW",
                               "disk_serial": "STORMATRIX01", "operation_timeout_seconds": 1,
                               "read_timeout_seconds": 5, "command_timeout_seconds": 20, "connect_retries": 2}
    section.update(over)
    ex = w.WinRMExecutor([], {"winrm": section}, protocol_factory=plaintext_factory(server),
                         environ={"STORMATRIX_PW": password}, sleep=lambda s: time.sleep(min(s, 0.05)))
    OPEN.append(ex)
    return ex


def test_upload_in_chunks_then_call_with_parameters(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    fake, server = guest
    ex = executor(server)
    facts = ex.wait_ready(time.monotonic() + 30)
    assert facts["OsBuild"] == "20348" and facts["Serial"] == "STORMATRIX01"
    module = w.default_module_dir()
    for path in module.rglob("*.ps1"):
        assert fake.files["StormatrixGuest/" + path.relative_to(module).as_posix()] == path.read_text(encoding="utf-8")
    lines = server.command_lines
    assert len(lines) >= 5, "the module needs several chunks"
    assert all(len(line) <= w.CMD_LIMIT for line in lines)
    assert max(len(line) for line in lines) > w.CMD_LIMIT - 100, "chunks use the room cmd.exe gives"
    # the exact version is present now: a new executor does not upload again
    before = len(lines)
    ex2 = executor(server)
    ex2.call("Get-StormatrixGuestFacts", {})
    assert len(server.command_lines) == before + 2
    assert {"Create", "Command", "Receive", "Signal", "Delete"} <= set(server.actions)


def test_cmd_exe_limit_is_enforced_by_the_stand_in(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    _, server = guest
    channel = w.WinRMChannel(executor(server).settings, protocol_factory=plaintext_factory(server))
    out = channel.run("powershell " + "x" * w.CMD_LIMIT, "too long", timeout=10)
    channel.reset()
    assert out.exit_code == 1 and "too long" in out.stderr


@pytest.mark.parametrize("value", [INJECTION, "$(Stop-Computer)", "a'b\"c`d\ne"])
def test_injected_values_arrive_as_plain_data(guest: tuple[FakeGuest, WSManStandIn], value: str) -> None:
    fake, server = guest
    fake.functions["Get-StormatrixEngineVersion"] = lambda p, r: {"Path": p["Path"]}
    ex = executor(server)
    assert ex.call("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": value}) == {"Path": value}
    assert fake.calls[-1] == ("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": value})
    assert all(value not in line for line in server.command_lines)


def test_wrong_password_is_authentication_failed_without_retries(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    _, server = guest
    with pytest.raises(AuthenticationFailed, match="rejected the credentials"):
        executor(server, password="wrong").call("Get-StormatrixGuestFacts", {})
    assert server.actions == []  # 401 before any action was processed
    with pytest.raises(AuthenticationFailed):
        executor(server, password="wrong").wait_ready(time.monotonic() + 30)


def test_connection_errors_are_retried(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    _, server = guest
    server.drop_next = 2
    assert executor(server).call("Get-StormatrixGuestFacts", {})["OsBuild"] == "20348"


def test_connection_errors_beyond_the_retries_are_guest_disconnected(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    _, server = guest
    server.drop_next = 10
    with pytest.raises(GuestDisconnected, match="cannot reach WinRM"):
        executor(server, connect_retries=1).call("Get-StormatrixGuestFacts", {})


def test_wait_ready_polls_until_the_guest_answers_and_gives_up_at_the_deadline(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    from stormatrix.core.errors import GuestNotReady

    _, server = guest
    server.down = True
    threading.Timer(0.6, lambda: setattr(server, "down", False)).start()
    assert executor(server, connect_retries=0).wait_ready(time.monotonic() + 30)["OsBuild"] == "20348"
    server.down = True
    with pytest.raises(GuestNotReady, match="did not answer before the deadline"):
        executor(server, connect_retries=0).wait_ready(time.monotonic() + 0.3)
    server.down = False


def test_a_command_past_its_deadline_is_a_remote_timeout_and_is_stopped(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    fake, server = guest
    stopped = threading.Event()

    def hang(params: dict[str, Any], run: CommandRun) -> Any:
        if run.terminated.wait(10):
            stopped.set()
        return {}
    fake.functions["Get-StormatrixPowerPlan"] = hang
    ex = executor(server)
    ex.ensure_module()
    with pytest.raises(RemoteTimeout, match="deadline"):
        ex.call("Get-StormatrixPowerPlan", {}, timeout=1.5)
    assert stopped.wait(5), "the command was signalled to terminate"


def test_guest_errors_are_remote_command_errors_with_output(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    fake, server = guest

    def fail(params: dict[str, Any], run: CommandRun) -> Any:
        raise RuntimeError(f"no disk with serial '{params['Serial']}'")
    fake.functions["Get-StormatrixGuestFacts"] = fail
    with pytest.raises(RemoteCommandError) as info:
        executor(server).call("Get-StormatrixGuestFacts", {"Serial": "NOPE"})
    assert info.value.exit_status == 1
    assert "no disk with serial 'NOPE'" in str(info.value)
    assert "##stormatrix:error" in info.value.stdout


def test_restart_waits_for_a_new_boot_time(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    fake, server = guest
    facts = executor(server, connect_retries=0).restart_guest(time.monotonic() + 30)
    assert facts["LastBootUpTime"] == "2026-01-02T00:00:00Z"


class Window:
    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []

    def measure_started(self) -> None:
        self.events.append(("start", time.monotonic()))

    def measure_ended(self) -> None:
        self.events.append(("end", time.monotonic()))


def fio_in_fake_guest(tmp_path: Path) -> Callable[[dict[str, Any], CommandRun], Any]:
    """Invoke-StormatrixFio answered by the real Linux fio on a file, with the module's markers."""
    fio = shutil.which("fio")

    def run_fio(p: dict[str, Any], run: CommandRun) -> Any:
        assert fio, "fio is needed"
        run.write(b"##stormatrix:engine-started 2026-01-01T00:00:00Z\r\n")
        out = tmp_path / "fio.json"
        args = [fio, "--name=stormatrix", f"--filename={tmp_path / 'target.dat'}", "--size=4m", "--ioengine=psync",
                f"--rw={p['ReadWrite']}", f"--bs={p['BlockSize']}", f"--iodepth={p['IoDepth']}",
                f"--numjobs={p['NumJobs']}", "--group_reporting", "--thread", "--time_based",
                f"--ramp_time={p['RampSeconds']}s", f"--runtime={p['RuntimeSeconds']}s",
                "--output-format=json", f"--output={out}"]
        subprocess.run(args, check=True, capture_output=True, timeout=60)
        run.write(b"##stormatrix:engine-ended 2026-01-01T00:00:02Z\r\n")
        return {"Engine": "fio", "Target": "\\\\.\\PhysicalDrive1", "DiskNumber": 1, "FioVersion": "fio-3.33",
                "Raw": out.read_text()}
    return run_fio


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_run_times_the_window_from_the_engine_start_and_parses_fio(guest: tuple[FakeGuest, WSManStandIn],
                                                                   tmp_path: Path) -> None:
    fake, server = guest
    fake.functions["Invoke-StormatrixFio"] = fio_in_fake_guest(tmp_path)
    ex = executor(server)
    ex.ensure_module()
    window = Window()
    cell = Cell(DiskConfig("sata", "native", False, "none"), Workload("r", "randread", 4096, 1, 1), 1)
    t0 = time.monotonic()
    result = ex.run(cell, Timing(1.0, 1.0), window)
    assert [e for e, _ in window.events] == ["start", "end"]
    start, end = window.events[0][1], window.events[1][1]
    assert 0.9 <= start - t0 < 3.0
    assert 0.9 <= end - start < 1.5
    assert result.engine == "fio" and result.window_source == "timed"
    assert result.data["jobs"][0]["jobname"] == "stormatrix"
    assert result.guest["DiskNumber"] == 1 and result.guest["host"] == "127.0.0.1"
    name, params = fake.calls[-1]
    assert name == "Invoke-StormatrixFio"
    assert params["Serial"] == "STORMATRIX01" and params["WriteMarkers"] is True and params["RampSeconds"] == 1


def test_run_failure_is_workload_failed_without_opening_the_window(guest: tuple[FakeGuest, WSManStandIn]) -> None:
    fake, server = guest

    def fail(params: dict[str, Any], run: CommandRun) -> Any:
        raise RuntimeError("fio exited with 1 on \\\\.\\PhysicalDrive1")
    fake.functions["Invoke-StormatrixFio"] = fail
    window = Window()
    cell = Cell(DiskConfig("sata", "native", False, "none"), Workload("r", "randread", 4096, 1, 1), 1)
    with pytest.raises(WorkloadFailed, match="fio exited with 1") as info:
        executor(server).run(cell, Timing(1.0, 1.0), window)
    assert window.events == []
    assert info.value.cell == cell.key
    assert "##stormatrix:error" in info.value.details["stdout"]


def test_preflight_reports_each_check(guest: tuple[FakeGuest, WSManStandIn], monkeypatch: pytest.MonkeyPatch) -> None:
    fake, server = guest
    fake.functions["Invoke-StormatrixGuestValidation"] = lambda p, r: {
        "Passed": False, "PesterVersion": "5.6.1", "Total": 2, "FailedCount": 1,
        "Tests": [{"Name": "Should be offline", "Block": "Test disk", "Result": "Passed", "Message": ""},
                  {"Name": "Should have no reboot pending", "Block": "System state", "Result": "Failed",
                   "Message": "Expected $false, because Fix: Restart-Computer"}]}
    raw = {"run": {"guest_os": "windows2022", "preflight": True}, "matrix": {"controllers": ["virtio-scsi-single"]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "winrm": {"host": "127.0.0.1", "username": "Administrator", "password_env": "STORMATRIX_PW",
                     "disk_serial": "STORMATRIX01", "operation_timeout_seconds": 1, "read_timeout_seconds": 5}}
    spec = spec_from_dict(raw)
    report = w.preflight(spec, None, protocol_factory=plaintext_factory(server), environ=ENV)
    assert not report.passed
    assert [t.result for t in report.tests] == ["Passed", "Failed"]
    name, params = fake.calls[-1]
    assert params["Controller"] == "virtio-scsi" and params["Serial"] == "STORMATRIX01"


def test_no_password_in_logs_or_errors(guest: tuple[FakeGuest, WSManStandIn], caplog: pytest.LogCaptureFixture) -> None:
    fake, server = guest

    def echo(params: dict[str, Any], run: CommandRun) -> Any:
        raise RuntimeError("guest said " + PASSWORD)
    fake.functions["Get-StormatrixPowerPlan"] = echo
    with caplog.at_level(logging.DEBUG):
        ex = executor(server)
        ex.ensure_module()
        with pytest.raises(RemoteCommandError) as info:
            ex.call("Get-StormatrixPowerPlan", {})
        with pytest.raises(AuthenticationFailed) as auth:
            executor(server, password="wrong-" + PASSWORD).call("Get-StormatrixPowerPlan", {})
        ex.close()
    assert PASSWORD not in caplog.text
    for err in (info.value, auth.value):
        assert PASSWORD not in str(err) and PASSWORD not in err.stdout and PASSWORD not in err.stderr
        assert PASSWORD not in repr(err.details)


# --- TLS: certificate validation for real ------------------------------------------------------------

@pytest.fixture()
def tls_guest(tmp_path: Path) -> Iterator[tuple[FakeGuest, WSManStandIn, str]]:
    cert, key = self_signed_cert(tmp_path)
    fake = FakeGuest()
    fake.functions["Get-StormatrixGuestFacts"] = lambda p, r: {"OsBuild": "20348"}
    with WSManStandIn(fake, password=PASSWORD, certfile=cert, keyfile=key) as server:
        yield fake, server, cert


def https_executor(server: WSManStandIn, **over: Any) -> w.WinRMExecutor:
    section: dict[str, Any] = {"host": "127.0.0.1", "port": server.port, "transport": "https",
                               "username": "Administrator", "password_env": "STORMATRIX_PW", "disk_serial": "S1",
                               "operation_timeout_seconds": 1, "read_timeout_seconds": 5, "connect_retries": 0}
    section.update(over)
    ex = w.WinRMExecutor([], {"winrm": section}, environ=ENV)
    OPEN.append(ex)
    return ex


def test_https_with_an_untrusted_certificate_fails_with_the_fix(tls_guest: tuple[FakeGuest, WSManStandIn, str]) -> None:
    _, server, _ = tls_guest
    with pytest.raises(RemoteCommandError, match="TLS .* failed.*cert_validation = false") as info:
        https_executor(server).call("Get-StormatrixGuestFacts", {})
    assert not isinstance(info.value, (AuthenticationFailed, GuestDisconnected))


def test_https_with_the_ca_file_validates(tls_guest: tuple[FakeGuest, WSManStandIn, str]) -> None:
    _, server, cert = tls_guest
    assert https_executor(server, ca_file=cert).call("Get-StormatrixGuestFacts", {}) == {"OsBuild": "20348"}


def test_https_without_validation_only_when_turned_off(tls_guest: tuple[FakeGuest, WSManStandIn, str]) -> None:
    _, server, _ = tls_guest
    assert https_executor(server, cert_validation=False).call("Get-StormatrixGuestFacts", {}) == {"OsBuild": "20348"}


def test_guest_check_command_prints_a_table_and_exits_by_result(guest: tuple[FakeGuest, WSManStandIn],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.cli import build_parser
    from stormatrix.commands import guest as guest_cmd

    fake, server = guest
    fake.functions["Invoke-StormatrixGuestValidation"] = lambda p, r: {
        "Passed": True, "PesterVersion": "5.6.1",
        "Tests": {"Name": "Should be offline", "Block": "Test disk", "Result": "Passed", "Message": ""}}
    args = build_parser().parse_args(["guest", "check", "--host", "127.0.0.1", "--username", "Administrator",
                                      "--password-env", "STORMATRIX_PW", "--disk-serial", "STORMATRIX01",
                                      "--controller", "sata", "--timeout", "20"])
    assert args.func is guest_cmd.run_check
    assert guest_cmd.run_check(args, protocol_factory=plaintext_factory(server), environ=ENV) == 0
    out = capsys.readouterr().out
    assert "PASSED  Test disk / Should be offline" in out and "1 passed, 0 failed" in out
    assert fake.calls[-1][1]["Controller"] == "sata"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["guest", "check", "--host", "h", "--username", "u", "--password", PASSWORD,
                                   "--disk-serial", "S"])
