"""The parts of a journal ``cell`` record (docs/journal.md), each a :class:`~stormatrix.core.jsonpart.JsonPart`:
the planned cell (``cell`` with its ``disk`` and ``workload``), ``times``, the ``fio`` summary with its direction
blocks, the ``host`` metrics (a process's, a CPU set's with its ``leak`` and ``on_set``), ``per_mib`` and the
``rate``, ``crosscheck`` and ``clock`` checks; and what a point on many guests adds (its ``clients``, and the flat
:class:`PointInfo`: fio's "All clients", the aggregate check, the guests' skew, the fio client process).

The records that hold them are ``recordtypes.py``'s; what older records lack of a part (a host block's
``cpu_total_source``) is worked out here, where the part is read. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .jsonpart import INT, LIST, NUM, OBJ, STR, JsonPart, P, jfield
from .metrics import host_reason


@dataclass
class DiskPart(JsonPart):
    """``cell.disk``: the disk configuration the cell ran on."""

    controller: str = jfield(STR, required=True)
    aio: str | None = jfield(STR)
    iothread: Any = jfield()      # true/false (older records: any truthy value)
    cache: str | None = jfield()
    bus: str | None = jfield()
    scsihw: str | None = jfield()


@dataclass
class WorkloadPart(JsonPart):
    """``cell.workload``: the fio job the cell ran."""

    name: str | None = jfield()
    rw: str = jfield(STR, required=True)
    bs: int = jfield(INT, required=True)
    iodepth: int = jfield(INT, required=True)
    numjobs: Any = jfield()
    rate_mib_s: float | None = jfield(NUM)
    rwmixread: Any = jfield()


@dataclass
class NamedCellPart(JsonPart):
    """The ``cell`` of a ``cell-error`` or ``cell-skipped`` record: the planned cell as a failed attempt or a
    skipped cell names it, its parts typed as written but none required (the harness writes the whole cell;
    nothing reads more of it than the record's key, and journals in use hold error lines that name only the
    disk and skipped lines with an empty ``cell``)."""

    disk: DiskPart | None = jfield(part=DiskPart)
    workload: WorkloadPart | None = jfield(part=WorkloadPart)
    repeat: int | None = jfield(INT)
    key: str | None = jfield(STR)

    @classmethod
    def of(cls: type[P], cell: Any) -> P:
        """The part for a planned :class:`~stormatrix.core.model.Cell`, as the harness journals it."""
        return cls.parse(cell.to_dict(), f"cell {cell.key}")


@dataclass
class CellPart(NamedCellPart):
    """``cell``: the planned cell (:meth:`stormatrix.core.model.Cell.to_dict`) of a measured cell: its disk,
    workload and repeat are always written, so a ``cell`` record without them is refused."""

    disk: DiskPart = jfield(part=DiskPart, required=True)
    workload: WorkloadPart = jfield(part=WorkloadPart, required=True)
    repeat: int = jfield(INT, required=True)


@dataclass
class Times(JsonPart):
    """``times``: when the cell's stages happened (ISO times) and how long its window was."""

    started: str | None = jfield(STR)
    ready: str | None = jfield()
    measure_start: str | None = jfield()
    measure_end: str | None = jfield()
    finished: str | None = jfield()
    boot_s: float | None = jfield()
    ramp_s: float | None = jfield()
    measure_s: float | None = jfield()
    window_s: float | None = jfield(NUM)
    booted_ahead: bool | None = jfield(omit_none=True)


@dataclass
class Direction(JsonPart):
    """One direction block of the ``fio`` summary (``total``, ``read``, ``write``); a rate that could not be
    computed is None, never 0."""

    io_bytes: float | None = jfield(NUM)
    bw_bytes: float | None = jfield(NUM)
    iops: float | None = jfield(NUM)
    total_ios: float | None = jfield(NUM)
    runtime_ms: float | None = jfield(NUM)
    lat_mean_ns: float | None = jfield(NUM)
    lat_p99_ns: float | None = jfield(NUM)
    clat_p99_ns: float | None = jfield(NUM)


@dataclass
class FioSummary(JsonPart):
    """``fio``: the measurement's figures in one shape, whichever engine produced them."""

    version: Any = jfield()
    jobs: Any = jfield()
    error: Any = jfield()
    usr_cpu: float | None = jfield(NUM)
    sys_cpu: float | None = jfield(NUM)
    ctx: float | None = jfield(NUM)
    read: Direction | None = jfield(part=Direction)
    write: Direction | None = jfield(part=Direction)
    total: Direction = jfield(part=Direction, required=True)
    engine: str | None = jfield(omit_none=True)
    null_reasons: dict[str, Any] | None = jfield(OBJ, omit_none=True)


@dataclass
class ProcessMetrics(JsonPart):
    """The figures every host block has (docs/journal.md, ``host``): a QEMU process's (``host.process``, and
    ``host`` itself under the scope "qemu-process"), or a CPU set's (``host`` under the scope "cpus")."""

    cpu_metric: str | None = jfield()
    cpu_unit: str | None = jfield()
    cpu_total: float | None = jfield(NUM)
    cpu_user: float | None = jfield(NUM)
    cpu_system: float | None = jfield(NUM)
    cycles: dict[str, Any] | None = jfield()
    ctx_switches: float | None = jfield()
    window_s: float | None = jfield(NUM)
    source: str | None = jfield()
    scope: Any = jfield()
    cpu_total_source: str | None = jfield(omit_none=True)
    by_role: Any = jfield(omit_none=True)  # the Linux collector's per-thread split: role -> CPU and switches
    cpu_split_note: Any = jfield(omit_none=True)
    unmatched: Any = jfield(omit_none=True)
    null_reasons: Any = jfield(omit_none=True)

    @classmethod
    def parse(cls: type[P], obj: Mapping[str, Any], where: str, prefix: str = "", *,
              record: str = "the record") -> P:
        """The part; for an older record, ``cpu_total_source`` worked out from what its collector
        (``source``) counted with (not written back: ``to_json`` keeps the record's own keys)."""
        host = super().parse(obj, where, prefix, record=record)
        if isinstance(host, ProcessMetrics) and not isinstance(host.cpu_total_source, str):
            host.cpu_total_source = _older_total_source(host.source, host.cpu_metric)
        return host

    def reason(self, key: str) -> str | None:
        """Why the collector left ``key`` null (its ``null_reasons`` or ``unmatched``)."""
        return host_reason(self.to_json(), key)


@dataclass
class LeakPart(JsonPart):
    """``host.leak`` (scope "cpus"): the window's interrupts and softirqs by kind, on the CPUs outside the measured
    set (``outside``) and on it (``on_set``); ``io_interrupts``/``io_softirqs`` sum the storage path's kinds
    (numbered device interrupt lines; BLOCK, IRQ_POLL, NET_RX, NET_TX, TASKLET). A file the host could not read
    at both edges is null, with the reason in ``null_reasons``."""

    outside_cpus: str | None = jfield(STR)
    interrupts: dict[str, Any] | None = jfield(OBJ)
    softirqs: dict[str, Any] | None = jfield(OBJ)
    io_interrupts: dict[str, Any] | None = jfield(OBJ, omit_none=True)
    io_softirqs: dict[str, Any] | None = jfield(OBJ, omit_none=True)
    null_reasons: dict[str, Any] | None = jfield(OBJ, omit_none=True)

    def escaped_share(self, kind: str = "io_interrupts") -> float | None:
        """The share of the window's storage-path interrupts (or ``io_softirqs``) taken outside the set, or
        None when none were seen (or the file was not read)."""
        counts = getattr(self, kind)
        if not isinstance(counts, dict):
            return None
        total = (counts.get("outside") or 0) + (counts.get("on_set") or 0)
        return (counts.get("outside") or 0) / total if total else None


@dataclass
class OnSetTask(JsonPart):
    """One entry of ``host.on_set``: a process other than the measured QEMU that ran on the set in the window."""

    pid: int | None = jfield(INT)
    comm: str | None = jfield(STR)
    cpu_s: float | None = jfield(NUM)


@dataclass
class HostMetrics(ProcessMetrics):
    """``host``: what the host collector measured over the window (docs/journal.md, ``host``); a collector's
    own extras (``threads``, ``perf``, ``cpu_stat``...) stay in ``rest``. Under the scope "cpus" the figures
    are the set's, the QEMU process's are ``process`` (same keys), with ``cpus``, ``leak`` and ``on_set``."""

    cpus: str | None = jfield(STR, omit_none=True)
    process: ProcessMetrics | None = jfield(part=ProcessMetrics, omit_none=True)
    leak: LeakPart | None = jfield(part=LeakPart, omit_none=True)
    on_set: list[OnSetTask] | None = jfield(LIST, part=OnSetTask, omit_none=True)

    @property
    def measured_cpus(self) -> bool:
        """The figures are a CPU set's (scope "cpus"), not a process's."""
        return self.scope == "cpus"


@dataclass
class PerMib(JsonPart):
    """``per_mib``: host cost per MiB moved (:func:`stormatrix.core.metrics.per_mib`, the one definition)."""

    mib: float | None = jfield(NUM)
    cpu: float | None = jfield(NUM)
    cpu_unit: str | None = jfield()
    ctx: float | None = jfield(NUM)


@dataclass
class RateCheck(JsonPart):
    """``rate``: did a fixed-rate cell run at its rate (``stormatrix.records.rate_check``)."""

    target_mib_s: float | None = jfield(NUM)
    achieved_mib_s: float | None = jfield(NUM)
    miss_pct: float | None = jfield()
    tolerance_pct: float | None = jfield()
    missed: bool | None = jfield()
    overshot: bool | None = jfield(omit_none=True)


@dataclass
class CrossCheck(JsonPart):
    """``crosscheck``: fio's bytes against QEMU's own count for the test disk."""

    fio_bytes: float | None = jfield()
    qemu_bytes: float | None = jfield()
    qemu_read_bytes: float | None = jfield(omit_none=True)
    qemu_write_bytes: float | None = jfield(omit_none=True)
    tolerance_pct: float | None = jfield()
    diff_pct: float | None = jfield()
    flag: bool | None = jfield()


@dataclass
class ClockCheck(JsonPart):
    """``clock``: fio's runtime (the guest's clock) against the host's window."""

    fio_runtime_s: float | None = jfield()
    host_window_s: float | None = jfield()
    diff_pct: float | None = jfield()
    flag: bool | None = jfield()


def _older_total_source(source: Any, metric: str | None) -> str | None:
    """What an older record's ``cpu_total`` counted, from its collector's ``source``."""
    source = str(source or "")
    if metric == "cycles":
        return "perf cycles:u + cycles:k" if "perf" in source else None
    return "perf task-clock (ns)" if source == "perf+proc" else \
        "/proc/PID/stat utime + stime (clock ticks)" if source == "proc" else None


# --- what a point on many guests adds (the fio-server executor, a suite) --------------------------


@dataclass
class ClientWindow(JsonPart):
    """``clients[].window``: one guest's measurement window in unix ms, from its fio IOPS log."""

    start_ms: float | None = jfield(NUM)
    end_ms: float | None = jfield(NUM)
    last_sample_ms: float | None = jfield(NUM)
    samples: int | None = jfield(INT)


@dataclass
class ClientPart(JsonPart):
    """One guest of a multi-guest point (``clients[]``; a ``cell-error``'s ``partial_clients[]``): its name
    and address, what it measured (the shape of ``fio``) and its own window."""

    name: str | None = jfield(STR)
    host: str | None = jfield(STR)
    port: int | None = jfield(INT)
    fio: FioSummary | None = jfield(part=FioSummary)
    window: ClientWindow | None = jfield(part=ClientWindow)


@dataclass
class AggregateCheck(JsonPart):
    """``aggregate_check``: the guests' summed counts against fio's own "All clients" entry."""

    match: bool | None = jfield()
    clients: int | None = jfield(INT)
    fio_all_clients: Any = jfield()
    rule: str | None = jfield(STR)
    read: dict[str, Any] | None = jfield(OBJ)
    write: dict[str, Any] | None = jfield(OBJ)
    total: dict[str, Any] | None = jfield(OBJ)


@dataclass
class Skew(JsonPart):
    """``skew``: how far apart the guests' windows started and ended."""

    source: str | None = jfield(STR)
    clients_dated: int | None = jfield(INT)
    start_skew_s: float | None = jfield(NUM)
    end_skew_s: float | None = jfield(NUM)
    first_start_ms: float | None = jfield(NUM)
    last_start_ms: float | None = jfield(NUM)
    overlap_s: float | None = jfield(NUM)


@dataclass
class ClientProcess(JsonPart):
    """``controller``: the one fio client process that drove every guest."""

    returncode: int | None = jfield(INT)
    timed_out: bool | None = jfield()
    elapsed_s: float | None = jfield(NUM)
    user_s: float | None = jfield(NUM)
    system_s: float | None = jfield(NUM)
    cpu_s: float | None = jfield(NUM)
    max_rss_kib: float | None = jfield(NUM)


@dataclass
class PointInfo(JsonPart):
    """What a point on many guests adds to its ``cell`` record, beside the record's own keys (flat): the
    fio-server executor's ``fio_all_clients``, ``aggregate_check``, ``skew``, ``controller`` and ``noise``,
    and a suite's name (``suite``; docs/journal.md, Suite points)."""

    fio_all_clients: FioSummary | None = jfield(part=FioSummary)
    aggregate_check: AggregateCheck | None = jfield(part=AggregateCheck)
    skew: Skew | None = jfield(part=Skew)
    controller: ClientProcess | None = jfield(part=ClientProcess)
    noise: list[Any] | None = jfield(LIST)
    suite: str | None = jfield(STR)
