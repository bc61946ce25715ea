"""The guest executor interface.

An executor waits until the guest can take work, runs one workload (warm-up, then the measurement
window) and returns the engine's own output. It tells the runner the exact moments the measurement
window opens and closes through a :class:`WindowListener`, so the host collector measures that window
and nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..core.model import Cell, DiskConfig, Timing
from ..core.scope import GuestEndpoint

if TYPE_CHECKING:
    from ..spec import MatrixSpec


class DriverGate(Protocol):
    """Which controllers' cells a guest can run, as far as its readiness facts tell: the capability an
    executor offers through :meth:`GuestExecutor.driver_gate` (a Windows guest over WinRM reports the
    virtio-win drivers in its driver store). The runner puts first the disk configurations
    :meth:`group_order` sorts first, hands every readiness's facts (also those an error carries) to
    :meth:`learn`, journals a configuration's cells as skipped when :meth:`skip_reason` names why, and
    records :meth:`annotate`'s facts in each cell."""

    def learn(self, facts: Any, where: str) -> None: ...

    def skip_reason(self, controller: str) -> str | None: ...

    def group_order(self, group: tuple[tuple[DiskConfig, int], list[Cell]]) -> bool: ...

    def describe(self) -> dict[str, Any]: ...

    def annotate(self, guest: dict[str, Any]) -> dict[str, Any]: ...


class WindowListener(Protocol):
    def measure_started(self) -> None: ...

    def measure_ended(self) -> None: ...


#: the cell-record keys an executor may set through :attr:`WorkloadResult.record`: what only it knows
#: (many guests' results, their skew, the fio client process), and ``vm``/``times``/``raw``, which it
#: refines (``times`` is merged into the runner's, key by key)
EXECUTOR_RECORD_KEYS = frozenset({"vm", "times", "raw", "clients", "fio_all_clients", "aggregate_check", "skew",
                                  "controller", "noise"})


@dataclass
class WorkloadResult:
    """What the engine produced. ``raw`` is kept verbatim (journaled) so nothing is lost to parsing."""

    engine: str  # "fio" | "diskspd"
    raw: str
    data: dict[str, Any]  # the parsed document (fio JSON / DiskSpd XML as dict)
    guest: dict[str, Any] = field(default_factory=dict)  # guest facts: kernel, device name, fio version
    window_source: str = "guest-marker"  # how the window edges were known: guest-marker | timed
    #: the journal's ``fio`` block when the executor summarised itself (many guests summed); else None
    #: and the runner summarises ``data`` by ``engine``
    summary: dict[str, Any] | None = None
    #: cell-record keys only this executor knows (per-guest results, skew, ...), added to the record;
    #: only the keys of :data:`EXECUTOR_RECORD_KEYS` (the others are the runner's and the window's)
    record: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        foreign = sorted(set(self.record) - EXECUTOR_RECORD_KEYS)
        if foreign:
            raise ValueError(f"a {self.engine} result may not set the cell record's {', '.join(foreign)}: an "
                             f"executor sets only {', '.join(sorted(EXECUTOR_RECORD_KEYS))}")


class GuestExecutor(ABC):
    name: str

    def __init__(self, endpoints: list[GuestEndpoint], options: dict[str, Any] | None = None) -> None:
        self.endpoints = endpoints
        self.options = options or {}

    @classmethod
    def check_spec(cls, spec: MatrixSpec) -> None:
        """Plan-time checks of the matrix that only this executor knows (none by default); raise an
        InputError naming the key and the fix. Called by ``plan`` and ``run`` before any VM is touched."""

    @classmethod
    def driver_gate(cls, spec: MatrixSpec) -> DriverGate | None:
        """The gate that decides, from the guest's facts, which controllers' cells this guest can run;
        None (the default) when this executor's guests need no driver for any controller the matrix
        names, or do not say which they have."""
        return None

    def before_ready(self, cell: Cell) -> None:
        """At each start of the guest(s) (a group's first cell, ``cell``), before :meth:`connect` and
        :meth:`wait_ready`; :meth:`check_ready` comes before each further cell. Nothing here; a suite on a
        fleet power-cycles its workers (``[fleet] power_cycle = "point"``)."""

    def connect(self, deadline: float) -> None:
        """Open the channel to the guest as soon as the backend started it (before :meth:`wait_ready`),
        where the guest announces itself only once. Most executors connect in wait_ready: nothing here."""

    @abstractmethod
    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """Block until the guest takes work or ``deadline`` (time.monotonic) passes; return guest facts."""

    @abstractmethod
    def run(self, cell: Cell, timing: Timing, window: WindowListener) -> WorkloadResult:
        """Run the cell's workload: warm-up for ``timing.ramp_s``, then measure ``timing.measure_s``."""

    #: whether :meth:`run` also comes in three steps (:meth:`send`, :meth:`await_window`, :meth:`collect`), so
    #: that the runner can send the next cell's job before it collects this one's result
    splits: ClassVar[bool] = False

    #: whether :meth:`prepare` can send a cell's job ahead, to a guest that holds it until :meth:`send`
    prepares: ClassVar[bool] = False

    def prepare(self, cell: Cell, timing: Timing) -> None:
        """Send ``cell``'s job ahead; the guest sets it up and holds before its first I/O until :meth:`send`
        (only where :attr:`prepares`)."""
        raise NotImplementedError(f"the {self.name} executor cannot hold a job sent ahead")

    def send(self, cell: Cell, timing: Timing, window: WindowListener) -> None:
        """Hand the cell's job to the guest (only where :attr:`splits`)."""
        raise NotImplementedError(f"the {self.name} executor runs a cell in one step")

    def await_window(self, cell: Cell, window: WindowListener) -> None:
        """Return once the cell's measurement window has closed (only where :attr:`splits`)."""
        raise NotImplementedError(f"the {self.name} executor runs a cell in one step")

    def collect(self, cell: Cell) -> WorkloadResult:
        """The cell's result, after its window closed (only where :attr:`splits`)."""
        raise NotImplementedError(f"the {self.name} executor runs a cell in one step")

    def check_ready(self, cell: Cell) -> None:
        """Before each further cell on the same guest(s): raise GuestNotReady if a guest stopped
        answering. Only executors whose guests can vanish between cells without the backend knowing
        (fio servers the harness did not start) check anything."""

    def close(self) -> None:
        """Release connections. Never raises."""
