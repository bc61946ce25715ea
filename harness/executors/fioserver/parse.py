"""Reading fio's client-mode output: per-guest results, fio's own aggregate, lost guests, windows.

Pure functions over fio's text and its IOPS logs (what fio 3.33 writes is described in
:mod:`stormatrix.executors.fioserver.executor` and docs/fio-server.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...analysis.read.fio import parse_fio_json, summarize_jobs
from ...core.errors import DataFileError
from .inputs import ALL_CLIENTS, FioGuest

_DISCONNECT_RES = (
    re.compile(r"client: host=(?P<host>\S+) disconnected"),
    re.compile(r"client <(?P<host>[^>]+)>: timeout on"),
    re.compile(r"fio: client (?P<host>\S+?),? timed out"),
    re.compile(r"fio: client (?P<host>\S+?), timeout on cmd"),
    re.compile(r"fio: failed to connect to (?P<host>[^:\s]+):(?P<port>\d+)"),
    re.compile(r"client <(?P<host>[^>]+)>: exited with error"),
)


def noise_lines(text: str) -> list[str]:
    """The non-JSON lines fio's client mode writes around the document (kept as evidence)."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        if depth == 0 and stripped and not stripped.startswith("{"):
            out.append(line.rstrip())
            continue
        depth += line.count("{") - line.count("}")  # fio's own JSON has no braces in strings we use
        depth = max(depth, 0)
    return out


def lost_hosts_in_text(text: str) -> list[tuple[str, int | None, str]]:
    """(host, port or None, line) for every line where fio says a client connection failed."""
    found: list[tuple[str, int | None, str]] = []
    for line in text.splitlines():
        for rx in _DISCONNECT_RES:
            m = rx.search(line)
            if m:
                port = m.groupdict().get("port")
                found.append((m.group("host"), int(port) if port else None, line.strip()))
                break
    return found


@dataclass
class ClientOutput:
    """The parsed document: per-guest fio summaries, fio's own aggregate, and our sum."""

    document: dict[str, Any]
    per_guest: dict[str, dict[str, Any]]  # guest name -> summarize_jobs(...) (+ "version")
    missing: list[FioGuest]
    aggregate: dict[str, Any] | None  # sum over every guest's jobs (None if no guest reported)
    fio_all_clients: dict[str, Any] | None  # fio's "All clients" entry, summarized
    check: dict[str, Any]
    unknown_entries: list[str] = field(default_factory=list)


def _close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def aggregate_check(aggregate: dict[str, Any] | None, fio_all: dict[str, Any] | None,
                    n_reported: int) -> dict[str, Any]:
    """Does fio's "All clients" agree with the sum of the clients?

    Counts must be equal exactly: io_bytes and total_ios. Rates differ by definition: our aggregate
    IOPS/bandwidth is the sum of the clients' own rates (each over its own window); fio's "All
    clients" divides the summed I/Os by the *longest* client runtime (stat.c ``sum_thread_stats``
    keeps the max runtime), so it is a little lower whenever the clients' runtimes differ. We check
    fio's rates against that definition (to 0.1 %) and record both.

    fio only writes "All clients" when more than one client reported, and not at all when a client
    timed out; ``match`` is then None (nothing to compare), never True. A figure one side lacks (fio did
    not write it: null in the summary) makes that direction's ``match`` None with ``unchecked`` naming the
    figures, and the overall ``match`` None unless another direction already disagrees.
    """
    out: dict[str, Any] = {"clients": n_reported, "fio_all_clients": fio_all is not None, "match": None,
                           "rule": "io_bytes and total_ios equal; fio rates = summed I/O / longest runtime"}
    if aggregate is None or fio_all is None:
        return out
    # a direction one side has no block for moved nothing there (fio writes no block without I/O)
    empty = {"io_bytes": 0, "total_ios": 0, "iops": 0.0, "bw_bytes": 0.0, "runtime_ms": 0.0}
    verdicts: list[bool | None] = []
    for d in ("read", "write", "trim", "total"):
        if d not in aggregate and d not in fio_all:
            continue
        s = aggregate.get(d, empty)
        f = fio_all.get(d, empty)
        row = {"sum_io_bytes": s["io_bytes"], "fio_io_bytes": f["io_bytes"],
               "sum_total_ios": s["total_ios"], "fio_total_ios": f["total_ios"],
               "sum_iops": s["iops"], "fio_iops": f["iops"],
               "sum_bw_bytes": s["bw_bytes"], "fio_bw_bytes": f["bw_bytes"],
               "longest_runtime_ms": s["runtime_ms"], "fio_runtime_ms": f["runtime_ms"]}
        needed = ["io_bytes", "total_ios"] + (["runtime_ms", "iops", "bw_bytes"] if d != "total" else [])
        unknown = [k for k in needed if s.get(k) is None or f.get(k) is None]
        good: bool | None
        if unknown:
            good = None  # a figure fio did not write cannot be compared: no verdict, never a guess
            row["unchecked"] = f"not written by fio on one side: {', '.join(unknown)}"
        else:
            good = s["io_bytes"] == f["io_bytes"] and s["total_ios"] == f["total_ios"]
            if d != "total" and f["runtime_ms"]:
                want_iops = s["total_ios"] * 1000.0 / f["runtime_ms"]
                want_bw = s["io_bytes"] * 1000.0 / f["runtime_ms"]
                row.update(fio_definition_iops=want_iops, fio_definition_bw_bytes=want_bw)
                good = good and f["runtime_ms"] == s["runtime_ms"] and _close(f["iops"], want_iops) \
                    and _close(f["bw_bytes"], want_bw)
        row["match"] = good
        out[d] = row
        verdicts.append(good)
    out["match"] = False if False in verdicts else (None if None in verdicts else True)
    return out


def parse_client_output(text: str, guests: Sequence[FioGuest], source: str = "<fio client output>") -> ClientOutput:
    """Split fio's client-mode JSON into per-guest results; pure function over the text.

    Guests are matched on (hostname, port) exactly as given to ``--client``: fio echoes the host
    string it was given, and the port tells loopback servers apart.
    """
    doc = parse_fio_json(text, source)
    entries = doc.get("client_stats")
    if not isinstance(entries, list):
        raise DataFileError(source, "this is not client-mode output (no 'client_stats')",
                            "run fio with --client=... and --output-format=json")
    by_addr: dict[tuple[str, int | None], FioGuest] = {(g.host, g.port): g for g in guests}
    jobs: dict[str, list[dict[str, Any]]] = {g.name: [] for g in guests}
    all_clients: list[dict[str, Any]] = []
    unknown: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("jobname") == ALL_CLIENTS:
            all_clients.append(entry)
            continue
        guest = by_addr.get((str(entry.get("hostname")), _int(entry.get("port"))))
        if guest is None:
            unknown.append(f"{entry.get('hostname')}:{entry.get('port')}")
            continue
        jobs[guest.name].append(entry)
    version = doc.get("fio version")
    per_guest = {}
    for g in guests:
        if jobs[g.name]:
            per_guest[g.name] = {"version": version, **summarize_jobs(jobs[g.name])}
    missing = [g for g in guests if g.name not in per_guest]
    every_job = [j for g in guests for j in jobs[g.name]]
    aggregate = {"version": version, **summarize_jobs(every_job)} if every_job else None
    fio_all = {"version": version, **summarize_jobs(all_clients)} if all_clients else None
    return ClientOutput(document=doc, per_guest=per_guest, missing=missing, aggregate=aggregate,
                        fio_all_clients=fio_all, check=aggregate_check(aggregate, fio_all, len(per_guest)),
                        unknown_entries=unknown)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- the measurement window of each client, from its IOPS log ---------------------------------------

def read_iops_logs(directory: Path, prefix: str, log_avg_msec: int) -> dict[str, Any] | None:
    """Window edges (unix ms) of one guest from ``<prefix>_iops.<n>.log.<host>`` files, or None.

    Start = first sample - log_avg_msec (fio writes a sample when a period has passed since the
    window began); end = last sample. With ``numjobs`` > 1 each clone has a file: the earliest start
    and the latest end are the guest's window.
    """
    starts: list[float] = []
    ends: list[float] = []
    samples = 0
    for path in sorted(directory.glob(f"{prefix}_iops.*.log.*")):
        first = last = None
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head = line.split(",", 1)[0].strip()
                if not head.isdigit():
                    continue
                t = float(head)
                first = t if first is None else first
                last = t
                samples += 1
        if first is not None and last is not None:
            starts.append(first - log_avg_msec)
            ends.append(last)
    if not starts:
        return None
    return {"start_ms": min(starts), "end_ms": max(ends), "samples": samples}


def window_skew(windows: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """Start/end skew between clients' measurement windows, in seconds (None if fewer than two)."""
    have = {k: v for k, v in windows.items() if v}
    out: dict[str, Any] = {
        "source": "fio IOPS log with log_unix_epoch (first sample - log_avg_msec); guest wall clocks",
        "clients_dated": len(have),
        "start_skew_s": None, "end_skew_s": None, "first_start_ms": None, "last_start_ms": None,
        "overlap_s": None,
    }
    if len(have) >= 1:
        starts = [v["start_ms"] for v in have.values()]
        ends = [v["end_ms"] for v in have.values()]
        out.update(first_start_ms=min(starts), last_start_ms=max(starts),
                   overlap_s=max(0.0, (min(ends) - max(starts)) / 1000.0))
        if len(have) >= 2:
            out.update(start_skew_s=(max(starts) - min(starts)) / 1000.0,
                       end_skew_s=(max(ends) - min(ends)) / 1000.0)
    return out
