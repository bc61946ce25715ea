"""A suite run's environment describes the host that runs the guests, as a matrix run's does.

The run record's ``environment`` (the Environment sheet) holds the measured host's facts under the keys
the sheet shows (``cpu_model``, ``kernel``, ``cpus``, ...) only when that host is known: this machine
when the guests are local QEMU processes (the demo suite) or stormatrix runs on the Proxmox node; the
node's own facts read over the collector's ssh (tests/harness/backends/proxmox/test_proxmox_vms_collector.py); otherwise the record
says why the host is not described and this machine's facts stay under ``workstation``.

The local facts are checked against the operating system's own answers (``platform``, ``os``), not
against stormatrix's inventory.
"""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path
from typing import Any, Iterator

import openpyxl
import pytest
from standins.fioservers import LocalFioServers

from stormatrix.journal import Journal
from stormatrix.records import run_environment
from stormatrix.registry import suite_from_dict
from stormatrix.suiteguests import AddressGuests, inventory_for
from stormatrix.suiterun import run_suite

HOST_KEYS = ("cpu_model", "kernel", "cpus", "qemu", "perf")


def suite_raw(guests: list[str], **suite: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"run": {"name": "env"}, "suite": {
        "side": "A", "block_sizes": ["4k"], "queue_depths": [1], "ramp_seconds": 0.5, "measure_seconds": 1.0,
        "filename": "target.dat", "size": "16m", "guests": guests}}
    raw["suite"].update(suite)
    return raw


def backend(tmp_path: Path, inventory: Any = None) -> AddressGuests:
    suite = suite_from_dict(suite_raw(["g1=127.0.0.1:8765"]), "env.toml")
    return AddressGuests(suite.settings(), suite.guests, inventory=inventory)


def test_guests_by_address_do_not_lend_this_machine_as_their_host(tmp_path: Path) -> None:
    env = run_environment(backend(tmp_path))
    assert "not described" in env["host_inventory_error"] and "[suite] guests" in env["host_inventory_error"]
    assert not any(k in env for k in HOST_KEYS)  # no host facts at the top: none are known
    assert env["workstation"]["kernel"] == platform.release() and env["workstation"]["cpus"] == os.cpu_count()


def test_local_guests_are_measured_on_this_machine_and_labelled_so(tmp_path: Path) -> None:
    # the demo suite's and a suite on the Proxmox node: the host collector measures here
    env = run_environment(backend(tmp_path, inventory_for({"mode": "local", "detail": "2 qemu processes"}, None)))
    assert env["host_inventory_source"] == "this machine (the measured host)"
    assert env["kernel"] == platform.release() and env["cpus"] == os.cpu_count()
    assert "workstation" not in env and "host_inventory_error" not in env


@pytest.mark.parametrize("mode", ["none", "off", "given"])
def test_a_vm_list_whose_node_is_not_reached_says_why(tmp_path: Path, mode: str) -> None:
    status = {"mode": mode, "detail": f"no host metrics: reason-{mode}"}
    env = run_environment(backend(tmp_path, inventory_for(status, [{"vmid": 101, "name": "vm01"}])))
    assert env["host_inventory_error"].startswith("the node that runs the suite's VMs is not described")
    assert f"reason-{mode}" in env["host_inventory_error"]
    assert not any(k in env for k in HOST_KEYS) and env["workstation"]["kernel"] == platform.release()


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[LocalFioServers]:
    with LocalFioServers(1, tmp_path / "servers") as servers:
        yield servers


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_suite_run_journals_the_environment_and_the_workbook_shows_it(
        farm: LocalFioServers, tmp_path: Path) -> None:
    from stormatrix.cli import main

    guests = [f"{g.name}={g.host}:{g.port}" for g in farm.guests]
    for side in ("A", "B"):
        suite = suite_from_dict(suite_raw(guests, side=side), f"{side}.toml")
        assert len(run_suite(suite, tmp_path / side).measured) == 1
    run = next(r for r in Journal(tmp_path / "A").records() if r["type"] == "run")
    env = run["environment"]
    assert "[suite] guests" in env["host_inventory_error"] and env["workstation"]["kernel"] == platform.release()
    assert env["host_collector"].startswith("none: no host metrics")  # the suite's own facts stay beside it
    # the comparison workbook's Environment sheet shows both sides' environments, host facts included
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "-o", str(tmp_path / "ab.xlsx")]) == 0
    rows = list(openpyxl.load_workbook(tmp_path / "ab.xlsx")["Environment"].iter_rows(values_only=True))
    for side in ("A", "B"):
        items = {r[1]: r[2] for r in rows if str(r[0]).startswith(f"{side}: ")}
        assert "[suite] guests" in items["environment.host_inventory_error"]
        assert items["environment.workstation.kernel"] == platform.release()
