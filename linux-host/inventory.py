#!/usr/bin/env python3
"""Host inventory for the Environment sheet: kernel, CPU, memory, hypervisor and tool versions.

Standard library only, so it runs on a Proxmox node as ``python3 inventory.py`` (prints JSON). Not
psutil, although the workstation has it: the same file describes the node, where psutil may be missing,
and psutil has no CPU model name; two code paths for four lines of /proc would be two things to keep true.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from typing import Any


def _first_line(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (res.stdout or res.stderr).strip()
    return text.splitlines()[0] if text else None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def perf_event_paranoid() -> int | None:
    """``kernel.perf_event_paranoid``: whether an unprivileged ``perf stat`` may count (2 or more: only the
    process's own user-space events; the collector's counters need root or a lower value)."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def hardware_counters() -> bool:
    """Whether the kernel exposes a CPU PMU (``/sys/bus/event_source/devices/cpu``, or ``cpu_core`` on hybrid
    CPUs): without one (many VMs) perf reports cycles as ``<not supported>``."""
    return any(os.path.isdir(f"/sys/bus/event_source/devices/{d}") for d in ("cpu", "cpu_core", "cpu_atom"))


def pve_manager(pveversion: str | None) -> str | None:
    """The pve-manager version from ``pveversion``'s line (``pve-manager/8.2.4/faa83925 (running kernel: ...)``)."""
    if not pveversion or not pveversion.startswith("pve-manager/"):
        return None
    return pveversion.split("/")[1] or None


def inventory() -> dict[str, Any]:
    # Proxmox's pve-qemu-kvm installs qemu-system-x86_64 and kvm; either names the node's QEMU
    qemu = _first_line(["qemu-system-x86_64", "--version"]) or _first_line(["kvm", "--version"])
    pve = _first_line(["pveversion"])
    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "os": _os_release(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "qemu": qemu.replace("QEMU emulator version ", "") if qemu else None,
        "fio": _first_line(["fio", "--version"]),
        "perf": _first_line(["perf", "--version"]),
        "perf_event_paranoid": perf_event_paranoid(),
        "hardware_counters": hardware_counters(),
        "pveversion": pve,
        "pve_manager": pve_manager(pve),
        "python": platform.python_version(),
        "kvm_device": os.path.exists("/dev/kvm"),
    }


def _os_release() -> str | None:
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


if __name__ == "__main__":
    json.dump(inventory(), sys.stdout, indent=1)
    print()
