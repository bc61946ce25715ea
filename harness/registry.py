"""Everything a matrix file can name, listed once: backends, guest executors and their config sections.

Nothing registers itself when imported: this module is the one list, and the layers below it (the spec,
the backends, the executors) know nothing of it. Adding a backend or an executor is one line in
:data:`BACKENDS` or :data:`EXECUTORS` and, when it has settings, one in :data:`SECTIONS`.

A backend's or executor's *class* is imported only when a run uses it (``"module:Class"``, loaded by
:func:`backend_class`/:func:`executor_class`), so that ``stormatrix plan`` and the qemu path load no
WinRM or vSphere code. Its *section* (a :class:`~stormatrix.schema.Section`, plain data) is imported
here, because reading any matrix needs every section's name and keys.

Reading a matrix against this list is here too (:func:`load_spec`, :func:`spec_from_dict`,
:func:`load_suite`, :func:`suite_from_dict`): :mod:`stormatrix.spec` and :mod:`stormatrix.suite` validate
whatever sections they are given, and these pass them the registered ones. What gives a suite its guests is
named here as well (:data:`SUITE_GUESTS`, :data:`FLEET_SUITES`): each class reads its own keys (a VM list, the
rest of ``[fleet]``, its platform's section) in its ``check(suite)`` when the file is read, so that neither the
suite nor the commands know a platform's keys. Outside a backend's or an executor's package only this module
imports it (``tests/test_import_graph.py`` checks that, with its listed exceptions).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from . import spec as _spec
from . import suite as _suite
from .backends.proxmox.settings import PROXMOX_SECTION
from .backends.qemu.settings import QEMU_SECTION
from .backends.vmware.settings import VMWARE_SECTION
from .core import oscompat
from .core.errors import MatrixError
from .executors.winrm.settings import WINRM_SECTION
from .fleet.spec import check_fleet_backend, fleet_backend
from .schema import Section
from .suite import SUITE_SECTION
from .tomlfile import load_toml

if TYPE_CHECKING:
    from .backends.base import Backend
    from .executors.base import GuestExecutor
    from .fleet.interface import Fleet, FleetSuiteClass, FleetSuiteRun
    from .suiteguests import SuiteGuests


#: ``[run] backend`` -> "module:Class"
BACKENDS: dict[str, str] = {
    "qemu": "stormatrix.backends.qemu.backend:QemuBackend",
    "proxmox": "stormatrix.backends.proxmox.backend:ProxmoxBackend",
    "vmware": "stormatrix.backends.vmware.backend:VmwareBackend",
}

#: ``[run] executor`` -> "module:Class"
EXECUTORS: dict[str, str] = {
    "local-agent": "stormatrix.executors.localagent:LocalAgentExecutor",
    "winrm": "stormatrix.executors.winrm.executor:WinRMExecutor",
    "fio-server": "stormatrix.executors.fioserver.executor:FioServerExecutor",
}

#: what gives a suite's side its guests (:class:`~stormatrix.suiteguests.SuiteGuests`), by the ``[suite]`` key that
#: lists them: ``guests`` by address, ``vms`` a VM list on the platform whose section says where (Proxmox; the
#: suite's validation refuses a VM list elsewhere). A fleet's workers are given to each side by its fleet suite
#: (:data:`FLEET_SUITES`): a Proxmox fleet's as a VM list, an ESXi fleet's by address, a local fleet's as local
#: QEMU guests (the qemu backend's package, ``demo --suite``).
SUITE_GUESTS: dict[str, str] = {
    "guests": "stormatrix.suiteguests:AddressGuests",
    "vms": "stormatrix.backends.proxmox.vms:ProxmoxVmGuests",
}

#: a suite's ``[fleet]``, by its ``backend``: what plans the fleet, deploys it and runs each storage as a side
#: (:class:`~stormatrix.fleet.suiterun.FleetSuite`; it reads the rest of ``[fleet]`` and its platform's section itself)
FLEET_SUITES: dict[str, str] = {
    "proxmox": "stormatrix.backends.proxmox.fleetsuite:ProxmoxFleetSuite",
    "vmware": "stormatrix.backends.vmware.fleetsuite:VmwareFleetSuite",
    "qemu": "stormatrix.backends.qemu.fleetsuite:QemuFleetSuite",
}

#: the platform of a ``[fleet]`` that names none
DEFAULT_FLEET = "proxmox"

#: the sections a suite's guests or fleet read themselves, with their own keys (a VM list's or a fleet's
#: ``[proxmox]``, a fleet's ``[vmware]``: how to reach the platform, nothing about one VM)
SUITE_PLATFORM_SECTIONS = ("proxmox", "vmware")

#: the sections backends, executors and the suite own (``[run]``, ``[matrix]`` and ``[[workload]]`` are
#: the spec's own), by name
SECTIONS: dict[str, Section] = {s.name: s for s in (QEMU_SECTION, PROXMOX_SECTION, VMWARE_SECTION, WINRM_SECTION,
                                                    SUITE_SECTION)}


def _load(table: dict[str, str], kind: str, name: str) -> Any:
    try:
        module, _, cls = table[name].partition(":")
    except KeyError:
        raise KeyError(f"no {kind} named {name!r} (known: {', '.join(sorted(table))})") from None
    return getattr(importlib.import_module(module), cls)


def backend_class(name: str) -> type[Backend]:
    return _load(BACKENDS, "backend", name)


def executor_class(name: str) -> type[GuestExecutor]:
    return _load(EXECUTORS, "executor", name)


def matrix_executor(spec: _spec.MatrixSpec, backend_cls: type[Backend] | None = None) -> str:
    """The guest executor a matrix runs with: ``[run] executor``, or for ``auto`` the default of its backend
    (``backend_cls``, default: the one ``[run] backend`` names)."""
    name: str = spec.run["executor"]
    if name != "auto":
        return name
    return (backend_cls or backend_class(spec.run["backend"])).default_executor


def check_executor_spec(spec: _spec.MatrixSpec) -> None:
    """The executor's own plan-time checks (e.g. WinRM's shell memory quota), before any VM is touched."""
    executor_class(matrix_executor(spec)).check_spec(spec)


def suite_guests_class(suite: _suite.Suite) -> type[SuiteGuests]:
    """What gives a suite file's running guests, by the ``[suite]`` key that lists them (:data:`SUITE_GUESTS`)."""
    return _load(SUITE_GUESTS, "suite guests", "vms" if suite.vms else "guests")


def suite_guests(suite: _suite.Suite) -> SuiteGuests:
    """The side's guests of a suite file, not started yet (:meth:`SuiteGuests.start`)."""
    return suite_guests_class(suite).from_suite(suite)


def _fleet_class(path: str, backend: str) -> FleetSuiteClass:
    check_fleet_backend(path, backend, FLEET_SUITES)
    cls: FleetSuiteClass = _load(FLEET_SUITES, "fleet", backend)
    return cls


def fleet_suite(suite: _suite.Suite) -> FleetSuiteRun:
    """The :class:`~stormatrix.fleet.suiterun.FleetSuite` of a suite file with a ``[fleet]`` (validated by
    :func:`load_suite`: its backend is known), typed by :mod:`stormatrix.fleet.interface` (the run loop's layer,
    where the class is, is above this one)."""
    if suite.fleet is None:
        raise MatrixError(suite.path, "[fleet]", "is missing: the suite's guests run already",
                          "describe the workers to deploy in [fleet], or run the suite on its guests")
    return _fleet_class(suite.path, suite.fleet)(suite)


def open_fleet(raw: dict[str, Any], path: str, run_dir: str | Path, fio: str | None) -> Fleet:
    """The fleet a file's ``[fleet]`` describes on its platform, not deployed (``stormatrix fleet``:
    :meth:`~stormatrix.fleet.suiterun.FleetSuite.open_fleet`)."""
    return _fleet_class(path, fleet_backend(raw, path, FLEET_SUITES, DEFAULT_FLEET)).open_fleet(raw, path, run_dir, fio)


def sections() -> dict[str, Section]:
    """The registered sections, by name (a copy: the caller may not change the list)."""
    return dict(SECTIONS)


def check_platform(path: str, backend: str, sections: Mapping[str, Any], backend_key: str = "[run] backend") -> None:
    """On Windows, refuse (exit 2) what runs on the hypervisor itself, with the reason and the alternative: the
    qemu backend, ``[proxmox] transport = "local"``; each backend says what of it is Linux-only (its
    ``linux_only(sections)``, where it has such a part). Elsewhere nothing is refused here."""
    if not oscompat.is_windows() or backend not in BACKENDS:
        return
    linux_only = getattr(backend_class(backend), "linux_only", None)
    problem = linux_only(sections) if linux_only is not None else None
    if problem:
        key, why, fix = problem
        raise MatrixError(path, key or backend_key, f"{why}; this is Windows (the Linux-only parts are listed in "
                          "docs/windows-workstation.md)", fix)


def spec_from_dict(raw: dict[str, Any], path: str = "<matrix>") -> _spec.MatrixSpec:
    """A matrix (already parsed TOML) validated with every registered section, and for this system
    (:func:`check_platform`)."""
    spec = _spec.spec_from_dict(raw, path, sections=SECTIONS)
    check_platform(path, spec.run["backend"], raw)
    return spec


def load_spec(path: str | Path) -> _spec.MatrixSpec:
    """The matrix file at ``path``, validated as :func:`spec_from_dict` does."""
    return spec_from_dict(load_toml(Path(path)), str(path))


def suite_from_dict(raw: dict[str, Any], path: str = "<suite>") -> _suite.Suite:
    """A suite (already parsed TOML) validated with every registered section, then by what gives its guests:
    its fleet's platform (:data:`FLEET_SUITES`) or its guests' (:data:`SUITE_GUESTS`), each reading its own keys."""
    suite = _suite.suite_from_dict(raw, path, sections=SECTIONS, platform_sections=SUITE_PLATFORM_SECTIONS,
                                   fleets=tuple(FLEET_SUITES), default_fleet=DEFAULT_FLEET)
    check_platform(path, suite.fleet or ("proxmox" if suite.vms else ""), raw,
                   "[fleet] backend" if suite.fleet else "[suite] vms")
    if suite.fleet is not None:
        return _fleet_class(path, suite.fleet).check(suite)
    checked: _suite.Suite = suite_guests_class(suite).check(suite)
    return checked


def load_suite(path: str | Path) -> _suite.Suite:
    """The suite file at ``path``, validated as :func:`suite_from_dict` does."""
    return suite_from_dict(load_toml(Path(path)), str(path))
