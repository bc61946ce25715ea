"""fio JSON output: extract the JSON document from whatever text surrounds it, and summarize jobs.

Pure functions over text and dicts. They survive what real fio output contains: warnings printed
before the JSON, client/server status lines (some starting with ``<``), fio 2.x usec latency fields,
fio < 3.2 without ``bw_bytes``.
"""

from __future__ import annotations

import json
from itertools import compress, repeat
from operator import is_
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
    return DataFileError(source, f"job {job!r}: {direction + '.' if direction else ''}{problem}")


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
    return _float_of(v, key, "", where)


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
    return _float_of(block["mean"], name, ".mean", where)


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
    return _float_of(v, name, ".percentile 99", where)


def _float_of(v: Any, name: str, field: str, where: tuple[str, str, str] | None) -> float | None:
    """A figure as a float. Strict (``where`` given): a number, else an error naming ``<name><field>``;
    lenient: a number in text is read too, anything else is None."""
    if type(v) in _NUM_TYPES:
        return float(v)
    if where is not None:
        raise _bad(where, f"{name}{field} is {v!r}, not a number")
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _is_fio2_direction(direction: dict[str, Any]) -> bool:
    """fio < 3.0: latencies in usec (``clat``, not ``clat_ns``) and no ``io_kbytes`` next to ``io_bytes``."""
    return ("io_kbytes" not in direction and "clat_ns" not in direction and "lat_ns" not in direction
            and isinstance(direction.get("clat") or direction.get("lat"), dict))


_NO_IO = (0, 0.0, 0.0, 0.0, 0, None, None, None)

# What fio did not write, in the words the record keeps (``null_reasons``): a missing figure is null, never 0.
_ABSENT = {"io_bytes": "fio wrote neither io_bytes nor io_kbytes", "total_ios": "fio wrote no total_ios",
           "bw_bytes": "fio wrote neither bw_bytes nor bw", "iops": "fio wrote no iops",
           "runtime_ms": "fio wrote no runtime", "lat_mean_ns": "fio wrote no lat mean",
           "lat_p99_ns": "fio reported no total-latency (lat) percentiles (it does only with lat_percentiles=1, "
                         "clat_p99_ns holds the completion-latency p99)",
           "clat_p99_ns": "fio reported no completion-latency (clat) percentiles"}


def _rate(d: dict[str, Any], key: str, where: tuple[str, str, str] | None) -> float | None:
    """A float field on the common path: a plain finite non-negative number as it is, else the slow reader
    (None when fio did not write it, or, lenient, wrote something that is not a number)."""
    v: Any = d.get(key)  # a JSON value: the class checks below narrow it (mypy cannot follow __class__)
    if (v.__class__ is float or v.__class__ is int) and 0 <= v < _INF:
        return float(v)
    n = _num(d, key, where)
    return float(n) if n is not None else None


def _figures(d: dict[str, Any], where: tuple[str, str, str] | None) -> tuple[Any, ...]:
    """(io_bytes, bw_bytes, iops, runtime_ms, total_ios, lat_mean_ns, lat_p99_ns, clat_p99_ns) of one direction.

    ``lat_p99_ns`` is the total latency's (``lat_ns`` percentiles, written only with lat_percentiles=1),
    ``clat_p99_ns`` the completion latency's (fio's default percentiles): two quantities, kept apart. A
    rate, runtime or latency fio did not write is None, never 0. Every field it reads is checked as it is
    read (strict: anything but a finite, non-negative number is an error naming the field); plain fio 3
    numbers take the short path. Called once per direction of every job of every file, hence the shape.
    """
    get = d.get
    # JSON values, narrowed by class checks that mypy cannot follow: typed Any on purpose
    io_bytes: Any = get("io_bytes")
    if io_bytes.__class__ is not int or io_bytes < 0:
        io_bytes = _num(d, "io_bytes", where)  # None when fio did not write it
    ios: Any = get("total_ios")
    if ios.__class__ is not int or ios < 0:
        ios = _num(d, "total_ios", where)
        ios = int(ios) if ios is not None else None
    if "io_kbytes" not in d:
        if io_bytes is not None and _is_fio2_direction(d):
            io_bytes *= 1024  # fio 2.x wrote KiB into "io_bytes" (stat.c: io_bytes >> 10)
    elif "io_bytes" not in d:  # io_kbytes is io_bytes >> 10: only a stand-in when io_bytes is absent
        kib = _num(d, "io_kbytes", where)
        io_bytes = kib * 1024 if kib is not None else None
    if not io_bytes and not ios:
        return _NO_IO  # a direction the job did not use (or of which fio wrote no count): nothing is summed
    if "bw_bytes" in d:
        bw = _rate(d, "bw_bytes", where)
    else:
        kib = _rate(d, "bw", where)  # fio < 3.2: KiB/s
        bw = kib * 1024 if kib is not None else None
    lat = get("lat_ns")
    if lat.__class__ is not dict:
        lat = _lat_ns(d, "lat", where)
    clat = get("clat_ns")
    if clat.__class__ is not dict:
        clat = _lat_ns(d, "clat", where)
    mean: Any = lat.get("mean") if lat is not None else None
    if mean.__class__ is not float:
        mean = _mean(lat, "lat_ns" if "lat_ns" in d else "lat", where)
    return (int(io_bytes) if io_bytes is not None else None, bw, _rate(d, "iops", where),
            _rate(d, "runtime", where), ios, mean,
            _p99(lat, "lat_ns", where), _p99(clat, "clat_ns", where))


def summarize_direction(direction: dict[str, Any], where: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """One direction block (``read``/``write``/``trim``) of one job, in the journal's units."""
    b, bw, iops, rt, ios, mean, p99, cp99 = _figures(direction, where)
    return {"io_bytes": b, "bw_bytes": bw, "iops": iops, "runtime_ms": rt, "total_ios": ios,
            "lat_mean_ns": mean, "lat_p99_ns": p99, "clat_p99_ns": cp99}


_RAW_FIELDS = (("io_bytes", "io_bytes"), ("total_ios", "total_ios"), ("bw_bytes", "bw_bytes"), ("iops", "iops"),
               ("runtime_ms", "runtime"))
_COUNTS = ("io_bytes", "total_ios")     # add up over jobs, as integers; unknown when any job's is
_SUMMED = ("bw_bytes", "iops")          # add up over jobs; unknown when any job's is
_WORST = ("runtime_ms", "lat_p99_ns", "clat_p99_ns")  # the largest over jobs; unknown when any job's is


def _combine(blocks: list[tuple[str, dict[str, Any]]], prefix: str, why: dict[str, str],
             inner: dict[str, str] | None = None) -> dict[str, Any]:
    """Sum (bytes, I/Os, IOPS, bandwidth) or take the worst (runtime, p99) of ``(name, figures)`` blocks, and
    weight the mean latency by I/Os. A figure one block lacks makes the result null, and ``why`` says which
    block lacked it (the block's own reason, ``inner[<block>.<key>]``, where it has one): a sum or a maximum
    over part of the jobs would be a different, smaller number."""
    inner = inner or {}
    if len(blocks) == 1:  # the common case (one job, one direction): the block is its own summary
        name, out = blocks[0][0], dict(blocks[0][1])
        if not out["total_ios"] and out["lat_mean_ns"] is not None:
            out["lat_mean_ns"] = None
            why[f"{prefix}lat_mean_ns"] = "no I/O count (total_ios) to weight the mean latency by"
        for key in compress(out, map(is_, out.values(), repeat(None))):  # the keys of the figures fio lacked
            if f"{prefix}{key}" not in why:
                why[f"{prefix}{key}"] = inner.get(f"{name}.{key}") or _ABSENT[key]
        return out
    out = {}
    for key in ("io_bytes", "bw_bytes", "iops", "total_ios", "runtime_ms", "lat_mean_ns", "lat_p99_ns",
                "clat_p99_ns"):
        lacking = [name for name, b in blocks if b[key] is None]
        if key == "lat_mean_ns" and not lacking and any(b["total_ios"] is None for _, b in blocks):
            out[key] = None  # the I/O count that weights the means is not known
            why[f"{prefix}{key}"] = "no I/O count (total_ios) to weight the mean latency by"
            continue
        if lacking:
            out[key] = None
            given = [inner[f"{n}.{key}"] for n in lacking if f"{n}.{key}" in inner]
            why[f"{prefix}{key}"] = (given[0] if len(set(given)) == 1 and len(given) == len(lacking)
                                     else _ABSENT[key] if len(lacking) == len(blocks)
                                     else f"{_ABSENT[key]} for {', '.join(lacking)}")
        elif key in _COUNTS:
            out[key] = sum(b[key] for _, b in blocks)  # exact integers (fio counts in unsigned 64-bit)
        elif key in _SUMMED:
            out[key] = float(sum(b[key] for _, b in blocks))
        elif key in _WORST:
            out[key] = max((b[key] for _, b in blocks), default=None)
        else:
            ios = sum(b["total_ios"] for _, b in blocks)
            out[key] = sum(b[key] * b["total_ios"] for _, b in blocks) / ios if ios else None
    return out


def summarize_jobs(jobs: Iterable[dict[str, Any]], source: str | None = None) -> dict[str, Any]:
    """Sum a set of fio jobs (numjobs clones, or clients) into per-direction and total figures.

    The one summary of fio output: the runner's record (``fio`` in docs/journal.md) and every ingested
    file go through it. Bytes, I/Os, IOPS and bandwidth add up; runtime is the longest job's; the mean
    latency is weighted by I/Os; each p99 is the worst job's (percentiles cannot be summed, the max is the
    honest bound): ``lat_p99_ns`` of the total latency, ``clat_p99_ns`` of the completion latency. Integers
    stay exact (fio counts in unsigned 64-bit). A figure fio did not write for some job is null in the
    summary, and ``null_reasons`` (present only then) says why, keyed like ``total.bw_bytes`` or ``usr_cpu``.

    ``source`` (ingest) makes it strict: a field of the wrong type, negative or infinite raises
    DataFileError naming the file, job and field. Without it (the runner, over fio's fresh output),
    an unreadable field counts as absent.
    """
    jobs = list(jobs)
    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    cpu: dict[str, list[float]] = {"usr_cpu": [], "sys_cpu": [], "ctx": []}
    error = 0
    for job in jobs:
        e: Any = job.get("error")  # a JSON value, narrowed by the class check below
        if e.__class__ is not int:
            e = int(_num(job, "error", None) or 0)
        error = max(error, e)
        for key, values in cpu.items():
            v: Any = job.get(key)  # a JSON value, narrowed by the class checks
            if (v.__class__ is not float and v.__class__ is not int) or not 0 <= v < _INF:
                # strict (ingest): text, a negative or an infinite figure is a damaged file, named
                v = _num(job, key, (source, str(job.get("jobname")), "") if source is not None else None)
            if v is None:
                raw = job.get(key)
                why[key] = (f"fio wrote no {key}" if raw is None else f"{key} is {raw!r}, not a number") + \
                    f" for job {job.get('jobname')!r}"
            else:
                values.append(v)
        if source is not None and "mixed" in job:  # unified_rw_reporting: checked, not summed
            _figures(job["mixed"], (source, str(job.get("jobname")), "mixed"))
    used: list[tuple[str, dict[str, Any]]] = []
    said: dict[str, str] = {}
    for dname in DIRECTIONS:
        blocks: list[tuple[str, dict[str, Any]]] = []
        for i, job in enumerate(jobs):
            d = job.get(dname)
            if d is None:
                continue
            if type(d) is not dict:
                if source is not None:
                    raise DataFileError(source, f"job {job.get('jobname')!r}: '{dname}' is a "
                                                f"{type(d).__name__}, not an object")
                continue
            if d.get("io_bytes").__class__ is int and d.get("total_ios").__class__ is int and \
                    not d["io_bytes"] and not d["total_ios"]:
                continue  # a direction the job did not use (what _figures would find, in fewer steps)
            figures = _figures(d, (source, str(job.get("jobname")), dname) if source is not None else None)
            nbytes, bw, iops, rt, ios, mean, p99, cp99 = figures
            if not nbytes and not ios:
                continue
            name = f"job {job.get('jobname')!r}" + (f" #{i + 1}" if len(jobs) > 1 else "")
            blocks.append((name, {"io_bytes": nbytes, "total_ios": ios, "bw_bytes": bw, "iops": iops, "runtime_ms": rt,
                                  "lat_mean_ns": mean, "lat_p99_ns": p99, "clat_p99_ns": cp99}))
            if None in figures[:5]:  # written, but not as a number (the lenient summary reads it as absent)?
                for key, field in _RAW_FIELDS:
                    raw = d.get(field)
                    if raw is not None and blocks[-1][1][key] is None:
                        said[f"{name}.{key}"] = f"{field} is {raw!r}, not a number, for {name}"
        if not blocks:
            continue
        out[dname] = _combine(blocks, f"{dname}.", why, said)
        used.append((dname, out[dname]))
    out["total"] = _combine(used, "total.", why, dict(why))  # a direction's own reason stands for it
    n = max(len(jobs), 1)
    out.update(usr_cpu=sum(cpu["usr_cpu"]) / n if not why.get("usr_cpu") else None,
               sys_cpu=sum(cpu["sys_cpu"]) / n if not why.get("sys_cpu") else None,
               ctx=int(sum(cpu["ctx"])) if not why.get("ctx") else None, error=error, jobs=len(jobs))
    if why:
        out["null_reasons"] = dict(sorted(why.items()))
    return out


def jobs_named(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [j for j in doc.get("jobs", []) if j.get("jobname") == name]
