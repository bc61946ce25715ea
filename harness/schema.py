"""A small typed schema for the matrix file's sections: :class:`Field`, :class:`Section` and
:func:`parse_section`, shared by every section (``[run]``, ``[qemu]``, ``[proxmox]``, ...), so one
validator names the file, the key and the fix for every mistake."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable

from .core.errors import MatrixError

# --- ---------------------------------------------------

_MISSING = object()


@dataclass(frozen=True)
class Field:
    """One key of a section: its type, default, allowed values or range, and a help line."""

    type: type | tuple[type, ...]
    default: Any = _MISSING
    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: float | None = None
    help: str = ""
    list_of: bool = False  # value is a non-empty list of `type`
    check: Callable[[Any], None] | None = None  # raises ValueError(problem) on a bad value

    @property
    def required(self) -> bool:
        return self.default is _MISSING


@dataclass(frozen=True)
class Section:
    """A table of the matrix file: its keys (``fields``) and, optionally, ``check(path, values)``: the
    cross-key checks of the section (one key requires or excludes another), called by
    :func:`parse_section` on the values with defaults filled in, so they run when the matrix is read
    (plan, run) and not when a backend first uses them. It raises :class:`MatrixError` (or another
    ``InputError``) naming the key and the fix.

    ``may_change_on_resume``: the keys a resumed run may give another value (how patiently or by which
    route the machines are reached, how many repeats), declared by the section's owner (a backend's or an
    executor's package, the spec for ``[run]``); every other key says what a cell measures, so a resume
    that changes it is refused (``resume.check_same_run``, docs/journal.md, Resuming)."""

    name: str
    fields: dict[str, Field]
    help: str = ""
    check: Callable[[str, dict[str, Any]], None] | None = None
    may_change_on_resume: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.may_change_on_resume - set(self.fields))
        if unknown:
            raise ValueError(f"[{self.name}]: may_change_on_resume names {', '.join(unknown)}, which are not its keys")


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {bool: "true/false", int: "a whole number", float: "a number", str: "a string"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)


def _show(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut short: a message names a bad value, it does not echo a 5000-character one."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _check_scalar(path: str, where: str, spec: Field, value: Any) -> Any:
    want = spec.type
    # TOML has no int/float confusion except that 5 is an int where a float is wanted: accept it.
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(want, tuple) and float in want and isinstance(value, int) and not isinstance(value, bool):
        value = float(value) if int not in want else value
    ok = isinstance(value, want) and not (isinstance(value, bool) and want in (int, float))
    if not ok:
        raise MatrixError(path, where, f"{_show(value)} is not {_type_name(want)}",
                          f"write {where.split('.')[-1]} as {_type_name(want)}"
                          + (f" ({spec.help})" if spec.help else ""))
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise MatrixError(path, where, f"{_show(value)} is not a finite number", "write a finite number")
    if spec.choices is not None and value not in spec.choices:
        close = difflib.get_close_matches(str(value), [str(c) for c in spec.choices], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise MatrixError(path, where, f"{_show(value)} is not one of {', '.join(map(str, spec.choices))}",
                          f"{hint}use one of: {', '.join(map(str, spec.choices))}")
    if spec.min is not None and value < spec.min:
        raise MatrixError(path, where, f"{_show(value)} is below the minimum {spec.min:g}",
                          f"use a value >= {spec.min:g}")
    if spec.max is not None and value > spec.max:
        raise MatrixError(path, where, f"{_show(value)} is above the maximum {spec.max:g}",
                          f"use a value <= {spec.max:g}")
    if spec.check is not None:
        try:
            spec.check(value)
        except ValueError as exc:
            raise MatrixError(path, where, str(exc), spec.help or "correct the value") from None
    return value


def parse_section(path: str, section: Section, table: Any, where: str | None = None) -> dict[str, Any]:
    """Validate one TOML table against its :class:`Section`; return values with defaults filled in."""
    where = where or f"[{section.name}]"
    if not isinstance(table, dict):
        raise MatrixError(path, where, f"must be a table, got {type(table).__name__}",
                          f"write it as a [{section.name}] section of key = value lines")
    out: dict[str, Any] = {}
    for key in table:
        if key not in section.fields:
            close = difflib.get_close_matches(key, list(section.fields), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise MatrixError(path, f"{where} {key}", "unknown key",
                              f"{hint}allowed keys in {where}: {', '.join(sorted(section.fields))}")
    for key, spec in section.fields.items():
        k_where = f"{where} {key}"
        if key not in table:
            if spec.required:
                raise MatrixError(path, k_where, "is required but missing",
                                  f"add {key} = ... ({spec.help or _type_name(spec.type)})")
            out[key] = spec.default
            continue
        value = table[key]
        if spec.list_of:
            if not isinstance(value, list):
                value = [value]
            if not value:
                raise MatrixError(path, k_where, "is an empty list", "list at least one value")
            checked = []
            for i, v in enumerate(value, start=1):
                try:
                    checked.append(_check_scalar(path, f"{k_where}[{i}]", spec, v))
                except MatrixError as exc:  # positions count from 1, as workload[1] does: say so
                    raise MatrixError(path, exc.key, f"{exc.problem} (value {i} of the list, counting from 1)",
                                      exc.fix) from None
            seen: set[Any] = set()
            dupes: list[str] = []
            for v in checked:  # a set of seen values keeps long lists linear; tables are compared as text
                k = repr(sorted(v.items())) if isinstance(v, dict) else v
                if k in seen:
                    dupes.append(str(v))
                seen.add(k)
            dupes = sorted(set(dupes))
            if dupes:
                raise MatrixError(path, k_where, f"lists {', '.join(dupes)} more than once",
                                  "list each value once")
            out[key] = checked
        else:
            out[key] = _check_scalar(path, k_where, spec, value)
    if section.check is not None:
        section.check(path, out)
    return out
