"""``perf stat -x,`` output: the one parser, standard library only (it is copied to Proxmox nodes).

Row layout (Linux ``tools/perf/Documentation/perf-stat.txt``, "CSV FORMAT")::

    [time,][aggr-id,]value,unit,event,run_time,pct_running[,variance],metric,metric_unit

The optional leading columns appear with ``-I`` (interval time) and with ``-A``/``--per-thread``/
``--per-socket`` (CPU0, comm-pid, S0-D0-C0). A file does not record which options made it, so instead
of guessing, the value column is found on each line: the first field that is a number or a
``<not supported>``/``<not counted>`` marker and has an event name two fields later.

``<not supported>`` (no such hardware counter, e.g. ``cycles`` in a VM) and ``<not counted>`` (the counter
never ran in that interval) are not numbers and are never read as 0: an event with no counted value at
all has value None.

The caller decides what a line that fits no layout means: the host collector (reading what its own
``perf`` wrote) skips it; the analysis of a user's file reports it (:attr:`PerfStat.bad_lines`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
MARKERS = (NOT_SUPPORTED, NOT_COUNTED)
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

    @property
    def status(self) -> str:
        """``counted``, or the marker perf printed when no line of the event had a value."""
        if self.counted:
            return "counted"
        return NOT_SUPPORTED if self.not_supported else NOT_COUNTED


@dataclass
class PerfStat:
    """Every event of one ``perf stat -x,`` output, and the numbers of lines no layout fits."""

    events: dict[str, PerfEvent] = field(default_factory=dict)
    bad_lines: list[int] = field(default_factory=list)

    def value(self, *names: str) -> float | None:
        """The first of ``names`` that perf counted, or None."""
        for n in names:
            ev = self.events.get(n)
            if ev is not None and ev.counted:
                return ev.value
        return None


def split_line(line: str) -> tuple[str, str, str] | None:
    """(value, unit, event) of one CSV line, or None when no column layout fits."""
    fields = line.split(",")
    for i in range(0, min(3, len(fields) - 2)):
        value, unit, event = fields[i].strip(), fields[i + 1].strip(), fields[i + 2].strip()
        if (value in MARKERS or _NUMBER_RE.match(value)) and _UNIT_RE.match(unit) \
                and event and _EVENT_RE.match(event) and not _NUMBER_RE.match(event):
            return value, unit, event
    return None


def parse(text: str) -> PerfStat:
    """Every event in ``text``, summed over intervals, CPUs and threads; comments and blank lines skipped."""
    stat = PerfStat()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parsed = split_line(line)
        if parsed is None:
            stat.bad_lines.append(number)
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
    return stat
