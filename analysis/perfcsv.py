"""``perf stat -x,`` CSV: parse counters and turn them into the host metrics of one measurement window.

Row layout (Linux ``tools/perf/Documentation/perf-stat.txt``, REFERENCE.md §5)::

    [time,][aggr-id,]value,unit,event,run_time,pct_running[,variance],metric,metric_unit

The optional leading columns appear with ``-I`` (interval time) and with ``-A``/``--per-thread``/
``--per-socket`` (CPU0, comm-pid, S0-D0-C0). Instead of guessing from the options, which a file does not
record, we find the value column on each line: it is the first field that is a number or a
``<not supported>``/``<not counted>`` marker and has an event name two fields later.

``<not supported>`` (no such hardware counter, e.g. ``cycles`` in a VM) and ``<not counted>`` (the
counter never ran in that interval) are not numbers and are never read as 0: an event with no counted
value at all has value None, and the metric choice below falls back from cycles to CPU time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import DataFileError

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
_MARKERS = (NOT_SUPPORTED, NOT_COUNTED)
_EVENT_RE = re.compile(r"^[A-Za-z_][\w:./\-=,]*$")
_UNIT_RE = re.compile(r"^[A-Za-z/%]*$")
_NUMBER_RE = re.compile(r"^\s*-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s*$")


@dataclass
class PerfEvent:
    """One event summed over every line that carried it (intervals, CPUs, threads)."""

    name: str
    unit: str
    value: float | None = None
    lines: int = 0
    not_supported: int = 0
    not_counted: int = 0

    @property
    def counted(self) -> bool:
        return self.value is not None


@dataclass
class PerfStat:
    source: str
    events: dict[str, PerfEvent] = field(default_factory=dict)

    def value(self, *names: str) -> float | None:
        for n in names:
            ev = self.events.get(n)
            if ev is not None and ev.counted:
                return ev.value
        return None


def _split_line(line: str) -> tuple[str, str, str] | None:
    """(value, unit, event) of one CSV line, or None when no column layout fits."""
    fields = line.split(",")
    for i in range(0, min(3, len(fields) - 2)):
        value, unit, event = fields[i].strip(), fields[i + 1].strip(), fields[i + 2].strip()
        if (value in _MARKERS or _NUMBER_RE.match(value)) and _UNIT_RE.match(unit) \
                and event and _EVENT_RE.match(event) and not _NUMBER_RE.match(event):
            return value, unit, event
    return None


def parse_perf_csv(text: str, source: str = "<perf csv>") -> PerfStat:
    """Every event in a ``perf stat -x,`` file, summed over intervals, CPUs and threads."""
    stat = PerfStat(source)
    bad: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parsed = _split_line(line)
        if parsed is None:
            bad.append(number)
            continue
        value, unit, event = parsed
        ev = stat.events.setdefault(event, PerfEvent(event, unit))
        ev.lines += 1
        if value == NOT_SUPPORTED:
            ev.not_supported += 1
        elif value == NOT_COUNTED:
            ev.not_counted += 1
        else:
            ev.value = (ev.value or 0.0) + float(value)
            if unit and not ev.unit:
                ev.unit = unit
    if bad:
        lines = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
        raise DataFileError(source, f"line {lines} is not perf stat -x, CSV",
                            "record with: perf stat -x, -o <file> -e cycles:u,cycles:k,context-switches,cpu-clock")
    if not stat.events:
        raise DataFileError(source, "no perf counters in the file (empty, or only comments)",
                            "record with: perf stat -x, -o <file> -e context-switches,cpu-clock")
    return stat


def _seconds(stat: PerfStat, *names: str) -> float | None:
    for n in names:
        ev = stat.events.get(n)
        if ev is None or not ev.counted:
            continue
        unit = ev.unit.lower()
        scale = {"msec": 1e-3, "ms": 1e-3, "usec": 1e-6, "us": 1e-6, "ns": 1e-9, "nsec": 1e-9,
                 "s": 1.0, "sec": 1.0}.get(unit)
        if scale is None:
            raise DataFileError(stat.source, f"{n} has unit {ev.unit!r}; expected msec")
        return ev.value * scale if ev.value is not None else None
    return None


def host_metrics(stat: PerfStat) -> dict[str, Any]:
    """The host columns of a tidy row: which CPU metric was really counted, its total and the switches.

    Cycles when perf counted them (``cycles:u`` + ``cycles:k``, or plain ``cycles``, which counts both);
    otherwise CPU time from ``cpu-clock``/``task-clock`` in seconds. Never a mix: a file with cycles
    counted is a cycles measurement.
    """
    user, kernel = stat.value("cycles:u"), stat.value("cycles:k")
    plain = stat.value("cycles", "cpu-cycles")
    ctx = stat.value("context-switches", "cs")
    if ctx is None:
        raise DataFileError(stat.source, "no counted context-switches event",
                            "add -e context-switches to the perf stat command")
    out: dict[str, Any] = {"ctx_switches": ctx, "host_source": "perf-csv", "cpu_user": None,
                           "cpu_system": None}
    if user is not None and kernel is not None:
        out.update(cpu_metric="cycles", cpu_unit="cycles", cpu_total=user + kernel, cpu_user=user,
                   cpu_system=kernel)
    elif plain is not None:
        out.update(cpu_metric="cycles", cpu_unit="cycles", cpu_total=plain)
    else:
        seconds = _seconds(stat, "cpu-clock", "task-clock")
        if seconds is None:
            raise DataFileError(stat.source, "neither cycles nor cpu-clock/task-clock were counted",
                                "add -e cpu-clock to the perf stat command")
        out.update(cpu_metric="cpu_time", cpu_unit="s", cpu_total=seconds)
    return out
