"""Fixtures every test folder shares.

Stand-ins (a fake VM backend, a fake guest executor) take a name in the one registry
(:data:`stormatrix.registry.BACKENDS`, :data:`~stormatrix.registry.EXECUTORS`) through :func:`use_backend`
and :func:`use_executor`, for one test only: the entry is put back when the test ends, and a target
that does not load fails the test at once, not later inside the runner.
"""

from __future__ import annotations

import importlib
from typing import Callable

import pytest

from stormatrix import registry


def _register(monkeypatch: pytest.MonkeyPatch, table: dict[str, str], name: str, target: str) -> None:
    module, sep, attr = target.partition(":")
    if not sep or not attr:
        raise ValueError(f"{target!r} is not 'module:Class'")
    if not hasattr(importlib.import_module(module), attr):
        raise ValueError(f"{module} has no {attr}")
    monkeypatch.setitem(table, name, target)


@pytest.fixture
def use_backend(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """``use_backend("qemu", "standins.agent:FakeVmBackend")``: the matrix's backend name runs the stand-in."""
    return lambda name, target: _register(monkeypatch, registry.BACKENDS, name, target)


@pytest.fixture
def use_executor(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """``use_executor("winrm", "standins.agent:FakeWinRMExecutor")``: the matrix's executor runs the stand-in."""
    return lambda name, target: _register(monkeypatch, registry.EXECUTORS, name, target)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every workbook the session wrote (under its temporary folders) passes Microsoft's Open XML SDK
    validator (tests/openxmlcheck.py): Excel "repairs" a file whose parts break the schema's sequence, and
    LibreOffice, which the render tests use, does not tell. An error fails the session, naming the file, the
    part, the element and the description."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR):
        return
    try:
        base = factory.getbasetemp()
    except (OSError, ValueError):
        return
    import openxmlcheck  # (tests/ is on sys.path)

    books = sorted(p for p in base.rglob("*.xlsx") if p.is_file() and openxmlcheck.is_package(p))
    if not books:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    if reporter is not None:
        reporter.write("\n")  # after the last progress dots, so the summary lines start lines of their own
    try:
        errors = openxmlcheck.validate(books)
    except RuntimeError as exc:
        say(f"openxml-check: FAILED: {exc}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    for err in errors[:200]:
        say(f"openxml-check: {err}")
    if len(errors) > 200:
        say(f"openxml-check: ... and {len(errors) - 200} more")
    say(f"openxml-check: {len(books)} workbook(s) the tests wrote, {len(errors)} error(s) "
        "(Open XML SDK 3.3.0, Office 2016 rules)")
    if errors:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
