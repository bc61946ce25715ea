"""Repeats until the answer is stable: ``[run] cv_limit_pct``, ``max_repeats``, ``time_budget_minutes``.

One repeat per cell ranks noise (seen here: the same configuration measured 256, 77 and 280 context
switches per MiB). After the planned ``repeats``, every configuration (a disk configuration x a
workload) whose repeats vary more than ``cv_limit_pct`` — the coefficient of variation (sample
standard deviation / mean, as the workbook computes it) of CPU per MiB or of context switches per MiB —
gets one more repeat, and again, until it is stable, it reaches ``max_repeats``, or the optional time
budget would be exceeded. The values are read from the journal's cell records as analysis reads them
(:class:`stormatrix.core.recordtypes.CellRecord`: its ``per_mib``, or for an older record the one formula,
:func:`stormatrix.core.metrics.per_mib`), so a resumed run decides exactly as the interrupted one would have:
the journal is the only memory.

**Open verdicts first** (``[run] repeat_policy = "verdicts"``, the default): before any CV-driven repeat,
both sides of every comparison the findings rest on that is still undecided get one: the best
configuration of each workload against its runner-up, and per controller its best aio mode against the
next (native against threads). A comparison is decided when the workbook's own test says so — the share
of the bootstrap's resamples (:mod:`stormatrix.analysis.score.bootstrap`, through ``score_cells`` exactly as
``stormatrix report`` runs it) in which one score is lower is at least 95 % or at most 5 %; with a single
repeat it is untested, so open. Native against threads, where the records split QEMU's threads by role, is
decided as the Answer page decides it: Welch's t at 95 % on the I/O-path switches per I/O
(:mod:`stormatrix.analysis.score.roles`). ``"cv"`` gives extra repeats by CV alone. Within
``time_budget_minutes`` the runner takes as many as fit at the measured pace, in this priority order.

Each extra repeat's record says why it ran (``extra_repeat``, docs/journal.md).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .core.model import NOT_APPLICABLE, Cell, Plan
from .core.recordtypes import CellRecord
from .progress import fmt_duration


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


def stability_by_config(cells: Iterable[CellRecord]) -> dict[str, Stability]:
    """Per configuration, from the journal's ``cell`` records as analysis reads them
    (:meth:`~stormatrix.journal.Journal.measured_cells`: a record analysis refuses counts for no configuration
    here either): repeats and the CV of CPU and ctx per MiB."""
    values: dict[str, dict[int, tuple[float | None, float | None]]] = {}
    for cell in cells:
        _, _, rep = cell.key.rpartition("/rep")
        if not rep.isdigit():
            continue
        values.setdefault(config_key(cell.key), {})[int(rep)] = cell.cost_per_mib()
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


@dataclass(frozen=True)
class Comparison:
    """One comparison a finding rests on, as the workbook tests it: A's score against B's in one
    normalization group (``share``: of the bootstrap resamples, those with A's score lower)."""

    kind: str  # "best vs runner-up" | "aio modes of <controller>"
    group: str  # the workbook's normalization group, e.g. "randread-64k [cpu_ms]"
    a: str  # configuration labels as the workbook writes them (analysis.score.labels.config_label)
    b: str
    share: float | None  # None: untested (a side has a single repeat)
    resamples: int
    #: "aio verdict of <controller>": Welch's p on the I/O-path switches per I/O (analysis/score/roles.py), the figure
    #: the Answer page decides native against threads on; None: untested or a score comparison
    p: float | None = None

    @property
    def decided(self) -> bool:
        from .analysis.score.bootstrap import LEVEL  # analysis (pandas, numpy) loads only when verdicts are read

        if self.kind.startswith("aio verdict"):
            return self.p is not None and self.p < 1 - LEVEL
        return self.share is not None and (self.share >= LEVEL or self.share <= 1 - LEVEL)

    def describe(self) -> str:
        if self.kind.startswith("aio verdict"):
            state = ("untested (a single repeat)" if self.p is None else
                     f"Welch p = {self.p:.3g} on the I/O-path switches per I/O (decided at p < 0.05)")
            return f"{self.kind}: {self.a} vs {self.b}, {state}"
        if self.share is None:
            state = "untested (a single repeat)"
        else:
            state = (f"A lower in {self.share:.1%} of {self.resamples:,} resamples, within noise (decided at "
                     ">= 95 % or <= 5 %)")
        return f"{self.kind} in {self.group}: {self.a} vs {self.b}, {state}"

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "group": self.group, "a": self.a, "b": self.b, "share_a_lower": self.share,
               "resamples": self.resamples}
        if self.kind.startswith("aio verdict"):
            out["p"] = self.p
        return out


def comparisons(journal: Path) -> tuple[list[Comparison], dict[tuple[str, str], tuple[str, str]]]:
    """The comparisons the findings rest on, from the journal as ``stormatrix report`` reads it, and which
    (workload, configuration label) each (group, label) is.

    The same ingest and ``score_cells`` the report runs, so each share is the workbook's own number:
    per group the best against the runner-up; per controller its best aio mode against the next (with
    iothread as the group's first row of that controller, as the findings pick them).
    """
    from .analysis.read.ingest import ingest
    from .analysis.score.efficiency import score_cells

    data = ingest([journal])
    if data.frame.empty:
        return [], {}
    result = score_cells(data.frame, with_iopath=False)
    cells = result.cells
    if cells.empty:
        return [], {}
    where = {(str(r.norm_group), str(r.config)): (str(r.workload), str(r.config)) for r in cells.itertuples()}
    out: list[Comparison] = []
    aio_pairs = _aio_pairs(data.frame, cells)

    def compare(kind: str, group: str, a: str, b: str) -> None:
        draws = result.draws.groups[group]
        v = draws.verdict(a, b)
        out.append(Comparison(kind, group, a, b, None if v.direction == "untested" else draws.share_lower(a, b),
                              len(draws.scores)))

    for group, g in cells.groupby("norm_group", sort=False):
        g = g.sort_values(["score", "config"], kind="stable")
        if len(g) >= 2:
            compare("best vs runner-up", str(group), str(g.iloc[0]["config"]), str(g.iloc[1]["config"]))
        for controller in dict.fromkeys(g["controller"]):
            gc = g[g["controller"] == controller]
            if gc["iothread"].nunique(dropna=False) > 1:
                gc = gc[gc["iothread"].fillna(False) == gc["iothread"].fillna(False).iloc[0]]
            if {"native", "threads"} <= set(gc["aio"]) and aio_pairs.get((str(group), str(controller))):
                continue  # decided on the verdict figure, below
            if gc["aio"].nunique() >= 2:
                compare(f"aio modes of {controller}", str(group), str(gc.iloc[0]["config"]), str(gc.iloc[1]["config"]))
    for (group, controller), (native, threads, p) in aio_pairs.items():
        out.append(Comparison(f"aio verdict of {controller}", group, native, threads, None, 0, p))
    return out, where


def _aio_pairs(frame: Any, cells: Any) -> dict[tuple[str, str], tuple[str, str, float | None]]:
    """(group, controller) -> (native label, threads label, Welch p or None) of every controller the Answer page
    decides native against threads for (analysis/score/roles.py: the I/O-path switches per I/O; first iothread
    setting of the controller, as the findings pick it)."""
    import math

    from .analysis.score.labels import config_label
    from .analysis.score.roles import aio_verdicts, per_io_frame

    f = frame.copy()
    f["config"] = [config_label(c, a, i, k) for c, a, i, k in
                   f[["controller", "aio", "iothread", "cache"]].itertuples(index=False)]
    verdicts = aio_verdicts(per_io_frame(f))
    out: dict[tuple[str, str], tuple[str, str, float | None]] = {}
    for v in verdicts:
        rows = cells[(cells["controller"] == v.controller) & (cells["workload"] == v.workload)]
        rows = rows[rows["aio"].isin(["native", "threads"])]
        if rows.empty:
            continue
        first = rows["iothread"].fillna(False).iloc[0]
        rows = rows[rows["iothread"].fillna(False) == first]
        if f"iothread={'1' if bool(first) else '0'}" not in v.group or len(rows) < 2:
            continue
        native = rows[rows["aio"] == "native"].iloc[0]
        threads = rows[rows["aio"] == "threads"].iloc[0]
        out.setdefault((str(native["norm_group"]), v.controller),
                       (str(native["config"]), str(threads["config"]), v.p if math.isfinite(v.p) else None))
    return out


def next_extra(plan: Plan, run: dict[str, Any], cells: Iterable[CellRecord],
               given_up: set[str], journal: Path | None = None) -> list[tuple[Cell, dict[str, Any]]]:
    """The next round of extra repeats, most needed first: one cell per configuration, with the reason.

    First (``repeat_policy = "verdicts"`` and a ``journal`` to read) both sides of every open comparison
    (:func:`comparisons`); then every configuration that is unstable: its CV of CPU or ctx per MiB is above
    ``cv_limit_pct``, or it has a single measured repeat (no CV can be stated: one more repeat is the only
    way to know). A configuration gets repeat ``last + 1`` while that stays within ``max_repeats``.
    ``given_up`` holds cell keys that failed in this invocation: their configuration is not tried again
    now (a resume tries again).
    """
    if not enabled(run):
        return []
    most = int(run["max_repeats"])
    by_config = stability_by_config(cells)
    out: list[tuple[Cell, dict[str, Any]]] = []
    seen: set[str] = set()
    if run.get("repeat_policy", "verdicts") == "verdicts" and journal is not None and journal.is_file():
        out += _for_open_verdicts(plan, journal, by_config, given_up, most, seen)
    out += _for_cv(plan, run, by_config, given_up, seen)
    return out


def within_budget(extra: list[tuple[Cell, dict[str, Any]]], budget_min: float, elapsed_s: float, pace_s: float
                  ) -> tuple[list[tuple[Cell, dict[str, Any]]], list[tuple[Cell, dict[str, Any]]], str]:
    """The extra repeats of a round (most needed first) that fit in what is left of ``[run] time_budget_minutes``
    (``budget_min``, 0: no budget) at ``pace_s`` seconds per cell, those left out, and the warning saying why
    ("" when all fit)."""
    fit = max(int((budget_min * 60 - elapsed_s) // pace_s), 0) if budget_min > 0 else len(extra)
    if fit >= len(extra):
        return extra, [], ""
    left = extra[fit:]
    kinds = ", ".join(f"{sum(w['basis'] == b for _, w in left)} for {b}"
                      for b in dict.fromkeys(w["basis"] for _, w in left))
    return extra[:fit], left, (f"{len(left)} extra repeat(s) still wanted ({kinds}), not run: at {pace_s:.1f} s per "
                               f"cell they would end beyond [run] time_budget_minutes = {budget_min:g} "
                               f"({fmt_duration(elapsed_s)} spent)")


def _label(cell: Cell) -> str:
    from .analysis.score.labels import config_label

    d = cell.disk
    if not d.has_options:  # ESXi: the controller alone, as the workbook labels it
        return config_label(d.controller, NOT_APPLICABLE, None, NOT_APPLICABLE)
    return config_label(d.controller, d.aio, d.iothread, d.cache)


def _for_open_verdicts(plan: Plan, journal: Path, by_config: dict[str, Stability], given_up: set[str], most: int,
                       seen: set[str]) -> list[tuple[Cell, dict[str, Any]]]:
    found, where = comparisons(journal)
    by_label = {(c.workload.name, _label(c)): c for c in plan.cells}
    out: list[tuple[Cell, dict[str, Any]]] = []
    for comp in (c for c in found if not c.decided):
        for side in (comp.a, comp.b):
            cell = by_label.get(where.get((comp.group, side), ("", "")))
            if cell is None:
                continue
            cfg = config_key(cell.key)
            st = by_config.get(cfg)
            if cfg in seen or st is None:
                continue
            nxt = Cell(cell.disk, cell.workload, st.last_repeat + 1)
            if nxt.repeat > most or nxt.key in given_up:
                continue
            seen.add(cfg)
            out.append((nxt, {"basis": "open verdict", "reason": f"open verdict: {comp.describe()}",
                              "comparison": comp.to_dict(),
                              "cv_pct": dict(st.cv_pct), "after_repeats": st.repeats, "max_repeats": most}))
    return out


def _for_cv(plan: Plan, run: dict[str, Any], by_config: dict[str, Stability], given_up: set[str],
            seen: set[str]) -> list[tuple[Cell, dict[str, Any]]]:
    limit, most = float(run["cv_limit_pct"]), int(run["max_repeats"])
    out: list[tuple[Cell, dict[str, Any]]] = []
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
        out.append((nxt, {"basis": "cv_limit_pct", "reason": why, "cv_pct": dict(st.cv_pct), "cv_limit_pct": limit,
                          "after_repeats": st.repeats, "max_repeats": most}))
    return out
