"""The journal's record types (docs/journal.md), defined once: what the harness writes and analysis reads.

Each record (``run``, ``cell``, ``cell-error``, ``cell-skipped``, ``restored``) is a dataclass here, a
:class:`~stormatrix.core.jsonpart.JsonPart` (``jsonpart.py``: ``to_json()`` and the typed reading) whose nested
parts a reader uses are typed too: a cell's in ``cellparts.py``, a run's suite additions and a cell-error's
``error`` here. ``from_json(obj, where)`` reads a journal line's object back as the type, for every journal a
stormatrix wrote, older ones included; a field of the wrong type, or a required one missing, raises
:class:`~stormatrix.core.errors.DataFileError` naming ``where`` (``file:line``), the dotted key and the fix. What
older records lack is worked out in one place before a line is typed (:mod:`~stormatrix.core.recordupgrades`:
a cell's ``engine``, from ``raw.engine``, else fio); what a host block's ``cpu_total`` counted
(``cpu_total_source``, from the collector's ``source``) where the host part is read. A *required* field
(``jfield(required=True)``, typed without None) is one the harness always writes with a value, so no reader checks
it: a run's ``run_id``; a cell's ``run_id``, ``key``, ``engine``, ``cell`` (its ``disk.controller``, its
``workload``'s ``rw``, ``bs`` and ``iodepth``, its ``repeat``), ``times`` and ``fio.total``; a cell-error's
``run_id``, ``key``, ``cell``, ``stage``, ``time`` and ``error``; a skipped cell's ``run_id``, ``key``, ``cell``
and ``time``; a restored record's ``time``.

What a suite adds sits beside a record's own keys and is typed as a *flat* part: a run record's
:class:`SuiteInfo` (``RunRecord.suite_info``) and a multi-guest point's
:class:`~stormatrix.core.cellparts.PointInfo` (``CellRecord.point_info``); a point's ``clients`` are a list of
:class:`~stormatrix.core.cellparts.ClientPart`. ``to_json(from_json(line)) == line`` for every line; a record
the harness builds field by field is written in the order its fields are declared, then ``rest`` — the
order the harness always wrote, except that a suite point's ``extra_repeat`` now comes before its executor's
and the suite's keys. ``stormatrix.records`` builds these types, the runner journals ``to_json()``,
``stormatrix.analysis.read.journalrows`` maps ``from_json()`` to tidy rows, and the runner's resume (with ``suite
run`` and ``restore``) reads every line with :func:`resume_record`: the same types without a cell's
measurement checks. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeVar

from .cellparts import (CellPart, ClientPart, ClockCheck, CrossCheck, FioSummary, HostMetrics, NamedCellPart, PerMib,
                        PointInfo, RateCheck, Times)
from .errors import DataFileError
from .journalfile import CELL, CELL_ERROR, CELL_SKIPPED, RESTORED, RUN, SCHEMA
from .jsonpart import EDITED_FIX, INT, LIST, KIND_TESTS, NUM, STR, JsonPart, is_number, jfield
from .metrics import CPU_PER_MIB_UNIT, MIB, per_mib
from .model import disk_options_apply
from .recordupgrades import upgrade

ENGINES = ("fio", "diskspd")


# --- what a suite adds to its run record ----------------------------------------------------------


@dataclass
class GuestPart(JsonPart):
    """``guests[]`` of a suite's run record: a guest's fio server."""

    name: str | None = jfield(STR)
    host: str | None = jfield(STR)
    port: int | None = jfield(INT)


@dataclass
class VmPart(JsonPart):
    """``vms[]`` of a suite's run record: a VM behind a guest (Proxmox: ``vmid``, ``pid``; ESXi: ``id``)."""

    vmid: int | None = jfield(INT)
    id: str | None = jfield(STR)
    name: str | None = jfield(STR)
    pid: int | None = jfield(INT)
    address: str | None = jfield(STR)


@dataclass
class HostCollectorPart(JsonPart):
    """``host_collector`` of a suite's run record: how host metrics were measured (``mode``) and why."""

    mode: str | None = jfield(STR)
    detail: str | None = jfield(STR)
    fix: str | None = jfield(STR)
    ssh: str | None = jfield(STR)
    ssh_dir: str | None = jfield(STR)
    ssh_config: str | None = jfield(STR)
    processes: Any = jfield()
    roles: Any = jfield()


@dataclass
class StoragePart(JsonPart):
    """``storage`` of a suite's run record: what served the side's test disks."""

    kind: str | None = jfield(STR)
    server: str | None = jfield(STR)
    volumes: Any = jfield()
    urls: Any = jfield()
    pid: int | None = jfield(INT)
    port: int | None = jfield(INT)
    target: str | None = jfield(STR)


@dataclass
class SuiteInfo(JsonPart):
    """What a suite adds to its ``run`` record, beside the record's own keys (flat; docs/journal.md): the
    suite's name, its executor, how many points, the side's guests, how host metrics were measured, the VMs
    behind the guests (null: given by address) and what served their disks."""

    suite: str | None = jfield(STR)
    executor: str | None = jfield(STR)
    points: int | None = jfield(INT)
    guests: list[GuestPart] | None = jfield(LIST, part=GuestPart)
    host_collector: HostCollectorPart | None = jfield(part=HostCollectorPart)
    vms: list[VmPart] | None = jfield(LIST, part=VmPart)
    storage: StoragePart | None = jfield(part=StoragePart, omit_none=True)

    def guest_names(self) -> list[str | None]:
        """The guests' names, in the run record's order."""
        return [g.name for g in self.guests or []]


# --- the records ----------------------------------------------------------------------------------

R = TypeVar("R", bound="JournalRecord")


@dataclass
class JournalRecord(JsonPart):
    """A whole journal line: ``HEAD`` names its ``schema`` and ``type``."""

    @classmethod
    def read(cls: type[R], obj: Mapping[str, Any], where: str) -> R:
        """The record from a journal line's object as every reader reads it: upgraded first where it is of an
        older shape (:func:`~stormatrix.core.recordupgrades.upgrade`), then typed; a key of the wrong type, or
        a required one missing, raises DataFileError naming it and the fix. Written back, it is the line as it
        was (what the upgrade worked out stays out)."""
        upgraded = upgrade(obj)
        rec = cls.parse(upgraded, where, record=f"{cls.HEAD['type']} record")
        if upgraded is not obj:
            rec.keep_keys(obj)
        return rec

    @classmethod
    def from_json(cls: type[R], obj: Mapping[str, Any], where: str) -> R:
        """The record from a journal line's object (``where``: ``file:line``); one of another ``type``, or
        with a key of the wrong type, raises DataFileError naming it and the fix."""
        want = cls.HEAD["type"]
        if obj.get("type") != want:
            raise DataFileError(where, f"'type' is {obj.get('type')!r}, not {want!r}", EDITED_FIX)
        return cls.read(obj, where)


@dataclass
class RunRecord(JournalRecord):
    """``run``: a run (or a resumed run) started: where, on what, the matrix, what restore puts back."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": RUN}
    run_id: str = jfield(STR, required=True)
    started: str | None = jfield(STR)
    matrix_path: str | None = jfield(STR)
    matrix: Any = jfield()                  # restore names a run record without it (an edited journal)
    backend: str | None = jfield(STR)
    side: str | None = jfield()
    environment: dict[str, Any] | None = jfield()
    original_config: Any = jfield()
    cells: int | None = jfield()
    todo: int | None = jfield()
    order: str | None = jfield(STR, omit_none=True)    # [run] order (records before it: grouped)
    seed: int | None = jfield(INT, omit_none=True)     # the seed the rounds were shuffled with
    suite_info: SuiteInfo | None = jfield(part=SuiteInfo, flat=True)  # a suite's run: its name, guests, ...

    @property
    def kind(self) -> str:
        """What the run measured: ``"suite"`` (its record names the suite, even one named "") or ``"matrix"``."""
        return "suite" if self.suite_info is not None and self.suite_info.suite is not None else "matrix"


@dataclass
class CellRecord(JournalRecord):
    """``cell``: one measured cell (or suite point). What a point on many guests adds is ``point_info``;
    ``rest`` holds any other key (a newer version's)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL}
    run_id: str = jfield(STR, required=True)
    key: str = jfield(STR, required=True)
    cell: CellPart = jfield(part=CellPart, required=True)
    backend: str | None = jfield(STR)        # journals in use hold suite points without it
    side: Any = jfield()
    vm: Any = jfield()                       # one VM's name, or several joined / listed for a suite point
    engine: str = jfield(STR, required=True)  # fio or diskspd; worked out for older records (recordupgrades.py)
    times: Times = jfield(part=Times, required=True)
    fio: FioSummary = jfield(part=FioSummary, required=True)
    host: HostMetrics | None = jfield(part=HostMetrics)
    per_mib: PerMib | None = jfield(part=PerMib)
    rate: RateCheck | None = jfield(part=RateCheck)
    crosscheck: CrossCheck | None = jfield(part=CrossCheck)
    clock: ClockCheck | None = jfield(part=ClockCheck)
    guest: Any = jfield()
    window_source: Any = jfield()
    clients: list[ClientPart] | None = jfield(LIST, part=ClientPart)  # a point on many guests: each guest's
    raw: Any = jfield()
    overlap: Any = jfield()
    extra_repeat: dict[str, Any] | None = jfield(omit_none=True)
    point_info: PointInfo | None = jfield(part=PointInfo, flat=True)  # a point on many guests: its client, a suite

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> "CellRecord":
        """A cell record from a journal line, with the measurement checks a report needs (the required keys
        are the type's own: :meth:`JournalRecord.read`); refuses one no run could have written, naming the key."""
        host = obj.get("host")
        if host is not None and not isinstance(host, dict):
            raise DataFileError(where, f"'host' is {type(host).__name__}, not an object or null", EDITED_FIX)
        _engine(obj, where)  # the engine keys agree (an older line's engine is worked out when it is read)
        rec = super().from_json(obj, where)
        disk = rec.cell.disk
        if not disk.controller.strip():
            raise DataFileError(where, "'cell.disk.controller' is empty", EDITED_FIX)
        if disk_options_apply(disk.controller, rec.backend) and (disk.controller != "unknown" or disk.aio is not None):
            # a suite point whose side does not name its disk configuration has controller "unknown" and aio
            # null (docs/journal.md, suite points); every other cell on a disk with an aio mode names it
            _need(obj, "cell.disk.aio", STR, where)
        if rec.cell.repeat < 1:
            raise DataFileError(where, f"'cell.repeat' is {rec.cell.repeat}: repeats count from 1", EDITED_FIX)
        for dotted, kind in (("fio.total.io_bytes", NUM), ("fio.total.iops", NUM)):
            _need(obj, dotted, kind, where)
        _positive("times.window_s", rec.times.window_s, where)
        if rec.host is not None:
            _check_host(rec, where)
        return rec

    def cost_per_mib(self) -> tuple[float | None, float | None]:
        """(CPU per MiB, context switches per MiB): the record's ``per_mib``, or for an older record without
        it the one definition (:func:`stormatrix.core.metrics.per_mib`) over its host and bytes."""
        cpu = self.per_mib.cpu if self.per_mib else None
        ctx = self.per_mib.ctx if self.per_mib else None
        if self.host is not None and (cpu is None or ctx is None) and self.fio.total.io_bytes is not None:
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
        if not is_number(value):
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

    type: str | None = jfield()
    message: str | None = jfield(STR)
    console_tail: str | None = jfield(STR)
    guests: Any = jfield(omit_none=True)


@dataclass
class CellErrorRecord(JournalRecord):
    """``cell-error``: one failed attempt at a cell (tried again on resume)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL_ERROR}
    run_id: str = jfield(STR, required=True)
    key: str = jfield(STR, required=True)
    cell: NamedCellPart = jfield(part=NamedCellPart, required=True)
    side: str | None = jfield()
    stage: str = jfield(STR, required=True)
    attempt: int | None = jfield()
    time: str = jfield(STR, required=True)
    error: ErrorPart = jfield(part=ErrorPart, required=True)
    partial_clients: list[ClientPart] | None = jfield(LIST, part=ClientPart, omit_none=True)


@dataclass
class CellSkippedRecord(JournalRecord):
    """``cell-skipped``: a cell not run, and why (a Windows guest without the controller's driver)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": CELL_SKIPPED}
    run_id: str = jfield(STR, required=True)
    key: str = jfield(STR, required=True)
    cell: NamedCellPart = jfield(part=NamedCellPart, required=True)
    side: str | None = jfield()
    time: str = jfield(STR, required=True)
    reason: str | None = jfield(STR)
    drivers: Any = jfield()
    readiness: str | None = jfield(omit_none=True)  # what the boot that showed the reason reported


@dataclass
class RestoredRecord(JournalRecord):
    """``restored``: the VM is back as the run found it (by the run's ``backend``, or later ``by`` a command)."""

    HEAD: ClassVar[dict[str, str]] = {"schema": SCHEMA, "type": RESTORED}
    run_id: str | None = jfield(STR)
    time: str = jfield(STR, required=True)
    backend: str | None = jfield(STR, omit_none=True)
    vm: str | None = jfield(omit_none=True)
    by: str | None = jfield(STR, omit_none=True)


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
    return cls.read(obj, where)


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
    if not KIND_TESTS[kind](value):
        raise DataFileError(where, f"'{dotted}' is {value!r}, not {kind}", EDITED_FIX)
    return value
