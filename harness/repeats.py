"""Repeats until the answer is stable: ``[run] cv_limit_pct``, ``max_repeats``, ``time_budget_minutes``.

One repeat per cell ranks noise (seen here: the same configuration measured 256, 77 and 280 context
switches per MiB). After the planned ``repeats``, every configuration (a disk configuration x a
workload) whose repeats vary more than ``cv_limit_pct`` — the coefficient of variation (sample
standard deviation / mean, as the workbook computes it) of CPU per MiB or of context switches per MiB —
gets one more repeat, and again, until it is stable, it reaches ``max_repeats``, or the optional time
budget would be exceeded. The values are recomputed from the journal's cell records with
:func:`stormatrix.core.metrics.per_mib`, the same formula analysis uses, so a resumed run decides
exactly as the interrupted one would have: the journal is the only memory.

Each extra repeat's record says why it ran (``extra_repeat``, docs/journal.md).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from .core.journalfile import CELL
from .core.metrics import per_mib
from .core.model import Cell, Plan


@dataclass(frozen=True)
class Stability:
    """The repeats journaled so far for one configuration and what they say."""

    repeats: int  # measured repeats (cell records) of this configuration
    cv_pct: dict[str, float | None]  # "cpu"/"ctx" -> CV in percent, None where it cannot be computed
    last_repeat: int  # the highest repeat number measured

    def over(self, limit_pct: float) -> list[str]:
        """The metrics whose CV is above the limit; a metric with fewer than two values is "unknown"."""
        return [m for m, cv in self.cv_pct.items() if cv is not None and cv > limit_pct]


def cv_pct(values: Iterable[float]) -> float | None:
    """Coefficient of variation in percent (sample standard deviation, ddof=1, over the mean).

    None for fewer than two values or a mean of zero: no spread can be stated then.
    """
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if len(vals) < 2:
        return None
    mean = statistics.fmean(vals)
    if mean == 0:
        return None
    return statistics.stdev(vals) / abs(mean) * 100.0


def config_key(key: str) -> str:
    """``virtio-blk/io_uring/.../w/rep3`` -> ``virtio-blk/io_uring/.../w``: the configuration of a cell key."""
    base, sep, rep = key.rpartition("/rep")
    return base if sep and rep.isdigit() else key


def stability_by_config(records: Iterable[dict[str, Any]]) -> dict[str, Stability]:
    """Per configuration, from the journal's ``cell`` records: repeats and the CV of CPU and ctx per MiB."""
    values: dict[str, dict[int, tuple[float | None, float | None]]] = {}
    for rec in records:
        if rec.get("type") != CELL or not isinstance(rec.get("key"), str):
            continue
        fio: dict[str, Any] = rec["fio"] if isinstance(rec.get("fio"), dict) else {}
        total: dict[str, Any] = fio["total"] if isinstance(fio.get("total"), dict) else {}
        host: dict[str, Any] | None = rec["host"] if isinstance(rec.get("host"), dict) else None
        pm = per_mib(total.get("io_bytes"), host)
        _, _, rep = rec["key"].rpartition("/rep")
        if not rep.isdigit():
            continue
        values.setdefault(config_key(rec["key"]), {})[int(rep)] = (pm["cpu"], pm["ctx"])
    out: dict[str, Stability] = {}
    for cfg, reps in values.items():
        cpu = [v[0] for v in reps.values() if v[0] is not None]
        ctx = [v[1] for v in reps.values() if v[1] is not None]
        out[cfg] = Stability(repeats=len(reps), cv_pct={"cpu": cv_pct(cpu), "ctx": cv_pct(ctx)},
                             last_repeat=max(reps))
    return out


def enabled(run: dict[str, Any]) -> bool:
    """Extra repeats are possible only when ``max_repeats`` is above ``repeats``."""
    return int(run.get("max_repeats") or 0) > int(run.get("repeats") or 1)


def possible_extra(plan: Plan, run: dict[str, Any]) -> int:
    """How many extra cells the run may add at most (for plan and the ETA): every configuration up to
    ``max_repeats``."""
    if not enabled(run):
        return 0
    configs = {(c.disk, c.workload) for c in plan.cells}
    return len(configs) * (int(run["max_repeats"]) - int(run["repeats"]))


def next_extra(plan: Plan, run: dict[str, Any], records: Iterable[dict[str, Any]],
               given_up: set[str]) -> list[tuple[Cell, dict[str, Any]]]:
    """The next round of extra repeats: one cell per unstable configuration, with the reason to journal.

    A configuration is unstable when its CV of CPU or ctx per MiB is above ``cv_limit_pct``, or when it
    has a single measured repeat (no CV can be stated: one more repeat is the only way to know). It gets
    repeat ``last + 1`` while that stays within ``max_repeats``. ``given_up`` holds cell keys that failed
    in this invocation: their configuration is not tried again now (a resume tries again).
    """
    if not enabled(run):
        return []
    limit, most = float(run["cv_limit_pct"]), int(run["max_repeats"])
    by_config = stability_by_config(records)
    out: list[tuple[Cell, dict[str, Any]]] = []
    seen: set[str] = set()
    for c in plan.cells:
        cfg = config_key(c.key)
        if cfg in seen:
            continue
        seen.add(cfg)
        st = by_config.get(cfg)
        if st is None:  # never measured (every planned repeat failed): nothing to judge
            continue
        over = st.over(limit)
        if over:
            why = (f"CV of {' and '.join(f'{m} per MiB {st.cv_pct[m]:.1f} %' for m in over)} over "
                   f"{st.repeats} repeats is above cv_limit_pct = {limit:g} %")
        elif st.repeats < 2:
            why = "a single measured repeat has no CV; one more is needed to judge cv_limit_pct"
        else:
            continue
        nxt = Cell(c.disk, c.workload, st.last_repeat + 1)
        if nxt.repeat > most or nxt.key in given_up:
            continue
        out.append((nxt, {"reason": why, "cv_pct": dict(st.cv_pct), "cv_limit_pct": limit,
                          "after_repeats": st.repeats, "max_repeats": most}))
    return out
