"""Helpers shared by the CLI commands."""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger("stormatrix.cli")

# Modules that register matrix sections ([qemu], [proxmox], [winrm], [suite], ...). Imported
# before a matrix is parsed so every section is known; a module that is not built yet is skipped.
SECTION_MODULES = [
    "stormatrix.backends.qemu",
    "stormatrix.backends.proxmox",
    "stormatrix.backends.vmware",
    "stormatrix.executors.winrm",
    "stormatrix.executors.fioserver",
    "stormatrix.suite",
]


def import_sections() -> None:
    for name in SECTION_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                log.debug("section module %s not importable: %s", name, exc)
