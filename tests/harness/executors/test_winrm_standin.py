"""The executor end to end over real HTTP: pywinrm -> the WS-Man stand-in -> the real pwsh 7.6.9
(tests/pwshengine.py) running the command lines the executor sent, in a fake Windows guest
(tests/pwsh/FakeWindows: disks, controllers, drivers, power plan as data; fio.exe/diskspd.exe doing
real I/O with the Linux fio on the disks' images). Nothing here recognises the executor's scripts:
the upload, the SHA-256 check, Import-Module, splatting and the guest module itself really run."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from winrm.protocol import Protocol

from stormatrix.core.errors import (
                                    AuthenticationFailed,
                                    GuestDisconnected,
                                    GuestNotReady,
                                    RemoteCommandError,
                                    RemoteTimeout,
                                    WorkloadFailed,
                                    )
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.executors.winrm import executor as w
from tests.standins.wsman import FakeWindowsGuest, FirstUpload, WSManStandIn, self_signed_cert

#: a generous limit, not a measurement: the first command uploads the module (~40 pwsh starts, each
#: several seconds on a loaded 2-core machine)
DEADLINE = 900
PASSWORD = "Str0ng'pa$$\"word"
ENV = {"STORMATRIX_PW": PASSWORD}
pytestmark = [pytest.mark.pwsh, pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")]


def make_guest(tmp_path: Path, guest_temp: Path | None, changes: dict[str, Any] | None = None,
               **server: Any) -> FakeWindowsGuest:
    return FakeWindowsGuest(tmp_path / "guest", changes, password=PASSWORD, temp=guest_temp, **server)


@pytest.fixture()
def guest(tmp_path: Path, guest_temp: Path) -> Iterator[FakeWindowsGuest]:
    with make_guest(tmp_path, guest_temp) as g:
        yield g


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


def executor(g: FakeWindowsGuest, password: str = PASSWORD, **over: Any) -> w.WinRMExecutor:
    section: dict[str, Any] = {"host": "127.0.0.1", "username": "Administrator", "password_env": "STORMATRIX_PW",
                               "disk_serial": "STORMATRIX01", "operation_timeout_seconds": 2,
                               "read_timeout_seconds": 10, "command_timeout_seconds": 120, "connect_retries": 2}
    section.update(over)
    ex = w.WinRMExecutor([], {"winrm": section}, protocol_factory=plaintext_factory(g.server),
                         environ={"STORMATRIX_PW": password}, sleep=lambda s: time.sleep(min(s, 0.05)))
    OPEN.append(ex)
    return ex


def cell(rw: str = "randread", bs: int = 4096) -> Cell:
    return Cell(DiskConfig("virtio-scsi-single", "native", False, "none"), Workload("w", rw, bs, 2, 1), 1)


class Window:
    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []

    def measure_started(self) -> None:
        self.events.append(("start", time.monotonic()))

    def measure_ended(self) -> None:
        self.events.append(("end", time.monotonic()))


# --- upload and calls -------------------------------------------------------------------------------------

def test_upload_in_chunks_with_a_margin_then_call(tmp_path: Path, first_upload: FirstUpload) -> None:
    """The session's first wait_ready, into an empty %TEMP% (conftest.first_upload: done once, its %TEMP% is
    then every guest's), uploaded the module in chunks; a guest that has it only checks it."""
    facts = first_upload.facts
    assert facts["OsBuild"] == "20348" and facts["TestDisk"] == 1
    assert facts["signature"] == "none" and facts["test_disk"]["PartitionStyle"] == "RAW"
    module = w.default_module_dir()
    installed = next((first_upload.temp / "stormatrix").iterdir()) / "StormatrixGuest"
    for path in module.rglob("*.ps1"):
        assert (installed / path.relative_to(module)).read_text(encoding="utf-8-sig") == path.read_text(encoding="utf-8")
    lines = first_upload.command_lines
    assert len(lines) >= 5, "the module needs several chunks"
    assert max(len(line) for line in lines) <= w.CMD_LIMIT - w.CMD_MARGIN
    # this exact version is present now: a new executor checks and calls, no upload
    with make_guest(tmp_path, first_upload.temp) as g:
        executor(g).call("Get-StormatrixPowerPlan", {})
        assert len(g.server.command_lines) == 2
        assert {"Create", "Command", "Receive", "Signal", "Delete"} <= set(first_upload.actions) | set(g.server.actions)


def test_cmd_exe_refuses_a_line_over_its_limit(guest: FakeWindowsGuest) -> None:
    channel = w.WinRMChannel(executor(guest).settings, protocol_factory=plaintext_factory(guest.server))
    out = channel.run("powershell " + "x" * w.CMD_LIMIT, "too long", timeout=10)
    channel.reset()
    assert out.exit_code == 1 and "too long" in out.stderr


@pytest.mark.parametrize("value", ["'; New-Item -ItemType File -Path {marker} #", "$(New-Item -ItemType File -Path {marker})",
                                   "\"; New-Item -ItemType File -Path {marker}; \""])
def test_injected_values_arrive_as_plain_data(guest: FakeWindowsGuest, tmp_path: Path, value: str) -> None:
    marker = tmp_path / "pwned"
    value = value.format(marker=marker)
    with pytest.raises(RemoteCommandError) as info:
        executor(guest).call("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": value})
    assert info.value.details.error_id.startswith("Stormatrix.ExecutableNotFound")
    assert value in str(info.value)  # the guest saw the value itself, as one string
    assert not marker.exists()
    assert all(value not in line for line in guest.server.command_lines)


def test_a_bad_serial_is_refused_by_powershell_validation(guest: FakeWindowsGuest) -> None:
    with pytest.raises(RemoteCommandError) as info:
        executor(guest).call("Find-StormatrixTestDisk", {"Serial": "x'; Remove-Item -Recurse C:\\ #"})
    assert "ParameterArgumentValidationError" in info.value.details.error_id


def test_guest_errors_carry_the_error_id_and_the_disks_seen(guest: FakeWindowsGuest) -> None:
    with pytest.raises(RemoteCommandError) as info:
        executor(guest).call("Find-StormatrixTestDisk", {"Serial": "NOPE"})
    assert info.value.details.exit_status == 1 and info.value.details.error_id.startswith("Stormatrix.TestDiskNotFound")
    assert "no disk with serial 'NOPE'" in str(info.value) and 'serial "STORMATRIX01"' in str(info.value)
    assert "##stormatrix:error" in info.value.details.stdout


# --- output encoding: UTF-8 end to end ---------------------------------------------------------------------

def test_non_ascii_disk_and_plan_names_arrive_intact(tmp_path: Path, guest_temp: Path) -> None:
    """The guest's console writes OEM code page 437 until the prelude sets UTF-8 (Enter-FakeWindowsGuest)."""
    from tests.standins.wsman import _fakewindows

    data = _fakewindows().load_description()
    disks = data["Disks"]
    disks[1]["FriendlyName"] = "Datenträger für Prüfung – 測試"
    plans = data["PowerPlans"]
    plans[0]["Name"] = "Économie d'énergie"
    with make_guest(tmp_path, guest_temp, {"Disks": disks, "PowerPlans": plans}) as g:
        ex = executor(g)
        facts = ex.wait_ready(time.monotonic() + DEADLINE)
        assert facts["test_disk"]["FriendlyName"] == "Datenträger für Prüfung – 測試"
        assert ex.call("Get-StormatrixPowerPlan", {})["Name"] == "Économie d'énergie"


# --- authentication, retries, readiness --------------------------------------------------------------------

def test_wrong_password_fails_at_once_and_names_basic_auth_and_the_token_policy(guest: FakeWindowsGuest) -> None:
    with pytest.raises(AuthenticationFailed) as info:
        executor(guest, password="wrong").call("Get-StormatrixGuestFacts", {})
    assert guest.server.actions == []  # 401 before any action was processed
    message = str(info.value)
    assert "Basic" in message and "LocalAccountTokenFilterPolicy" in message and "ntlm" in message
    with pytest.raises(AuthenticationFailed):
        executor(guest, password="wrong").wait_ready(time.monotonic() + 60)


def test_connection_errors_are_retried_then_guest_disconnected(guest: FakeWindowsGuest) -> None:
    guest.server.drop_next = 2
    assert executor(guest).call("Get-StormatrixPowerPlan", {})["Guid"]
    guest.server.drop_next = 10
    with pytest.raises(GuestDisconnected, match="cannot reach WinRM"):
        executor(guest, connect_retries=1).call("Get-StormatrixPowerPlan", {})
    guest.server.drop_next = 0


def test_wait_ready_retries_ws_man_faults_and_5xx_until_the_guest_answers(guest: FakeWindowsGuest) -> None:
    """A WinRM service that is starting answers faults (HTTP 500) and 503 for a while."""
    guest.server.fault_next = 3
    guest.server.status_next = [503, 500]
    facts = executor(guest, connect_retries=0).wait_ready(time.monotonic() + DEADLINE)
    assert facts["TestDisk"] == 1 and guest.server.fault_next == 0 and guest.server.status_next == []
    assert w.storage_drivers(facts) == {"sata": "storahci", "virtio-scsi": "vioscsi"}
    # the driver store of the fake guest's description: both virtio-win storage drivers staged
    from tests.standins.wsman import _fakewindows

    assert facts["InstalledStorageDrivers"] == ["viostor", "vioscsi"]
    assert sorted(facts["StorageDriverPackages"]) == sorted(
        p["Folder"] for p in _fakewindows().load_description()["DriverStore"])


def test_wait_ready_gives_up_at_the_deadline(guest: FakeWindowsGuest) -> None:
    guest.server.down = True
    threading.Timer(0.6, lambda: setattr(guest.server, "down", False)).start()
    assert executor(guest, connect_retries=0).wait_ready(time.monotonic() + DEADLINE)["OsBuild"] == "20348"
    guest.server.fault_next = 10**6
    with pytest.raises(GuestNotReady, match="did not answer before the deadline.*fault"):
        executor(guest, connect_retries=0).wait_ready(time.monotonic() + 1.0)
    guest.server.fault_next = 0


def test_a_controller_without_driver_fails_wait_ready_at_once_naming_it(tmp_path: Path, guest_temp: Path) -> None:
    from tests.standins.wsman import _fakewindows

    description = _fakewindows().load_description()
    controllers = description["Controllers"]
    controllers[1]["DriverInstalled"] = False  # virtio-scsi before vioscsi is installed: only viostor staged
    store = [p for p in description["DriverStore"] if p["Inf"] == "viostor.inf"]
    with make_guest(tmp_path, guest_temp, {"Controllers": controllers, "DriverStore": store}) as g:
        ex = executor(g)
        with pytest.raises(w.TestDiskMissing) as info:
            ex.wait_ready(time.monotonic() + 600)
        facts_calls = sum(1 for line in g.server.command_lines)
    message = str(info.value)
    assert "no disk with serial 'STORMATRIX01'" in message
    assert "virtio-scsi controller" in message and "PCI\\VEN_1AF4&DEV_1004" in message
    assert "NO driver bound (device problem 28" in message and "vioscsi" in message
    assert "sata controller" in message and "driver storahci bound" in message
    assert info.value.retryable is False and isinstance(info.value, GuestNotReady)
    assert facts_calls <= 3  # presence check (+ upload when new) + one facts call: not polled until the deadline
    # the facts travel with the error: the runner reads the installed drivers from them
    assert info.value.details.guest_facts["InstalledStorageDrivers"] == ["viostor"]


def test_a_command_past_its_deadline_is_a_remote_timeout_and_is_stopped(guest: FakeWindowsGuest, tmp_path: Path) -> None:
    ex = executor(guest)
    ex.ensure_module()
    started = time.monotonic()
    with pytest.raises(RemoteTimeout, match="deadline"):
        ex.call("Invoke-StormatrixFio", {"FileName": str(tmp_path / "f.dat"), "FileSizeMiB": 4, "IoEngine": "psync",
                                         "Direct": 0, "FioPath": shutil.which("fio"),
                                         "Workload": {"ReadWrite": "randread", "BlockSize": 4096, "RuntimeSeconds": 60}},
                timeout=8)
    assert time.monotonic() - started < 40
    deadline = time.monotonic() + 20
    while any(p.poll() is None for p in guest.runner.processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(p.poll() is not None for p in guest.runner.processes), "the command was terminated in the guest"


def test_restart_waits_for_a_new_boot_time(guest: FakeWindowsGuest) -> None:
    ex = executor(guest, connect_retries=0)
    before = ex.wait_ready(time.monotonic() + DEADLINE)["LastBootUpTime"]
    facts = ex.restart_guest(time.monotonic() + DEADLINE)
    assert facts["LastBootUpTime"] != before


# --- workloads ---------------------------------------------------------------------------------------------

def test_run_times_the_window_from_the_engine_start_and_parses_fio(guest: FakeWindowsGuest) -> None:
    ex = executor(guest)
    ex.ensure_module()
    window = Window()
    t0 = time.monotonic()
    result = ex.run(cell(), Timing(1.0, 1.0), window)
    assert [e for e, _ in window.events] == ["start", "end"]
    start, end = window.events[0][1], window.events[1][1]
    assert start - t0 >= 0.9 and end - start >= 0.9
    assert result.engine == "fio" and result.window_source == "timed"
    job = result.data["jobs"][0]
    assert job["jobname"] == "stormatrix" and job["read"]["total_ios"] > 0
    assert result.guest["Target"] == "\\\\.\\PhysicalDrive1" and result.guest["DiskNumber"] == 1
    assert "--direct=1" in result.guest["EngineFlags"] and "--ioengine=windowsaio" in result.guest["Arguments"]
    assert result.guest["TestDisk"]["PartitionStyle"] == "RAW" and result.guest["host"] == "127.0.0.1"


def test_a_write_on_a_partitioned_disk_is_refused_before_fio_starts(tmp_path: Path, guest_temp: Path) -> None:
    from tests.standins.wsman import _fakewindows

    disks = _fakewindows().load_description()["Disks"]
    disks[1].update(PartitionStyle="GPT", Partitions=[{"PartitionNumber": 1, "DriveLetter": "", "Size": 16777216, "Type": "Basic"}])
    with make_guest(tmp_path, guest_temp, {"Disks": disks}) as g:
        ex = executor(g)
        facts = ex.wait_ready(time.monotonic() + DEADLINE)
        assert facts["signature"] == "partitions"  # the runner refuses writes on this (check_write_allowed)
        window = Window()
        with pytest.raises(WorkloadFailed, match="GPT partition table") as info:
            ex.run(cell("randwrite"), Timing(0.0, 1.0), window)
        assert window.events == [] and info.value.details.error_id.startswith("Stormatrix.TestDiskNotRaw")
        assert "##stormatrix:engine-started" not in info.value.details.stdout
        # reads are fine on it, and allowed writes too
        assert ex.run(cell("randread"), Timing(0.0, 1.0), Window()).engine == "fio"
        allowed = executor(g, allow_partitioned_disk=True).run(cell("randwrite"), Timing(0.0, 1.0), Window())
        assert allowed.data["jobs"][0]["write"]["total_ios"] > 0


def test_a_read_only_disk_is_made_writable_and_reported(tmp_path: Path, guest_temp: Path) -> None:
    """SAN policy OfflineShared: a disk first seen on a shared bus is offline and read-only."""
    from tests.standins.wsman import _fakewindows

    disks = _fakewindows().load_description()["Disks"]
    disks[1]["IsReadOnly"] = True
    with make_guest(tmp_path, guest_temp, {"Disks": disks}) as g:
        result = executor(g).run(cell("randwrite"), Timing(0.0, 1.0), Window())
        assert result.guest["TestDisk"]["WasReadOnly"] is True and result.guest["TestDisk"]["ReadOnlyCleared"] is True
        assert result.data["jobs"][0]["write"]["total_ios"] > 0
        assert g.state()["Disks"][1]["IsReadOnly"] is False  # type: ignore[index]


def test_a_disk_that_stays_read_only_gets_its_own_message(tmp_path: Path, guest_temp: Path) -> None:
    from tests.standins.wsman import _fakewindows

    disks = _fakewindows().load_description()["Disks"]
    disks[1].update(IsReadOnly=True, HardwareReadOnly=True)
    with make_guest(tmp_path, guest_temp, {"Disks": disks}) as g:
        with pytest.raises(WorkloadFailed) as info:
            executor(g).run(cell("randwrite"), Timing(0.0, 1.0), Window())
    assert info.value.details.error_id.startswith("Stormatrix.TestDiskReadOnly")
    assert "stays read-only" in str(info.value) and "SAN policy is OfflineShared" in str(info.value)


def test_diskspd_runs_with_fio_equivalent_flags_and_returns_its_xml(guest: FakeWindowsGuest) -> None:
    from stormatrix.analysis.read.diskspd import parse_diskspd_xml

    ex = executor(guest, engine="diskspd")
    window = Window()
    result = ex.run(cell("randrw"), Timing(1.0, 1.0), window)
    assert [e for e, _ in window.events] == ["start", "end"]
    assert result.engine == "diskspd" and result.data["Results"]["TimeSpan"]["Thread"]["Target"]["Path"] == "#1"
    args = result.guest["Arguments"]
    assert "-Su" in args and "-n" in args and "-Sh" not in args and args[-1] == "#1"
    assert result.guest["EngineFlags"] == ["-Su", "-n", "-Z1M"]
    profile = result.data["Results"]["Profile"]["TimeSpans"]["TimeSpan"]
    assert profile["DisableAffinity"] == "true" and profile["Targets"]["Target"]["WriteThrough"] == "false"
    row = parse_diskspd_xml(result.raw)
    assert row["iops"] > 0 and row["read_iops"] and row["write_iops"] and row["bs"] == 4096


def test_no_password_in_logs_or_errors(guest: FakeWindowsGuest, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        ex = executor(guest)
        with pytest.raises(RemoteCommandError) as info:
            ex.call("Get-StormatrixEngineVersion", {"Engine": "fio", "Path": "C:\\" + PASSWORD})
        with pytest.raises(AuthenticationFailed) as auth:
            executor(guest, password="wrong-" + PASSWORD).call("Get-StormatrixPowerPlan", {})
        ex.close()
    assert PASSWORD not in caplog.text
    for err in (info.value, auth.value):
        assert PASSWORD not in str(err) and PASSWORD not in err.details.stdout and PASSWORD not in err.details.stderr
        assert PASSWORD not in repr(err.details)


# --- TLS: certificate validation for real ------------------------------------------------------------------

@pytest.fixture()
def tls_guest(tmp_path: Path, guest_temp: Path) -> Iterator[tuple[FakeWindowsGuest, str]]:
    cert, key = self_signed_cert(tmp_path)
    with make_guest(tmp_path, guest_temp, certfile=cert, keyfile=key) as g:
        yield g, cert


def https_executor(g: FakeWindowsGuest, **over: Any) -> w.WinRMExecutor:
    section: dict[str, Any] = {"host": "127.0.0.1", "port": g.server.port, "transport": "https",
                               "username": "Administrator", "password_env": "STORMATRIX_PW", "disk_serial": "STORMATRIX01",
                               "operation_timeout_seconds": 2, "read_timeout_seconds": 10, "connect_retries": 0}
    section.update(over)
    ex = w.WinRMExecutor([], {"winrm": section}, environ=ENV)
    OPEN.append(ex)
    return ex


def test_https_validates_certificates(tls_guest: tuple[FakeWindowsGuest, str]) -> None:
    g, cert = tls_guest
    with pytest.raises(RemoteCommandError, match="TLS .* failed.*cert_validation = false") as info:
        https_executor(g).call("Get-StormatrixPowerPlan", {})
    assert not isinstance(info.value, (AuthenticationFailed, GuestDisconnected))
    assert https_executor(g, ca_file=cert).call("Get-StormatrixPowerPlan", {})["Guid"]
    assert https_executor(g, cert_validation=False).call("Get-StormatrixPowerPlan", {})["Guid"]
