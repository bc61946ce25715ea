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


def inventory() -> dict[str, Any]:
    qemu = _first_line(["qemu-system-x86_64", "--version"])
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
        "pveversion": _first_line(["pveversion"]),
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
