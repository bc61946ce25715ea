"""A Windows guest's virtio-win storage drivers, from its own facts: without ``[run] guest_drivers`` the
virtio controllers are planned and the runner skips (journals as ``cell-skipped``, never boots) the cells
whose driver the guest lacks, learned from the first readiness; with ``guest_drivers`` the matrix stays
authoritative and the guest's facts only skip what it listed but lacks.

Through the real runner with the in-process VM and agent stand-ins; the Windows guest here is a
description (which driver packages its driver store holds, whether its module reports them) from which
each readiness's facts are built as ``Get-StormatrixGuestFacts`` reports them (the controller the VM
has now, bound or not, and its disk only when bound), checked by the real ``check_test_disk``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from standins.agent import FakeVmBackend

from stormatrix.backends.base import GuestEndpoint
from stormatrix.executors.fioserver.executor import FioServerExecutor
from stormatrix.executors.localagent import LocalAgentExecutor
from stormatrix.executors.winrm.executor import WinRMExecutor
from stormatrix.core.errors import TestDiskMissing
from stormatrix.executors.winrm.testdisk import check_test_disk
from stormatrix.guestdrivers import DriverGate, installed_storage_drivers, with_storage_drivers
from stormatrix.journal import read_journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict

SERIAL = "STORMATRIX01"
# matrix controller -> (the name the guest module gives the PCI device, its driver service)
GUEST_CONTROLLER = {"virtio-blk": ("virtio-blk", "viostor"), "virtio-scsi-pci": ("virtio-scsi", "vioscsi"),
                    "virtio-scsi-single": ("virtio-scsi", "vioscsi"), "sata": ("sata", "storahci"),
                    "ide": ("ide", "atapi")}
INBOX = {"storahci", "atapi"}


def guest_facts(controller: str, store: set[str], reports_store: bool = True) -> dict[str, Any]:
    """What Get-StormatrixGuestFacts reports on a guest whose driver store holds ``store`` while the VM's
    test disk sits on ``controller``: a driver binds only from a staged package (or is in-box)."""
    name, service = GUEST_CONTROLLER[controller]
    bound = service in INBOX or service in store
    test_ctrl: dict[str, Any] = {"Name": name, "FriendlyName": "", "InstanceId": f"PCI\\{name}", "DriverBound": bound,
                                 "Service": service if bound else "", "Status": "OK" if bound else "Error",
                                 "ProblemCode": "0" if bound else "28"}
    disks = [{"Number": 0, "SerialNumber": "", "BusType": "SATA", "PartitionStyle": "GPT"}]
    if bound:
        disks.append({"Number": 1, "SerialNumber": SERIAL, "BusType": "SAS", "PartitionStyle": "RAW"})
    facts: dict[str, Any] = {
        "ComputerName": "W2022-BENCH",
        "Controllers": [{"Name": "sata", "DriverBound": True, "Service": "storahci", "Status": "OK"}, test_ctrl],
        "Disks": disks, "TestDisk": 1 if bound else None}
    if reports_store:
        facts["InstalledStorageDrivers"] = sorted(store)
    return facts


class WindowsGuest:
    """The guest: its driver store, and every readiness the runner waited for (the controller it had)."""

    def __init__(self, store: set[str], reports_store: bool = True) -> None:
        self.store, self.reports_store = store, reports_store
        self.readiness: list[str] = []


def run_windows(tmp_path: Path, guest: WindowsGuest, controllers: list[str], *, drivers: list[str] | None = None,
                repeats: int = 1, workloads: int = 1,
                executor: str = "winrm") -> tuple[dict[str, Any], FakeVmBackend, list[dict[str, Any]]]:
    # the WinRM executor's driver gate decides (the runner asks the executor the matrix names); the factory
    # below stands in for its transport
    run: dict[str, Any] = {"name": "win", "guest_os": "windows2022", "backend": "proxmox", "executor": executor,
                           "ramp_seconds": 0, "measure_seconds": 1, "repeats": repeats, "retries": 2,
                           "order": "grouped"}  # these tests say which controller boots first: matrix order
    if drivers is not None:
        run["guest_drivers"] = drivers
    raw = {"run": run, "matrix": {"controllers": controllers, "aio": ["io_uring"], "cache": ["none"]},
           "workload": [{"name": f"w{i}", "rw": "randread", "bs": "4k"} for i in range(workloads)]}
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 5.0
    backend = FakeVmBackend(spec, tmp_path / "run", {})

    class Executor(LocalAgentExecutor):
        """The agent stand-in carries the I/O; readiness answers with the Windows guest's facts."""

        def wait_ready(self, deadline: float) -> dict[str, Any]:
            super().wait_ready(deadline)
            controller = backend.config["controller"]
            guest.readiness.append(controller)
            facts = guest_facts(controller, guest.store, guest.reports_store)
            return check_test_disk(facts, SERIAL, "W2022-BENCH")

    def factory(endpoints: list[GuestEndpoint]) -> Executor:
        return Executor(endpoints, {})

    summary = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, executor_factory=factory)).run()
    records = read_journal(tmp_path / "run" / "journal.ndjson").records
    return summary, backend, records


def test_the_driver_gate_is_the_winrm_executors_capability() -> None:
    windows = spec_from_dict({"run": {"guest_os": "windows2022", "backend": "proxmox"},
                              "matrix": {"controllers": ["sata"]}, "workload": [{"name": "w", "rw": "read", "bs": "4k"}]})
    linux = spec_from_dict({"run": {"backend": "proxmox"}, "matrix": {"controllers": ["sata"]},
                            "workload": [{"name": "w", "rw": "read", "bs": "4k"}]})
    gate = WinRMExecutor.driver_gate(windows)
    assert isinstance(gate, DriverGate) and gate.declared is None
    assert WinRMExecutor.driver_gate(linux) is None
    for other in (LocalAgentExecutor, FioServerExecutor):
        assert other.driver_gate(windows) is None, other.name


def test_the_runner_asks_the_executor_the_matrix_names(tmp_path: Path) -> None:
    """The same Windows guest without viostor, run by an executor that offers no driver gate: nothing
    decides to skip virtio-blk, so its VM boots and the readiness fails (no test disk, not retried)."""
    guest = WindowsGuest(store={"vioscsi"})
    summary, backend, records = run_windows(tmp_path, guest, ["sata", "virtio-blk"], executor="local-agent")
    assert booted(backend, "virtio-blk") == 1 and not summary.driver_skipped
    assert not of_type(records, "cell-skipped")
    assert [r["cell"]["disk"]["controller"] for r in of_type(records, "cell-error")] == ["virtio-blk"]
    assert all("driver_facts" not in r["guest"] for r in of_type(records, "cell"))


def booted(backend: FakeVmBackend, controller: str) -> int:
    return sum(1 for key in backend.applied if key.split("/")[0] == controller)


def of_type(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("type") == kind]


def test_auto_the_missing_driver_costs_no_boot_when_an_inbox_controller_runs_first(tmp_path: Path) -> None:
    """virtio-blk is listed first, but sata (in-box) runs first: its readiness shows the driver store
    without viostor, so no virtio-blk VM ever starts; virtio-scsi is measured."""
    guest = WindowsGuest(store={"vioscsi"})
    summary, backend, records = run_windows(tmp_path, guest, ["virtio-blk", "sata", "virtio-scsi-pci"], workloads=2)
    assert booted(backend, "virtio-blk") == 0
    assert guest.readiness[0] == "sata"
    measured = {r["cell"]["disk"]["controller"] for r in of_type(records, "cell")}
    assert measured == {"sata", "virtio-scsi-pci"} and summary.measured == 4
    skipped = of_type(records, "cell-skipped")
    assert sorted(r["key"] for r in skipped) == sorted(k for k, _ in summary.driver_skipped)
    assert {r["cell"]["disk"]["controller"] for r in skipped} == {"virtio-blk"} and len(skipped) == 2
    reason = skipped[0]["reason"]
    assert "driver store has no viostor" in reason and "virtio-win" in reason and "[matrix] controllers" in reason
    assert skipped[0]["drivers"]["from"].startswith("guest facts") and skipped[0]["drivers"]["missing"] == ["viostor"]
    assert not of_type(records, "cell-error") and not summary.failed
    # every measured cell says where the driver facts came from
    for rec in of_type(records, "cell"):
        assert rec["guest"]["driver_facts"]["from"].startswith("guest facts")
        assert rec["guest"]["driver_facts"]["installed"] == ["vioscsi"]


def test_auto_a_virtio_cell_first_spends_one_boot_then_skips_the_rest_not_retried(tmp_path: Path) -> None:
    """Only virtio controllers: the first virtio-blk boot is not ready (no driver, no disk); the facts it
    carries skip every virtio-blk cell, all repeats, without another boot or a retry; virtio-scsi runs."""
    guest = WindowsGuest(store={"vioscsi"})
    summary, backend, records = run_windows(tmp_path, guest, ["virtio-blk", "virtio-scsi-single"], repeats=2,
                                            workloads=2)
    assert booted(backend, "virtio-blk") == 1
    skipped = of_type(records, "cell-skipped")
    assert len(skipped) == 4 and {r["cell"]["disk"]["controller"] for r in skipped} == {"virtio-blk"}
    assert "no disk with serial" in skipped[0]["readiness"]  # what the boot that found it reported
    assert not of_type(records, "cell-error") and not summary.failed
    assert {r["cell"]["disk"]["controller"] for r in of_type(records, "cell")} == {"virtio-scsi-single"}
    assert summary.measured == 4


def test_auto_without_the_driver_store_an_unbound_controller_still_skips_after_one_boot(tmp_path: Path) -> None:
    """A guest that cannot read its driver store: the controller present without its driver (problem
    28) says the driver is missing, so the rest of its cells are skipped after that one boot."""
    guest = WindowsGuest(store={"vioscsi"}, reports_store=False)
    summary, backend, records = run_windows(tmp_path, guest, ["virtio-blk", "virtio-scsi-pci"], repeats=2)
    assert booted(backend, "virtio-blk") == 1
    skipped = of_type(records, "cell-skipped")
    assert len(skipped) == 2 and "shows its controller without viostor" in skipped[0]["reason"]
    assert summary.measured == 2


def test_auto_a_guest_with_both_drivers_runs_every_virtio_cell(tmp_path: Path) -> None:
    guest = WindowsGuest(store={"viostor", "vioscsi"})
    summary, backend, records = run_windows(tmp_path, guest, ["virtio-blk", "virtio-scsi-pci", "ide"])
    assert summary.measured == 3 and not of_type(records, "cell-skipped") and not summary.driver_skipped


def test_listed_but_not_installed_is_skipped_with_the_matrix_named(tmp_path: Path) -> None:
    """guest_drivers lists viostor, the guest's driver store has none: skipped with that reason rather
    than failing at readiness; the record says the matrix declared it."""
    guest = WindowsGuest(store={"vioscsi"})
    summary, backend, records = run_windows(tmp_path, guest, ["sata", "virtio-blk"], drivers=["viostor", "vioscsi"])
    assert booted(backend, "virtio-blk") == 0
    (skip,) = of_type(records, "cell-skipped")
    assert "[run] guest_drivers lists viostor, but the guest's driver store has no viostor" in skip["reason"]
    assert skip["drivers"]["from"] == "matrix: [run] guest_drivers"
    assert skip["drivers"]["declared"] == ["vioscsi", "viostor"] and skip["drivers"]["installed"] == ["vioscsi"]
    assert "viostor from [run] guest_drivers" in skip["reason"]
    (cell,) = of_type(records, "cell")
    assert cell["guest"]["driver_facts"]["from"] == "matrix: [run] guest_drivers"


def test_installed_but_unlisted_is_named_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    guest = WindowsGuest(store={"viostor", "vioscsi"})
    with caplog.at_level(logging.WARNING, logger="stormatrix.runner"):
        summary, backend, records = run_windows(tmp_path, guest, ["sata", "virtio-blk", "virtio-scsi-pci"],
                                                drivers=["viostor"], repeats=2)
    assert booted(backend, "virtio-scsi-pci") == 0  # skipped at plan time: the matrix is authoritative
    warned = [r.getMessage() for r in caplog.records if "does not list it" in r.getMessage()]
    assert len(warned) == 1 and '"vioscsi"' in warned[0]
    assert summary.measured == 4


def test_a_resumed_run_asks_the_guest_again(tmp_path: Path) -> None:
    """Skipped cells are not measured cells: a resume tries them again (the driver may be installed now)."""
    guest = WindowsGuest(store={"vioscsi"})
    run_windows(tmp_path, guest, ["virtio-blk", "sata"])
    guest.store = {"vioscsi", "viostor"}
    summary, backend, records = run_windows(tmp_path, guest, ["virtio-blk", "sata"])
    assert summary.already_done == 1 and summary.measured == 1
    assert {r["cell"]["disk"]["controller"] for r in of_type(records, "cell")} == {"sata", "virtio-blk"}


# --- the pieces -------------------------------------------------------------------------------------------

def test_installed_drivers_are_the_driver_store_and_the_bound_ones() -> None:
    facts = guest_facts("virtio-scsi-pci", {"vioscsi"})
    facts["InstalledStorageDrivers"] = []  # a bound driver is installed, whatever the store listing said
    assert installed_storage_drivers(facts) == {"vioscsi"}
    assert installed_storage_drivers(guest_facts("sata", {"viostor"})) == {"viostor"}
    assert installed_storage_drivers(guest_facts("sata", {"viostor"}, reports_store=False)) is None
    assert installed_storage_drivers({"InstalledStorageDrivers": "VIOSTOR"}) == {"viostor"}  # one string, as JSON


def test_test_disk_missing_carries_what_the_guest_reported() -> None:
    facts = guest_facts("virtio-blk", set())
    with pytest.raises(TestDiskMissing) as info:
        check_test_disk(facts, SERIAL, "W2022-BENCH")
    assert info.value.details.guest_facts is facts and not info.value.retryable


def test_the_gate_decides_nothing_before_it_has_facts() -> None:
    gate = DriverGate(declared=None)
    assert gate.skip_reason("virtio-blk") is None and gate.skip_reason("sata") is None
    gate.learn(guest_facts("sata", {"vioscsi"}), "sata/x/w/rep1")
    assert gate.skip_reason("virtio-blk") and gate.skip_reason("virtio-scsi-pci") is None
    assert gate.skip_reason("sata") is None
    assert "sata/x/w/rep1" in gate.describe()["guest_facts"]
    # facts without a driver store do not forget what an earlier listing said
    gate.learn(guest_facts("virtio-scsi-pci", {"vioscsi"}, reports_store=False), "later")
    assert gate.skip_reason("virtio-blk")


def test_cell_facts_name_the_drivers_source() -> None:
    facts = guest_facts("sata", {"viostor"})
    assert "driver_facts" not in with_storage_drivers(facts)
    gate = DriverGate(declared=frozenset({"viostor"}))
    gate.learn(facts, "k")
    out = with_storage_drivers(facts, gate)
    assert out["storage_drivers"] == {"sata": "storahci"}
    assert out["driver_facts"]["from"] == "matrix: [run] guest_drivers" and out["driver_facts"]["installed"] == ["viostor"]
