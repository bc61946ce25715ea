"""The order cells run in: ``[run] order`` and ``[run] seed``.

``grouped`` runs a configuration's repeats one after another, configurations in matrix order
(ide rep1, rep2, rep3, then sata ...). Any drift of the host during the run — other tenants, thermal,
the page cache — then lands on whole configurations and reads as a difference between them.

``rounds`` (the default) runs every configuration once per round (round n is repeat n), in an order
shuffled per round, so a slow drift is spread over every configuration instead. A configuration's
place in a round is a pure function of the seed, the round and its key (the SHA-256 of the three),
not of what ran before: a resumed run, or an extra repeat decided later, puts every pending cell
exactly where the interrupted run would have, and the same seed gives the same order on any machine.
The seed is ``[run] seed``, or drawn when the run starts and kept in the run record (``order``,
``seed``), from which a resumed run takes it (docs/journal.md).

The unit that is placed is a disk configuration x repeat (one VM start, all workloads of that
configuration in matrix order), so rounds cost no extra VM starts.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Iterable

from .core.model import Cell, DiskConfig
from .core.recordtypes import Record, RunRecord

Group = tuple[tuple[DiskConfig, int], list[Cell]]

ORDERS = ("rounds", "grouped")


def draw_seed() -> int:
    """A fresh seed for a run whose matrix sets none (short enough to copy into ``[run] seed``)."""
    return secrets.randbelow(2**31 - 2) + 1


def place(seed: int, round_no: int, key: str) -> str:
    """The sort key of configuration ``key`` in round ``round_no``: depends on nothing else."""
    return hashlib.sha256(f"{seed}\0{round_no}\0{key}".encode()).hexdigest()


def group_cells(cells: Iterable[Cell]) -> list[Group]:
    """Cells sharing a disk configuration and repeat (one VM start), in the order they are given."""
    groups: dict[tuple[DiskConfig, int], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.disk, c.repeat), []).append(c)
    return list(groups.items())


def ordered_groups(cells: Iterable[Cell], order: str, seed: int) -> list[Group]:
    """The (disk, repeat) groups of ``cells`` in the order they run.

    ``grouped``: plan order. ``rounds``: by repeat, and within a repeat by :func:`place`.
    """
    groups = group_cells(cells)
    if order == "grouped":
        return groups
    if order != "rounds":
        raise ValueError(f"unknown run order {order!r} (one of {', '.join(ORDERS)})")
    return sorted(groups, key=lambda g: (g[0][1], place(seed, g[0][1], g[0][0].key)))


def ordered_cells(cells: Iterable[Cell], order: str, seed: int) -> list[Cell]:
    """``cells`` flattened in run order (what ``plan`` lists)."""
    return [c for _, group in ordered_groups(cells, order, seed) for c in group]


def journaled_order(records: Iterable[Record]) -> tuple[str, int] | None:
    """(order, seed) of the first run record that has them: the order a resumed run keeps."""
    for rec in records:
        if isinstance(rec, RunRecord) and rec.seed is not None and rec.order in ORDERS:
            return rec.order, rec.seed
    return None


def run_seed(run: dict[str, Any], records: Iterable[Record]) -> tuple[int, str]:
    """The seed this invocation orders by, and where it comes from (for the log and the run record).

    A journaled seed wins over a fresh draw, so a resumed run keeps its order; a matrix that sets
    ``[run] seed`` names it (a resumed run whose matrix sets another one is refused before this by
    :func:`check_seed`).
    """
    before = journaled_order(records)
    if before is not None:
        return before[1], "the journal's run record (resumed run)"
    if int(run.get("seed") or 0):
        return int(run["seed"]), "[run] seed"
    return draw_seed(), "drawn at the run's start ([run] seed = 0)"


def seed_conflict(run: dict[str, Any], records: Iterable[Record]) -> str | None:
    """Why this invocation cannot resume the journal's order, or None.

    A matrix that sets a seed other than the journaled one would put the pending cells elsewhere than
    the interrupted run; ``[run] seed = 0`` (unset) means "keep the journal's".
    """
    before = journaled_order(records)
    asked = int(run.get("seed") or 0)
    if before is None or not asked or asked == before[1]:
        return None
    return f"[run] seed: was {before[1]} (the journal's run record), now {asked}"
