"""Guest executors: how a workload runs inside the guest and how its result comes back.

The list of executors is :data:`stormatrix.registry.EXECUTORS`; ``executor_class`` is kept here for
callers that import it from this package.
"""

from __future__ import annotations

from ..registry import EXECUTORS as REGISTRY
from ..registry import executor_class
from .base import GuestExecutor

__all__ = ["REGISTRY", "GuestExecutor", "executor_class"]
