"""A journal record's per-thread split (``host.by_role``) read into the tidy frame's columns.

Every journal record splits the QEMU process's threads by role (``vcpu``, ``main-loop``, ``iothread``,
``aio-worker``, ``other``; docs/journal.md, linux-host/collector.py). Reading that split is the read stage's
work: :func:`split_of` gives the I/O path's totals (every role but ``vcpu``: ``io_path_cpu_s``, ``io_path_ctx``,
``io_path_note``), :func:`role_split` each role's own (``<role>_ctx``, ``<role>_cpu_s``). The score stage
judges them (:mod:`stormatrix.analysis.score.iopath`, :mod:`stormatrix.analysis.score.roles`).
"""

from __future__ import annotations

import math
from typing import Any

from ...core.recordtypes import CellRecord

VCPU = "vcpu"
ROLES = ("vcpu", "main-loop", "iothread", "aio-worker", "other")
#: tidy-frame column stem of each role
STEM = {r: r.replace("-", "_") for r in ROLES}


def role_columns() -> dict[str, str]:
    """The tidy frame's per-role columns and their dtypes."""
    cols = {}
    for r in ROLES:
        cols[f"{STEM[r]}_ctx"] = "float64"
        cols[f"{STEM[r]}_cpu_s"] = "float64"
    return cols


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return None
    return float(v)


def role_split(rec: CellRecord | None) -> dict[str, float | None]:
    """``<role>_ctx`` and ``<role>_cpu_s`` of one record (blank where it has no per-thread split; a role with no
    thread in the window is 0: its threads did not exist, e.g. aio workers with aio=native)."""
    out: dict[str, float | None] = {c: None for c in role_columns()}
    host = rec.host if rec is not None else None
    roles = host.by_role if host is not None else None
    if not isinstance(roles, dict) or "vcpu" not in roles or "main-loop" not in roles:
        return out
    for r in ROLES:
        agg = roles.get(r)
        if agg is None:
            out[f"{STEM[r]}_ctx"], out[f"{STEM[r]}_cpu_s"] = 0.0, 0.0
            continue
        if not isinstance(agg, dict):
            continue
        vol, invol = _num(agg.get("ctx_voluntary")), _num(agg.get("ctx_involuntary"))
        out[f"{STEM[r]}_ctx"] = vol + invol if vol is not None and invol is not None else None
        run = _num(agg.get("runtime_s"))
        user, system = _num(agg.get("user_s")), _num(agg.get("system_s"))
        both = user + system if user is not None and system is not None else None
        out[f"{STEM[r]}_cpu_s"] = run if run is not None else both
    return out


def split_of(rec: CellRecord | None) -> tuple[float | None, float | None, str | None]:
    """(I/O-path CPU seconds, I/O-path context switches, why blank) of one cell record."""
    if rec is None:
        return None, None, "not from a journal: a plain result file has no per-thread split"
    host = rec.host
    if host is None:
        return None, None, "no host record (no collector ran)"
    roles = host.by_role
    if not isinstance(roles, dict) or not roles:
        src = host.source
        return None, None, (f"the host collector ({src}) records no per-thread split" if src else
                            "the record has no per-thread split (host.by_role)")
    if VCPU not in roles:
        return None, None, "the per-thread split names no vCPU thread, so the I/O path cannot be told apart"
    if "main-loop" not in roles:
        return None, None, "the per-thread split has no main-loop thread: it is incomplete"
    cpu = ctx = 0.0
    for role, agg in roles.items():
        if role == VCPU or not isinstance(agg, dict):
            continue
        for key in ("user_s", "system_s", "ctx_voluntary", "ctx_involuntary"):
            v = agg.get(key)
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                return None, None, f"host.by_role.{role}.{key} is {v!r}, not a count"
        cpu += agg["user_s"] + agg["system_s"]
        ctx += agg["ctx_voluntary"] + agg["ctx_involuntary"]
    return cpu, ctx, None


def vcpu_places(frame: Any) -> set[bool]:
    """Where the vCPU threads ran in the windows measured on a CPU set (the tidy column ``vcpu_on_set``): ``True``
    on the set (KVM), ``False`` beside the harness (software emulation); empty where no row says."""
    if "vcpu_on_set" not in frame or "host_scope" not in frame:
        return set()
    return {bool(v) for v in frame.loc[frame["host_scope"] == "cpus", "vcpu_on_set"].dropna()}
