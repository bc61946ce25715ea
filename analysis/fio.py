"""fio JSON output: extract the JSON document from whatever text surrounds it, and summarize jobs.

Pure functions over text and dicts. They survive what real fio output contains: warnings printed
before the JSON, client/server status lines (some starting with ``<``), fio 2.x usec latency fields,
fio < 3.2 without ``bw_bytes``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..core.errors import DataFileError

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
        found = f" (starts with {snippet!r})" if snippet else " (empty)"
        raise DataFileError(source, "no fio JSON document found" + found,
                            "run fio with --output-format=json and --output=<file>")
    return docs


def parse_fio_json(text: str, source: str = "<fio output>") -> dict[str, Any]:
    """The fio JSON document in ``text`` (the one with ``jobs`` or ``client_stats``)."""
    for doc in extract_json_documents(text, source):
        if "jobs" in doc or "client_stats" in doc:
            return doc
    raise DataFileError(source, "JSON found but it has no 'jobs' or 'client_stats' list",
                        "give fio's own --output-format=json output")


_NUM_TYPES = (int, float)
_INF = float("inf")


def _bad(where: tuple[str, str, str], problem: str) -> DataFileError:
    source, job, direction = where
    return DataFileError(source, f"job {job!r}: {direction}.{problem}")


def _num(d: dict[str, Any], key: str, where: tuple[str, str, str] | None) -> float | int | None:
    """``d[key]`` as a number, or None when absent.

    Strict (``where`` given, ingest): anything but a finite, non-negative number is a damaged or foreign
    file, and the DataFileError names the field. Lenient (the runner, over fio's own fresh output): a
    number in text is read, anything else is None.
    """
    v = d.get(key)
    if v is None:
        if where is not None and key in d:
            raise _bad(where, f"{key} is None, not a number")
        return None
    if type(v) in _NUM_TYPES:
        if where is not None and not 0 <= v < _INF:
            raise _bad(where, f"{key} is {v!r}; a count or rate must be finite and not negative")
        return v
    if where is not None:
        raise _bad(where, f"{key} is {v!r}, not a number")
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _lat_ns(direction: dict[str, Any], name: str, where: tuple[str, str, str] | None) -> dict[str, Any] | None:
    """A latency block in nanoseconds: fio 3 ``<name>_ns`` or fio 2 ``<name>`` in usec."""
    block = direction.get(f"{name}_ns")
    if block is not None:
        if type(block) is dict:
            return block
        if where is not None:
            raise _bad(where, f"{name}_ns is not an object")
    old = direction.get(name)
    if old is None:
        return None
    if type(old) is not dict:
        if where is not None:
            raise _bad(where, f"{name} is not an object")
        return None
    scaled = {k: (v * 1000.0 if type(v) in _NUM_TYPES and k in ("min", "max", "mean", "stddev") else v)
              for k, v in old.items()}
    if isinstance(old.get("percentile"), dict):
        scaled["percentile"] = {k: v * 1000.0 for k, v in old["percentile"].items() if type(v) in _NUM_TYPES}
    return scaled


def _mean(block: dict[str, Any] | None, name: str, where: tuple[str, str, str] | None) -> float | None:
    if block is None or "mean" not in block:
        return None
    v = block["mean"]
    if type(v) in _NUM_TYPES:
        return float(v)
    if where is not None:
        raise _bad(where, f"{name}.mean is {v!r}, not a number")
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _p99(block: dict[str, Any] | None, name: str, where: tuple[str, str, str] | None) -> float | None:
    """The 99th percentile of a latency block (fio writes the key as ``99.000000``)."""
    if block is None:
        return None
    pct = block.get("percentile")
    if type(pct) is not dict:
        return None
    v = pct.get("99.000000")
    if v is None:  # another spelling of the key (``99.00``)
        for key, val in pct.items():
            try:
                if abs(float(key) - 99.0) < 1e-6:
                    v = val
                    break
            except ValueError:
                continue
        if v is None:
            return None
    if type(v) in _NUM_TYPES:
        return float(v)
    if where is not None:
        raise _bad(where, f"{name}.percentile 99 is {v!r}, not a number")
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _is_fio2_direction(direction: dict[str, Any]) -> bool:
    """fio < 3.0: latencies in usec (``clat``, not ``clat_ns``) and no ``io_kbytes`` next to ``io_bytes``."""
    return ("io_kbytes" not in direction and "clat_ns" not in direction and "lat_ns" not in direction
            and isinstance(direction.get("clat") or direction.get("lat"), dict))


_NO_IO = (0, 0.0, 0.0, 0.0, 0, None, None)


def _rate(d: dict[str, Any], key: str, where: tuple[str, str, str] | None) -> float:
    """A float field on the common path: a plain finite non-negative number as it is, else the slow reader."""
    v: Any = d.get(key)  # a JSON value: the class checks below narrow it (mypy cannot follow __class__)
    if (v.__class__ is float or v.__class__ is int) and 0 <= v < _INF:
        return float(v)
    return float(_num(d, key, where) or 0)


def _figures(d: dict[str, Any], where: tuple[str, str, str] | None) -> tuple[Any, ...]:
    """(io_bytes, bw_bytes, iops, runtime_ms, total_ios, lat_mean_ns, lat_p99_ns) of one direction block.

    Every field it reads is checked as it is read (strict: anything but a finite, non-negative number is
    an error naming the field); plain fio 3 numbers take the short path. Called once per direction of
    every job of every file, hence the shape.
    """
    get = d.get
    # JSON values, narrowed by class checks that mypy cannot follow: typed Any on purpose
    io_bytes: Any = get("io_bytes")
    if io_bytes.__class__ is not int or io_bytes < 0:
        io_bytes = _num(d, "io_bytes", where) or 0
    ios: Any = get("total_ios")
    if ios.__class__ is not int or ios < 0:
        ios = int(_num(d, "total_ios", where) or 0)
    if "io_kbytes" not in d:
        if _is_fio2_direction(d):
            io_bytes *= 1024  # fio 2.x wrote KiB into "io_bytes" (stat.c: io_bytes >> 10)
    elif "io_bytes" not in d:  # io_kbytes is io_bytes >> 10: only a stand-in when io_bytes is absent
        io_bytes = (_num(d, "io_kbytes", where) or 0) * 1024
    if not io_bytes and not ios:
        return _NO_IO  # a direction the job did not use: nothing of it is summed
    bw = _rate(d, "bw_bytes", where) if "bw_bytes" in d else _rate(d, "bw", where) * 1024
    lat = get("lat_ns")
    if lat.__class__ is not dict:
        lat = _lat_ns(d, "lat", where)
    clat = get("clat_ns")
    if clat.__class__ is not dict:
        clat = _lat_ns(d, "clat", where)
    mean: Any = lat.get("mean") if lat is not None else None
    if mean.__class__ is not float:
        mean = _mean(lat, "lat_ns" if "lat_ns" in d else "lat", where)
    return (int(io_bytes), bw, _rate(d, "iops", where), _rate(d, "runtime", where), ios, mean,
            _p99(lat, "lat_ns", where) or _p99(clat, "clat_ns", where))


def summarize_direction(direction: dict[str, Any], where: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """One direction block (``read``/``write``/``trim``) of one job, in the journal's units."""
    b, bw, iops, rt, ios, mean, p99 = _figures(direction, where)
    return {"io_bytes": b, "bw_bytes": bw, "iops": iops, "runtime_ms": rt, "total_ios": ios,
            "lat_mean_ns": mean, "lat_p99_ns": p99}


def summarize_jobs(jobs: Iterable[dict[str, Any]], source: str | None = None) -> dict[str, Any]:
    """Sum a set of fio jobs (numjobs clones, or clients) into per-direction and total figures.

    The one summary of fio output: the runner's record (``fio`` in docs/journal.md) and every ingested
    file go through it. Bytes, I/Os, IOPS and bandwidth add up; runtime is the longest job's; the mean
    latency is weighted by I/Os; p99 is the worst job's (percentiles cannot be summed, the max is the
    honest bound). Integers stay exact (fio counts in unsigned 64-bit).

    ``source`` (ingest) makes it strict: a field of the wrong type, negative or infinite raises
    DataFileError naming the file, job and field. Without it (the runner, over fio's fresh output),
    an unreadable field counts as absent.
    """
    jobs = list(jobs)
    out: dict[str, Any] = {}
    total_bytes = total_ios = 0
    total_iops = total_bw = lat_weighted = runtime = 0.0
    lat_weight = 0
    p99_all: float | None = None
    usr = sys_ = ctx = 0.0
    error = 0
    for job in jobs:
        e: Any
        u: Any
        sy: Any
        c: Any
        e, u, sy, c = job.get("error"), job.get("usr_cpu"), job.get("sys_cpu"), job.get("ctx")
        if e.__class__ is not int:
            e = int(_num(job, "error", None) or 0)
        error = max(error, e)
        usr += u if u.__class__ is float else (_num(job, "usr_cpu", None) or 0.0)
        sys_ += sy if sy.__class__ is float else (_num(job, "sys_cpu", None) or 0.0)
        ctx += c if c.__class__ is int else (_num(job, "ctx", None) or 0.0)
        if source is not None and "mixed" in job:  # unified_rw_reporting: checked, not summed
            _figures(job["mixed"], (source, str(job.get("jobname")), "mixed"))
    for dname in DIRECTIONS:
        b_bytes = b_ios = 0
        b_iops = b_bw = b_rt = w_sum = 0.0
        w_n = 0
        b_p99: float | None = None
        seen = False
        for job in jobs:
            d = job.get(dname)
            if d is None:
                continue
            if type(d) is not dict:
                if source is not None:
                    raise DataFileError(source, f"job {job.get('jobname')!r}: '{dname}' is a "
                                                f"{type(d).__name__}, not an object")
                continue
            nbytes, bw, iops, rt, ios, mean, p99 = _figures(
                d, (source, str(job.get("jobname")), dname) if source is not None else None)
            if not nbytes and not ios:
                continue
            seen = True
            b_bytes += nbytes
            b_ios += ios
            b_iops += iops
            b_bw += bw
            b_rt = max(b_rt, rt)
            if mean is not None:
                w_sum += mean * ios
                w_n += ios
            if p99 is not None:
                b_p99 = p99 if b_p99 is None else max(b_p99, p99)
        if not seen:
            continue
        lat_mean = (w_sum / w_n) if w_n else None
        out[dname] = {"io_bytes": b_bytes, "bw_bytes": b_bw, "iops": b_iops, "total_ios": b_ios,
                      "runtime_ms": b_rt, "lat_mean_ns": lat_mean, "lat_p99_ns": b_p99}
        total_bytes += b_bytes
        total_ios += b_ios
        total_iops += b_iops
        total_bw += b_bw
        runtime = max(runtime, b_rt)
        if lat_mean is not None:
            lat_weighted += lat_mean * b_ios
            lat_weight += b_ios
        if b_p99 is not None:
            p99_all = max(p99_all or 0.0, b_p99)
    n = max(len(jobs), 1)
    out["total"] = {"io_bytes": total_bytes, "iops": total_iops, "bw_bytes": total_bw, "total_ios": total_ios,
                    "runtime_ms": runtime, "lat_mean_ns": (lat_weighted / lat_weight) if lat_weight else None,
                    "lat_p99_ns": p99_all}
    out.update(usr_cpu=usr / n, sys_cpu=sys_ / n, ctx=int(ctx), error=error, jobs=len(jobs))
    return out


def jobs_named(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [j for j in doc.get("jobs", []) if j.get("jobname") == name]
