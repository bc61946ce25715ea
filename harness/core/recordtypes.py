"""The journal's record types (docs/journal.md), defined once: what the harness writes and analysis reads.

Each record (``run``, ``cell``, ``cell-error``, ``cell-skipped``, ``restored``) and each nested part a
reader uses (a cell's ``cell``, ``times``, ``fio`` summary with its direction blocks, ``host`` metrics,
``per_mib``, the ``rate``, ``crosscheck`` and ``clock`` checks) is a dataclass here with:

- ``to_json()``: the JSON object that is journaled, key for key the one the harness has always written;
- ``from_json(obj, where)``: a journal line's object back as the type, for every journal a stormatrix
  wrote, older ones included. A field of the wrong type, or a required one missing, raises
  :class:`~stormatrix.core.errors.DataFileError` naming ``where`` (``file:line``), the dotted key and the
  fix. What older records lack is worked out here, in one place: a cell's ``engine`` (from ``raw.engine``,
  else fio) and what its ``host.cpu_total`` counted (``cpu_total_source``, from the collector's ``source``).

What a suite adds sits beside a record's own keys and is typed as a *flat* part (``flat=True``: no key of its
own, read when any of its keys is there): a run record's :class:`SuiteInfo` (``RunRecord.suite_info``) and a
multi-guest point's :class:`PointInfo` (``CellRecord.point_info``); a point's ``clients`` are a list of
:class:`ClientPart`. A part keeps the keys it does not type in ``rest`` (a collector's extras, a newer
version's keys). A part read from a JSON object remembers its keys and their order (``keys``), so
``to_json(from_json(line)) == line`` for every line, and a part the harness makes from its own dict (the fio
summary, the host block, the checks, a suite's additions) is written as that dict was; a record the harness
builds field by field (``keys`` None) is written in the order its fields are declared, then ``rest`` — the
order the harness always wrote, except that a suite point's ``extra_repeat`` now comes before its executor's
and the suite's keys. ``stormatrix.records`` builds these types, the runner journals ``to_json()``,
``stormatrix.analysis.read.journalrows`` maps ``from_json()`` to tidy rows, and the runner's resume (with ``suite
run`` and ``restore``) reads every line with :func:`resume_record`: the same types without a cell's
measurement checks. Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, TypeVar

from .errors import DataFileError
from .journalfile import CELL, CELL_ERROR, CELL_SKIPPED, RESTORED, RUN, SCHEMA
from .metrics import CPU_PER_MIB_UNIT, MIB, host_reason, per_mib
from .model import disk_options_apply

EDITED_FIX = "use the unedited journal of the run, or remove this line (the other lines stay usable)"
ENGINES = ("fio", "diskspd")

# What a field holds (as a wrong value is described), checked by from_json with _TESTS
_NUM, _INT, _STR, _OBJ, _LIST, _ANY = "a number", "an integer", "a string", "an object", "a list", "any"


def _is_number(value: Any) -> bool:
    """A real number (JSON's true/false are not measurements)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TESTS: dict[str, Any] = {
    _NUM: _is_number,
    _INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    _STR: lambda v: isinstance(v, str),
    _OBJ: lambda v: isinstance(v, dict),
    _LIST: lambda v: isinstance(v, list),
    _ANY: lambda v: True,
}


def _f(kind: str = _ANY, *, part: type | None = None, omit_none: bool = False, flat: bool = False) -> Any:
    """A typed JSON field (its JSON key is its name): its kind, its nested part type (with ``kind`` ``_LIST``: a
    list of such parts), and whether the harness leaves the key out when the value is None. A ``flat`` part is
    no key of its own: its keys sit beside the record's (a suite's additions to a run or cell record), read
    when any of them is there and written in its place."""
    return field(default=None, metadata={"kind": kind, "part": part, "omit_none": omit_none, "flat": flat})


P = TypeVar("P", bound="JsonPart")


@dataclass
class JsonPart:
    """A JSON object with typed fields; the keys it does not type stay in ``rest``, in their order."""

    #: the JSON keys the type writes before its fields (a record's ``schema`` and ``type``)
    HEAD: ClassVar[dict[str, str]] = {}
    #: the keys the type does not type, in their order (a collector's or an executor's own, a suite's)
    rest: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: the keys of the line it was read from, in their order; None for a part the harness built
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False, kw_only=True)

    def _typed(self) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(self) if "kind" in f.metadata]

    def given(self, key: str) -> bool:
        """Whether the JSON has ``key``: always for a part the harness built, else as the line had it."""
        return self.keys is None or key in self.keys

    def to_json(self) -> dict[str, Any]:
        """What is journaled: the typed fields (nested parts as their JSON), then ``rest``."""
        out: dict[str, Any] = dict(self.HEAD)
        for f in self._typed():
            value = getattr(self, f.name)
            if f.metadata["flat"]:
                out.update(value.to_json() if value is not None else {})
                continue
            if value is None and f.metadata["omit_none"]:
                continue
            if isinstance(value, JsonPart):
                value = value.to_json()
            elif f.metadata["part"] is not None and isinstance(value, list):
                value = [v.to_json() for v in value]
            out[f.name] = value
        out.update(self.rest)
        if self.keys is None:
            return out
        # as the line had them: a value worked out for an older line (its engine) stays out
        return {k: out.get(k) for k in self.keys}

    @classmethod
    def parse(cls: type[P], obj: Mapping[str, Any], where: str, prefix: str = "") -> P:
        """The part from a JSON object; a typed field of the wrong kind raises DataFileError naming its key."""
        values: dict[str, Any] = {}
        typed: set[str] = set(cls.HEAD)
        for f in dataclasses.fields(cls):
            if "kind" not in f.metadata:
                continue
            part: type[JsonPart] | None = f.metadata["part"]
            if f.metadata["flat"]:
                assert part is not None
                own = {k: v for k, v in obj.items() if k in part.json_keys()}
                typed |= part.json_keys()
                if own:
                    values[f.name] = part.parse(own, where, prefix)
                continue
            key = f.name
            typed.add(key)
            if obj.get(key) is None:
                continue
            value, dotted = obj[key], prefix + key
            if part is not None and f.metadata["kind"] == _LIST:
                value = part.parse_list(value, where, dotted)
            elif part is not None:
                value = part.parse(_object(value, dotted, where), where, dotted + ".")
            elif not _TESTS[f.metadata["kind"]](value):
                raise DataFileError(where, f"'{dotted}' is {value!r}, not {f.metadata['kind']}", EDITED_FIX)
            values[f.name] = value
        rest = {k: v for k, v in obj.items() if k not in typed}
        return cls(**values, rest=rest, keys=tuple(obj))

    @classmethod
    def parse_list(cls: type[P], value: Any, where: str, dotted: str) -> list[P]:
        """A JSON list of such parts (``dotted``: its key); anything else raises DataFileError naming it."""
        if not isinstance(value, list):
            raise DataFileError(where, f"'{dotted}' is {value!r}, not a list", EDITED_FIX)
        return [cls.parse(_object(item, f"{dotted}[{i}]", where), where, f"{dotted}[{i}].")
                for i, item in enumerate(value)]

    @classmethod
    def json_keys(cls) -> frozenset[str]:
        """The JSON keys the type reads into its fields (a flat part's own included)."""
        keys: set[str] = set()
        for f in dataclasses.fields(cls):
            if "kind" in f.metadata:
                keys |= f.metadata["part"].json_keys() if f.metadata["flat"] else {f.name}
        return frozenset(keys)


def _object(value: Any, dotted: str, where: str) -> Mapping[str, Any]:
    """A nested part's JSON: an object, else DataFileError naming its key."""
    if not isinstance(value, dict):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not an object", EDITED_FIX)
    return value


# --- the parts of a cell record -------------------------------------------------------------------


@dataclass
class DiskPart(JsonPart):
    """``cell.disk``: the disk configuration the cell ran on."""

    controller: str | None = _f(_STR)
    aio: str | None = _f(_STR)
    iothread: Any = _f()      # true/false (older records: any truthy value)
    cache: str | None = _f()
    bus: str | None = _f()
    scsihw: str | None = _f()


@dataclass
class WorkloadPart(JsonPart):
    """``cell.workload``: the fio job the cell ran."""

    name: str | None = _f()
    rw: str | None = _f(_STR)
    bs: int | None = _f(_INT)
    iodepth: int | None = _f(_INT)
    numjobs: Any = _f()
    rate_mib_s: float | None = _f(_NUM)
    rwmixread: Any = _f()


@dataclass
class CellPart(JsonPart):
    """``cell``: the planned cell (:meth:`stormatrix.core.model.Cell.to_dict`)."""

    disk: DiskPart | None = _f(part=DiskPart)
    workload: WorkloadPart | None = _f(part=WorkloadPart)
    repeat: int | None = _f(_INT)
    key: str | None = _f(_STR)

    @classmethod
    def of(cls, cell: Any) -> "CellPart":
        """The part for a planned :class:`~stormatrix.core.model.Cell`, as the harness journals it."""
        return cls.parse(cell.to_dict(), f"cell {cell.key}")


@dataclass
class Times(JsonPart):
    """``times``: when the cell's stages happened (ISO times) and how long its window was."""

    started: str | None = _f(_STR)
    ready: str | None = _f()
    measure_start: str | None = _f()
    measure_end: str | None = _f()
    finished: str | None = _f()
    boot_s: float | None = _f()
    ramp_s: float | None = _f()
    measure_s: float | None = _f()
    window_s: float | None = _f(_NUM)
    booted_ahead: bool | None = _f(omit_none=True)


@dataclass
class Direction(JsonPart):
    """One direction block of the ``fio`` summary (``total``, ``read``, ``write``); a rate that could not be
    computed is None, never 0."""

    io_bytes: float | None = _f(_NUM)
    bw_bytes: float | None = _f(_NUM)
    iops: float | None = _f(_NUM)
    total_ios: float | None = _f(_NUM)
    runtime_ms: float | None = _f(_NUM)
    lat_mean_ns: float | None = _f(_NUM)
    lat_p99_ns: float | None = _f(_NUM)
    clat_p99_ns: float | None = _f(_NUM)


@dataclass
class FioSummary(JsonPart):
    """``fio``: the measurement's figures in one shape, whichever engine produced them."""

    version: Any = _f()
    jobs: Any = _f()
    error: Any = _f()
    usr_cpu: float | None = _f(_NUM)
    sys_cpu: float | None = _f(_NUM)
    ctx: float | None = _f(_NUM)
    read: Direction | None = _f(part=Direction)
    write: Direction | None = _f(part=Direction)
    total: Direction | None = _f(part=Direction)
    engine: str | None = _f(omit_none=True)
    null_reasons: dict[str, Any] | None = _f(_OBJ, omit_none=True)


@dataclass
class ProcessMetrics(JsonPart):
    """The figures every host block has (docs/journal.md, ``host``): a QEMU process's (``host.process``, and
    ``host`` itself under the scope "qemu-process"), or a CPU set's (``host`` under the scope "cpus")."""

    cpu_metric: str | None = _f()
    cpu_unit: str | None = _f()
    cpu_total: float | None = _f(_NUM)
    cpu_user: float | None = _f(_NUM)
    cpu_system: float | None = _f(_NUM)
    cycles: dict[str, Any] | None = _f()
    ctx_switches: float | None = _f()
    window_s: float | None = _f(_NUM)
    source: str | None = _f()
    scope: Any = _f()
    cpu_total_source: str | None = _f(omit_none=True)
    by_role: Any = _f(omit_none=True)  # the Linux collector's per-thread split: role -> CPU and switches
    cpu_split_note: Any = _f(omit_none=True)
    unmatched: Any = _f(omit_none=True)
    null_reasons: Any = _f(omit_none=True)

    @classmethod
    def parse(cls: type[P], obj: Mapping[str, Any], where: str, prefix: str = "") -> P:
        """The part; for an older record, ``cpu_total_source`` worked out from what its collector
        (``source``) counted with (not written back: ``to_json`` keeps the record's own keys)."""
        host = super().parse(obj, where, prefix)
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

    outside_cpus: str | None = _f(_STR)
    interrupts: dict[str, Any] | None = _f(_OBJ)
    softirqs: dict[str, Any] | None = _f(_OBJ)
    io_interrupts: dict[str, Any] | None = _f(_OBJ, omit_none=True)
    io_softirqs: dict[str, Any] | None = _f(_OBJ, omit_none=True)
    null_reasons: dict[str, Any] | None = _f(_OBJ, omit_none=True)

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

    pid: int | None = _f(_INT)
    comm: str | None = _f(_STR)
    cpu_s: float | None = _f(_NUM)


@dataclass
class HostMetrics(ProcessMetrics):
    """``host``: what the host collector measured over the window (docs/journal.md, ``host``); a collector's
    own extras (``threads``, ``perf``, ``cpu_stat``...) stay in ``rest``. Under the scope "cpus" the figures
    are the set's, the QEMU process's are ``process`` (same keys), with ``cpus``, ``leak`` and ``on_set``."""

    cpus: str | None = _f(_STR, omit_none=True)
    process: ProcessMetrics | None = _f(part=ProcessMetrics, omit_none=True)
    leak: LeakPart | None = _f(part=LeakPart, omit_none=True)
    on_set: list[OnSetTask] | None = _f(_LIST, part=OnSetTask, omit_none=True)

    @property
    def measured_cpus(self) -> bool:
        """The figures are a CPU set's (scope "cpus"), not a process's."""
        return self.scope == "cpus"


@dataclass
class PerMib(JsonPart):
    """``per_mib``: host cost per MiB moved (:func:`stormatrix.core.metrics.per_mib`, the one definition)."""

    mib: float | None = _f(_NUM)
    cpu: float | None = _f(_NUM)
    cpu_unit: str | None = _f()
    ctx: float | None = _f(_NUM)


@dataclass
class RateCheck(JsonPart):
    """``rate``: did a fixed-rate cell run at its rate (``stormatrix.records.rate_check``)."""

    target_mib_s: float | None = _f(_NUM)
    achieved_mib_s: float | None = _f(_NUM)
    miss_pct: float | None = _f()
    tolerance_pct: float | None = _f()
    missed: bool | None = _f()
    overshot: bool | None = _f(omit_none=True)


@dataclass
class CrossCheck(JsonPart):
    """``crosscheck``: fio's bytes against QEMU's own count for the test disk."""

    fio_bytes: float | None = _f()
    qemu_bytes: float | None = _f()
    qemu_read_bytes: float | None = _f(omit_none=True)
    qemu_write_bytes: float | None = _f(omit_none=True)
    tolerance_pct: float | None = _f()
    diff_pct: float | None = _f()
    flag: bool | None = _f()


@dataclass
class ClockCheck(JsonPart):
    """``clock``: fio's runtime (the guest's clock) against the host's window."""

    fio_runtime_s: float | None = _f()
    host_window_s: float | None = _f()
    diff_pct: float | None = _f()
    flag: bool | None = _f()


# --- what a point on many guests adds (the fio-server executor, a suite) --------------------------


@dataclass
class ClientWindow(JsonPart):
    """``clients[].window``: one guest's measurement window in unix ms, from its fio IOPS log."""

    start_ms: float | None = _f(_NUM)
    end_ms: float | None = _f(_NUM)
    last_sample_ms: float | None = _f(_NUM)
    samples: int | None = _f(_INT)


@dataclass
class ClientPart(JsonPart):
    """One guest of a multi-guest point (``clients[]``; a ``cell-error``'s ``partial_clients[]``): its name
    and address, what it measured (the shape of ``fio``) and its own window."""

    name: str | None = _f(_STR)
    host: str | None = _f(_STR)
    port: int | None = _f(_INT)
    fio: FioSummary | None = _f(part=FioSummary)
    window: ClientWindow | None = _f(part=ClientWindow)


@dataclass
class AggregateCheck(JsonPart):
    """``aggregate_check``: the guests' summed counts against fio's own "All clients" entry."""

    match: bool | None = _f()
    clients: int | None = _f(_INT)
    fio_all_clients: Any = _f()
    rule: str | None = _f(_STR)
    read: dict[str, Any] | None = _f(_OBJ)
    write: dict[str, Any] | None = _f(_OBJ)
    total: dict[str, Any] | None = _f(_OBJ)


@dataclass
class Skew(JsonPart):
    """``skew``: how far apart the guests' windows started and ended."""

    source: str | None = _f(_STR)
    clients_dated: int | None = _f(_INT)
    start_skew_s: float | None = _f(_NUM)
    end_skew_s: float | None = _f(_NUM)
    first_start_ms: float | None = _f(_NUM)
    last_start_ms: float | None = _f(_NUM)
    overlap_s: float | None = _f(_NUM)


@dataclass
class ClientProcess(JsonPart):
    """``controller``: the one fio client process that drove every guest."""

    returncode: int | None = _f(_INT)
    timed_out: bool | None = _f()
    elapsed_s: float | None = _f(_NUM)
    user_s: float | None = _f(_NUM)
    system_s: float | None = _f(_NUM)
    cpu_s: float | None = _f(_NUM)
    max_rss_kib: float | None = _f(_NUM)


@dataclass
class PointInfo(JsonPart):
    """What a point on many guests adds to its ``cell`` record, beside the record's own keys (flat): the
    fio-server executor's ``fio_all_clients``, ``aggregate_check``, ``skew``, ``controller`` and ``noise``,
    and a suite's name (``suite``; docs/journal.md, Suite points)."""

    fio_all_clients: FioSummary | None = _f(part=FioSummary)
    aggregate_check: AggregateCheck | None = _f(part=AggregateCheck)
    skew: Skew | None = _f(part=Skew)
    controller: ClientProcess | None = _f(part=ClientProcess)
    noise: list[Any] | None = _f(_LIST)
    suite: str | None = _f(_STR)


@dataclass
class GuestPart(JsonPart):
    """``guests[]`` of a suite's run record: a guest's fio server."""

    name: str | None = _f(_STR)
    host: str | None = _f(_STR)
    port: int | None = _f(_INT)


@dataclass
class VmPart(JsonPart):
    """``vms[]`` of a suite's run record: a VM behind a guest (Proxmox: ``vmid``, ``pid``; ESXi: ``id``)."""

    vmid: int | None = _f(_INT)
    id: str | None = _f(_STR)
    name: str | None = _f(_STR)
    pid: int | None = _f(_INT)
    address: str | None = _f(_STR)


@dataclass
class HostCollectorPart(JsonPart):
    """``host_collector`` of a suite's run record: how host metrics were measured (``mode``) and why."""

    mode: str | None = _f(_STR)
    detail: str | None = _f(_STR)
    fix: str | None = _f(_STR)
    ssh: str | None = _f(_STR)
    ssh_dir: str | None = _f(_STR)
    ssh_config: str | None = _f(_STR)
    processes: Any = _f()
    roles: Any = _f()


@dataclass
class StoragePart(JsonPart):
    """``storage`` of a suite's run record: what served the side's test disks."""

    kind: str | None = _f(_STR)
    server: str | None = _f(_STR)
    volumes: Any = _f()
    urls: Any = _f()
    pid: int | None = _f(_INT)
    port: int | None = _f(_INT)
    target: str | None = _f(_STR)


@dataclass
class SuiteInfo(JsonPart):
    """What a suite adds to its ``run`` record, beside the record's own keys (flat; docs/journal.md): the
    suite's name, its executor, how many points, the side's guests, how host metrics were measured, the VMs
    behind the guests (null: given by address) and what served their disks."""

    suite: str | None = _f(_STR)
    executor: str | None = _f(_STR)
    points: int | None = _f(_INT)
    guests: list[GuestPart] | None = _f(_LIST, part=GuestPart)
    host_collector: HostCollectorPart | None = _f(part=HostCollectorPart)
    vms: list[VmPart] | None = _f(_LIST, part=VmPart)
    storage: StoragePart | None = _f(part=StoragePart, omit_none=True)

    def guest_names(self) -> list[str | None]:
        """The guests' names, in the run record's order."""
        return [g.name for g in self.guests or []]


# --- the records ----------------------------------------------------------------------------------

R = TypeVar("R", bound="JournalRecord")


@dataclass
class JournalRecord(JsonPart):
    """A whole journal line: ``HEAD`` names its ``schema`` and ``type``."""

    @classmethod
    def from_json(cls: type[R], obj: Mapping[str, Any], where: str) -> R:
        """The record from a journal line's object (``where``: ``file:line``); one of another ``type``, or
        with a key of the wrong type, raises DataFileError naming it and the fix."""
        want = cls.HEAD["type"]
        if obj.get("type") != want:
            raise DataFileError(where, f"'type' is {obj.get('type')!r}, not {want!r}", EDITED_FIX)
        return cls.parse(obj, where)


@dataclass
class RunRecord(JournalRecord):
    """``run``: a run (or a resumed run) started: where, on what, the matrix, what restore puts back."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": RUN}
    run_id: str | None = _f(_STR)
    started: str | None = _f(_STR)
    matrix_path: str | None = _f(_STR)
    matrix: Any = _f()
    backend: str | None = _f(_STR)
    side: str | None = _f()
    environment: dict[str, Any] | None = _f()
    original_config: Any = _f()
    cells: int | None = _f()
    todo: int | None = _f()
    order: str | None = _f(_STR, omit_none=True)    # [run] order (records before it: grouped)
    seed: int | None = _f(_INT, omit_none=True)     # the seed the rounds were shuffled with
    suite_info: SuiteInfo | None = _f(part=SuiteInfo, flat=True)  # a suite's run: its name, guests, ...

    @property
    def kind(self) -> str:
        """What the run measured: ``"suite"`` (its record names the suite, even one named "") or ``"matrix"``."""
        return "suite" if self.suite_info is not None and self.suite_info.suite is not None else "matrix"


@dataclass
class CellRecord(JournalRecord):
    """``cell``: one measured cell (or suite point). What a point on many guests adds is ``point_info``;
    ``rest`` holds any other key (a newer version's)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL}
    run_id: str | None = _f(_STR)
    key: str | None = _f(_STR)
    cell: CellPart | None = _f(part=CellPart)
    backend: str | None = _f(_STR)
    side: Any = _f()
    vm: Any = _f()                       # one VM's name, or several joined / listed for a suite point
    engine: str | None = _f()            # fio or diskspd; worked out for older records (see from_json)
    times: Times | None = _f(part=Times)
    fio: FioSummary | None = _f(part=FioSummary)
    host: HostMetrics | None = _f(part=HostMetrics)
    per_mib: PerMib | None = _f(part=PerMib)
    rate: RateCheck | None = _f(part=RateCheck)
    crosscheck: CrossCheck | None = _f(part=CrossCheck)
    clock: ClockCheck | None = _f(part=ClockCheck)
    guest: Any = _f()
    window_source: Any = _f()
    clients: list[ClientPart] | None = _f(_LIST, part=ClientPart)  # a point on many guests: each guest's
    raw: Any = _f()
    overlap: Any = _f()
    extra_repeat: dict[str, Any] | None = _f(omit_none=True)
    point_info: PointInfo | None = _f(part=PointInfo, flat=True)  # a point on many guests: its client, a suite

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> "CellRecord":
        """A cell record from a journal line; refuses one no run could have written, naming the key."""
        _need(obj, "key", _STR, where)
        _need(obj, "cell.disk.controller", _STR, where)
        if not obj["cell"]["disk"]["controller"].strip():
            raise DataFileError(where, "'cell.disk.controller' is empty", EDITED_FIX)
        host = obj.get("host")
        if host is not None and not isinstance(host, dict):
            raise DataFileError(where, f"'host' is {type(host).__name__}, not an object or null", EDITED_FIX)
        rec = super().from_json(obj, where)
        assert rec.cell is not None and rec.cell.disk is not None and rec.cell.disk.controller is not None
        controller = rec.cell.disk.controller
        if disk_options_apply(controller, rec.backend) and (controller != "unknown" or rec.cell.disk.aio is not None):
            # a suite point whose side does not name its disk configuration has controller "unknown" and aio
            # null (docs/journal.md, suite points); every other cell on a disk with an aio mode names it
            _need(obj, "cell.disk.aio", _STR, where)
        for dotted, kind in (("cell.workload.rw", _STR), ("cell.workload.bs", _INT),
                             ("cell.workload.iodepth", _INT), ("cell.repeat", _INT)):
            _need(obj, dotted, kind, where)
        if rec.cell.repeat is not None and rec.cell.repeat < 1:
            raise DataFileError(where, f"'cell.repeat' is {rec.cell.repeat}: repeats count from 1", EDITED_FIX)
        for dotted, kind in (("fio.total", _OBJ), ("fio.total.io_bytes", _NUM), ("fio.total.iops", _NUM)):
            _need(obj, dotted, kind, where)
        _positive("times.window_s", rec.times.window_s if rec.times else None, where)
        rec.engine = _engine(obj, where)
        if rec.host is not None:
            _check_host(rec, where)
        return rec

    def cost_per_mib(self) -> tuple[float | None, float | None]:
        """(CPU per MiB, context switches per MiB): the record's ``per_mib``, or for an older record without
        it the one definition (:func:`stormatrix.core.metrics.per_mib`) over its host and bytes."""
        cpu = self.per_mib.cpu if self.per_mib else None
        ctx = self.per_mib.ctx if self.per_mib else None
        if self.host is not None and (cpu is None or ctx is None):
            assert self.fio is not None and self.fio.total is not None and self.fio.total.io_bytes is not None
            mib = (self.per_mib.mib if self.per_mib else None) or self.fio.total.io_bytes / MIB
            computed = per_mib(mib * MIB, self.host.to_json())
            cpu = computed["cpu"] if cpu is None else cpu
            ctx = computed["ctx"] if ctx is None else ctx
        return cpu, ctx


CTX_FIX = ("a host collector that counted context switches writes the number in host.ctx_switches; one that has "
           "no such counter (the ESXi collectors) writes null and the reason in host.unmatched.ctx_switches. Use "
           "the unedited journal of the run, or remove this line")


def _check_host(rec: CellRecord, where: str) -> None:
    """The host metrics a report reads, checked against each other."""
    host, key = rec.host, rec.key
    assert host is not None
    metric = host.cpu_metric
    if metric not in CPU_PER_MIB_UNIT:
        raise DataFileError(where, f"host.cpu_metric is {metric!r}; expected 'cycles' or 'cpu_time'", EDITED_FIX)
    if host.cpu_total is None:
        raise DataFileError(where, "cell record has no 'host.cpu_total'", EDITED_FIX)
    value = host.ctx_switches
    if value is not None:
        if not _is_number(value):
            raise DataFileError(where, f"'host.ctx_switches' is {value!r}, not a number", CTX_FIX)
        if not float(value).is_integer():
            raise DataFileError(where, f"cell {key}: 'host.ctx_switches' is {value!r}: a count of context switches "
                                       "is a whole number", CTX_FIX)
    elif host.reason("ctx_switches") is None:
        raise DataFileError(where, f"cell {key}: 'host.ctx_switches' is null and 'host.unmatched.ctx_switches' "
                                   "gives no reason (nor 'host.null_reasons.ctx_switches'; a collector without a "
                                   "context-switch count must say why)", CTX_FIX)
    if value is None and rec.per_mib is not None and rec.per_mib.ctx is not None:
        raise DataFileError(where, f"cell {key}: 'per_mib.ctx' is {rec.per_mib.ctx!r} but 'host.ctx_switches' is "
                                   "null: a ctx/MiB without context switches", CTX_FIX)
    unit = rec.per_mib.cpu_unit if rec.per_mib else None
    if unit is not None and unit != CPU_PER_MIB_UNIT[metric]:
        raise DataFileError(where, f"per_mib.cpu_unit is {unit!r} but host.cpu_metric is {metric!r} "
                                   f"(expected {CPU_PER_MIB_UNIT[metric]!r})", EDITED_FIX)
    _positive("host.window_s", host.window_s, where)
    _positive("per_mib.mib", rec.per_mib.mib if rec.per_mib else None, where)


def _positive(dotted: str, value: float | None, where: str) -> None:
    """An optional quantity that is above 0 whenever it is written (a window length, MiB moved)."""
    if value is not None and value <= 0:
        raise DataFileError(where, f"'{dotted}' is {value!r}: it is above 0 in every record a run writes",
                            EDITED_FIX)


def _older_total_source(source: Any, metric: str | None) -> str | None:
    """What an older record's ``cpu_total`` counted, from its collector's ``source``."""
    source = str(source or "")
    if metric == "cycles":
        return "perf cycles:u + cycles:k" if "perf" in source else None
    return "perf task-clock (ns)" if source == "perf+proc" else \
        "/proc/PID/stat utime + stime (clock ticks)" if source == "proc" else None


def _engine(obj: Mapping[str, Any], where: str) -> str:
    """The engine that measured the cell: the record's ``engine``, else ``raw.engine``; records written
    before either key existed were fio's. Two keys that disagree mean an edited record."""
    raw = obj.get("raw")
    given = {k: v for k, v in (("engine", obj.get("engine")),
                               ("raw.engine", raw.get("engine") if isinstance(raw, dict) else None)) if v is not None}
    for key, engine in given.items():
        if engine not in ENGINES:
            raise DataFileError(where, f"'{key}' is {engine!r}; expected one of {', '.join(ENGINES)}",
                                "use the unedited journal of the run, or remove this line")
    if len(set(given.values())) > 1:
        raise DataFileError(where, f"'engine' is {given['engine']!r} but 'raw.engine' is {given['raw.engine']!r}",
                            "use the unedited journal of the run, or remove this line")
    return str(next(iter(given.values()), "fio"))


@dataclass
class ErrorPart(JsonPart):
    """``cell-error``'s ``error``: the exception, and for a multi-guest point the guests that dropped out."""

    type: str | None = _f()
    message: str | None = _f(_STR)
    console_tail: str | None = _f(_STR)
    guests: Any = _f(omit_none=True)


@dataclass
class CellErrorRecord(JournalRecord):
    """``cell-error``: one failed attempt at a cell (tried again on resume)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL_ERROR}
    run_id: str | None = _f(_STR)
    key: str | None = _f(_STR)
    cell: CellPart | None = _f(part=CellPart)
    side: str | None = _f()
    stage: str | None = _f(_STR)
    attempt: int | None = _f()
    time: str | None = _f(_STR)
    error: ErrorPart | None = _f(part=ErrorPart)
    partial_clients: list[ClientPart] | None = _f(_LIST, part=ClientPart, omit_none=True)


@dataclass
class CellSkippedRecord(JournalRecord):
    """``cell-skipped``: a cell not run, and why (a Windows guest without the controller's driver)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL_SKIPPED}
    run_id: str | None = _f(_STR)
    key: str | None = _f(_STR)
    cell: CellPart | None = _f(part=CellPart)
    side: str | None = _f()
    time: str | None = _f(_STR)
    reason: str | None = _f(_STR)
    drivers: Any = _f()
    readiness: str | None = _f(omit_none=True)  # what the boot that showed the reason reported


@dataclass
class RestoredRecord(JournalRecord):
    """``restored``: the VM is back as the run found it (by the run's ``backend``, or later ``by`` a command)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": RESTORED}
    run_id: str | None = _f(_STR)
    time: str | None = _f(_STR)
    backend: str | None = _f(_STR, omit_none=True)
    vm: str | None = _f(omit_none=True)
    by: str | None = _f(_STR, omit_none=True)


Record = RunRecord | CellRecord | CellErrorRecord | CellSkippedRecord | RestoredRecord
#: the record type (``"type"``) -> its class
RECORD_CLASSES: dict[str, type[Record]] = {
    RUN: RunRecord, CELL: CellRecord, CELL_ERROR: CellErrorRecord, CELL_SKIPPED: CellSkippedRecord,
    RESTORED: RestoredRecord}


def record_from_json(obj: Mapping[str, Any], where: str) -> Record:
    """Any journal record as its type; an unknown ``type`` raises DataFileError naming it."""
    kind = obj.get("type")
    cls = RECORD_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise DataFileError(where, f"'type' is {kind!r}; expected one of {', '.join(sorted(RECORD_CLASSES))}",
                            EDITED_FIX)
    return cls.from_json(obj, where)


def resume_record(obj: Mapping[str, Any], where: str) -> Record | None:
    """A journal line as the runner reads it to resume (``where``: ``file:line``): its type with every typed
    field of the right kind (a wrong one raises DataFileError naming the line, the key and the fix), without
    the measurement checks of :meth:`CellRecord.from_json`: those are analysis's policy, while a cell line the
    runner wrote is done whether or not a report can use its figures. None for a ``type`` this stormatrix does
    not write (it has no bearing on a resume)."""
    kind = obj.get("type")
    cls = RECORD_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    return cls.parse(obj, where)


def _get(obj: Mapping[str, Any], dotted: str) -> Any:
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _need(obj: Mapping[str, Any], dotted: str, kind: str, where: str) -> Any:
    """A required key of the record: present, and of its kind (else DataFileError naming it)."""
    value = _get(obj, dotted)
    if value is None:
        raise DataFileError(where, f"cell record has no '{dotted}'", EDITED_FIX)
    if not _TESTS[kind](value):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not {kind}", EDITED_FIX)
    return value
