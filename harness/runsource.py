"""What a run is of, how it is run, and what it gives back: the runner's three arguments and its result.

A :class:`RunSource` says what a run is of (its settings, plan, backend, executor, failure policy, what its records
add): :class:`MatrixSource` for a matrix file, :class:`stormatrix.suiterun.SuiteSource` for a suite's side.
:class:`RunOptions` is how the command line labels and shows a run, and the stand-ins a test hands in.
:class:`RunSummary` is what :meth:`stormatrix.runner.Runner.run` returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from .backends.base import Backend, Target, plans_boot_ahead, plans_restore
from .cells import expand
from .core.errors import AuthenticationFailed, UnsafeWrite
from .core.model import Plan
from .core.recordtypes import Record, RunRecord
from .core.scope import GuestEndpoint
from .core.settings import RunSettings
from .executors.base import DriverGate, GuestExecutor
from .progress import DEFAULT_OVERHEAD_S
from .registry import backend_class, executor_class, matrix_executor
from .resume import check_same_run, run_differences
from .spec import MatrixSpec


@dataclass(frozen=True)
class RunPolicy:
    """How failures end a run, beyond ``[run] retries`` and ``on_error``.

    ``stop_on``: errors after which nothing later can be measured comparably, so the run ends at
    once, whatever ``on_error`` says (a suite's guest that dropped out: points on fewer guests are
    not comparable). ``never_retry``: errors that trying again cannot cure.
    """

    stop_on: tuple[type[BaseException], ...] = ()
    never_retry: tuple[type[BaseException], ...] = (UnsafeWrite, AuthenticationFailed)


@dataclass(frozen=True)
class RunOptions:
    """How a run is labelled and shown (``side``, ``progress``, ``stream``: all the command line gives), and
    the stand-ins a test hands in for the source's own parts (``backend``, ``collector_factory``: the host
    collector per scope, ``executor_factory``)."""

    side: str | None = None
    progress: bool = True
    stream: TextIO | None = None  # default: sys.stderr, bound when the run starts
    backend: Target | None = None
    collector_factory: Callable[[Any], Any] | None = None
    executor_factory: Callable[[list[GuestEndpoint]], GuestExecutor] | None = None


class RunSource(ABC):
    """What a run is of: its settings, its plan, the backend and executor that measure it, and what its
    journal's records add. The runner asks, in this order: :meth:`check_resume` (before anything is
    appended), :meth:`plan`, :meth:`make_backend` (unless a test hands one in), the backend's ``prepare()``,
    :meth:`run_fields` for the run record, then per VM start :meth:`make_executor`, and per cell record
    :meth:`cell_fields`."""

    settings: RunSettings
    #: the backend class the run uses (its controllers, for the plan; tests patch its methods)
    backend_cls: type[Target]
    policy: RunPolicy = RunPolicy()
    #: seconds per VM start beyond warm-up and window, for the ETA
    overhead_s: float = DEFAULT_OVERHEAD_S

    @abstractmethod
    def check_resume(self, records_before: list[Record], run_dir: Path, side: str | None) -> None:
        """Refuse (MatrixError) to resume into a journal this run does not belong in (``records_before``: the
        journal's records as their types)."""

    @abstractmethod
    def plan(self) -> Plan: ...

    @abstractmethod
    def make_backend(self, run_dir: Path) -> Target: ...

    @abstractmethod
    def make_executor(self, backend: Target) -> GuestExecutor: ...

    def driver_gate(self) -> DriverGate | None:
        """The executor's gate on the guest's drivers (a Windows guest's virtio-win), if it has one."""
        return None

    def make_executor_for(self, endpoints: list[GuestEndpoint]) -> GuestExecutor | None:
        """An executor on guests other than the backend's current VM's (a VM booted ahead, to send it its first
        job ahead); None where this source has none (then no job is sent ahead)."""
        return None

    def boots_ahead(self) -> bool:
        """Will the backend boot each next VM during the current cell (for the ETA)?"""
        return False

    def restores(self) -> bool:
        """Will the backend start VMs from saved booted states (for the ETA)?"""
        return False

    def run_fields(self, backend: Target) -> dict[str, Any]:
        """What the run record adds (after the backend's ``prepare()``): docs/journal.md."""
        return {}

    def cell_fields(self) -> dict[str, Any]:
        """What every cell record adds."""
        return {}


class MatrixSource(RunSource):
    """A matrix file: its cells expanded from the grid on the backend its ``[run]`` names, run by the executor
    it names (``auto``: the backend's default)."""

    backend_cls: type[Backend]  # a matrix runs on a backend (a suite's side: on guests, SuiteSource)

    def __init__(self, spec: MatrixSpec, *, backend_cls: type[Backend] | None = None) -> None:
        self.spec = spec
        self.settings = spec
        self.backend_cls = backend_cls or backend_class(spec.run["backend"])

    def check_resume(self, records_before: list[Record], run_dir: Path, side: str | None) -> None:
        def differences(rec: RunRecord) -> list[str]:
            return run_differences(rec.matrix, self.settings.raw) if isinstance(rec.matrix, dict) else []

        check_same_run(records_before, self.spec, run_dir, side=side, kind="matrix", differences=differences)

    def plan(self) -> Plan:
        self.backend_cls.host(self.spec)  # [host]: a scope or CPU set this backend cannot measure stops here
        return expand(self.spec, backend_controllers=self.backend_cls.controllers)

    def make_backend(self, run_dir: Path) -> Backend:
        return self.backend_cls(self.spec, run_dir)

    def executor_name(self) -> str:
        return matrix_executor(self.spec, self.backend_cls)

    def executor_class(self) -> type[GuestExecutor]:
        return executor_class(self.executor_name())

    def make_executor(self, backend: Target) -> GuestExecutor:
        return self.make_executor_for(backend.endpoints())

    def make_executor_for(self, endpoints: list[GuestEndpoint]) -> GuestExecutor:
        name = self.executor_name()
        return executor_class(name)(endpoints, self.settings.raw.get(name, {}))

    def boots_ahead(self) -> bool:
        return plans_boot_ahead(self.backend_cls, self.spec)

    def restores(self) -> bool:
        return plans_restore(self.backend_cls, self.spec)

    def driver_gate(self) -> DriverGate | None:
        return self.executor_class().driver_gate(self.spec)


@dataclass
class RunSummary:
    """What a run did (:meth:`stormatrix.runner.Runner.run`): the cells of its plan, those already in the journal,
    those measured now (extra repeats among them), given up on, skipped for a missing driver, and the extra repeats
    the time budget left out. The journal holds the measurements; this is what the command prints."""

    run_dir: str
    run_id: str
    cells: int  # the plan's cells
    order: str  # "rounds" or "grouped"
    seed: int
    already_done_keys: list[str] = field(default_factory=list)
    measured_keys: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # keys of the cells given up on
    errors: list[tuple[str, str]] = field(default_factory=list)  # (key, message) of each cell given up on
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (configuration, why) the plan skipped
    driver_skipped: list[tuple[str, str]] = field(default_factory=list)  # (key, why): the guest lacks the driver
    extra_repeats: list[str] = field(default_factory=list)  # keys of the extra repeats measured
    extra_not_run: str = ""  # why extra repeats still wanted were not run (the time budget), "" if none
    extra_not_run_keys: list[str] = field(default_factory=list)

    @property
    def measured(self) -> int:
        return len(self.measured_keys)

    @property
    def already_done(self) -> int:
        return len(self.already_done_keys)
