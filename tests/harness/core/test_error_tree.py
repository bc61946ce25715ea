"""One error tree: every error stormatrix raises on purpose is a class of ``core/errors.py``, with one
parent, drawn in that module's docstring where the code has it; what it carries is typed
(:class:`~stormatrix.core.errors.ErrorDetails`)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import stormatrix
from stormatrix.core import errors
from stormatrix.core.errors import ErrorDetails, StormatrixError, WorkloadFailed

#: signals that never reach a user, named in the tree's docstring as outside it
INTERNAL = {"TooLarge", "CollectorProblem", "_ConnectError", "Terminated", "OutputFailed"}


def all_modules() -> list[str]:
    names = ["stormatrix"]
    for info in pkgutil.walk_packages(stormatrix.__path__, "stormatrix."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return names


def drawn_tree() -> dict[str, str | None]:
    """class -> parent, read from the drawing in core/errors.py's docstring."""
    doc = errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in doc.split("::", 1)[1].splitlines():
        m = re.match(r"^ {4}((?:[│ ] {3})*)(?:[├└]── )?([A-Z]\w+)", line)
        if not m:
            continue
        depth = len(m.group(1)) // 4 + (1 if ("├" in line or "└" in line) else 0)
        name = m.group(2)
        del stack[depth:]
        parents[name] = stack[-1] if stack else None
        stack.append(name)
    return parents


def error_classes_outside_core() -> list[str]:
    outside: list[str] = []
    for name in all_modules():
        module = importlib.import_module(name)
        for cls_name, cls in vars(module).items():
            if (inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == name
                    and name != errors.__name__ and cls_name not in INTERNAL):
                outside.append(f"{name}.{cls_name}")
    return outside


def test_every_error_class_is_in_core_errors_with_one_parent() -> None:
    assert error_classes_outside_core() == []
    for cls_name, cls in vars(errors).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == errors.__name__:
            assert len(cls.__bases__) == 1, f"{cls_name} has {len(cls.__bases__)} parents"


def test_an_error_class_elsewhere_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix import qmp

    stray = type("StrayError", (StormatrixError,), {"__module__": "stormatrix.qmp"})
    monkeypatch.setattr(qmp, "StrayError", stray, raising=False)
    assert error_classes_outside_core() == ["stormatrix.qmp.StrayError"]


def test_the_drawing_is_the_code() -> None:
    drawn = drawn_tree()
    coded = {n: (c.__bases__[0].__name__ if c is not StormatrixError else None)
             for n, c in vars(errors).items()
             if inspect.isclass(c) and issubclass(c, StormatrixError)}
    assert drawn == coded


def test_the_drawing_reader_sees_a_wrong_parent() -> None:
    """The reader above is not blind: moving one line of the drawing changes what it reads."""
    doc = errors.__doc__ or ""
    moved = doc.replace("    │   ├── TaskFailed", "    ├── TaskFailed", 1)
    assert moved != doc
    original = errors.__doc__
    try:
        errors.__doc__ = moved
        assert drawn_tree()["TaskFailed"] == "StormatrixError"
    finally:
        errors.__doc__ = original
    assert drawn_tree()["TaskFailed"] == "BackendError"


def test_internal_signals_are_named_in_the_docstring() -> None:
    for name in INTERNAL:
        assert name in (errors.__doc__ or "")


def test_details_are_typed_fields() -> None:
    exc = WorkloadFailed("fio failed", cell="c1", exit_status=3, stderr="boom", guests=["vm2"])
    assert exc.details.exit_status == 3 and exc.details.guests == ["vm2"]
    assert exc.details.set_fields() == {"exit_status": 3, "stderr": "boom", "guests": ["vm2"]}
    with pytest.raises(TypeError):
        WorkloadFailed("x", exit_code=3)  # not a field: a typo fails where it is made
    again = WorkloadFailed("again", details=exc.details, stderr="other")
    assert again.details.exit_status == 3 and again.details.stderr == "other" and exc.details.stderr == "boom"
    assert ErrorDetails().set_fields() == {}
