"""How a configuration is named on every sheet and in every sentence (shared by the whole-process and the
I/O-path scoring, which must not import each other)."""

from __future__ import annotations

import math

import pandas as pd

from ...core.model import NOT_APPLICABLE


def config_label(controller: object, aio: object, iothread: object, cache: object) -> str:
    """``virtio-blk aio=native iothread`` : how the technotes name a configuration; an ESXi one
    (aio and cache ``n/a``: no such setting) is its controller alone, ``pvscsi``."""
    parts = [str(controller) if _present(controller) else "?"]
    if not (_present(aio) and str(aio) == NOT_APPLICABLE):
        parts.append(f"aio={aio}" if _present(aio) else "aio=?")
    if _present(iothread) and bool(iothread):
        parts.append("iothread")
    if _present(cache) and cache not in ("none", "default", NOT_APPLICABLE):
        parts.append(f"cache={cache}")
    return " ".join(parts)


def _present(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA
