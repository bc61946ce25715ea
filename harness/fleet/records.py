"""The fleet journal's records, typed, and the one loop that replays them into a platform's fleet state.

Every platform's fleet writes its own records into ``RUN_DIR/fleet.ndjson`` (:mod:`.journal`: the file's
discipline) and reads them back the same way: :func:`replay` takes each line, looks its ``type`` up in the
platform's table (:data:`FleetReplay.RECORDS`, built by :func:`record_kinds`), parses it into that kind's
:class:`JournalRecord` dataclass and hands it to the state's ``apply``. A kind is declared once, as a dataclass
whose fields are the record's keys: a field without a default is required, its type is what the key holds (a
number journaled as text is read as the number, as the journals have always been read). Keys a kind does not
declare (``time``, notes) are left in the file; a null where a field has a default is that default.

What is wrong in a line is a :class:`~stormatrix.core.errors.DataFileError` naming the file, the line and the
field: a record without a required field, a field of the wrong type, or a ``type`` the platform's fleet does
not write. The on-disk format is the journal's own (docs/journal.md); this module only reads it.

The records every platform shares are here (``fleet``: :class:`FleetRecord`); each platform's kinds are in its
backend's package (``fleetstate.py`` of :mod:`stormatrix.backends.proxmox`, :mod:`stormatrix.backends.vmware`
and :mod:`stormatrix.backends.qemu`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Protocol, TypeVar, Union

from ..core.errors import DataFileError
from .journal import FleetJournal

FIX = "restore fleet.ndjson from a copy, or correct that line if you know what it held"


@dataclass(frozen=True, kw_only=True)
class JournalRecord:
    """One line of ``fleet.ndjson``, typed: subclasses declare ``KIND`` (the line's ``type``) and the keys."""

    KIND: ClassVar[str] = ""

    def needs(self) -> tuple[str, ...]:
        """The fields that must not be null in this record (one kind's variants: a ``gone`` of a VM needs its id)."""
        return ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, line: int) -> JournalRecord:
        """The record of ``raw`` (one journal line's object), or DataFileError naming ``path``, ``line`` and the
        field."""
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if f.name not in raw:
                if not has_default:
                    raise DataFileError(path, f"line {line}: the {cls.KIND!r} record has no {f.name!r}", FIX)
                continue
            value, hint = raw[f.name], hints[f.name]
            if value is None and has_default and not _nullable(hint):
                continue
            try:
                values[f.name] = _convert(hint, value)
            except (TypeError, ValueError):
                raise DataFileError(path, f"line {line}: the {cls.KIND!r} record's {f.name!r} is "
                                    f"{str(value)[:60]!r}, not {_describe(hint)}", FIX) from None
        record = cls(**values)
        for name in record.needs():
            if getattr(record, name) is None:
                raise DataFileError(path, f"line {line}: the {cls.KIND!r} record has no {name!r} "
                                    f"(a {cls.KIND!r} of this kind names it)", FIX)
        return record


@dataclass(frozen=True, kw_only=True)
class FleetRecord(JournalRecord):
    """``fleet``: once, when the fleet is first deployed; a platform's own header adds its keys."""

    KIND: ClassVar[str] = "fleet"
    fleet_id: str
    backend: str | None = None
    workers: int | None = None


def record_kinds(*kinds: type[JournalRecord]) -> dict[str, type[JournalRecord]]:
    """A platform's table of record kinds (``type`` -> record class), each kind declared once."""
    table: dict[str, type[JournalRecord]] = {}
    for kind in kinds:
        if not kind.KIND or kind.KIND in table:
            raise ValueError(f"record kind {kind.KIND!r} of {kind.__name__} is empty or declared twice")
        table[kind.KIND] = kind
    return table


class FleetReplay(Protocol):
    """A platform's fleet state as :func:`replay` builds it: the kinds its journal holds, and each one applied."""

    #: the fleet's platform, as its ``fleet`` record names it (``backend``)
    BACKEND: ClassVar[str]
    #: ``type`` -> record class: every kind this platform's fleet writes (:func:`record_kinds`)
    RECORDS: ClassVar[dict[str, type[JournalRecord]]]

    def apply(self, record: JournalRecord) -> None:
        """Take one record, in journal order."""


S = TypeVar("S", bound=FleetReplay)


def replay(journal: FleetJournal, state: S) -> S:
    """``state`` with every record of ``journal`` applied in order: the one loop every platform's fleet state is
    built by. A line whose ``type`` the platform does not write is a DataFileError naming the file and the line."""
    path = str(journal.path)
    header: tuple[int, str | None] | None = None  # the fleet record's line and backend
    for line, raw in journal.numbered():
        kind = raw["type"]
        cls = state.RECORDS.get(kind)
        if cls is None:
            whose = (f"; its fleet record (line {header[0]}) says backend {header[1]!r}"
                     if header is not None and header[1] not in (None, state.BACKEND) else "")
            raise DataFileError(path, f"line {line} is a {str(kind)[:40]!r} record, which a {state.BACKEND} fleet "
                                f"does not write (its records: {', '.join(state.RECORDS)}){whose}",
                                "give the file whose [fleet] deployed this run directory, or remove that line")
        record = cls.parse(raw, path, line)
        if header is None and isinstance(record, FleetRecord):
            header = (line, record.backend)
        state.apply(record)
    return state


# --- the fields' types -----------------------------------------------------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _args(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else ()


def _nullable(hint: Any) -> bool:
    return types.NoneType in _args(hint)


def _convert(hint: Any, value: Any) -> Any:
    """``value`` as ``hint`` says (TypeError or ValueError when it is not one)."""
    if hint is Any:
        return value
    if _args(hint):
        if value is None and _nullable(hint):
            return None
        inner = [a for a in _args(hint) if a not in (types.NoneType,)]
        return _convert(inner[0], value)
    origin = typing.get_origin(hint)
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(value)
        return [_convert(typing.get_args(hint)[0], v) for v in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(value)
        return {str(k): _convert(typing.get_args(hint)[1], v) for k, v in value.items()}
    if isinstance(value, bool) and hint is not bool:
        raise TypeError(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(value)
        return value
    if hint is str:
        if not isinstance(value, (str, int, float)):
            raise TypeError(value)
        return str(value)
    if hint is int:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        if not isinstance(value, (int, float, str)):
            raise TypeError(value)
        return int(value)
    if hint is float:
        if not isinstance(value, (int, float, str)):
            raise TypeError(value)
        return float(value)
    raise TypeError(f"no reader for {hint!r}")


def _describe(hint: Any) -> str:
    if _args(hint):
        inner = [_describe(a) for a in _args(hint) if a not in (types.NoneType,)]
        return " or ".join(inner) + (" or null" if _nullable(hint) else "")
    origin = typing.get_origin(hint)
    if origin is list:
        return f"a list of {_describe(typing.get_args(hint)[0])}s"
    if origin is dict:
        return "an object"
    return {str: "text", int: "an integer", float: "a number", bool: "true or false"}.get(hint, str(hint))
