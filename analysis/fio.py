"""fio JSON output: extract the JSON document from whatever text surrounds it, and summarize jobs.

Pure functions over text and dicts. They survive what real fio output contains: warnings printed
before the JSON, client/server status lines (some starting with ``<``), fio 2.x usec latency fields,
fio < 3.2 without ``bw_bytes``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..errors import DataFileError

DIRECTIONS = ("read", "write", "trim")


def extract_json_documents(text: str, source: str = "<fio output>") -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, skipping non-JSON lines around and between them.

    fio's client mode interleaves lines such as ``<host> fio: ...`` with the JSON; on Windows, and
    without ``--output``, warnings precede it. We scan for ``{`` at the start of a line and let the
    JSON decoder tell where each object ends.
    """
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    pos, n = 0, len(text)
    while pos < n:
        start = text.find("{", pos)
        if start < 0:
            break
        # only consider a brace that starts a line (possibly indented): avoids braces inside noise
        line_start = text.rfind("\n", 0, start) + 1
        if text[line_start:start].strip():
            pos = start + 1
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(obj, dict):
            docs.append(obj)
        pos = end
    if not docs:
        snippet = text.strip()[:80].replace("\n", " ")
        raise DataFileError(source, "no fio JSON document found" + (f" (starts with {snippet!r})" if snippet else " (empty)"),
                            "run fio with --output-format=json and --output=<file>")
    return docs


def parse_fio_json(text: str, source: str = "<fio output>") -> dict[str, Any]:
    """The fio JSON document in ``text`` (the one with ``jobs`` or ``client_stats``)."""
    for doc in extract_json_documents(text, source):
        if "jobs" in doc or "client_stats" in doc:
            return doc
    raise DataFileError(source, "JSON found but it has no 'jobs' or 'client_stats' list",
                        "give fio's own --output-format=json output")


def _num(d: dict[str, Any], key: str, default: float = 0.0) -> float:
    v = d.get(key, default)
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _lat_ns(direction: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A latency block in nanoseconds: fio 3 ``<name>_ns`` or fio 2 ``<name>`` in usec."""
    if isinstance(direction.get(f"{name}_ns"), dict):
        return direction[f"{name}_ns"]
    old = direction.get(name)
    if isinstance(old, dict):
        scaled = {k: (v * 1000.0 if isinstance(v, (int, float)) and k in ("min", "max", "mean", "stddev") else v)
                  for k, v in old.items()}
        if isinstance(old.get("percentile"), dict):
            scaled["percentile"] = {k: v * 1000.0 for k, v in old["percentile"].items()
                                    if isinstance(v, (int, float))}
        return scaled
    return None


def _percentile(block: dict[str, Any] | None, pct: float) -> float | None:
    if not block or not isinstance(block.get("percentile"), dict):
        return None
    for key, val in block["percentile"].items():
        try:
            if abs(float(key) - pct) < 1e-6:
                return float(val)
        except ValueError:
            continue
    return None


def summarize_direction(direction: dict[str, Any]) -> dict[str, Any]:
    io_bytes = _num(direction, "io_bytes")
    if not io_bytes and "io_kbytes" in direction:
        io_bytes = _num(direction, "io_kbytes") * 1024
    bw_bytes = _num(direction, "bw_bytes") if "bw_bytes" in direction else _num(direction, "bw") * 1024
    lat = _lat_ns(direction, "lat")
    clat = _lat_ns(direction, "clat")
    return {
        "io_bytes": int(io_bytes),
        "bw_bytes": bw_bytes,
        "iops": _num(direction, "iops"),
        "runtime_ms": _num(direction, "runtime"),
        "total_ios": int(_num(direction, "total_ios")),
        "lat_mean_ns": float(lat["mean"]) if lat and "mean" in lat else None,
        "clat_mean_ns": float(clat["mean"]) if clat and "mean" in clat else None,
        "clat_p99_ns": _percentile(clat, 99.0),
        "lat_p99_ns": _percentile(lat, 99.0) or _percentile(clat, 99.0),
    }


def summarize_jobs(jobs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum a set of fio jobs (e.g. numjobs clones) into one result with per-direction and total figures."""
    jobs = list(jobs)
    out: dict[str, Any] = {}
    total_bytes = total_ios = 0
    total_iops = total_bw = 0.0
    lat_weighted = 0.0
    lat_weight = 0
    p99 = None
    runtime = 0.0
    for d in DIRECTIONS:
        parts = [summarize_direction(j[d]) for j in jobs if isinstance(j.get(d), dict)]
        parts = [p for p in parts if p["io_bytes"] or p["total_ios"]]
        if not parts:
            continue
        ios = sum(p["total_ios"] for p in parts)
        lat_mean = None
        weighted = [(p["lat_mean_ns"], p["total_ios"]) for p in parts if p["lat_mean_ns"] is not None]
        if weighted and sum(w for _, w in weighted):
            lat_mean = sum(v * w for v, w in weighted) / sum(w for _, w in weighted)
        p99s = [p["lat_p99_ns"] for p in parts if p["lat_p99_ns"] is not None]
        block = {
            "io_bytes": sum(p["io_bytes"] for p in parts),
            "bw_bytes": sum(p["bw_bytes"] for p in parts),
            "iops": sum(p["iops"] for p in parts),
            "total_ios": ios,
            "runtime_ms": max(p["runtime_ms"] for p in parts),
            "lat_mean_ns": lat_mean,
            # the worst job's p99: percentiles cannot be summed, and the max is the honest bound
            "lat_p99_ns": max(p99s) if p99s else None,
        }
        out[d] = block
        total_bytes += block["io_bytes"]
        total_ios += ios
        total_iops += block["iops"]
        total_bw += block["bw_bytes"]
        runtime = max(runtime, block["runtime_ms"])
        if lat_mean is not None:
            lat_weighted += lat_mean * ios
            lat_weight += ios
        if block["lat_p99_ns"] is not None:
            p99 = max(p99 or 0.0, block["lat_p99_ns"])
    out["total"] = {
        "io_bytes": total_bytes,
        "iops": total_iops,
        "bw_bytes": total_bw,
        "total_ios": total_ios,
        "runtime_ms": runtime,
        "lat_mean_ns": (lat_weighted / lat_weight) if lat_weight else None,
        "lat_p99_ns": p99,
    }
    out["usr_cpu"] = sum(_num(j, "usr_cpu") for j in jobs) / max(len(jobs), 1)
    out["sys_cpu"] = sum(_num(j, "sys_cpu") for j in jobs) / max(len(jobs), 1)
    out["ctx"] = int(sum(_num(j, "ctx") for j in jobs))
    out["error"] = max((int(_num(j, "error")) for j in jobs), default=0)
    out["jobs"] = len(jobs)
    return out


def jobs_named(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [j for j in doc.get("jobs", []) if j.get("jobname") == name]
