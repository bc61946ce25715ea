"""Resuming: is a run directory's journal this run's, so that its journaled cells are skipped, not mixed with another's?

A run appends to the journal it finds (docs/journal.md, Resuming); before anything is appended its source asks
:func:`check_same_run` with the journal's records as their types. A matrix compares its file key by key with the
one the run record journaled (:func:`run_differences`), except the keys each section's owner lets a resume change
(:attr:`~stormatrix.schema.Section.may_change_on_resume`); the run's kind and side, and ``[run] seed``, are checked
for every source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from . import runorder
from .core.errors import MatrixError
from .core.recordtypes import Record, RunRecord
from .core.settings import RunSettings
from .registry import sections
from .spec import HOST_SECTION, MATRIX_SECTION, RUN_SECTION, WORKLOAD_SECTION


def run_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``[section] key: was X, now Y`` per key that differs, defaults filled in, except the keys each section's
    owner lets a resume change (:attr:`~stormatrix.schema.Section.may_change_on_resume`)."""
    schema = {"run": RUN_SECTION, "matrix": MATRIX_SECTION, "workload": WORKLOAD_SECTION, "host": HOST_SECTION,
              **sections()}

    def shown(value: Any) -> str:  # TOML has no null: None is a key or section the matrix does not have
        return "(absent)" if value is None else json.dumps(value)[:40]

    def view(name: str, table: Any) -> Any:  # as JSON holds it (the journal's copy went through JSON)
        sec = schema.get(name)
        keep = sec.may_change_on_resume if sec else frozenset()
        if isinstance(table, dict):
            table = {k: v for k, v in {**({k: f.default for k, f in sec.fields.items() if not f.required}
                                          if sec else {}), **table}.items() if k not in keep}
        return json.loads(json.dumps(table, default=str))

    out: list[str] = []
    for name in sorted(set(old) | set(new), key=lambda n: (n != "run", n != "matrix", n)):
        a, b = old.get(name, {} if name in schema else None), new.get(name, {} if name in schema else None)
        if name == "workload" and isinstance(a, list) and isinstance(b, list):
            out += [f"[[workload]]: was {len(a)} workloads, now {len(b)}"] if len(a) != len(b) else []
            pairs = [(f"workload[{i}]", view(name, x), view(name, y)) for i, (x, y) in enumerate(zip(a, b), 1)]
        else:
            pairs = [(f"[{name}]", view(name, a), view(name, b))]
        for where, x, y in pairs:
            x, y = (x, y) if isinstance(x, dict) and isinstance(y, dict) else ({"": x}, {"": y})
            out += [f"{where} {k}".rstrip() + f": was {shown(x.get(k))}, now {shown(y.get(k))}"
                    for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    return out


def check_same_run(records_before: list[Record], settings: RunSettings, run_dir: Path, *,
                   side: str | None, kind: str,
                   differences: Callable[[RunRecord], list[str]] | None = None) -> None:
    """Refuse (before anything is appended) to resume into another run's journal: docs/journal.md, Resuming.

    ``kind``: what this run is (:attr:`~stormatrix.core.recordtypes.RunRecord.kind`); ``differences``: how the
    source tells its own settings apart from a run record's (a matrix: key by key; a suite checks its guests
    itself)."""
    for rec in (r for r in records_before if isinstance(r, RunRecord)):
        fix = f"give -o a new run directory (e.g. {run_dir}-2), or resume with the matrix that run was measured with"
        if rec.kind != kind:
            diff = [f"it holds a {rec.kind} run's journal, this is a {kind} run"]
        elif rec.side != side:
            diff = [f"it was measured as side {rec.side!r}, this run is side {side!r}"]
            fix = f"resume with {'--side ' + repr(rec.side) if rec.side else 'no --side'}, or {fix}"
        else:
            diff = differences(rec) if differences is not None else []
            conflict = runorder.seed_conflict(settings.run, [rec])
            diff += [conflict] if conflict else []
        if diff:
            raise MatrixError(settings.path, "", f"{run_dir} holds the journal of another run ({rec.run_id}, "
                              f"matrix {rec.matrix_path}): {'; '.join(diff[:3])}"
                              f"{f' (and {len(diff) - 3} more)' if len(diff) > 3 else ''}; resuming would mix "
                              "two runs in one journal", fix)
