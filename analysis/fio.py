"""fio JSON output: extract the JSON document from whatever text surrounds it, and summarize jobs.

Pure functions over text and dicts. They survive what real fio output contains: warnings printed
before the JSON, client/server status lines (some starting with ``<``), fio 2.x usec latency fields,
fio < 3.2 without ``bw_bytes``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable

from ..core.errors import DataFileError
from ..core.model import CACHE_MODES, CONTROLLER_ALIASES, CONTROLLERS, parse_size

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


def _is_fio2_direction(direction: dict[str, Any]) -> bool:
    """fio < 3.0: latencies in usec (``clat``, not ``clat_ns``) and no ``io_kbytes`` next to ``io_bytes``."""
    return ("io_kbytes" not in direction and "clat_ns" not in direction and "lat_ns" not in direction
            and isinstance(direction.get("clat") or direction.get("lat"), dict))


def summarize_direction(direction: dict[str, Any]) -> dict[str, Any]:
    io_bytes = _num(direction, "io_bytes")
    if not io_bytes and "io_kbytes" in direction:
        io_bytes = _num(direction, "io_kbytes") * 1024
    elif _is_fio2_direction(direction):
        io_bytes *= 1024  # fio 2.x wrote KiB into "io_bytes" (stat.c: io_bytes >> 10)
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


# --- ingest: one flat row per job group ---------------------------------------------------------
# Everything below turns one fio document into plain dicts (one per job name), for
# :mod:`stormatrix.analysis.ingest` to collect into one DataFrame. Plain dicts, not a DataFrame per
# file: building 10,000 small frames costs far more than parsing the JSON.

ALL_CLIENTS = "All clients"
_NUMERIC_FIELDS = ("io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios")
_RW_ALIASES = {"readwrite": "rw", "randreadwrite": "randrw"}
_RW_VALUES = {"read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim", "trimwrite",
              "readwrite"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_fio_doc(doc: Any, source: str) -> list[dict[str, Any]]:
    """The document's job list, after checking every field the summary reads has the right type.

    The runner's :func:`summarize_direction` is lenient (a missing number counts as 0). For files
    handed to ``report``/``compare`` a wrong type means a damaged or foreign file, and silently
    counting it as zero would put a false number in front of a customer: we say which field is wrong.
    """
    if not isinstance(doc, dict):
        raise DataFileError(source, f"the JSON is a {type(doc).__name__}, not a fio result object")
    jobs = doc.get("client_stats", doc.get("jobs"))
    if jobs is None:
        raise DataFileError(source, "JSON found but it has no 'jobs' or 'client_stats' list",
                            "give fio's own --output-format=json output")
    if not isinstance(jobs, list):
        raise DataFileError(source, f"'jobs' is a {type(jobs).__name__}, not a list")
    if not jobs:
        raise DataFileError(source, "'jobs' is empty: fio ran no job")
    for key in ("global options",):
        if key in doc and not isinstance(doc[key], dict):
            raise DataFileError(source, f"'{key}' is a {type(doc[key]).__name__}, not an object")
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise DataFileError(source, f"job #{i + 1} is a {type(job).__name__}, not an object")
        name = job.get("jobname")
        if not isinstance(name, str):
            raise DataFileError(source, f"job #{i + 1} has no 'jobname' string")
        if "job options" in job and not isinstance(job["job options"], dict):
            raise DataFileError(source, f"job {name!r}: 'job options' is not an object")
        if "error" in job and not _is_number(job["error"]):
            raise DataFileError(source, f"job {name!r}: 'error' is {job['error']!r}, not a number")
        present = [d for d in DIRECTIONS if d in job]
        if not present and "mixed" not in job:
            raise DataFileError(source, f"job {name!r} has no read/write/trim results")
        for d in present + (["mixed"] if "mixed" in job else []):
            block = job[d]
            if not isinstance(block, dict):
                raise DataFileError(source, f"job {name!r}: '{d}' is a {type(block).__name__}, not an object")
            for f in _NUMERIC_FIELDS:
                if f in block and not _is_number(block[f]):
                    raise DataFileError(source, f"job {name!r}: {d}.{f} is {block[f]!r}, not a number")
                if f in block and not 0 <= block[f] < float("inf"):
                    raise DataFileError(source, f"job {name!r}: {d}.{f} is {block[f]!r}; "
                                                "a count or rate must be finite and not negative")
            for lat in ("lat_ns", "clat_ns", "slat_ns", "lat", "clat", "slat"):
                if lat in block:
                    if not isinstance(block[lat], dict):
                        raise DataFileError(source, f"job {name!r}: {d}.{lat} is not an object")
                    if "mean" in block[lat] and not _is_number(block[lat]["mean"]):
                        raise DataFileError(source, f"job {name!r}: {d}.{lat}.mean is "
                                                    f"{block[lat]['mean']!r}, not a number")
    return jobs


def _option(opts: dict[str, Any], *names: str) -> str | None:
    for n in names:
        v = opts.get(n)
        if v is not None and v != "":
            return str(v)
    return None


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def _size_or_none(text: str | None) -> int | None:
    """First size of a fio size option: ``4k``, ``4096``, ``4k,8k`` (read,write), ``4k-16k`` (range)."""
    if text is None:
        return None
    if text.isdigit():  # fio's JSON usually holds plain byte counts
        return int(text) or None
    first = re.split(r"[,:\-]", str(text).strip(), maxsplit=1)[0]
    try:
        return parse_size(first)
    except ValueError:
        return None


def normalize_rw(text: str | None) -> str | None:
    """fio's rw value without its ``:<n>`` modifier, with fio's own aliases folded (readwrite = rw)."""
    if not text:
        return None
    rw = str(text).split(":", 1)[0].strip().lower()
    rw = _RW_ALIASES.get(rw, rw)
    return rw if rw in _RW_VALUES else None


def workload_params(global_opts: dict[str, Any] | None, job_opts: dict[str, Any] | None) -> dict[str, Any]:
    """rw, bs, iodepth, numjobs, rwmixread and rate from fio's own options (the job's win over global).

    Values fio could not have accepted come back as None, so the caller can fall back to the file name.
    """
    opts = {**(global_opts or {}), **(job_opts or {})}
    rate = _size_or_none(_option(opts, "rate"))
    return {
        "rw": normalize_rw(_option(opts, "rw", "readwrite")),
        "bs": _size_or_none(_option(opts, "bs", "blocksize")),
        "iodepth": _int_or_none(_option(opts, "iodepth")),
        "numjobs": _int_or_none(_option(opts, "numjobs")),
        "rwmixread": _int_or_none(_option(opts, "rwmixread")),
        "rate_mib_s": (rate / 2**20) if rate else None,
        "ioengine": _option(opts, "ioengine"),
    }


_CONTROLLER_NAMES = sorted(set(CONTROLLERS) | set(CONTROLLER_ALIASES), key=len, reverse=True)
_B = r"(?<![a-z0-9])"  # token boundary on the left
_E = r"(?![a-z0-9])"   # ... and on the right
_CONTROLLER_RE = re.compile(_B + "(" + "|".join(re.escape(c) for c in _CONTROLLER_NAMES) + r")(?![a-z0-9-])")
_AIO_RE = re.compile(_B + r"(?:aio[=_-]?)?(native|io_uring|iouring|io-uring|threads)" + _E)
_IOTHREAD_RE = re.compile(_B + r"(no-?)?iothread(?:[=_-]?([01]))?" + _E)
_CACHE_RE = re.compile(_B + r"cache[=_-]?(" + "|".join(CACHE_MODES) + ")" + _E)
_BS_RE = re.compile(_B + r"bs[=_-]?(\d+(?:\.\d+)?[kmg]?)(?:i?b)?" + _E)
_SIZE_TOKEN_RE = re.compile(_B + r"(\d+[kmg])(?:i?b)?" + _E)
_QD_RE = re.compile(_B + r"(?:qd|iodepth)[=_-]?(\d+)" + _E)
_JOBS_RE = re.compile(_B + r"(?:numjobs|jobs|nj)[=_-]?(\d+)" + _E)
_REP_RE = re.compile(_B + r"(?:rep|repeat|run)[=_-]?(\d+)" + _E)
# one cheap search that tells whether a file name can hold any controller/aio/iothread/cache token
_CONFIG_HINT_RE = re.compile("|".join([re.escape(c) for c in _CONTROLLER_NAMES]
                                      + ["native", "uring", "threads", "iothread", "cache"]))
_RW_SEED_RE = re.compile(_B + r"(read|write|rw)[-_](rand|seq)" + _E)
_RW_RE = re.compile(_B + r"(randread|randwrite|randrw|randtrim|readwrite|read|write|rw|trim)" + _E)


def params_from_name(path: str) -> dict[str, Any]:
    """Cell parameters encoded in a path, for files whose JSON does not carry them.

    Understands the seeds' names (``read-rand-bs4096-qd32.json``), ``rep2`` for repeats, and
    controller and aio names anywhere in the path (``virtio-blk/aio=native/...``); a folder's value wins
    over the file name's. Folders are parsed once per folder (ingest meets thousands of files in one).
    """
    text = path.replace("\\", "/").lower()
    folder, _, stem = text.rpartition("/")
    out = dict(_config_from_text(folder)) if folder else {}
    if _CONFIG_HINT_RE.search(stem):
        for key, value in _config_from_text(stem).items():
            out.setdefault(key, value)
    m = (_BS_RE.search(stem) if "bs" in stem else None) or _SIZE_TOKEN_RE.search(stem)
    if m:
        out["bs"] = _size_or_none(m.group(1))
    m = _QD_RE.search(stem) if ("qd" in stem or "iodepth" in stem) else None
    if m:
        out["iodepth"] = int(m.group(1))
    m = _JOBS_RE.search(stem) if ("jobs" in stem or "nj" in stem) else None
    if m:
        out["numjobs"] = int(m.group(1))
    m = _REP_RE.search(stem) if ("rep" in stem or "run" in stem) else None
    if m:
        out["repeat"] = int(m.group(1))
    m = _RW_SEED_RE.search(stem)
    if m:
        kind, mode = m.group(1), m.group(2)
        out["rw"] = ("rand" + ("rw" if kind == "rw" else kind)) if mode == "rand" else kind
    else:
        m = _RW_RE.search(stem)
        if m:
            out["rw"] = normalize_rw(m.group(1))
    return out


@lru_cache(maxsize=4096)
def _config_from_text(text: str) -> dict[str, Any]:
    """Controller, aio mode, iothread and cache named in a piece of a path."""
    out: dict[str, Any] = {}
    m = _CONTROLLER_RE.search(text)
    if m:
        name = m.group(1)
        out["controller"] = CONTROLLER_ALIASES.get(name, name)
    m = _AIO_RE.search(text)
    if m:
        aio = m.group(1).replace("-", "_")
        out["aio"] = "io_uring" if aio in ("iouring", "io_uring") else aio
    m = _IOTHREAD_RE.search(text)
    if m:
        out["iothread"] = not m.group(1) and m.group(2) != "0"
    m = _CACHE_RE.search(text)
    if m:
        out["cache"] = m.group(1)
    return out


class _NotSimple(Exception):
    """The fast path met something unusual: take the thorough path (which explains any damage)."""


_NUM_TYPES = (int, float)
_INF = float("inf")


def _group_jobs(doc: Any, client_mode: bool) -> dict[str, list[dict[str, Any]]]:
    jobs = doc["client_stats"] if client_mode else doc["jobs"]
    if type(jobs) is not list or not jobs:
        raise _NotSimple
    opts = doc.get("global options")
    if opts is not None and type(opts) is not dict:
        raise _NotSimple
    groups: dict[str, list[dict[str, Any]]] = {}
    for job in jobs:
        name = job["jobname"]
        if type(name) is not str:
            raise _NotSimple
        jo = job.get("job options")
        if jo is not None and type(jo) is not dict:
            raise _NotSimple
        if client_mode and name == ALL_CLIENTS:
            continue
        groups.setdefault(name, []).append(job)
    return groups


def _count(d: dict[str, Any], key: str) -> Any:
    v = d[key]
    if type(v) not in _NUM_TYPES or not 0 <= v < _INF:
        raise _NotSimple
    return v


def _p99(block: Any) -> float | None:
    if type(block) is not dict:
        return None
    pct = block.get("percentile")
    if pct is None:
        return None
    v = pct["99.000000"]
    if type(v) not in _NUM_TYPES:
        raise _NotSimple
    return float(v)


def _lean_summary(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`summarize_jobs` for plain fio >= 3.2 output, in one pass with type checks as it reads.

    Same numbers as summarize_jobs (a test holds them equal on every captured file); anything it does
    not expect raises _NotSimple so the caller validates and summarises the thorough way.
    """
    out: dict[str, Any] = {}
    total_bytes = total_ios = 0
    total_iops = total_bw = lat_weighted = runtime = 0.0
    lat_weight = 0
    p99_all = None
    usr = sys_ = ctx = 0.0
    error = 0
    for job in jobs:
        e = job.get("error", 0)
        if type(e) is not int:
            raise _NotSimple
        error = max(error, e)
        u, sy, c = job.get("usr_cpu", 0.0), job.get("sys_cpu", 0.0), job.get("ctx", 0)
        if type(u) not in _NUM_TYPES or type(sy) not in _NUM_TYPES or type(c) not in _NUM_TYPES:
            raise _NotSimple
        usr += u
        sys_ += sy
        ctx += c
    for dname in DIRECTIONS:
        b_bytes = b_ios = 0
        b_iops = b_bw = b_rt = w_sum = 0.0
        w_n = 0
        b_p99 = None
        seen = False
        for job in jobs:
            d = job.get(dname)
            if d is None:
                continue
            if type(d) is not dict or "clat_ns" not in d or "io_kbytes" not in d:
                raise _NotSimple
            nbytes, ios = _count(d, "io_bytes"), _count(d, "total_ios")
            if not nbytes and not ios:
                continue
            seen = True
            b_bytes += nbytes
            b_ios += ios
            b_iops += _count(d, "iops")
            b_bw += _count(d, "bw_bytes")
            b_rt = max(b_rt, float(_count(d, "runtime")))
            lat = d.get("lat_ns")
            if lat is not None:
                mean = lat["mean"]
                if type(mean) not in _NUM_TYPES:
                    raise _NotSimple
                w_sum += mean * ios
                w_n += ios
            p = _p99(lat) or _p99(d["clat_ns"])
            if p is not None:
                b_p99 = p if b_p99 is None else max(b_p99, p)
        if not seen:
            continue
        lat_mean = (w_sum / w_n) if w_n else None
        out[dname] = {"io_bytes": int(b_bytes), "bw_bytes": float(b_bw), "iops": float(b_iops), "total_ios": int(b_ios),
                      "runtime_ms": b_rt, "lat_mean_ns": lat_mean, "lat_p99_ns": b_p99}
        total_bytes += int(b_bytes)
        total_ios += int(b_ios)
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


def fio_rows(doc: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """One flat row per job name in a fio document (numjobs clones and clients are summed).

    In client/server output the ``All clients`` entry is fio's own sum of the per-client entries; we
    sum the per-client entries ourselves (so a single client, which has no ``All clients``, is treated
    the same way) and never count the aggregate twice.
    """
    client_mode = "client_stats" in doc if isinstance(doc, dict) else False
    try:  # fast path: well-formed fio 3.x output, summarised in one pass
        groups = _group_jobs(doc, client_mode)
        summaries = {name: _lean_summary(group) for name, group in groups.items()}
    except (_NotSimple, KeyError, TypeError, AttributeError, ValueError):
        jobs = validate_fio_doc(doc, source)  # raises the precise message for a damaged file
        groups = {}
        for job in jobs:
            if client_mode and job["jobname"] == ALL_CLIENTS:
                continue
            groups.setdefault(job["jobname"], []).append(job)
        summaries = {}
    if not groups:
        raise DataFileError(source, "only an 'All clients' aggregate, no per-client results")
    from_name = params_from_name(source)
    version = doc.get("fio version")
    rows: list[dict[str, Any]] = []
    for name, group in groups.items():
        errors = [int(j.get("error", 0)) for j in group if j.get("error")]
        if errors:
            raise DataFileError(source, f"fio reported error {errors[0]} in job {name!r}",
                                "look at the fio output; the run did not complete")
        params = workload_params(doc.get("global options"), group[0].get("job options"))
        for key in ("rw", "bs", "iodepth", "numjobs"):
            if params[key] is None and from_name.get(key) is not None:
                params[key] = from_name[key]
        s = summaries.get(name) or summarize_jobs(group)
        total = s["total"]
        if not total["io_bytes"] and not total["total_ios"]:
            raise DataFileError(source, f"job {name!r} completed no I/O (read, write and trim are all 0)")
        hosts = sorted({f"{j.get('hostname')}:{j.get('port')}" for j in group if j.get("hostname")})
        read, write = s.get("read", {}), s.get("write", {})
        rows.append({
            "source": source,
            "source_format": "fio-client" if client_mode else "fio",
            "engine": "fio",
            "engine_version": str(version) if version is not None else None,
            "workload": name,
            "controller": from_name.get("controller"),
            "aio": from_name.get("aio"),
            "iothread": from_name.get("iothread"),
            "cache": from_name.get("cache"),
            "rw": params["rw"],
            "bs": params["bs"],
            "iodepth": params["iodepth"],
            "numjobs": params["numjobs"] if params["numjobs"] is not None else 1,
            "rwmixread": params["rwmixread"],
            "rate_mib_s": params["rate_mib_s"],
            "repeat": from_name.get("repeat"),
            "started": None,
            "_epoch": doc.get("timestamp"),  # converted to ISO text once per frame (ingest.frame_from_rows)
            "vm": ",".join(hosts) if hosts else None,
            "clients": len(hosts) if client_mode else None,
            "error": 0,
            "iops": total["iops"],
            "read_iops": read.get("iops"),
            "write_iops": write.get("iops"),
            "bw_mib_s": total["bw_bytes"] / 2**20,
            "io_bytes": total["io_bytes"],
            "mib": total["io_bytes"] / 2**20,
            "total_ios": total["total_ios"],
            "runtime_ms": total["runtime_ms"],
            "lat_mean_us": total["lat_mean_ns"] / 1000.0 if total["lat_mean_ns"] is not None else None,
            "read_lat_mean_us": (read["lat_mean_ns"] / 1000.0) if read.get("lat_mean_ns") is not None else None,
            "write_lat_mean_us": (write["lat_mean_ns"] / 1000.0) if write.get("lat_mean_ns") is not None else None,
            "lat_p99_us": total["lat_p99_ns"] / 1000.0 if total["lat_p99_ns"] is not None else None,
            "guest_usr_cpu": s["usr_cpu"],
            "guest_sys_cpu": s["sys_cpu"],
        })
    return rows
