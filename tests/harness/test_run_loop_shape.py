"""The run loop's parts where a reader looks for them (issue 35): boot-ahead is a capability only the qemu backend
has, a suite's guests are a Target and not a Backend, the fleet loop is written once, run() gives a typed summary."""

from __future__ import annotations

import dataclasses
import importlib
import typing
from pathlib import Path

from standins.agent import FakeVmBackend

from stormatrix import registry
from stormatrix.backends.base import Backend, BootsAhead, PlansAhead, Target, booting_ahead
from stormatrix.fleet.suiterun import FleetSuite
from stormatrix.runner import Runner
from stormatrix.runsource import RunSummary
from stormatrix.suiteguests import AddressGuests, SuiteGuests


def _members(proto: type) -> set[str]:
    return {n for n in vars(proto) if not n.startswith("_")} | set(typing.get_type_hints(proto))


def test_boot_ahead_is_a_capability_no_backend_has_by_default() -> None:
    """Backend carries none of BootsAhead's or PlansAhead's members; the qemu backend's class plans ahead, the
    Proxmox and ESXi backends' do not, and a backend without the members is not booting ahead."""
    assert not [m for m in _members(BootsAhead) | _members(PlansAhead) if hasattr(Backend, m)]
    classes = {name: registry.backend_class(name) for name in registry.BACKENDS}
    assert {name for name, cls in classes.items() if isinstance(cls, PlansAhead)} == {"qemu"}


def test_the_stand_in_for_the_qemu_backend_boots_ahead_and_a_suite_side_does_not(tmp_path: Path) -> None:
    spec = registry.spec_from_dict({"run": {"name": "shape"}, "matrix": {"controllers": ["virtio-blk"],
                                    "aio": ["io_uring"], "cache": ["none"]},
                                    "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]})
    assert booting_ahead(FakeVmBackend(spec, tmp_path, faults={"pipelined": True})) is not None
    guests = AddressGuests(spec, [])
    assert isinstance(guests, Target) and not isinstance(guests, Backend) and booting_ahead(guests) is None
    assert not issubclass(SuiteGuests, Backend)


def test_the_fleet_loop_is_written_once() -> None:
    """FleetSuite.run is the template; no platform's fleet suite defines run (each gives its stages)."""
    for path in registry.FLEET_SUITES.values():
        module, _, name = path.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, FleetSuite) and "run" not in vars(cls) and "_side_guests" in vars(cls), path


def test_a_run_returns_a_typed_summary() -> None:
    assert typing.get_type_hints(Runner.run)["return"] is RunSummary
    fields = {f.name for f in dataclasses.fields(RunSummary)}
    assert {"run_id", "measured_keys", "already_done_keys", "failed", "errors", "extra_repeats"} <= fields
    summary = RunSummary(run_dir="r", run_id="x", cells=2, order="rounds", seed=1, measured_keys=["a", "b"])
    assert summary.measured == 2 and summary.already_done == 0
