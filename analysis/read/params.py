"""Cell parameters of a plain result file: from fio's own options, else from the file's path.

A fio JSON file names its rw, block size, queue depth and numjobs in ``global options``/``job options``;
the configuration (controller, aio mode, iothread, cache) and the repeat number exist only in the path
(``virtio-blk/aio=native/read-rand-bs65536-qd8-rep2.json``). DiskSpd files use the path alone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ...core.model import CACHE_MODES, CONTROLLER_ALIASES, CONTROLLERS, format_size, parse_size

_RW_ALIASES = {"readwrite": "rw", "randreadwrite": "randrw"}
_RW_VALUES = {"read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim", "trimwrite",
              "readwrite"}


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


_OPTION_NAMES = ("rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "rwmixread", "rate", "rate_iops",
                 "ioengine", "bsrange", "blocksize_range", "bssplit")
# the directions (read, write, trim) each rw value moves data in: per-direction values (bs=4k,64k) are read
# for these alone
_DIRECTIONS_OF = {"read": (0,), "randread": (0,), "write": (1,), "randwrite": (1,), "trim": (2,),
                  "randtrim": (2,), "rw": (0, 1), "randrw": (0, 1), "trimwrite": (2, 1)}
_DIRECTION_NAMES = ("reads", "writes", "trims")
FIO_DEFAULT_BS = 4096


def _per_direction(raw: str, default: int) -> list[int | None] | None:
    """fio's ``value[,write[,trim]]`` (HOWTO: a value not ending in a comma applies to the types after it, an
    empty one is ``default``) as [read, write, trim]; None for a range (``4k-64k``); None in a slot that is
    not a size."""
    parts = raw.split(",")
    out: list[int | None] = []
    for i in range(3):
        part = parts[i].strip() if i < len(parts) else parts[-1].strip()
        if "-" in part or ":" in part:
            return None
        if not part:
            out.append(default)
            continue
        try:
            out.append(parse_size(part))
        except ValueError:
            out.append(None)
    return out


def block_size(text: str | None, rw: str | None) -> tuple[int | None, str | None]:
    """(the one block size of a job's ``bs``, None) or (None, why it has none).

    fio's ``bs`` is ``read[,write[,trim]]``, each may be a range (``4k-64k``), and then fio picks sizes in
    between. Exact here means: the directions ``rw`` moves data in all use one size. A range, or reads and
    writes of different sizes, has no one block size: said, never the first number guessed."""
    if text is None:
        return None, None
    if text.isdigit():  # fio's JSON usually holds plain byte counts
        return int(text) or None, None
    raw = str(text).strip()
    sizes = _per_direction(raw, FIO_DEFAULT_BS)
    if sizes is None:
        return None, (f"bs={raw!r} is a range of block sizes: fio picked sizes between, so no one block size "
                      "describes the measurement")
    used = _DIRECTIONS_OF.get(rw or "", (0, 1, 2))
    picked = {sizes[i] for i in used}
    if None in picked:
        return None, None  # not a size: the caller names it as an option no fio runs with
    if len(picked) > 1:
        each = ", ".join(f"{_DIRECTION_NAMES[i]} {format_size(sizes[i] or 0)}" for i in used)
        return None, (f"bs={raw!r} gives {each}: one row has one block size, and this job moved data in more "
                      "than one")
    return picked.pop(), None


def rate_bytes(text: str | None, rw: str | None) -> int | None:
    """The fixed rate (bytes/s) of the directions ``rw`` moves data in, from fio's ``rate=read[,write[,trim]]``
    (an empty slot is no limit), or None: no rate, or directions held to different rates (one number would
    misstate one of them; ``rate=10m,20m`` of a write job is 20m, not 10m)."""
    if text is None:
        return None
    if text.isdigit():
        return int(text) or None
    rates = _per_direction(str(text).strip(), 0)
    if rates is None:
        return None
    picked = {rates[i] for i in _DIRECTIONS_OF.get(rw or "", (0, 1, 2))}
    return picked.pop() or None if len(picked) == 1 else None


def workload_params(global_opts: dict[str, Any] | None,
                    job_opts: dict[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """rw, bs, iodepth, numjobs, rwmixread and rate from fio's own options (the job's win over global),
    which of the workload's shape (:data:`SHAPE_KEYS`) they leave unknown (the caller may take those from
    the file name), and ``name='value'`` of each shape option that is there but no fio could have run
    with (``bs=4q``, ``rw=frobnicate``: fio refuses such a job before it starts, so its output holding one
    was edited or damaged).

    Thousands of files share a few option sets: each distinct set is worked out once, and the parameters
    returned are shared by every file of that set: read them, never change them.
    """
    opts = {**global_opts, **job_opts} if global_opts and job_opts else (job_opts or global_opts or {})
    values = tuple(map(opts.get, _OPTION_NAMES))
    try:
        return _params_of(values)
    except TypeError:  # an unhashable option value (a list): not worth caching
        return _params_of.__wrapped__(values)


# the options that give a workload's shape, by the parameter they fill
_SHAPE_OPTIONS = {"rw": ("rw", "readwrite"), "bs": ("bs", "blocksize"), "iodepth": ("iodepth",),
                  "numjobs": ("numjobs",)}


@lru_cache(maxsize=1024)
def _params_of(values: tuple[Any, ...]) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    opts = dict(zip(_OPTION_NAMES, values))
    rw = normalize_rw(_option(opts, "rw", "readwrite"))
    rate = rate_bytes(_option(opts, "rate"), rw)
    bs, inexact = block_size(_option(opts, "bs", "blocksize"), rw)
    if rate is None and bs:
        # rate_iops caps the same way in I/Os (fio's HOWTO); fio takes ``rate`` first when a direction has both.
        # (rate_min is no cap: fio ends a job that falls below it, so it leaves the workload's shape alone.)
        iops = rate_bytes(_option(opts, "rate_iops"), rw)
        rate = iops * bs if iops else None
    mixed = next((n for n in ("bsrange", "blocksize_range", "bssplit") if _option(opts, n) is not None), None)
    if mixed is not None:
        inexact = (f"{mixed}={opts[mixed]!r}: fio mixed several block sizes, so no one block size describes the "
                   "measurement")
    params = {
        "rw": rw,
        "bs": bs,
        "iodepth": _int_or_none(_option(opts, "iodepth")),
        "numjobs": _int_or_none(_option(opts, "numjobs")),
        "rwmixread": _int_or_none(_option(opts, "rwmixread")),
        "rate_mib_s": (rate / 2**20) if rate and rate < 2**64 else None,  # (beyond that, no rate fio runs at)
        "ioengine": _option(opts, "ioengine"),
    }
    missing = tuple(k for k in SHAPE_KEYS if params[k] is None)
    if inexact:  # refused as it is, never filled in from the file name
        return params, missing, (inexact,)
    given = (next((n for n in _SHAPE_OPTIONS[key] if _option(opts, n) is not None), None) for key in missing)
    unreadable = tuple(f"the option {name}={opts[name]!r} is not one fio runs with (fio refuses such a job, so its "
                       "output never holds it)" for name in given if name is not None)
    return params, missing, unreadable


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


SHAPE_KEYS = ("rw", "bs", "iodepth", "numjobs")


def params_from_name(path: str, shape: tuple[str, ...] = SHAPE_KEYS) -> dict[str, Any]:
    """Cell parameters encoded in a path, for files whose JSON does not carry them.

    Understands the seeds' names (``read-rand-bs4096-qd32.json``), ``rep2`` for repeats, and
    controller and aio names anywhere in the path (``virtio-blk/aio=native/...``); a folder's value wins
    over the file name's. Folders are parsed once per folder (ingest meets thousands of files in one).
    Of the workload's shape, only the keys in ``shape`` are looked for (the JSON usually has the rest).
    """
    text = path.replace("\\", "/").lower()
    folder, _, stem = text.rpartition("/")
    out = dict(_config_from_text(folder)) if folder else {}
    if _CONFIG_HINT_RE.search(stem):
        for key, value in _config_from_text(stem).items():
            out.setdefault(key, value)
    m = _REP_RE.search(stem) if ("rep" in stem or "run" in stem) else None
    if m:
        out["repeat"] = int(m.group(1))
    if "bs" in shape:
        m = (_BS_RE.search(stem) if "bs" in stem else None) or _SIZE_TOKEN_RE.search(stem)
        if m:
            out["bs"] = _size_or_none(m.group(1))
    if "iodepth" in shape:
        m = _QD_RE.search(stem) if ("qd" in stem or "iodepth" in stem) else None
        if m:
            out["iodepth"] = int(m.group(1))
    if "numjobs" in shape:
        m = _JOBS_RE.search(stem) if ("jobs" in stem or "nj" in stem) else None
        if m:
            out["numjobs"] = int(m.group(1))
    if "rw" in shape:
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


@lru_cache(maxsize=4096)
def workload_label(rw: Any, bs: Any, iodepth: Any) -> str | None:
    """``randread-4k-qd32``: a workload name for files that do not carry one."""
    if rw is None and bs is None and iodepth is None:
        return None
    parts = [str(rw) if rw else "?", format_size(int(bs)) if bs else "?", f"qd{iodepth}" if iodepth else "qd?"]
    return "-".join(parts)
