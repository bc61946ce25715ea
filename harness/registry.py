"""Everything a matrix file can name, listed once: backends, guest executors and config sections.

Nothing registers itself when imported: this module is the one list. A backend or executor module is
imported only when it is used (the qemu path needs no proxmoxer, the proxmox path no QEMU on the
controller); the matrix sections are collected from the modules that own them when a matrix is read.
Adding an executor or a section means adding one line here; a backend, one line in
``stormatrix.backends.REGISTRY`` (the same dict as :data:`BACKENDS`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import backends as _backends

if TYPE_CHECKING:
    from .backends.base import Backend
    from .executors.base import GuestExecutor
    from .spec import Section


#: ``[run] backend`` -> "module:Class" (the list is the backends package's own: one dict, the same object)
BACKENDS: dict[str, str] = _backends.REGISTRY

#: ``[run] executor`` -> "module:Class"; tests put stand-ins here (``executors.REGISTRY`` is this dict)
EXECUTORS: dict[str, str] = {
    "local-agent": "stormatrix.executors.localagent:LocalAgentExecutor",
    "winrm": "stormatrix.executors.winrm:WinRMExecutor",
    "fio-server": "stormatrix.executors.fioserver:FioServerExecutor",
}


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


def sections() -> dict[str, Section]:
    """The matrix sections owned by backends, executors and the suite (``[run]``, ``[matrix]`` and
    ``[[workload]]`` are the spec's own), by name."""
    from .backends.proxmox import PROXMOX_SECTION
    from .backends.qemu import QEMU_SECTION
    from .backends.vmware import VMWARE_SECTION
    from .executors.winrm import WINRM_SECTION
    from .suite import SUITE_SECTION

    return {s.name: s for s in (QEMU_SECTION, PROXMOX_SECTION, VMWARE_SECTION, WINRM_SECTION, SUITE_SECTION)}
