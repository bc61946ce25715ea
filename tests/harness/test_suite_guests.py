"""A side's guests are a capability the registry picks for a suite file (``registry.suite_guests``, and for a
``[fleet]`` ``registry.fleet_suite``); ``run_suite`` drives them as the run's backend and closes them however
the run ends."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from stormatrix.core.errors import GuestNotReady, MatrixError
from stormatrix.executors.fioserver.inputs import FioGuest
from stormatrix.backends.proxmox.fleetsuite import ProxmoxFleetSuite
from stormatrix.backends.vmware.fleetsuite import VmwareFleetSuite
from stormatrix.journal import Journal
from stormatrix.registry import FLEET_SUITES, fleet_suite, suite_from_dict, suite_guests
from stormatrix.suiteguests import AddressGuests
from stormatrix.suiterun import run_suite

SUITE: dict[str, Any] = {"run": {"name": "g"}, "suite": {
    "side": "A", "block_sizes": ["4k"], "queue_depths": [1], "ramp_seconds": 0.5, "measure_seconds": 1.0,
    "filename": "target.dat", "size": "16m", "guests": ["g1=127.0.0.1:9", "g2=127.0.0.1:10"]}}


def test_guests_by_address_are_given_as_they_are() -> None:
    suite = suite_from_dict(SUITE, "s.toml")
    guests = suite_guests(suite)
    assert type(guests) is AddressGuests and guests.name is None  # the record's backend: no platform known
    assert guests.start() == list(suite.guests)
    assert [(e.address, e.port, e.name) for e in guests.endpoints()] == [("127.0.0.1", 9, "g1"), ("127.0.0.1", 10, "g2")]
    assert guests.window_collector() is None and guests.host_status()["mode"] == "none"
    assert "[suite] guests" in str(guests.host_inventory())


def test_a_fleet_is_run_by_its_platform_and_an_unknown_one_is_refused_by_its_key() -> None:
    suite = suite_from_dict(SUITE, "s.toml")
    assert suite.fleet is None  # the guests run already
    assert type(fleet_suite(dataclasses.replace(suite, fleet="proxmox"))) is ProxmoxFleetSuite
    assert type(fleet_suite(dataclasses.replace(suite, fleet="vmware"))) is VmwareFleetSuite
    with pytest.raises(MatrixError) as info:
        fleet_suite(dataclasses.replace(suite, fleet="hyperv"))
    message = str(info.value)
    assert "[fleet] backend" in message and "'hyperv'" in message and ", ".join(sorted(FLEET_SUITES)) in message


@pytest.mark.parametrize("fleet, refusal", [
    ({}, "s.toml: [proxmox]: is missing: the fleet is deployed on a Proxmox node"),
    ({"backend": "vmware"}, "s.toml: [vmware]: is missing: the fleet is deployed through vCenter"),
    ({"backend": "hyperv"}, "s.toml: [fleet] backend: 'hyperv' cannot deploy a suite's workers (known: {known})"),
    ({"backend": 3}, "s.toml: [fleet] backend: 3 cannot deploy a suite's workers (known: {known})"),
    ("yes", "s.toml: [fleet]: must be a table, got str")])
def test_a_suite_file_says_which_platform_deploys_its_workers(fleet: Any, refusal: str) -> None:
    """The typed fleet: ``[fleet] backend`` (Proxmox when not given) is read with the file and must be a platform
    of the registry's; the rest is that platform's to check (here its fleet refuses the section it lacks)."""
    raw = {"run": {"name": "g"}, "suite": {k: v for k, v in SUITE["suite"].items() if k != "guests"}, "fleet": fleet}
    with pytest.raises(MatrixError) as info:
        suite_from_dict(raw, "s.toml")
    assert str(info.value).startswith(refusal.format(known=", ".join(sorted(FLEET_SUITES))))


def test_a_fleet_suite_is_typed_when_its_platform_accepts_it() -> None:
    raw = {"run": {"name": "g"}, "suite": {k: v for k, v in SUITE["suite"].items() if k != "guests"},
           "fleet": {"template": 9000, "storages": ["bb-iscsi", "bb-nvme"]},
           "proxmox": {"host": "pve.lab", "node": "pve1", "token_id": "root@pam!smx", "token_secret_env": "SMX"}}
    suite = suite_from_dict(raw, "s.toml")
    assert suite.fleet == "proxmox" and suite.connection is not None and suite.connection["node"] == "pve1"
    assert type(fleet_suite(suite)) is ProxmoxFleetSuite


class Counted(AddressGuests):
    """Guests at addresses where nothing answers, counting what the run asks of them."""

    def __init__(self, settings: Any, guests: list[FioGuest]) -> None:
        super().__init__(settings, guests)
        self.started = self.closed = 0

    def _start(self) -> list[FioGuest]:
        self.started += 1
        return super()._start()

    def _teardown(self) -> None:
        self.closed += 1


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_the_run_starts_its_guests_once_and_closes_them_when_it_fails(tmp_path: Path) -> None:
    suite = suite_from_dict(SUITE, "s.toml")
    guests = Counted(suite.settings(), list(suite.guests))
    with pytest.raises(GuestNotReady):
        run_suite(suite, tmp_path / "run", guests)
    assert guests.started == 1 and guests.closed >= 1
    records = Journal(tmp_path / "run").records()
    run = next(r for r in records if r["type"] == "run")
    assert run["backend"] is None and run["suite"] == suite.name and [g["name"] for g in run["guests"]] == ["g1", "g2"]
    assert [r["stage"] for r in records if r["type"] == "cell-error"] == ["ready"]
    assert records[-1]["type"] == "restored"
