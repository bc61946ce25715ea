"""``perf stat -x,`` CSV given with a result file: the host metrics of one measurement window.

The CSV itself is read by the one perf-stat parser, :mod:`stormatrix.host.perfstat` (standard library
only, shared with the host collector that runs on hypervisor nodes). Here: what a user's file must hold
(every line perf's layout, at least one counter), and which CPU metric it measured.

``<not supported>`` and ``<not counted>`` are never read as 0: an event with no counted value at all has
value None, and the metric choice below falls back from cycles to CPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.errors import DataFileError
from ...host import perfstat
from ...host.perfstat import NOT_COUNTED, NOT_SUPPORTED, PerfEvent

__all__ = ["NOT_COUNTED", "NOT_SUPPORTED", "PerfEvent", "PerfStat", "host_metrics", "parse_perf_csv"]


@dataclass
class PerfStat(perfstat.PerfStat):
    """The parser's events, and the file they came from (for messages)."""

    source: str = "<perf csv>"


def parse_perf_csv(text: str, source: str = "<perf csv>") -> PerfStat:
    """Every event in a ``perf stat -x,`` file, summed over intervals, CPUs and threads.

    Unlike the collector, which skips perf's own chatter in what it recorded itself, a user's file with
    a line no layout fits is refused, naming the lines.
    """
    parsed = perfstat.parse(text)
    stat = PerfStat(events=parsed.events, bad_lines=parsed.bad_lines, source=source)
    if parsed.decimal_comma_lines:
        n = parsed.decimal_comma_lines[0]
        line = text.splitlines()[n - 1].strip()[:60]
        raise DataFileError(source, f"line {n} ({line!r}) holds a number written with a decimal comma (perf ran "
                                    "under a locale such as de_DE), so its value cannot be told from the next column",
                            "record again with LC_ALL=C: LC_ALL=C perf stat -x, -o <file> -e "
                            "context-switches,cpu-clock ...")
    if stat.bad_lines:
        bad = stat.bad_lines
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
