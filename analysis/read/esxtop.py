"""``esxtop`` batch output (``esxtop -b -d DELAY -n ITERATIONS``): parse it and turn one VM's CPU over a
measurement window into the host record the Linux collector writes.

The format (Windows perfmon "PDH-CSV 4.0", which esxtop's batch mode writes so that perfmon can open it)::

    "(PDH-CSV 4.0) (UTC)(0)","\\\\esx01\\Memory\\Machine MBytes",...,"\\\\esx01\\Group Cpu(51234:bench01)\\% Used",...
    "11/22/2026 03:12:05","524288",...,"87.50",...

- line 1 is the header: the first cell names the format and the time zone with its bias in minutes
  (UTC = local time + bias; esxtop always writes ``(UTC)(0)``), every other cell is one counter as
  ``\\\\<host>\\<object>[(<instance>)]\\<counter>``;
- then one row per iteration: the time of the snapshot (``MM/DD/YYYY HH:MM:SS``) and one value per
  counter, every cell quoted; a cell can be empty (an entity without a value in that iteration);
- a VM is a CPU *group*: ``Group Cpu(<group id>:<VM name>)`` with ``% Used``, ``% Run``, ``% System``,
  ``% Wait``, ``% VmWait``, ``% Ready``, ``% Idle``, ``% Overlap``, ``% CoStop``, ``% Max Limited``,
  ``% Swap Wait``, ``Members``, ``Switches/sec`` ...; the host's CPUs are ``Physical Cpu(<n>|_Total)``
  with ``% Processor Time``, ``% Util Time`` and (with hyperthreading) ``% Core Util Time``.

What this relies on, and where it comes from (public references, none of their code is used):

- the header cell ``(PDH-CSV 4.0) (UTC)(0)``, quoted cells, ``\\\\host\\object(instance)\\counter``
  names and ``MM/DD/YYYY HH:MM:SS`` times: the test fixtures of vfedotovs/esxtop-batch-data-visualizer
  (``tests/conftest.py``, which builds captures "esxtop-style PDH-CSV"), the Zenoss EsxTop ZenPack's
  reader of batch output (zenoss/ZenPacks.zenoss.EsxTop ``libexec/check_esxtop``: two lines, names and
  quoted values, VMs matched as ``Group Cpu\\([0-9]+:([^)]*)\\)``) and its list of Group Cpu counters
  (``tests/parserdata/esx/esx1/group_cpu_host.py``), and a script that reads
  ``Physical Cpu(_Total)\\% Util Time`` from ``esxtop -b`` with the sample time
  ``'(PDH-CSV 4.0) (UTC)(0)': '05/15/2018 02:13:06'``;
- the meaning of %USED: VMware's "Interpreting esxtop Statistics" (VMTN DOC-9279, section 1): "%USED =
  (CPU used time at snapshot 2 - CPU used time at snapshot 1) / time elapsed between snapshots", so the
  CPU seconds of one iteration are %USED / 100 x its interval; a group's %USED can exceed 100 (several
  vCPUs). The same paper: a VM is a group of worlds (one per vCPU plus helper worlds).
- the time-zone bias: perfmon writes e.g. ``(PDH-CSV 4.0) (India Standard Time)(-330)``; UTC = local + bias.

Not checked against a real ESXi host here (none is reachable): whether esxtop shows a VM name with
``%``, ``/`` or ``\\`` raw or escaped the way vSphere escapes entity names (``%25``, ``%2f``, ``%5c``);
both are accepted.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ...core.errors import DataFileError

FORMAT_CELL = re.compile(r"^\(PDH-CSV 4\.0\) \((?P<tz>[^()]*)\)\((?P<bias>-?\d+)\)$")
COUNTER_CELL = re.compile(r"^\\\\(?P<host>[^\\]+)\\(?P<path>.+)\\(?P<counter>[^\\]+)$")
TIME_FORMATS = ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S.%f")
CAPTURE_FIX = ("capture it again on the ESXi host with `esxtop -b -d <delay> -n <iterations> > capture.csv` "
               "and give that file unchanged")

GROUP_CPU = "Group Cpu"
PHYSICAL_CPU = "Physical Cpu"
USED, RUN, SYSTEM, WAIT, READY = "% Used", "% Run", "% System", "% Wait", "% Ready"
COSTOP, OVERLAP = "% CoStop", "% Overlap"
SWITCHES, MEMBERS = "Switches/sec", "Members"
#: record key -> the Group Cpu percentage it sums into seconds
PERCENT_SECONDS = {"vm_used_s": USED, "vm_run_s": RUN, "vm_system_s": SYSTEM, "vm_wait_s": WAIT,
                   "vm_ready_s": READY, "vm_costop_s": COSTOP, "vm_overlap_s": OVERLAP}
#: record key -> the Physical Cpu(_Total) percentage averaged over the window
HOST_PERCENT = {"host_util_pct_avg": "% Util Time", "host_processor_pct_avg": "% Processor Time",
                "host_core_util_pct_avg": "% Core Util Time"}

UNMATCHED = {
    "cpu_total": "esxtop %USED of the VM's CPU group (its vCPU worlds plus the system time ESXi charges to the "
                 "VM) x each iteration's interval; on Linux the QEMU process's CPU time (task-clock)",
    "cpu_user": "esxtop splits a VM's time into %RUN, %SYS and %OVRLP (vmware.vm_run_s, vm_system_s, "
                "vm_overlap_s), not into a process's user and system time",
    "cpu_system": "esxtop splits a VM's time into %RUN, %SYS and %OVRLP (vmware.vm_run_s, vm_system_s, "
                  "vm_overlap_s), not into a process's user and system time",
    "cycles": "esxtop reports no hardware cycle counts",
    "ctx_switches": "ESXi has no context-switch count for a VM; esxtop's Switches/sec counts VMkernel world "
                    "switches (vmware.vm_world_switches when present), a different event, so ctx/MiB stays empty",
    "threads": "esxtop's batch output has one Group Cpu entry per VM (all its worlds together); no main-loop, "
               "iothread or worker threads as for QEMU",
}


@dataclass(frozen=True)
class Column:
    """One counter of the header: ``\\\\host\\object(instance)\\counter``."""

    index: int  # 0-based position in a row
    name: str  # the header cell as written
    obj: str
    instance: str | None
    counter: str

    @property
    def number(self) -> int:
        """1-based column number, as a spreadsheet shows it."""
        return self.index + 1


@dataclass
class EsxtopCapture:
    """A parsed capture: the header and the raw cells; numbers are read (and checked) per column."""

    source: str
    host: str
    timezone: str
    bias_minutes: int
    columns: list[Column]
    times: list[datetime]  # UTC, one per row
    rows: list[list[str]]  # the cells of each row, timestamp first
    lines: list[int]  # the file's line number of each row
    _by_key: dict[tuple[str, str | None, str], list[Column]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for col in self.columns:
            self._by_key.setdefault((col.obj, col.instance, col.counter), []).append(col)

    def column(self, obj: str, instance: str | None, counter: str) -> Column | None:
        cols = self._by_key.get((obj, instance, counter), [])
        if len(cols) > 1:
            raise DataFileError(self.source, f"columns {', '.join(str(c.number) for c in cols)} all name "
                                             f"{cols[0].name!r}", "keep one esxtop run per file; " + CAPTURE_FIX)
        return cols[0] if cols else None

    def groups(self) -> list[tuple[str, str]]:
        """(group id, name) of every CPU group, in header order."""
        seen: dict[str, tuple[str, str]] = {}
        for col in self.columns:
            if col.obj == GROUP_CPU and col.instance and col.instance not in seen:
                gid, _, name = col.instance.partition(":")
                seen[col.instance] = (gid, name)
        return list(seen.values())

    def values(self, col: Column, *, percent: bool = False) -> list[float | None]:
        """The column's numbers, None for an empty cell. A cell that is not a finite number (or a
        negative percentage) is an error naming its line and column."""
        out: list[float | None] = []
        for cells, line in zip(self.rows, self.lines):
            cell = cells[col.index].strip()
            if cell == "":
                out.append(None)
                continue
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or (percent and value < 0):
                what = "a negative percentage" if math.isfinite(value) else "not a number"
                raise DataFileError(self.source, f"line {line}, column {col.number} ({col.name}): {cell!r} is {what}",
                                    "esxtop writes a number or an empty cell there, so the file was edited or "
                                    "damaged; " + CAPTURE_FIX)
            out.append(value)
        return out


def _parse_counter(index: int, cell: str, source: str) -> Column:
    m = COUNTER_CELL.match(cell)
    if not m:
        raise DataFileError(source, f"line 1, column {index + 1}: {cell!r} is not a counter name like "
                                    "\"\\\\esx01\\Group Cpu(1234:vm)\\% Used\"", CAPTURE_FIX)
    path = m.group("path")
    obj, instance = path, None
    if "(" in path:
        if not path.endswith(")"):
            raise DataFileError(source, f"line 1, column {index + 1}: {cell!r} opens an instance with '(' that "
                                        "does not close before the counter", CAPTURE_FIX)
        obj, _, rest = path.partition("(")
        instance = rest[:-1]
    return Column(index, cell, obj, instance, m.group("counter"))


def _parse_time(cell: str, bias: int, line: int, source: str) -> datetime:
    for fmt in TIME_FORMATS:
        try:
            local = datetime.strptime(cell.strip(), fmt)
        except ValueError:
            continue
        return (local + timedelta(minutes=bias)).replace(tzinfo=timezone.utc)
    raise DataFileError(source, f"line {line}, column 1: {cell!r} is not a sample time like \"11/22/2026 03:12:05\"",
                        "esxtop writes MM/DD/YYYY HH:MM:SS there, so the file was edited or damaged; " + CAPTURE_FIX)


def parse_esxtop(text: str, source: str = "<esxtop output>") -> EsxtopCapture:
    """Every row of one esxtop batch capture. Strict: a cut-off row, a header that is not esxtop's, a
    time that goes backwards (two captures in one file) are errors naming the line and the fix."""
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    host = tz = ""
    bias = 0
    columns: list[Column] = []
    times: list[datetime] = []
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        for cells in reader:
            line = reader.line_num
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue  # a blank line (the one after the last row, usually)
            if header is None:
                m = FORMAT_CELL.match(cells[0].strip())
                if not m:
                    raise DataFileError(source, f"line {line}, column 1 is {cells[0][:80]!r}: this is not esxtop "
                                                "batch output, whose header starts with \"(PDH-CSV 4.0) (UTC)(0)\"",
                                        CAPTURE_FIX + " (batch mode -b; not the interactive screen, not Get-EsxTop)")
                if len(cells) < 2:
                    raise DataFileError(source, f"line {line}: the header names no counter", CAPTURE_FIX)
                tz, bias = m.group("tz"), int(m.group("bias"))
                columns = [_parse_counter(i, c, source) for i, c in enumerate(cells) if i > 0]
                # every name matched COUNTER_CELL in _parse_counter above
                hosts = {COUNTER_CELL.match(c.name).group("host") for c in columns}  # type: ignore[union-attr]
                if len(hosts) > 1:
                    raise DataFileError(source, f"line {line}: the header names several hosts "
                                                f"({', '.join(sorted(hosts))})",
                                        "keep one host's capture per file")
                host = hosts.pop()
                header = cells
                continue
            if len(cells) != len(header):
                cut = len(cells) < len(header)
                raise DataFileError(
                    source, f"line {line} has {len(cells)} cells, the header has {len(header)}"
                            + (" (the row is cut off: esxtop stopped while writing it?)" if cut else ""),
                    f"{CAPTURE_FIX}, or delete line {line} if the rows before it cover the window")
            when = _parse_time(cells[0], bias, line, source)
            if times and when <= times[-1]:
                raise DataFileError(source, f"line {line}, column 1: {cells[0]!r} is not later than the row before "
                                            f"it (line {lines[-1]}): rows of two captures, or out of order",
                                    "keep one esxtop run per file, in the order esxtop wrote it")
            times.append(when)
            rows.append(cells)
            lines.append(line)
    except csv.Error as exc:
        line = reader.line_num
        if "unexpected end of data" in str(exc):  # a quoted cell that never closes: the file ends mid-cell
            partial = text.splitlines()[line - 1] if line - 1 < len(text.splitlines()) else ""
            of = f" of {len(header)}" if header else ""
            cut_column = partial.count(chr(34) + ',' + chr(34)) + 1
            raise DataFileError(source, f"line {line} is cut off in column {cut_column}"
                                        f"{of} (esxtop stopped while writing it?)",
                                f"{CAPTURE_FIX}, or delete line {line} if the rows before it cover the window"
                                ) from None
        raise DataFileError(source, f"line {line}: broken CSV quoting ({exc})", CAPTURE_FIX) from None
    if header is None:
        raise DataFileError(source, "is empty: no esxtop output", CAPTURE_FIX)
    if not rows:
        raise DataFileError(source, "has the header but no sample rows (esxtop stopped before its first iteration)",
                            CAPTURE_FIX + " with -n of at least 1")
    return EsxtopCapture(source, host, tz, bias, columns, times, rows, lines)


def read_esxtop(path: str | Path) -> EsxtopCapture:
    """:func:`parse_esxtop` of a file; a file that cannot be read or is not text is a clear error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(str(path), f"cannot be read ({exc.strerror})",
                            "give the path of an esxtop capture") from None
    if data[:2] == b"\x1f\x8b" or b"\x00" in data[:4096]:
        raise DataFileError(str(path), "is not text (gzip or binary)", "decompress it first, or " + CAPTURE_FIX)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(str(path), f"is not UTF-8 text (byte {exc.start})", CAPTURE_FIX) from None
    return parse_esxtop(text, str(path))


def vsphere_escaped(name: str) -> str:
    """A VM name the way vSphere stores it in an entity name (``%``, ``/``, ``\\`` escaped)."""
    return name.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _vm_group(capture: EsxtopCapture, vm: str) -> str:
    wanted = {vm, vsphere_escaped(vm)}
    groups = capture.groups()
    found = [f"{gid}:{name}" for gid, name in groups if name in wanted]
    if not found:
        names = sorted({name for _, name in groups})
        shown = ", ".join(repr(n) for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise DataFileError(capture.source, f"VM {vm!r} has no Group Cpu columns (the capture holds the groups "
                                            f"{shown or 'of no VM'})",
                            "give the VM's name exactly as vSphere shows it ([vmware] vm), and start esxtop while "
                            "the VM is powered on: batch mode keeps the groups that existed at its first iteration")
    if len(found) > 1:
        raise DataFileError(capture.source, f"VM {vm!r} matches several CPU groups ({', '.join(found)}): two VMs share "
                                            "the name, or the VM restarted during the capture",
                            "give each VM a unique name, and one capture per power-on")
    return found[0]


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def vm_cpu_record(capture: EsxtopCapture, vm: str, *, delay_s: float | None = None, window_s: float | None = None,
                  offset_s: float = 0.0) -> dict[str, Any]:
    """The host record for one VM over a window, in the Linux collector's shape.

    Each row stands for one interval of ``(last time - first time) / (rows - 1)`` seconds (the mean
    spacing of the rows, which whole-second times make more exact than any one gap); a one-row capture
    needs ``delay_s`` (esxtop's ``-d``). Row ``i`` covers ``[i, i + 1]`` intervals from the moment
    esxtop took its first snapshot; the window is ``[offset_s, offset_s + window_s]`` on that timeline
    (default: the whole capture). A row counts with the part of its interval inside the window, so a
    capture that runs past the window's end is not charged for it. Empty ``% Used`` cells and a window
    the capture does not fully cover are made up for by proration (CPU use assumed even), flagged
    ``vmware.prorated`` with the ``coverage``.
    """
    n = len(capture.rows)
    if n >= 2:
        interval = (capture.times[-1] - capture.times[0]).total_seconds() / (n - 1)
    elif delay_s:
        interval = float(delay_s)
    else:
        raise DataFileError(capture.source,
                            "has one sample row and no delay was given, so the time it covers is unknown",
                            "give esxtop's -d value, or capture at least two iterations (-n 2)")
    span = n * interval
    w0 = float(offset_s)
    w1 = w0 + (span - w0 if window_s is None else float(window_s))
    window = w1 - w0
    if window <= 0:
        raise DataFileError(capture.source, f"the window of {window:g} s is empty", "give a window longer than 0 s")
    overlap = [max(0.0, min((i + 1) * interval, w1) - max(i * interval, w0)) for i in range(n)]

    instance = _vm_group(capture, vm)
    used_col = capture.column(GROUP_CPU, instance, USED)
    if used_col is None:
        raise DataFileError(capture.source, f"has no '% Used' column for VM {vm!r} (Group Cpu({instance})): esxtop ran "
                                            "with a configuration (-c) that leaves it out",
                            "run esxtop -b without -c, or with a configuration that keeps the CPU field %USED")
    used = capture.values(used_col, percent=True)
    covered = sum(o for o, v in zip(overlap, used) if v is not None and o > 0)
    if covered <= 0:
        raise DataFileError(capture.source, f"no '% Used' value of VM {vm!r} falls inside the window "
                                            f"({w0:g} .. {w1:g} s of a {span:g} s capture)",
                            "start esxtop when the measurement starts and run it for the whole window")

    empty: dict[str, int] = {}
    seconds: dict[str, float | None] = {}
    for key, counter in PERCENT_SECONDS.items():
        col = capture.column(GROUP_CPU, instance, counter)
        if col is None:
            seconds[key] = None
            continue
        vals = capture.values(col, percent=True)
        missing = sum(1 for o, v in zip(overlap, vals) if o > 0 and v is None)
        if missing:
            empty[counter] = missing
        seconds[key] = sum(v / 100.0 * o for o, v in zip(overlap, vals) if v is not None)
    switches_col = capture.column(GROUP_CPU, instance, SWITCHES)
    world_switches = None
    if switches_col is not None:
        vals = capture.values(switches_col)
        world_switches = sum(v * o for o, v in zip(overlap, vals) if v is not None)
    members_col = capture.column(GROUP_CPU, instance, MEMBERS)
    members = None
    if members_col is not None:
        present = [v for o, v in zip(overlap, capture.values(members_col)) if o > 0 and v is not None]
        members = int(present[-1]) if present else None
    host_pct: dict[str, float | None] = {}
    for key, counter in HOST_PERCENT.items():
        col = capture.column(PHYSICAL_CPU, "_Total", counter)
        pairs = [(o, v) for o, v in zip(overlap, capture.values(col, percent=True)) if o > 0 and v is not None] \
            if col is not None else []
        weight = sum(o for o, _ in pairs)
        host_pct[key] = sum(o * v for o, v in pairs) / weight if weight > 0 else None

    used_s = seconds["vm_used_s"] or 0.0
    prorated = covered < window - 1e-9
    cpu_total = used_s * window / covered
    inside = [i for i, (o, v) in enumerate(zip(overlap, used)) if o > 0 and v is not None]
    return {
        "cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": cpu_total, "cpu_user": None, "cpu_system": None,
        "cpu_time_s": {"total": cpu_total, "user": None, "system": None}, "cycles": None,
        "ctx_switches": None, "ctx_voluntary": None, "ctx_involuntary": None,
        "source": "esxtop", "scope": "esxi-vm", "pid": None, "vm": vm, "window_s": window,
        "threads": [], "by_role": {}, "split_approximate": False,
        "unmatched": dict(UNMATCHED),
        "vmware": {
            "host": capture.host, "capture": capture.source, "vm_group": instance, "vm_worlds": members,
            "interval_s": interval, "delay_s": delay_s, "prorated": prorated,
            "samples": len(inside), "samples_total": n, "covered_s": covered, "coverage": covered / window,
            "first_sample_end": _iso(capture.times[inside[0]]), "last_sample_end": _iso(capture.times[inside[-1]]),
            **seconds, "vm_world_switches": world_switches, **host_pct, "empty_cells": empty,
        },
    }
