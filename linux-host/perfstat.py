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

**Locales.** perf formats numbers with the C library under the user's locale: under de_DE ``perf stat
-x,`` writes ``42,52,msec,cpu-clock,42551238,100,00,...`` for 42.52 ms, and the value's comma is the
separator too. Read by layout, ``42`` would be an aggregation id and ``52`` the value: a plausible,
wrong number. A pure number in the column before the value is never an aggregation id (those are
``CPU0``, ``S0-D0-C0``, ``comm-pid``; the ``-I`` time always has a point), so such a line is set aside in
:attr:`PerfStat.decimal_comma_lines`, never read, and the collector runs perf under ``LC_ALL=C``
(:func:`perf_env`).
"""

from __future__ import annotations

import os
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
    decimal_comma_lines: list[int] = field(default_factory=list)  # written under a decimal-comma locale

    def value(self, *names: str) -> float | None:
        """The first of ``names`` that perf counted, or None."""
        for n in names:
            ev = self.events.get(n)
            if ev is not None and ev.counted:
                return ev.value
        return None


def perf_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to run perf in: the caller's, with ``LC_ALL=C`` so that perf prints 42.52, never
    the 42,52 a decimal-comma locale would put into its comma-separated output."""
    return {**(os.environ if environ is None else environ), "LC_ALL": "C"}


def _layout(line: str) -> tuple[int, list[str]] | None:
    """(the index of the value column, the fields) of one CSV line, or None when no column layout fits."""
    fields = line.split(",")
    for i in range(0, min(3, len(fields) - 2)):
        value, unit, event = fields[i].strip(), fields[i + 1].strip(), fields[i + 2].strip()
        if (value in MARKERS or _NUMBER_RE.match(value)) and _UNIT_RE.match(unit) \
                and event and _EVENT_RE.match(event) and not _NUMBER_RE.match(event):
            return i, fields
    return None


def decimal_comma(fields: list[str], i: int) -> bool:
    """Whether the value found at column ``i`` is the fraction of a number written with a decimal comma:
    the column before it is digits alone, which no aggregation id is (module docstring)."""
    return i >= 1 and fields[i - 1].strip().isdigit() and fields[i].strip().isdigit()


def split_line(line: str) -> tuple[str, str, str] | None:
    """(value, unit, event) of one CSV line, or None when no column layout fits or the line's value was
    written with a decimal comma (:func:`decimal_comma`)."""
    found = _layout(line)
    if found is None or decimal_comma(found[1], found[0]):
        return None
    i, fields = found
    return fields[i].strip(), fields[i + 1].strip(), fields[i + 2].strip()


def parse(text: str) -> PerfStat:
    """Every event in ``text``, summed over intervals, CPUs and threads; comments and blank lines skipped."""
    stat = PerfStat()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found = _layout(line)
        if found is None:
            stat.bad_lines.append(number)
            continue
        i, fields = found
        if decimal_comma(fields, i):
            stat.decimal_comma_lines.append(number)
            continue
        value, unit, event = fields[i].strip(), fields[i + 1].strip(), fields[i + 2].strip()
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
