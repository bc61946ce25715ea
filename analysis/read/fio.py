"""fio JSON output: extract the JSON document from whatever text surrounds it, and summarize jobs.

Pure functions over text and dicts. They survive what real fio output contains: warnings printed
before the JSON, client/server status lines (some starting with ``<``), fio 2.x usec latency fields,
fio < 3.2 without ``bw_bytes`` (each job's directions are read by :mod:`.fiofigures`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterable

from ...core.errors import DataFileError
from .fiofigures import ABSENT, MAX, bad, direction_figures, number

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
    """The fio JSON document in ``text`` (the one with ``jobs`` or ``client_stats``).

    ``fio --status-interval=N --output-format=json`` writes a full report every N seconds and the final
    one last, all in one file: the final report is the measurement (the interim ones hold the first
    seconds only). Several reports that are not one run's series (other jobs, or time going backwards: two
    outputs pasted together) are refused, naming the file, rather than one of them picked.
    """
    reports = [doc for doc in extract_json_documents(text, source) if "jobs" in doc or "client_stats" in doc]
    if not reports:
        raise DataFileError(source, "JSON found but it has no 'jobs' or 'client_stats' list",
                            "give fio's own --output-format=json output")
    if len(reports) == 1:
        return reports[0]
    return _final_report(reports, source)


def _jobs_of(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Which jobs (and, in client mode, which hosts) a report is about."""
    jobs = doc.get("client_stats") if "client_stats" in doc else doc.get("jobs")
    if not isinstance(jobs, list):
        return ()
    return tuple((str(j.get("jobname")), str(j.get("hostname", ""))) for j in jobs if isinstance(j, dict))


def _clock(doc: dict[str, Any]) -> float | None:
    value = doc.get("timestamp_ms", doc.get("timestamp"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _final_report(reports: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The last of a ``--status-interval`` series of reports: the same jobs in each, written in time order."""
    first = _jobs_of(reports[0])
    clocks = [_clock(doc) for doc in reports]
    for i, doc in enumerate(reports[1:], start=2):
        if _jobs_of(doc) != first:
            raise DataFileError(source, f"holds {len(reports)} fio reports of different jobs (report 1: "
                                        f"{', '.join(j for j, _ in first[:3]) or 'none'}; report {i}: "
                                        f"{', '.join(j for j, _ in _jobs_of(doc)[:3]) or 'none'}), so it is not "
                                        "one run's --status-interval series",
                                "give each fio run's output its own file")
    known = [c for c in clocks if c is not None]
    if known != sorted(known):
        raise DataFileError(source, f"holds {len(reports)} fio reports of the same jobs whose timestamps go "
                                    "backwards: two runs' outputs in one file, not one run's --status-interval "
                                    "series", "give each fio run's output its own file")
    return reports[-1]


def summarize_direction(direction: dict[str, Any], where: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """One direction block (``read``/``write``/``trim``) of one job, in the journal's units."""
    return dict(zip(_FIGURES, direction_figures(direction, where)))


_FIGURES = ("io_bytes", "bw_bytes", "iops", "runtime_ms", "total_ios", "lat_mean_ns", "lat_p99_ns", "clat_p99_ns")
_RAW_FIELDS = (("io_bytes", "io_bytes"), ("total_ios", "total_ios"), ("bw_bytes", "bw_bytes"), ("iops", "iops"),
               ("runtime_ms", "runtime"))
_COUNTS = ("io_bytes", "total_ios")     # add up over jobs, as integers; unknown when any job's is
_SUMMED = ("bw_bytes", "iops")          # add up over jobs; unknown when any job's is
_WORST = ("runtime_ms", "lat_p99_ns", "clat_p99_ns")  # the largest over jobs; unknown when any job's is
_NO_IOS = "no I/O count (total_ios, or iops and runtime) to weight the mean latency by"
# the reasons' keys (``read.lat_p99_ns``), spelled once rather than for every figure missing in every file
_PREFIXED = {f"{p}.": {key: f"{p}.{key}" for key in _FIGURES} for p in (*DIRECTIONS, "total")}


def _combine(blocks: list[tuple[str, dict[str, Any]]], prefix: str, why: dict[str, str],
             inner: dict[str, str] | None = None) -> dict[str, Any]:
    """Sum (bytes, I/Os, IOPS, bandwidth) or take the worst (runtime, p99) of ``(name, figures)`` blocks, and
    weight the mean latency by I/Os. A figure one block lacks makes the result null, and ``why`` says which
    block lacked it (the block's own reason, ``inner[<block>.<key>]``, where it has one): a sum or a maximum
    over part of the jobs would be a different, smaller number. A single block is its own summary: the
    caller hands over a dict of its own, which is returned (not copied)."""
    if len(blocks) == 1:  # the common case (one job, one direction): its mean needs no weighting
        name, out = blocks[0]
        if out["total_ios"] == 0 and out["lat_mean_ns"] is not None:
            out["lat_mean_ns"] = None
            why[f"{prefix}lat_mean_ns"] = _NO_IOS
        if None in out.values():  # the figures fio lacked, and why
            keys = _PREFIXED[prefix]
            for key, value in out.items():
                if value is None and keys[key] not in why:
                    why[keys[key]] = (inner and inner.get(f"{name}.{key}")) or ABSENT[key]
        return out
    inner = inner or {}
    out = {}
    for key in ("io_bytes", "bw_bytes", "iops", "total_ios", "runtime_ms", "lat_mean_ns", "lat_p99_ns",
                "clat_p99_ns"):
        lacking = [name for name, b in blocks if b[key] is None]
        if key == "lat_mean_ns" and not lacking and any(b["total_ios"] is None for _, b in blocks):
            weights = [_ios_of(b) for _, b in blocks]
            total = sum(w for w in weights if w is not None)
            if None in weights or not total:
                out[key] = None  # the I/O count that weights the means is not known
                why[f"{prefix}{key}"] = _NO_IOS
            else:  # fio 2.x: no total_ios, but the iops and runtime it computed its iops from
                out[key] = sum(b[key] * w for (_, b), w in zip(blocks, weights) if w is not None) / total
            continue
        if lacking:
            out[key] = None
            given = [inner[f"{n}.{key}"] for n in lacking if f"{n}.{key}" in inner]
            why[f"{prefix}{key}"] = (given[0] if len(set(given)) == 1 and len(given) == len(lacking)
                                     else ABSENT[key] if len(lacking) == len(blocks)
                                     else f"{ABSENT[key]} for {', '.join(lacking)}")
        elif key in _COUNTS:
            out[key] = sum(b[key] for _, b in blocks)  # exact integers (fio counts in unsigned 64-bit)
        elif key in _SUMMED:
            out[key] = float(sum(b[key] for _, b in blocks))
        elif key in _WORST:
            out[key] = max((b[key] for _, b in blocks), default=None)
        else:
            ios = sum(b["total_ios"] for _, b in blocks)
            out[key] = sum(b[key] * b["total_ios"] for _, b in blocks) / ios if ios else None
        if out[key].__class__ is float and not -MAX < out[key] < MAX:  # (figures near the largest double)
            out[key] = None
            why[f"{prefix}{key}"] = f"the {'I/O-weighted mean' if key == 'lat_mean_ns' else 'sum'} over the jobs " \
                                    "is beyond any real figure"
    return out


def _ios_of(block: dict[str, Any]) -> float | None:
    """The I/O count of a block: fio's ``total_ios``, else (fio 2.x wrote none) iops x runtime, the count fio
    computed its iops from (``iops = 1000 * total_io_u / runtime``, stat.c); None when neither is known."""
    if block["total_ios"] is not None:
        return float(block["total_ios"])
    if block["iops"] is None or block["runtime_ms"] is None:
        return None
    return block["iops"] * block["runtime_ms"] / 1000.0


def _used(job: dict[str, Any], dname: str, d: dict[str, Any], source: str | None) -> tuple[Any, ...] | None:
    """The figures of direction ``dname`` (the dict ``d``) of ``job``, or None for a direction the job did not
    use (no bytes and no I/Os: nothing to sum). An unused direction written as plain zeros is known without
    reading the rest of it."""
    b: Any = d.get("io_bytes")
    if b.__class__ is int and not b:
        n: Any = d.get("total_ios")
        if n.__class__ is int and not n:
            return None
    figures = direction_figures(d, (source, str(job.get("jobname")), dname) if source is not None else None)
    return figures if figures[0] or figures[4] else None


def _block(figures: tuple[Any, ...]) -> dict[str, Any]:
    """A direction's figures keyed as the journal writes them."""
    nbytes, bw, iops, rt, ios, mean, p99, cp99 = figures
    return {"io_bytes": nbytes, "total_ios": ios, "bw_bytes": bw, "iops": iops, "runtime_ms": rt,
            "lat_mean_ns": mean, "lat_p99_ns": p99, "clat_p99_ns": cp99}


def _error_code(job: dict[str, Any], source: str | None) -> int:
    """A job's ``error`` that is not a plain int (fio writes one): a number in text is read, anything else
    that is no finite number counts as no error, except under ``source`` (ingest), where a non-finite one is
    a damaged file, named."""
    v = number(job, "error", None)
    if v is None or not -MAX < v < MAX:
        if v is not None and source is not None:
            raise bad((source, str(job.get("jobname")), ""), f"error is {v!r}, not fio's error code")
        return 0
    return int(v)


def _cpu_figure(job: dict[str, Any], key: str, source: str | None, why: dict[str, str]) -> Any:
    """``job[key]`` (usr_cpu, sys_cpu, ctx) when it is not a plain finite non-negative number: strict, text or
    a negative or infinite figure is a damaged file, named; None (and the reason in ``why``) when absent."""
    v = number(job, key, (source, str(job.get("jobname")), "") if source is not None else None)
    if v is None:
        raw = job.get(key)
        why[key] = (f"fio wrote no {key}" if raw is None else f"{key} is {raw!r}, not a number") + \
            f" for job {job.get('jobname')!r}"
    return v


def _one_job(job: dict[str, Any], source: str | None) -> dict[str, Any] | None:
    """The summary of a single job in the plain case, or None for :func:`summarize_jobs` to work it out.

    Over one job the sums, maxima and I/O-weighted means are the job's own figures, so the summary is the
    job's one used direction, copied as the total: this is that summary, built directly (ingest meets
    thousands of such files). The plain case: an integer ``error``, CPU figures that are finite non-negative
    numbers, no ``mixed`` block to check, exactly one direction used, read by :func:`direction_figures` (the one
    reader of a direction, which raises what the full summary would raise) with its counts, rates and
    runtime all there. Anything else, and every reason but a missing latency, is left to the full summary.
    """
    e: Any = job.get("error")
    usr: Any = job.get("usr_cpu")
    sys_: Any = job.get("sys_cpu")
    ctx: Any = job.get("ctx")
    if e.__class__ is not int or not _NUMERIC.issuperset(map(type, (usr, sys_, ctx))) or \
            not (0 <= usr < MAX and 0 <= sys_ < MAX and 0 <= ctx < MAX) or (source is not None and "mixed" in job):
        return None  # (NaN fails the comparisons too)
    used = None
    for dname in DIRECTIONS:
        d = job.get(dname)
        if d is None:
            continue
        if d.__class__ is not dict:
            return None
        figures = _used(job, dname, d, source)
        if figures is None:
            continue
        if used is not None or None in figures[:5] or not figures[4]:
            return None
        used = dname
        block = _block(figures)
    if used is None:
        return None
    out = {used: block, "total": dict(block), "usr_cpu": usr + 0.0, "sys_cpu": sys_ + 0.0, "ctx": int(ctx),
           "error": max(e, 0), "jobs": 1}
    lacking = (block["lat_mean_ns"] is None, block["lat_p99_ns"] is None, block["clat_p99_ns"] is None)
    if True in lacking:
        out["null_reasons"] = dict(_latency_reasons(used, *lacking))
    return out


@lru_cache(maxsize=None)
def _latency_reasons(dname: str, *missing: bool) -> dict[str, str]:
    """``null_reasons`` of a one-job summary whose direction ``dname`` lacks the latency figures flagged in
    ``missing`` (mean, lat p99, clat p99): the direction's and the total's, sorted as the full summary sorts."""
    keys = [key for key, lacking in zip(("lat_mean_ns", "lat_p99_ns", "clat_p99_ns"), missing) if lacking]
    return dict(sorted([(f"{where}.{key}", ABSENT[key]) for key in keys for where in (dname, "total")]))


_NUMERIC = frozenset((int, float))


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

    Ingest calls this for each of thousands of files, nearly all holding one job with one direction used:
    that summary is built directly (:func:`_one_job`), and the words of a reason are only put together when
    a figure is missing.
    """
    jobs = list(jobs)
    if len(jobs) == 1:
        single = _one_job(jobs[0], source)
        if single is not None:
            return single
    many = len(jobs) > 1
    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    usr: list[Any] = []
    sys_: list[Any] = []
    ctx: list[Any] = []
    error = 0
    for job in jobs:
        e: Any = job.get("error")  # a JSON value, narrowed by the class check below
        if e.__class__ is not int:
            e = _error_code(job, source)
        if e > error:
            error = e
        for key, values in (("usr_cpu", usr), ("sys_cpu", sys_), ("ctx", ctx)):
            v: Any = job.get(key)  # a JSON value, narrowed by the class checks
            if (v.__class__ is not float and v.__class__ is not int) or not 0 <= v < MAX:
                v = _cpu_figure(job, key, source, why)
                if v is None:
                    continue
            values.append(v)
        if source is not None and "mixed" in job:  # unified_rw_reporting: checked, not summed
            mixed = job["mixed"]
            if mixed.__class__ is not dict:
                raise DataFileError(source, f"job {job.get('jobname')!r}: 'mixed' is a {type(mixed).__name__}, "
                                            "not an object")
            direction_figures(mixed, (source, str(job.get("jobname")), "mixed"))
    used: list[tuple[str, dict[str, Any]]] = []
    said: dict[str, str] = {}
    for dname in DIRECTIONS:
        blocks: list[tuple[str, dict[str, Any]]] = []
        for i, job in enumerate(jobs):
            d = job.get(dname)
            if d is None:
                continue
            if d.__class__ is not dict:
                if source is not None:
                    raise DataFileError(source, f"job {job.get('jobname')!r}: '{dname}' is a "
                                                f"{type(d).__name__}, not an object")
                continue
            figures = _used(job, dname, d, source)
            if figures is None:
                continue
            name = ""  # a block is named only where its name is said: in a reason of its own, or beside others
            if None in figures[:5]:  # written, but not as a number (the lenient summary reads it as absent)?
                name = f"job {job.get('jobname')!r}" + (f" #{i + 1}" if many else "")
                for key, field in _RAW_FIELDS:
                    raw = d.get(field)
                    if raw is not None and figures[_FIGURES.index(key)] is None:
                        said[f"{name}.{key}"] = f"{field} is {raw!r}, not a number, for {name}"
            elif many and None in figures:
                name = f"job {job.get('jobname')!r} #{i + 1}"
            blocks.append((name, _block(figures)))
        if not blocks:
            continue
        out[dname] = _combine(blocks, f"{dname}.", why, said)
        used.append((dname, out[dname]))
    if len(used) == 1:  # the total of one direction is a copy of it (the reasons are already the direction's)
        total = dict(used[0][1])
        if None in total.values():
            mine, its = _PREFIXED["total."], _PREFIXED[f"{used[0][0]}."]
            for key, value in total.items():
                if value is None:
                    why.setdefault(mine[key], why.get(its[key]) or ABSENT[key])
        out["total"] = total
    else:
        out["total"] = _combine(used, "total.", why, dict(why))  # a direction's own reason stands for it
    n = len(jobs) or 1
    out["usr_cpu"] = sum(usr) / n if "usr_cpu" not in why else None
    out["sys_cpu"] = sum(sys_) / n if "sys_cpu" not in why else None
    out["ctx"] = int(sum(ctx)) if "ctx" not in why else None
    out["error"] = error
    out["jobs"] = len(jobs)
    if why:
        out["null_reasons"] = dict(sorted(why.items()))
    return out


def jobs_named(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [j for j in doc.get("jobs", []) if j.get("jobname") == name]
