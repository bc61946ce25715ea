"""Every key a matrix or suite file can hold, as Markdown tables, from the sections the code reads the files
with (the spec's [run], [matrix], [[workload]]; each registered backend's and executor's section; [suite];
each platform's [fleet]). docs/matrix.md holds this text between its two `keys` markers, and
tests/test_docs.py fails when the two differ, so the reference cannot drift from the code.

    .venv/bin/python scripts/matrix_keys.py            # print the tables
    .venv/bin/python scripts/matrix_keys.py --write    # put them into docs/matrix.md
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "matrix.md"
BEGIN, END = "<!-- keys:begin (scripts/matrix_keys.py --write) -->", "<!-- keys:end -->"


def fleet_sections() -> dict[str, Any]:
    """Each platform's [fleet] section, found in its backend's package whatever module holds it."""
    import stormatrix.backends as backends
    from stormatrix.schema import Section

    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(backends.__path__, "stormatrix.backends."):
        module = importlib.import_module(info.name)
        platform = info.name.split(".")[2]
        for value in vars(module).values():
            if isinstance(value, Section) and value.name == "fleet" and value.fields.get("backend"):
                found[platform] = value
    return dict(sorted(found.items()))


def sections() -> list[tuple[str, Any]]:
    from stormatrix import registry, spec

    from stormatrix.schema import Section

    out: list[tuple[str, Any]] = [("[run]", spec.RUN_SECTION), ("[matrix]", spec.MATRIX_SECTION),
                                  ("[[workload]]", spec.WORKLOAD_SECTION)]
    # any other section the spec itself reads (e.g. [host]), wherever it is declared there
    listed = {id(section) for _, section in out}
    out += [(f"[{v.name}]", v) for v in vars(spec).values() if isinstance(v, Section) and id(v) not in listed]
    out += [(f"[{name}]", section) for name, section in registry.sections().items()]
    out += [(f"[fleet], backend = \"{platform}\"", section)
            for platform, section in fleet_sections().items()]
    return out


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _type(field: Any) -> str:
    types = field.type if isinstance(field.type, tuple) else (field.type,)
    name = " or ".join({"str": "text", "int": "integer", "float": "number", "bool": "true/false",
                        "dict": "table"}.get(t.__name__, t.__name__) for t in types)
    return f"list of {name}" if field.list_of else name


def _number(x: float) -> str:
    if x == 2**63 - 1:
        return "2^63 - 1"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _allowed(field: Any) -> str:
    if field.choices:
        return ", ".join(_value(c) for c in field.choices)
    if field.min is not None or field.max is not None:
        lo = "" if field.min is None else _number(field.min)
        hi = "" if field.max is None else _number(field.max)
        return f"{lo} to {hi}" if lo and hi else (f">= {lo}" if lo else f"<= {hi}")
    return ""


def tables() -> str:
    lines: list[str] = []
    for title, section in sections():
        lines += [f"### {title}", "", "| key | type | default | allowed | what it is | a resume may change it |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for key, field in section.fields.items():
            default = "required" if field.required else ("none" if field.default is None else _value(field.default))
            text = " ".join(field.help.split()).replace("|", "\\|")
            resume = "yes" if key in section.may_change_on_resume else ""
            lines.append(f"| `{key}` | {_type(field)} | {default.replace('|', chr(92) + '|')} | "
                         f"{_allowed(field).replace('|', chr(92) + '|')} | {text} | {resume} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def embedded(doc: str) -> str:
    return doc.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the tables in docs/matrix.md")
    args = parser.parse_args()
    text = tables()
    if not args.write:
        sys.stdout.write(text)
        return 0
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n\n" + text + "\n" + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
