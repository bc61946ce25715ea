"""A journal line's JSON object as a typed dataclass: :class:`JsonPart` and its fields (:func:`jfield`), the
one mapping every record and part of ``recordtypes.py`` and ``cellparts.py`` is made with.

A part has:

- ``to_json()``: the JSON object that is journaled, key for key the one the harness has always written;
- ``parse(obj, where)``: a JSON object back as the type. A field of the wrong kind, or a ``required`` one (a key
  the harness always writes, never null) missing or null, raises :class:`~stormatrix.core.errors.DataFileError`
  naming ``where`` (``file:line``), the dotted key and the fix.

A *flat* part (``flat=True``) has no key of its own: its keys sit beside its owner's, read when any of them is
there. A part keeps the keys it does not type in ``rest`` (a collector's extras, a newer version's keys). A part
read from a JSON object remembers its keys and their order (``keys``), so ``to_json(parse(obj)) == obj`` for
every object, and a part the harness makes from its own dict is written as that dict was; one the harness
builds field by field (``keys`` None) is written in the order its fields are declared, then ``rest``.
Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, TypeVar

from .errors import DataFileError

EDITED_FIX = "use the unedited journal of the run, or remove this line (the other lines stay usable)"

# What a field holds (as a wrong value is described), checked by from_json with KIND_TESTS
NUM, INT, STR, OBJ, LIST, ANY = "a number", "an integer", "a string", "an object", "a list", "any"


def is_number(value: Any) -> bool:
    """A real number (JSON's true/false are not measurements)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


KIND_TESTS: dict[str, Any] = {
    NUM: is_number,
    INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    STR: lambda v: isinstance(v, str),
    OBJ: lambda v: isinstance(v, dict),
    LIST: lambda v: isinstance(v, list),
    ANY: lambda v: True,
}


def jfield(kind: str = ANY, *, part: type | None = None, omit_none: bool = False, flat: bool = False,
           required: bool = False) -> Any:
    """A typed JSON field (its JSON key is its name): its kind, its nested part type (with ``kind`` ``LIST``: a
    list of such parts), and whether the harness leaves the key out when the value is None. A ``flat`` part is
    no key of its own: its keys sit beside the record's (a suite's additions to a run or cell record), read
    when any of them is there and written in its place. A ``required`` field is one the harness always writes
    with a value: a line without it (or with null) is refused naming the key, so a reader of the type never
    checks it for None (an older journal that lacks one is upgraded first: ``recordupgrades.py``)."""
    return field(default=None, metadata={"kind": kind, "part": part, "omit_none": omit_none, "flat": flat,
                                         "required": required})


P = TypeVar("P", bound="JsonPart")


@dataclass
class JsonPart:
    """A JSON object with typed fields; the keys it does not type stay in ``rest``, in their order."""

    #: the JSON keys the type writes before its fields (a record's ``schema`` and ``type``)
    HEAD: ClassVar[dict[str, str]] = {}
    #: the keys the type does not type, in their order (a collector's or an executor's own, a suite's)
    rest: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: the keys of the line it was read from, in their order; None for a part the harness built
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False, kw_only=True)

    def _typed(self) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(self) if "kind" in f.metadata]

    def given(self, key: str) -> bool:
        """Whether the JSON has ``key``: always for a part the harness built, else as the line had it."""
        return self.keys is None or key in self.keys

    def to_json(self) -> dict[str, Any]:
        """What is journaled: the typed fields (nested parts as their JSON), then ``rest``."""
        out: dict[str, Any] = dict(self.HEAD)
        for f in self._typed():
            value = getattr(self, f.name)
            if f.metadata["flat"]:
                out.update(value.to_json() if value is not None else {})
                continue
            if value is None and f.metadata["omit_none"]:
                continue
            if isinstance(value, JsonPart):
                value = value.to_json()
            elif f.metadata["part"] is not None and isinstance(value, list):
                value = [v.to_json() for v in value]
            out[f.name] = value
        out.update(self.rest)
        if self.keys is None:
            return out
        # as the line had them: a value worked out for an older line (its engine) stays out
        return {k: out.get(k) for k in self.keys}

    @classmethod
    def parse(cls: type[P], obj: Mapping[str, Any], where: str, prefix: str = "", *,
              record: str = "the record") -> P:
        """The part from a JSON object; a typed field of the wrong kind, or a required one missing, raises
        DataFileError naming its key (``record``: what the line is, as the message names it: "cell record")."""
        values: dict[str, Any] = {}
        missing: list[str] = []  # the required keys the object lacks (or has as null), dotted
        typed: set[str] = set(cls.HEAD)
        for f in dataclasses.fields(cls):
            if "kind" not in f.metadata:
                continue
            part: type[JsonPart] | None = f.metadata["part"]
            if f.metadata["flat"]:
                assert part is not None
                own = {k: v for k, v in obj.items() if k in part.json_keys()}
                typed |= part.json_keys()
                if own:
                    values[f.name] = part.parse(own, where, prefix, record=record)
                continue
            key = f.name
            typed.add(key)
            if obj.get(key) is None:
                missing += [prefix + key] if f.metadata["required"] else []
                continue
            value, dotted = obj[key], prefix + key
            if part is not None and f.metadata["kind"] == LIST:
                value = part.parse_list(value, where, dotted, record=record)
            elif part is not None:
                value = part.parse(_object(value, dotted, where), where, dotted + ".", record=record)
            elif not KIND_TESTS[f.metadata["kind"]](value):
                raise DataFileError(where, f"'{dotted}' is {value!r}, not {f.metadata['kind']}", EDITED_FIX)
            values[f.name] = value
        if missing:  # after the kinds: a wrong value is named before a key the line lacks
            raise DataFileError(where, f"{record} has no '{missing[0]}'", EDITED_FIX)
        rest = {k: v for k, v in obj.items() if k not in typed}
        return cls(**values, rest=rest, keys=tuple(obj))

    @classmethod
    def parse_list(cls: type[P], value: Any, where: str, dotted: str, *, record: str = "the record") -> list[P]:
        """A JSON list of such parts (``dotted``: its key); anything else raises DataFileError naming it."""
        if not isinstance(value, list):
            raise DataFileError(where, f"'{dotted}' is {value!r}, not a list", EDITED_FIX)
        return [cls.parse(_object(item, f"{dotted}[{i}]", where), where, f"{dotted}[{i}].", record=record)
                for i, item in enumerate(value)]

    def keep_keys(self, obj: Mapping[str, Any]) -> None:
        """Take the keys (and their order) of ``obj``, the line as it was written, for this part and every part
        in it: a part read from an upgraded copy of the line (``recordupgrades.py``) is written as the line was,
        without what the upgrade worked out."""
        self.keys = tuple(obj)
        for f in self._typed():
            value, part = getattr(self, f.name), f.metadata["part"]
            if f.metadata["flat"]:
                if value is not None:
                    value.keep_keys({k: v for k, v in obj.items() if k in part.json_keys()})
            elif isinstance(value, JsonPart) and isinstance(obj.get(f.name), dict):
                value.keep_keys(obj[f.name])
            elif isinstance(value, list) and part is not None and isinstance(obj.get(f.name), list):
                for item, given in zip(value, obj[f.name]):
                    if isinstance(item, JsonPart) and isinstance(given, dict):
                        item.keep_keys(given)

    @classmethod
    def json_keys(cls) -> frozenset[str]:
        """The JSON keys the type reads into its fields (a flat part's own included)."""
        keys: set[str] = set()
        for f in dataclasses.fields(cls):
            if "kind" in f.metadata:
                keys |= f.metadata["part"].json_keys() if f.metadata["flat"] else {f.name}
        return frozenset(keys)


def _object(value: Any, dotted: str, where: str) -> Mapping[str, Any]:
    """A nested part's JSON: an object, else DataFileError naming its key."""
    if not isinstance(value, dict):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not an object", EDITED_FIX)
    return value
