"""One fio document -> plain row dicts, one per job name, for ingest to collect into one frame.

Plain dicts, not a DataFrame per file: building 10,000 small frames costs far more than parsing the
JSON. The figures come from :func:`stormatrix.analysis.read.fio.summarize_jobs` (the runner's summary,
in its strict mode); this module checks the document's shape around it and names what is wrong.
"""

from __future__ import annotations

import math
from typing import Any

from ...core.errors import DataFileError
from .fio import summarize_jobs
from .params import params_from_name, workload_label, workload_params
from .tidy import reasons_text

ALL_CLIENTS = "All clients"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def job_groups(doc: Any, source: str, client_mode: bool) -> dict[str, list[dict[str, Any]]]:
    """The document's jobs grouped by name, after checking the shape the summary relies on.

    For files handed to ``report``/``compare`` a wrong type means a damaged or foreign file, and
    silently counting it as zero would put a false number in front of a customer: we say what is wrong.
    The per-field checks happen in :func:`summarize_jobs` (strict), in the same pass as the sums.
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
    if "global options" in doc and not isinstance(doc["global options"], dict):
        raise DataFileError(source, f"'global options' is a {type(doc['global options']).__name__}, not an object")
    groups: dict[str, list[dict[str, Any]]] = {}
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise DataFileError(source, f"job #{i + 1} is a {type(job).__name__}, not an object")
        name = job.get("jobname")
        if not isinstance(name, str):
            raise DataFileError(source, f"job #{i + 1} has no 'jobname' string")
        if "job options" in job and not isinstance(job["job options"], dict):
            raise DataFileError(source, f"job {name!r}: 'job options' is not an object")
        if "error" in job and job["error"].__class__ is not int:
            if not _is_number(job["error"]):
                raise DataFileError(source, f"job {name!r}: 'error' is {job['error']!r}, not a number")
            if not math.isfinite(job["error"]):
                raise DataFileError(source, f"job {name!r}: 'error' is {job['error']!r}, not fio's error code",
                                    "use the unedited output of fio --output-format=json")
        if "read" not in job and "write" not in job and "trim" not in job and "mixed" not in job:
            raise DataFileError(source, f"job {name!r} has no read/write/trim results")
        if client_mode and name == ALL_CLIENTS:
            continue
        groups.setdefault(name, []).append(job)
    return groups


def fio_rows(doc: Any, source: str) -> list[dict[str, Any]]:
    """One flat row per job name in a fio document (numjobs clones and clients are summed).

    In client/server output the ``All clients`` entry is fio's own sum of the per-client entries; we
    sum the per-client entries ourselves (so a single client, which has no ``All clients``, is treated
    the same way) and never count the aggregate twice. ``job`` is the job's name, ``workload`` the
    cell's (``randread-4k-qd32``, from rw, block size and queue depth).
    """
    client_mode = "client_stats" in doc if isinstance(doc, dict) else False
    groups = job_groups(doc, source, client_mode)
    if not groups:
        raise DataFileError(source, "only an 'All clients' aggregate, no per-client results")
    version = doc.get("fio version")
    if version is not None and version.__class__ is not str:
        raise DataFileError(source, f"'fio version' is {version!r}, not fio's version text (like \"fio-3.33\")",
                            "use the unedited output of fio --output-format=json")
    rows: list[dict[str, Any]] = []
    names: dict[tuple[str, ...], dict[str, Any]] = {}  # the path's parameters, by the shape keys looked for
    for name, group in groups.items():
        for job in group:
            if job.get("error"):
                raise DataFileError(source, f"fio reported error {int(job['error'])} in job {name!r}",
                                    "look at the fio output; the run did not complete")
        params, missing, unreadable = workload_params(doc.get("global options"), group[0].get("job options"))
        if unreadable:
            edited = unreadable[0].startswith("the option ")
            raise DataFileError(source, f"job {name!r}: {'; '.join(unreadable)}",
                                "use the unedited output of fio --output-format=json" if edited else
                                "measure one block size per job (bs=4k, the same for reads and writes) and "
                                "report each job's file")
        from_name = names.get(missing)
        if from_name is None:
            from_name = names[missing] = params_from_name(source, missing)
        if missing:  # (the shared parameters stay as they are: a copy with what the path gives)
            params = {**params, **{key: from_name[key] for key in missing if from_name.get(key) is not None}}
        s = summarize_jobs(group, source)
        total = s["total"]
        io_bytes, bw_bytes, lat_mean, lat_p99, clat_p99 = (total["io_bytes"], total["bw_bytes"], total["lat_mean_ns"],
                                                           total["lat_p99_ns"], total["clat_p99_ns"])
        if not io_bytes and not total["total_ios"]:
            raise DataFileError(source, f"job {name!r} completed no I/O (read, write and trim are all 0)")
        numjobs = params["numjobs"]
        why = None
        if numjobs is None:
            numjobs, why = _counted_numjobs(doc, group, client_mode)
        hosts = sorted({f"{j.get('hostname')}:{j.get('port')}" for j in group if j.get("hostname")}) \
            if len(group) > 1 or group[0].get("hostname") else []  # (plain fio names no host)
        read, write = s.get("read"), s.get("write")
        rw, bs, iodepth = params["rw"], params["bs"], params["iodepth"]
        rows.append({
            "source": source,
            "source_format": "fio-client" if client_mode else "fio",
            "engine": "fio",
            "engine_version": version,
            "job": name,
            "workload": workload_label(rw, bs, iodepth),
            "controller": from_name.get("controller"),
            "aio": from_name.get("aio"),
            "iothread": from_name.get("iothread"),
            "cache": from_name.get("cache"),
            "rw": rw,
            "bs": bs,
            "iodepth": iodepth,
            "numjobs": numjobs,
            "rwmixread": params["rwmixread"],
            "rate_mib_s": params["rate_mib_s"],
            "repeat": from_name.get("repeat"),
            "started": None,
            "_epoch": doc.get("timestamp"),  # converted to ISO text once per frame (tidy.frame_from_rows)
            "vm": ",".join(hosts) if hosts else None,
            "clients": len(hosts) if client_mode else None,
            "error": 0,
            "iops": total["iops"],
            "read_iops": read["iops"] if read else None,
            "write_iops": write["iops"] if write else None,
            "bw_mib_s": bw_bytes / 2**20 if bw_bytes is not None else None,
            "io_bytes": io_bytes,
            "mib": io_bytes / 2**20 if io_bytes is not None else None,
            "total_ios": total["total_ios"],
            "runtime_ms": total["runtime_ms"],
            "lat_mean_us": lat_mean / 1000.0 if lat_mean is not None else None,
            "read_lat_mean_us": read["lat_mean_ns"] / 1000.0 if read and read["lat_mean_ns"] is not None else None,
            "write_lat_mean_us": write["lat_mean_ns"] / 1000.0 if write and write["lat_mean_ns"] is not None else None,
            "lat_p99_us": lat_p99 / 1000.0 if lat_p99 is not None else None,
            "clat_p99_us": clat_p99 / 1000.0 if clat_p99 is not None else None,
            **_p99_columns(group, s, clat_p99, "client" if client_mode else "job"),
            "guest_usr_cpu": s["usr_cpu"],
            "guest_sys_cpu": s["sys_cpu"],
            "null_reasons": reasons_text(s.get("null_reasons"), {"numjobs": why} if why else None),
        })
    return rows


def _counted_numjobs(doc: dict[str, Any], group: list[dict[str, Any]],
                     client_mode: bool) -> tuple[int | None, str | None]:
    """numjobs when neither fio's options nor the file name give it: (count, None) or (None, why).

    fio lists in ``job options`` every option the job set, so a job without ``numjobs`` there ran fio's
    single clone per job section, and without group_reporting each clone is its own entry in ``jobs``: the
    entries of the name are the clones. That count is read from the file; anything else is not known.
    """
    if client_mode:
        return None, ("not in fio's options or the file name (in client/server output each entry is a client, "
                      "so the entries do not count the clones)")
    if "group_reporting" in (group[0].get("job options") or {}) or \
            "group_reporting" in (doc.get("global options") or {}):
        return None, "not in fio's options or the file name (group_reporting folds the clones into one entry)"
    return len(group), None


MERGED_P99 = "merged json+ bins: the 99th percentile of all the I/Os together, as fio computes one"
WORST_P99 = "the worst {what}'s p99 (an upper bound: the file has no json+ bins to merge)"


def _bins(block: Any) -> dict[str, Any] | None:
    clat = block.get("clat_ns") if isinstance(block, dict) else None
    bins = clat.get("bins") if isinstance(clat, dict) else None
    return bins if isinstance(bins, dict) and bins else None


def merged_p99(bins_list: list[dict[str, Any]]) -> float | None:
    """The 99th percentile (ns) of json+ completion-latency bins taken together: fio's own method (stat.c
    ``calc_clat_percentiles``): the first bin, in order of value, at which the running count reaches 99 % of
    all I/Os. A bin that is no (value, count) pair of numbers makes it None (the worst p99 is used then)."""
    counts: dict[float, float] = {}
    try:
        for bins in bins_list:
            for value, count in bins.items():
                v, c = float(value), float(count)
                if not (0 <= v < float("inf") and 0 <= c < float("inf")):
                    return None
                counts[v] = counts.get(v, 0.0) + c
    except (TypeError, ValueError):
        return None
    total = sum(counts.values())
    if not total:
        return None
    running = 0.0
    for v in sorted(counts):
        running += counts[v]
        if running >= 0.99 * total:
            return v
    return None


def _p99_columns(group: list[dict[str, Any]], s: dict[str, Any], clat_p99: float | None,
                 job: str = "job") -> dict[str, Any]:
    """Per-direction completion-latency p99s, and for a row of several directions or jobs the combined p99
    from the merged json+ bins where the file has them, with ``p99_basis`` saying which it is."""
    used = [d for d in ("read", "write", "trim") if d in s]
    out: dict[str, Any] = {}
    blocks: list[dict[str, Any] | None] = []
    for d in used:
        mine = [_bins(job.get(d)) for job in group if _moved(job.get(d))]
        blocks += mine
        p99 = s[d]["clat_p99_ns"]
        if len(mine) > 1 and None not in mine:
            p99 = merged_p99([b for b in mine if b is not None]) or p99
        if d in ("read", "write"):
            out[f"{d}_clat_p99_us"] = p99 / 1000.0 if p99 is not None else None
    if len(blocks) <= 1 or clat_p99 is None:
        return out
    merged = merged_p99([b for b in blocks if b is not None]) if None not in blocks else None
    if merged is not None:
        out["clat_p99_us"] = merged / 1000.0
        out["p99_basis"] = MERGED_P99
    else:
        what = "direction" if len(used) > 1 and len(group) == 1 else job if len(used) == 1 else f"{job} and direction"
        out["p99_basis"] = WORST_P99.format(what=what)
    return out


def _moved(block: Any) -> bool:
    return isinstance(block, dict) and bool(block.get("total_ios") or block.get("io_bytes"))
