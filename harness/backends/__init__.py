"""Hypervisor backends. One explicit registry; no metaclass magic.

A backend's module is imported only when it is used, so that the qemu path does not need proxmoxer
and the proxmox path does not need QEMU on the controller machine.
"""

from __future__ import annotations

import importlib

from .base import Backend

# name -> "module:Class"
REGISTRY: dict[str, str] = {
    "qemu": "stormatrix.backends.qemu:QemuBackend",
    "proxmox": "stormatrix.backends.proxmox:ProxmoxBackend",
    "vmware": "stormatrix.backends.vmware:VmwareBackend",
}


def backend_class(name: str) -> type[Backend]:
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), cls)
