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
