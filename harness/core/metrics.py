"""The one per-MiB computation: host CPU and context switches per MiB moved.

The runner's record builder, the suite and analysis all turn a host measurement and the bytes fio
moved into "cost per MiB"; they used to do it three ways (one summed the cycles split, one read
``cpu_total``, one computed only when a CSV was next to the file). Here is the single definition the
journal documents (docs/journal.md, ``per_mib``):

- ``mib = io_bytes / 2**20``;
- ``cpu`` is ``cpu_total / mib`` in ``cycles/MiB`` when ``host.cpu_metric == "cycles"`` (user + kernel
  cycles), or ``cpu_total * 1000 / mib`` in ``CPU-ms/MiB`` when it is ``"cpu_time"`` (seconds);
- ``ctx`` is ``ctx_switches / mib``.

A value that cannot be computed is ``None`` — never 0, which would read as "free" — and the reason is
kept under ``missing`` (present only when something is missing), so a reader can say why a cell is
blank. Pure, standard library only: imported by harness and analysis alike.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

MIB = 2**20

# host.cpu_metric -> the unit of per_mib.cpu
CPU_PER_MIB_UNIT: dict[str, str] = {"cycles": "cycles/MiB", "cpu_time": "CPU-ms/MiB"}
# per_mib.cpu = cpu_total * scale / mib: cycles stay cycles, seconds become milliseconds
_CPU_SCALE: dict[str, float] = {"cycles": 1.0, "cpu_time": 1000.0}


def _number(value: Any) -> float | None:
    """A finite real number, or None (bools, text, NaN and infinities are not measurements)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def cpu_total_of(host: Mapping[str, Any]) -> float | None:
    """The host's CPU total in its own metric: ``cpu_total``, or for cycles the sum of the split.

    Collectors write both (``cpu_total == cycles.user + cycles.kernel``); a host block merged from
    several VMs or written by an older suite may carry only the ``cycles`` split.
    """
    total = _number(host.get("cpu_total"))
    if total is not None:
        return total
    cycles = host.get("cycles")
    if host.get("cpu_metric") == "cycles" and isinstance(cycles, Mapping):
        parts = [_number(v) for v in cycles.values()]
        if parts and all(p is not None for p in parts):
            return float(sum(p for p in parts if p is not None))
    return None


def host_reason(host: Mapping[str, Any], key: str) -> str | None:
    """Why the host collector left ``host.<key>`` null: its own ``null_reasons`` (the Linux collector: a
    thread without its counter, named) or ``unmatched`` (the ESXi collectors: no such counter at all)."""
    for source in ("null_reasons", "unmatched"):
        reasons = host.get(source)
        why = reasons.get(key) if isinstance(reasons, Mapping) else None
        if isinstance(why, str) and why.strip():
            return why.strip()
    return None


def per_mib(io_bytes: Any, host: Mapping[str, Any] | None) -> dict[str, Any]:
    """The journal's ``per_mib`` object for ``io_bytes`` moved under the ``host`` measurement.

    Returns ``{"mib", "cpu", "cpu_unit", "ctx"}``; when ``cpu`` or ``ctx`` is None, also
    ``"missing": {"cpu"|"ctx": reason}``. ``cpu_unit`` is set whenever the CPU metric is known, even
    if the value is not (the unit says what the blank would have held).
    """
    nbytes = _number(io_bytes)
    mib = nbytes / MIB if nbytes is not None else None
    out: dict[str, Any] = {"mib": mib, "cpu": None, "cpu_unit": None, "ctx": None}
    missing: dict[str, str] = {}
    if mib is None or mib <= 0:
        why = "no bytes were moved" if mib is not None else f"the byte count is {io_bytes!r}, not a number"
        missing = {"cpu": why, "ctx": why}
    elif host is None:
        missing = {"cpu": "no host measurement", "ctx": "no host measurement"}
    else:
        metric = host.get("cpu_metric")
        if metric in CPU_PER_MIB_UNIT:
            out["cpu_unit"] = CPU_PER_MIB_UNIT[metric]
            total = cpu_total_of(host)
            if total is None:
                missing["cpu"] = f"host.cpu_total is {host.get('cpu_total')!r}, not a number"
            else:
                out["cpu"] = total * _CPU_SCALE[metric] / mib
        else:
            missing["cpu"] = f"host.cpu_metric is {metric!r}; expected 'cycles' or 'cpu_time'"
        ctx = _number(host.get("ctx_switches"))
        if ctx is not None:
            out["ctx"] = ctx / mib
        else:
            raw = host.get("ctx_switches")
            reason = host_reason(host, "ctx_switches")
            if raw is None and reason is not None:
                missing["ctx"] = reason
            elif raw is None:
                missing["ctx"] = "the host collector counted no context switches"
            else:
                missing["ctx"] = f"host.ctx_switches is {raw!r}, not a number"
    if missing:
        out["missing"] = missing
    return out
