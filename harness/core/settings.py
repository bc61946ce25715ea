"""What the runner reads of a run: :class:`RunSettings`, produced by a matrix and by a suite alike.

A matrix file (:class:`stormatrix.spec.MatrixSpec`, which is a ``RunSettings`` with its grid added) and a
suite (:meth:`stormatrix.suite.Suite.settings`) both give the runner the same few things: where the file
is (for messages), its validated ``[run]`` keys (name, executor, warm-up and window, ``allow_write``,
timeouts, retries and ``on_error``, order, seed and repeat policy, tolerances) and the file as the run
record journals it. Nothing else of a matrix is the runner's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import Timing


@dataclass(frozen=True)
class RunSettings:
    path: str
    run: dict[str, Any]  # the validated [run] keys, defaults filled in
    raw: dict[str, Any] = field(default_factory=dict)  # the file as read, journaled in the run record

    @property
    def name(self) -> str:
        return str(self.run["name"])

    @property
    def timing(self) -> Timing:
        return Timing(self.run["ramp_seconds"], self.run["measure_seconds"])
