"""Older journal lines brought up to this version's record shape, in one place, before they are read as their
types (``recordtypes.py``): every reader (the runner's resume, ``suite run``, ``restore``, ``repeats.py``,
analysis) reads a line through :func:`upgrade`, so none of them checks for an older shape itself.

:data:`UPGRADES` lists, per record ``type``, what a line written before a key existed lacks and what it is
worked out to. An upgrade only fills in a key the line does not have (or has as null); a line that has it is
read as written. The upgraded copy is what is parsed; the record keeps the line's own keys and their order
(:meth:`~stormatrix.core.jsonpart.JsonPart.keep_keys`), so what was worked out is never written back:
``to_json(from_json(line)) == line`` for old lines too.

Not upgrades, though older records lack them too: keys that stay optional in the types, read as "absent" by
the reader that needs them (a run record's ``cells``/``todo``; its ``order``/``seed``: such runs were grouped,
``runorder.journaled_order``; a cell's ``per_mib``: ``CellRecord.cost_per_mib`` uses the one formula; a
``fio.total`` without ``clat_p99_ns``: analysis labels its p99); and a host block's ``cpu_total_source``, which
is worked out where the host part is read (``cellparts.ProcessMetrics.parse``) because a collector of this
version may leave it out as well. Standard library only.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .journalfile import CELL


def _cell_engine(obj: Mapping[str, Any]) -> Any:
    """A cell written before ``engine`` existed: the engine its ``raw`` names (``raw.engine``), else fio (before
    either key, every cell was fio's). A value that is no engine is kept, for the cell's check to name."""
    raw = obj.get("raw")
    named = raw.get("engine") if isinstance(raw, dict) else None
    return named if named is not None else "fio"


#: record type -> [(top-level key an older line lacks, what it was written before, how it is worked out)]
UPGRADES: dict[str, list[tuple[str, str, Callable[[Mapping[str, Any]], Any]]]] = {
    CELL: [("engine", "records before the engine key: raw.engine, else fio", _cell_engine)],
}


def upgrade(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` (a journal line's object) with what its record ``type`` lacks worked out (:data:`UPGRADES`): a
    copy when anything was added, else ``obj`` itself."""
    kind = obj.get("type")
    upgrades = UPGRADES.get(kind, []) if isinstance(kind, str) else []
    todo = [(key, how) for key, _, how in upgrades if obj.get(key) is None]
    if not todo:
        return obj
    out = dict(obj)
    for key, how in todo:
        out[key] = how(obj)
    return out
