"""DiskSpd ``-Rxml`` output: one flat row per result file, the same columns as a fio row.

What we read (DiskSpd 2.x, ``diskspd ... -L -Rxml``):

- ``Results/TimeSpan/TestTimeSeconds``: the measured duration (warm-up excluded).
- ``Results/TimeSpan/Thread/Target``: ``ReadBytes``, ``ReadCount``, ``WriteBytes``, ``WriteCount`` per
  thread and target. There is no total IOPS field: IOPS = sum of counts / TestTimeSeconds.
- ``Results/TimeSpan/Latency``: ``AverageReadMilliseconds``, ``AverageWriteMilliseconds``,
  ``AverageTotalMilliseconds`` and ``Bucket`` percentiles (only with ``-L``).
- ``Results/TimeSpan/CpuUtilization/Average``: guest CPU, reported as the guest's, not the host's.
- ``Results/Profile/TimeSpans/TimeSpan/Targets/Target``: the workload (``BlockSize``, ``RequestCount``
  = outstanding I/O per thread, i.e. ``-o``; ``WriteRatio``; ``Random`` for ``-r``;
  ``ThreadsPerFile`` = ``-t``). With ``-F`` the profile's ``TimeSpan`` has ``ThreadCount`` > 0 (threads
  shared by all targets) and ``RequestCount`` = ``-O``; those then give numjobs and iodepth.

An absent tag leaves its column to the file name (``bs``, ``iodepth``, ``numjobs``) or blank with the
reason (latency, CPU). A tag that is present but empty, not a number, negative, NaN, or past DiskSpd's
32-bit fields (2^32) is a :class:`DataFileError` naming the file and the tag: such a file was edited or
cut, and a figure silently replaced by a default would be a wrong row, not a missing one.

Only ElementTree from the standard library: it does not fetch external entities.
"""

from __future__ import annotations

import math

import xml.etree.ElementTree as ET
from typing import Any

from ...core.errors import DataFileError
from .params import params_from_name, workload_label


def _text(node: ET.Element | None, path: str) -> str | None:
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


# DiskSpd keeps its duration (-d), block size (-b), request counts (-o, -O) and thread counts (-t, -F) in
# 32-bit fields: a value at or past 2^32 in one of these tags was not written by DiskSpd.
DWORD = 2**32
FIX = "give the unedited output of diskspd -Rxml (DiskSpd writes a number in every such tag)"


def _raw(node: ET.Element | None, path: str, source: str, required: bool) -> str | None:
    """The text of a tag; None when the tag is absent (the caller's documented fallback applies). A tag
    that is present but empty is an error, not an absence: nothing DiskSpd writes is empty."""
    found = node.find(path) if node is not None else None
    if found is None:
        if required:
            raise DataFileError(source, f"DiskSpd XML has no <{path}>", "give the complete output of diskspd -Rxml")
        return None
    raw = (found.text or "").strip()
    if not raw:
        raise DataFileError(source, f"<{path}> is present but empty", FIX)
    return raw


def _float(node: ET.Element | None, path: str, source: str, required: bool = False,
           below: float | None = None) -> float | None:
    raw = _raw(node, path, source, required)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise DataFileError(source, f"<{path}> is {raw[:40]!r}, not a number", FIX) from None
    if not math.isfinite(value) or value < 0:  # every DiskSpd figure is a count, size, time or percentage
        raise DataFileError(source, f"<{path}> is {raw[:40]!r}, not a finite number >= 0", FIX)
    if below is not None and value >= below:
        raise DataFileError(source, f"<{path}> is {raw[:40]!r}, at or past DiskSpd's limit of {below:.0f}", FIX)
    return value


def _count(node: ET.Element | None, path: str, source: str) -> int | None:
    """A DiskSpd setting kept in a 32-bit field (a block size, request or thread count): a whole number
    0 <= n < 2^32, or None when the tag is absent. "8.0", "-1", "NaN" or 1e40 mean an edited file."""
    raw = _raw(node, path, source, False)
    if raw is None:
        return None
    if not raw.isdigit() or not raw.isascii():
        raise DataFileError(source, f"<{path}> is {raw[:40]!r}, not a whole number >= 0", FIX)
    if int(raw) >= DWORD:
        raise DataFileError(source, f"<{path}> is {raw[:40]!r}, past DiskSpd's 32-bit limit ({DWORD - 1})", FIX)
    return int(raw)


# what makes a target's workload: its block size (-b), outstanding I/O (-o), write ratio (-w), random or
# sequential access (-r, -s) and threads per target (-t)
_WORKLOAD_TAGS = (("BlockSize", "block size"), ("RequestCount", "outstanding I/Os"), ("WriteRatio", "write %"),
                  ("Random", "random access"), ("ThreadsPerFile", "threads"))


def _one_workload(targets: list[ET.Element], source: str) -> None:
    """Several targets (``diskspd ... #1 #2``) are one row only when they ran one workload: their counts
    then add up like fio's jobs. Targets with different block sizes, depths or mixes are different
    measurements in one file: refused, naming the targets and what differs (a row labelled with the first
    target's block size would be a misread)."""
    if len(targets) < 2:
        return
    first = targets[0]
    for other in targets[1:]:
        for tag, words in _WORKLOAD_TAGS:
            a, b = _text(first, tag), _text(other, tag)
            if a != b:
                def shown(node: ET.Element, value: str | None) -> str:
                    return f"{_text(node, 'Path') or '?'} {value if value is not None else '(none)'}"
                raise DataFileError(source, f"DiskSpd ran {len(targets)} targets with different workloads "
                                            f"({words}: {shown(first, a)}, {shown(other, b)}), so no one row "
                                            "describes the file",
                                    "run DiskSpd once per workload (one target, or the same -b/-o/-w/-r/-t for "
                                    "every target), and report each run's XML")


def parse_diskspd_xml(text: str, source: str = "<diskspd xml>") -> dict[str, Any]:
    """One tidy row from a DiskSpd XML result (all threads and targets summed; targets must share one
    workload, :func:`_one_workload`)."""
    if not text.strip():
        raise DataFileError(source, "the file is empty")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise DataFileError(source, f"not well-formed XML ({exc})",
                            "give the complete output of diskspd -Rxml") from None
    if root.tag != "Results":
        raise DataFileError(source, f"the XML root is <{root.tag}>, not DiskSpd's <Results>")
    span = root.find("TimeSpan")
    if span is None:
        raise DataFileError(source, "DiskSpd XML has no <TimeSpan> result")
    seconds = _float(span, "TestTimeSeconds", source, required=True, below=DWORD)
    if not seconds or seconds <= 0:
        raise DataFileError(source, f"TestTimeSeconds is {seconds}: the test did not run")
    _count(span, "ThreadCount", source)  # threads that ran and the -O requests: checked, the profile's are used
    _count(span, "RequestCount", source)
    targets = span.findall("Thread/Target")
    if not targets:
        raise DataFileError(source, "DiskSpd XML has no <Thread>/<Target> results")
    rb = rc = wb = wc = 0.0
    for t in targets:
        rb += _float(t, "ReadBytes", source, required=True) or 0.0
        rc += _float(t, "ReadCount", source, required=True) or 0.0
        wb += _float(t, "WriteBytes", source, required=True) or 0.0
        wc += _float(t, "WriteCount", source, required=True) or 0.0
    if rc + wc == 0:
        raise DataFileError(source, "DiskSpd completed no I/O (ReadCount and WriteCount are 0)")
    lat = span.find("Latency")
    lat_total = _float(lat, "AverageTotalMilliseconds", source)
    lat_read = _float(lat, "AverageReadMilliseconds", source)
    lat_write = _float(lat, "AverageWriteMilliseconds", source)
    why: list[str] = []
    if lat_total is None and (lat_read is not None or lat_write is not None):
        # the I/O-weighted mean of the directions, only when every direction that moved has its mean
        if (lat_read is not None or not rc) and (lat_write is not None or not wc):
            lat_total = ((lat_read or 0.0) * rc + (lat_write or 0.0) * wc) / (rc + wc)
        else:
            why.append("lat_mean_us: the DiskSpd XML has no AverageTotalMilliseconds and no average for "
                       + ("reads" if lat_read is None else "writes") + ", which moved I/O")
    elif lat_total is None:
        why.append("lat_mean_us: the DiskSpd XML has no <Latency> averages")
    p99 = None
    if lat is not None:
        for bucket in lat.findall("Bucket"):
            pct = _float(bucket, "Percentile", source)
            if pct is not None and abs(pct - 99.0) < 1e-9:
                p99 = _float(bucket, "TotalMilliseconds", source)
    settings = root.find("Profile/TimeSpans/TimeSpan")
    profiles = root.findall("Profile/TimeSpans/TimeSpan/Targets/Target")
    profile = profiles[0] if profiles else None
    _one_workload(profiles, source)
    bs = _count(profile, "BlockSize", source)
    if bs == 0:
        raise DataFileError(source, "<BlockSize> is 0, which is no block size", FIX)
    # -F (ThreadCount > 0): that many threads share every target, each with -O (RequestCount) requests
    # in flight; otherwise -t (ThreadsPerFile) threads per target with -o (the target's RequestCount)
    fixed_threads = _count(settings, "ThreadCount", source)
    fixed_requests = _count(settings, "RequestCount", source)
    qd = _count(profile, "RequestCount", source)
    if fixed_threads and fixed_requests:
        qd = fixed_requests
    write_ratio = _float(profile, "WriteRatio", source)
    threads = _count(profile, "ThreadsPerFile", source)
    if fixed_threads:
        threads = fixed_threads
    elif threads and len(profiles) > 1:  # -t threads on each of the targets (one workload: checked above)
        threads *= len(profiles)
    random = _text(profile, "Random") is not None
    from_name = params_from_name(source)
    rw = None
    if write_ratio is not None:
        kind = "read" if write_ratio == 0 else "write" if write_ratio == 100 else "rw"
        rw = ("rand" + kind) if random else kind
    if p99 is None:
        why.append("lat_p99_us: the DiskSpd XML has no 99th-percentile <Latency>/<Bucket> (DiskSpd writes them "
                   "with -L)")
    cpu = span.find("CpuUtilization/Average")
    for col, field in (("guest_usr_cpu", "UserPercent"), ("guest_sys_cpu", "KernelPercent")):
        if _text(cpu, field) is None:
            why.append(f"{col}: the DiskSpd XML has no <TimeSpan>/<CpuUtilization>/<Average>/<{field}>")
    mib = (rb + wb) / 2**20
    # the thread count is DiskSpd's -t (ThreadsPerFile), else what the file name says; never a guessed 1
    numjobs = int(threads) if threads else from_name.get("numjobs")
    if numjobs is None:
        why.append("numjobs: the DiskSpd XML has no <Profile/TimeSpans/TimeSpan/Targets/Target/ThreadsPerFile> "
                   "(-t) and the file name gives no numjobs (e.g. numjobs4 or nj4)")
    rw = rw or from_name.get("rw")
    bs = int(bs) if bs else from_name.get("bs")
    qd = int(qd) if qd else from_name.get("iodepth")
    return {
        "source": source,
        "source_format": "diskspd",
        "engine": "diskspd",
        "engine_version": _text(root, "System/Tool/Version"),
        "job": None,  # (DiskSpd has no job names: the workload is the cell's)
        "workload": workload_label(rw, bs, qd),
        "controller": from_name.get("controller"),
        "aio": from_name.get("aio"),
        "iothread": from_name.get("iothread"),
        "cache": from_name.get("cache"),
        "rw": rw,
        "bs": bs,
        "iodepth": qd,
        "numjobs": numjobs,
        "rwmixread": (int(100 - write_ratio) if write_ratio is not None and write_ratio not in (0.0, 100.0)
                      else None),
        "rate_mib_s": None,
        "repeat": from_name.get("repeat"),
        "started": _text(root, "System/RunTime"),
        "vm": _text(root, "System/ComputerName"),
        "clients": None,
        "error": 0,
        "iops": (rc + wc) / seconds,
        "read_iops": rc / seconds if rc else None,
        "write_iops": wc / seconds if wc else None,
        "bw_mib_s": mib / seconds,
        "io_bytes": int(rb + wb),
        "mib": mib,
        "total_ios": int(rc + wc),
        "runtime_ms": seconds * 1000.0,
        "lat_mean_us": lat_total * 1000.0 if lat_total is not None else None,
        "read_lat_mean_us": lat_read * 1000.0 if lat_read is not None and rc else None,
        "write_lat_mean_us": lat_write * 1000.0 if lat_write is not None and wc else None,
        "lat_p99_us": p99 * 1000.0 if p99 is not None else None,
        "guest_usr_cpu": _float(cpu, "UserPercent", source),
        "guest_sys_cpu": _float(cpu, "KernelPercent", source),
        "null_reasons": "; ".join(why) or None,
    }
