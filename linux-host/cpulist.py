"""CPU lists and CPU masks in the kernel's own formats: ``0-3,8`` (``smp_affinity_list``, ``cpuset.cpus``,
``/sys/devices/system/cpu/online``) and hex masks in 32-bit groups (``rps_cpus``, work queues' ``cpumask``).

Standard library only, like every module of ``linux-host/``: the host collector (collector.py, cpuset.py,
multicollector.py) and the host settings of the CPU-set scope (hostsettings.py, hostnode.py) use it, on this
machine as ``stormatrix.host.cpulist`` and on a Proxmox node as the file next to theirs.
"""

from __future__ import annotations

import re
from typing import Any


def parse_cpulist(text: str) -> list[int]:
    """``0-3,8`` -> [0, 1, 2, 3, 8] (the kernel's cpulist, as in ``smp_affinity_list``)."""
    out: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not m:
            raise ValueError(f"{text!r} is not a CPU list like 0-3,8")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"{text!r}: range {part} runs backwards")
        out.update(range(lo, hi + 1))
    return sorted(out)


def format_cpulist(cpus: Any) -> str:
    """[0, 1, 2, 3, 8] -> ``0-3,8``."""
    items = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        parts.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(parts)


def parse_mask(text: str) -> list[int]:
    """A hex CPU mask (``ff``, ``00000000,000000ff``) -> its CPUs."""
    value = int(text.strip().replace(",", "") or "0", 16)
    return [i for i in range(value.bit_length()) if value >> i & 1]


def format_mask(cpus: Any) -> str:
    """CPUs -> a hex mask in 32-bit groups as the kernel prints it (``f``, ``1,00000000``); ``0`` for none."""
    value = sum(1 << c for c in set(cpus))
    digits = f"{value:x}"
    groups: list[str] = []
    while len(digits) > 8:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join([digits, *groups])
