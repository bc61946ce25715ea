"""From matrix to workbook with a Windows guest: the real Runner drives the real WinRM executor over
pywinrm (transport "https": Basic inside TLS, the certificate validated against its CA file) to the
WS-Man stand-in, where the real pwsh runs what the executor sent in a fake Windows guest
(tests/pwsh/FakeWindows); Invoke-StormatrixFio runs fio.exe (the Linux fio on the test disk's
image) from C:\\Program Files\\fio; the cell is journaled and ``stormatrix report`` writes a workbook.
The same for DiskSpd (a fake diskspd.exe doing real I/O and writing DiskSpd's -Rxml document), both
cells in one workbook, and ``stormatrix guest check`` through the same path, each check's result printed,
with the built-in runner and under Pester 5.7.1 installed in the guest."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.agent import FakeVmBackend
from stormatrix.backends.base import GuestEndpoint
from stormatrix.cli import main
from stormatrix.executors.winrm import executor as w
from stormatrix.journal import read_journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict
from tests.standins.wsman import FakeWindowsGuest, _fakewindows, self_signed_cert
import paths

PASSWORD = "e2e-pa$$ 'word\""
ROOT = paths.ROOT
#: a generous limit, not a measurement: the first command uploads the module (~40 pwsh starts, each
#: several seconds on a loaded 2-core machine)
DEADLINE = 900
pytestmark = [pytest.mark.pwsh, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")]


@pytest.fixture()
def guest(tmp_path: Path, guest_temp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeWindowsGuest, str]]:
    monkeypatch.setenv("SMX_WINRM_PW", PASSWORD)
    cert, key = self_signed_cert(tmp_path)
    with FakeWindowsGuest(tmp_path / "guest", password=PASSWORD, certfile=cert, keyfile=key, temp=guest_temp) as g:
        yield g, cert


class WinRMVmBackend(FakeVmBackend):
    """The fake VM backend whose guest is reached over WinRM at the stand-in's port."""

    default_executor = "winrm"
    port = 0

    def endpoints(self) -> list[GuestEndpoint]:
        return [GuestEndpoint(kind="tcp", address="127.0.0.1", port=self.port, name="standin")]


def matrix(cert: str, engine: str = "fio", on_error: str = "stop") -> dict[str, Any]:
    return {"run": {"name": "win", "ramp_seconds": 1, "measure_seconds": 2, "guest_os": "windows2022",
                    "executor": "winrm", "on_error": on_error, "retries": 0},
            "matrix": {"controllers": ["sata"], "aio": ["native"], "cache": ["none"]},
            "workload": [{"name": "rr4k", "rw": "randread", "bs": "4k", "iodepth": 4}],
            "winrm": {"transport": "https", "username": "Administrator", "password_env": "SMX_WINRM_PW",
                      "ca_file": cert, "disk_serial": "STORMATRIX01", "engine": engine,
                      "operation_timeout_seconds": 2, "read_timeout_seconds": 10, "command_timeout_seconds": 300}}


def run_matrix(run_dir: Path, g: FakeWindowsGuest, raw: dict[str, Any]) -> tuple[Runner, dict[str, Any]]:
    spec = spec_from_dict(raw)
    backend = WinRMVmBackend(spec, run_dir, {})
    backend.port = g.server.port
    runner = Runner(spec, run_dir, RunOptions(progress=False, backend=backend))
    return runner, runner.run()


def test_fio_and_diskspd_cells_from_matrix_to_one_workbook(guest: tuple[FakeWindowsGuest, str], tmp_path: Path) -> None:
    g, cert = guest
    for engine in ("fio", "diskspd"):
        _, summary = run_matrix(tmp_path / engine, g, matrix(cert, engine=engine))
        assert summary.measured == 1 and not summary.failed, (engine, summary)
    cells = {}
    for engine in ("fio", "diskspd"):
        records = read_journal(tmp_path / engine / "journal.ndjson").records
        (cells[engine],) = [r for r in records if r.get("type") == "cell"]
    fio, dsp = json.dumps(cells["fio"]), json.dumps(cells["diskspd"])
    # what each engine did, and the test disk's state, travel with the cell
    assert "--direct=1" in fio and "--ioengine=windowsaio" in fio and "PhysicalDrive1" in fio
    assert '"-Su", "-n", "-Z1M"' in dsp and '"#1"' in dsp and "-Sh" not in dsp
    assert '"PartitionStyle": "RAW"' in fio and '"PartitionStyle": "RAW"' in dsp
    assert all(len(line) <= w.CMD_LIMIT - w.CMD_MARGIN for line in g.server.command_lines)
    out = tmp_path / "win.xlsx"
    assert main(["report", str(tmp_path / "fio"), str(tmp_path / "diskspd"), "-o", str(out)]) == 0
    import openpyxl

    book = openpyxl.load_workbook(out, read_only=True)
    values = {str(v) for sheet in book.worksheets for row in sheet.iter_rows(values_only=True) for v in row if v}
    book.close()
    assert "rr4k" in values and any("sata" in v for v in values)
    assert {"fio", "diskspd"} <= values, "each row is labelled with its engine"
    # the Method sheet says what each engine did with its I/O
    assert {"Engine: fio", "Engine: DiskSpd"} <= values
    assert any("-Su" in v and "not -Sh" in v for v in values)


def test_the_diskspd_cell_reaches_the_runner_as_a_measured_result(guest: tuple[FakeWindowsGuest, str],
                                                                    tmp_path: Path) -> None:
    """Up to the runner: what the executor hands over for a DiskSpd cell, measured and labelled."""
    from stormatrix.analysis.read.diskspd import parse_diskspd_xml

    g, cert = guest
    spec = spec_from_dict(matrix(cert, engine="diskspd"))
    cell = Runner(spec, tmp_path / "x", RunOptions(progress=False, backend=WinRMVmBackend(spec, tmp_path / "x", {}))).plan().cells[0]
    ex = w.WinRMExecutor([GuestEndpoint(kind="tcp", address="127.0.0.1", port=g.server.port)], spec.raw["winrm"])
    try:
        ex.wait_ready(__import__("time").monotonic() + 300)

        class Window:
            opened = closed = False

            def measure_started(self) -> None:
                self.opened = True

            def measure_ended(self) -> None:
                self.closed = True
        window = Window()
        result = ex.run(cell, spec.timing, window)
    finally:
        ex.close()
    assert window.opened and window.closed
    assert result.engine == "diskspd" and result.guest["EngineFlags"] == ["-Su", "-n", "-Z1M"]
    row = parse_diskspd_xml(result.raw)
    assert row["rw"] == "randread" and row["iodepth"] == 4 and row["iops"] > 0


def test_guest_check_prints_each_check_and_its_fix(guest: tuple[FakeWindowsGuest, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    g, cert = guest
    argv = ["guest", "check", "--host", "127.0.0.1", "--port", str(g.server.port), "--transport", "https",
            "--ca-file", cert, "--username", "Administrator", "--password-env", "SMX_WINRM_PW",
            "--disk-serial", "STORMATRIX01", "--controller", "virtio-scsi-single", "--timeout", str(DEADLINE)]
    assert main(argv) == 1  # the guest runs the Balanced plan
    out, err = capsys.readouterr()
    assert "(built-in runner)" in out, err
    for line in ("PASSED  Test disk / Should find exactly one disk with the serial",
                 "PASSED  Test disk / Should be raw (no partition table)",
                 "PASSED  Controller driver / Should have a driver bound for the controller under test",
                 "PASSED  Benchmark engine / Should have fio present and supported",
                 "SKIPPED Benchmark engine / Should have DiskSpd present and supported",
                 "PASSED  System state / Should have no reboot pending"):
        assert line in out, out
    assert "FAILED  System state / Should use the High performance power plan" in out
    assert "the active plan is 'Balanced'. Fix: powercfg /setactive 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c" in out
    assert "7 passed, 1 failed, 1 skipped -> NOT READY" in out

    # the fix, applied in the guest, makes the check pass; a pending reboot is found
    state = json.loads((g.root / "state.json").read_text(encoding="utf-8"))
    state["ActivePowerPlan"] = "8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c"
    state["Registry"]["HKLM:\\SYSTEM\\CurrentControlSet\\Control\\Session Manager"]["PendingFileRenameOperations"] = ["\\??\\C:\\x"]
    (g.root / "state.json").write_text(json.dumps(state), encoding="utf-8")
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "PASSED  System state / Should use the High performance power plan" in out
    assert "FAILED  System state / Should have no reboot pending" in out and "PendingFileRenameOperations" in out
    builtin = [line for line in out.splitlines() if line.startswith("  ")]

    # --runner pester without Pester 5 in the guest: the fix is named; with it (as Initialize-StormatrixGuest
    # -PesterSource installs it: the guest's Program Files module folder), the same checks run under Pester,
    # and the default (auto) picks it; the first line says which runner ran
    assert main([*argv, "--runner", "pester"]) == 1
    out = capsys.readouterr().out
    assert "Pester 5 is not installed in the guest" in out and "-PesterSource" in out
    pester = Path(os.environ.get("STORMATRIX_PESTER_PSD1") or ROOT / ".tools/nuget/pester/5.7.1/tools/Pester.psd1").parent
    shutil.copytree(pester, g.root / "C" / "Program Files" / "WindowsPowerShell" / "Modules" / "Pester" / "5.7.1")
    for runner in ("pester", "auto"):
        assert main([*argv, "--runner", runner]) == 1
        out = capsys.readouterr().out
        assert out.splitlines()[0].endswith("(Pester 5.7.1)"), out
        assert [line for line in out.splitlines() if line.startswith("  ")] == builtin


def test_guest_check_names_a_controller_without_driver(tmp_path: Path, guest_temp: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SMX_WINRM_PW", PASSWORD)
    cert, key = self_signed_cert(tmp_path)
    description = _fakewindows().load_description()
    controllers = description["Controllers"]
    controllers[1]["DriverInstalled"] = False
    with FakeWindowsGuest(tmp_path / "guest", {"Controllers": controllers}, password=PASSWORD, certfile=cert,
                          keyfile=key, temp=guest_temp) as g:
        rc = main(["guest", "check", "--host", "127.0.0.1", "--port", str(g.server.port), "--transport", "https",
                   "--ca-file", cert, "--username", "Administrator", "--password-env", "SMX_WINRM_PW",
                   "--disk-serial", "STORMATRIX01", "--controller", "virtio-scsi-single", "--timeout", str(DEADLINE)])
    captured = capsys.readouterr()
    assert rc != 0
    text = captured.out + captured.err
    assert "NO driver bound" in text and "PCI\\VEN_1AF4&DEV_1004" in text and "vioscsi" in text


class ControllerVmBackend(WinRMVmBackend):
    """The VM's test disk moves to the controller of each disk configuration, as the hypervisor attaches
    it: the fake guest then shows that controller, with its driver bound only where the guest's driver
    store holds the package (or it is in-box: storahci), and the disk only where a driver is bound."""

    VIRTIO_BLK = {"InstanceId": "PCI\\VEN_1AF4&DEV_1001&SUBSYS_00021AF4&REV_00\\3&267A616A&0&38",
                  "Class": "SCSIAdapter", "FriendlyName": "Red Hat VirtIO SCSI controller",
                  "UnboundName": "SCSI Controller", "Service": "viostor", "InfPath": "oem4.inf",
                  "DriverVersion": "100.94.104.24900"}
    guest_root: Path

    def _apply(self, disk: Any) -> None:
        super()._apply(disk)
        path = self.guest_root / "state.json"
        state = json.loads(path.read_text(encoding="utf-8"))
        base = {c["Service"]: c for c in _fakewindows().load_description()["Controllers"]}
        staged = {p["Inf"].removesuffix(".inf") for p in state.get("DriverStore", [])}
        ctrl = {"virtio-blk": self.VIRTIO_BLK, "virtio-scsi-pci": base["vioscsi"], "sata": base["storahci"]}[
            disk.controller]
        attached = [base["storahci"]] + ([dict(ctrl)] if ctrl is not base["storahci"] else [])
        for c in attached:
            c["DriverInstalled"] = c["Service"] == "storahci" or c["Service"] in staged
        state["Controllers"] = attached
        test_disk = [d for d in state["Disks"] if d["SerialNumber"] == "STORMATRIX01"][0]
        test_disk["Controller"] = ctrl["InstanceId"]
        path.write_text(json.dumps(state), encoding="utf-8")


def test_windows_matrix_without_guest_drivers_runs_what_the_guest_has(tmp_path: Path, guest_temp: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """No [run] guest_drivers; the guest's driver store holds vioscsi but not viostor. virtio-blk is listed
    first: its first boot finds no test disk, the facts that readiness carries (the driver store) skip
    every virtio-blk cell (both repeats) with the reason, one boot spent, no cell-error (on_error = stop
    would end the run); the virtio-scsi cells are measured."""
    monkeypatch.setenv("SMX_WINRM_PW", PASSWORD)
    cert, key = self_signed_cert(tmp_path)
    store = [p for p in _fakewindows().load_description()["DriverStore"] if p["Inf"] == "vioscsi.inf"]
    assert store, "the fake guest's description stages vioscsi"
    with FakeWindowsGuest(tmp_path / "guest", {"DriverStore": store}, password=PASSWORD, certfile=cert,
                          keyfile=key, temp=guest_temp) as g:
        raw = matrix(cert)
        raw["run"]["repeats"] = 2
        raw["run"]["order"] = "grouped"  # virtio-blk boots first, as listed
        raw["matrix"]["controllers"] = ["virtio-blk", "virtio-scsi-pci"]
        spec = spec_from_dict(raw)
        run_dir = tmp_path / "run"
        backend = ControllerVmBackend(spec, run_dir, {})
        backend.port, backend.guest_root = g.server.port, g.root
        summary = Runner(spec, run_dir, RunOptions(progress=False, backend=backend)).run()
    records = read_journal(run_dir / "journal.ndjson").records
    assert [k.split("/")[0] for k in backend.applied].count("virtio-blk") == 1
    assert not [r for r in records if r.get("type") == "cell-error"] and not summary.failed
    measured = [r for r in records if r.get("type") == "cell"]
    assert sorted(r["key"].split("/")[0] for r in measured) == ["virtio-scsi-pci"] * 2
    for rec in measured:
        assert rec["guest"]["InstalledStorageDrivers"] == ["vioscsi"]
        assert rec["guest"]["storage_drivers"] == {"sata": "storahci", "virtio-scsi": "vioscsi"}
        assert rec["guest"]["driver_facts"]["from"] == "guest facts: [run] guest_drivers not set (auto)"
    skipped = [r for r in records if r.get("type") == "cell-skipped"]
    assert sorted(r["key"] for r in skipped) == sorted(k for k, _ in summary.driver_skipped)
    assert len(skipped) == 2 and {r["key"].split("/")[0] for r in skipped} == {"virtio-blk"}
    for rec in skipped:
        assert "the guest's driver store has no viostor" in rec["reason"] and "read when virtio-blk/" in rec["reason"]
        assert "install virtio-win" in rec["reason"].lower() and "[matrix] controllers" in rec["reason"]
        assert rec["drivers"]["missing"] == ["viostor"]
    assert "no disk with serial 'STORMATRIX01'" in skipped[0]["readiness"]
