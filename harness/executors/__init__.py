"""Guest executors: how a workload runs inside the guest and how its result comes back."""

from __future__ import annotations

import importlib

from .base import GuestExecutor

REGISTRY: dict[str, str] = {
    "local-agent": "stormatrix.executors.localagent:LocalAgentExecutor",
    "winrm": "stormatrix.executors.winrm:WinRMExecutor",
    "fio-server": "stormatrix.executors.fioserver:FioServerExecutor",
}


def executor_class(name: str) -> type[GuestExecutor]:
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), cls)
