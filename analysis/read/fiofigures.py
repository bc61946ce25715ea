"""One direction of one fio job (``read``/``write``/``trim``) as figures: the reader the summary is built on.

Each field is checked as it is read. Strict (``where`` given: ingest, over files handed in by a user): anything
but a finite, non-negative number is a damaged or foreign file, and the DataFileError names the file, job and
field. Lenient (the runner, over fio's own fresh output): a number in text is read, anything else is absent.
fio 2.x (usec latencies, KiB in ``io_bytes``) and fio < 3.2 (no ``bw_bytes``) are read as fio 3.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import DataFileError

_NUM_TYPES = (int, float)
# Any figure fio can write is far below 2^1023 (and every float above it is one step from inf); a JSON integer
# above it has no float at all (float() raises). Refused as damage (strict) or read as absent (lenient).
MAX = float(2**1023)


def bad(where: tuple[str, str, str], problem: str) -> DataFileError:
    source, job, direction = where
    return DataFileError(source, f"job {job!r}: {direction + '.' if direction else ''}{problem}")


def number(d: dict[str, Any], key: str, where: tuple[str, str, str] | None) -> float | int | None:
    """``d[key]`` as a number, or None when absent.

    Strict (``where`` given, ingest): anything but a finite, non-negative number is a damaged or foreign
    file, and the DataFileError names the field. Lenient (the runner, over fio's own fresh output): a
    number in text is read, anything else (an infinite or NaN figure too) is None.
    """
    v = d.get(key)
    if v is None:
        if where is not None and key in d:
            raise bad(where, f"{key} is None, not a number")
        return None
    if type(v) in _NUM_TYPES:
        if not 0 <= v < MAX:
            if where is not None:
                raise _out_of_range(where, key, v, "a count or rate")
            if not -MAX < v < MAX:  # NaN or infinite: no figure (a negative one is read as it is)
                return None
        return v
    return _float_of(v, key, "", where)


def _lat_ns(direction: dict[str, Any], name: str, where: tuple[str, str, str] | None) -> dict[str, Any] | None:
    """A latency block in nanoseconds: fio 3 ``<name>_ns`` or fio 2 ``<name>`` in usec."""
    block = direction.get(f"{name}_ns")
    if block is not None:
        if type(block) is dict:
            return block
        if where is not None:
            raise bad(where, f"{name}_ns is not an object")
    old = direction.get(name)
    if old is None:
        return None
    if type(old) is not dict:
        if where is not None:
            raise bad(where, f"{name} is not an object")
        return None
    scaled = {k: (v * 1000.0 if type(v) in _NUM_TYPES and -MAX < v < MAX and k in ("min", "max", "mean", "stddev")
                  else v) for k, v in old.items()}  # (a figure beyond any float stays as it is: refused when read)
    if isinstance(old.get("percentile"), dict):
        scaled["percentile"] = {k: v * 1000.0 if -MAX < v < MAX else v for k, v in old["percentile"].items()
                                if type(v) in _NUM_TYPES}
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


def _out_of_range(where: tuple[str, str, str], field: str, v: float | int, what: str) -> DataFileError:
    """The error for a number no fio figure can be: negative, NaN, infinite, or beyond 2^1023 (shown by its
    magnitude when it has hundreds of digits)."""
    shown = f"{v!r}" if len(text := repr(v)) <= 40 else f"{text[:12]}... ({len(text)} digits)"
    if 0 <= v < float("inf"):
        return bad(where, f"{field} is {shown}: beyond any real figure")
    return bad(where, f"{field} is {shown}; {what} must be finite and not negative")


def _float_of(v: Any, name: str, field: str, where: tuple[str, str, str] | None) -> float | None:
    """A figure (a latency) as a float. Strict (``where`` given): a finite, non-negative number, else an error
    naming ``<name><field>``; lenient: a number in text is read too, anything else (NaN, infinite) is None."""
    if type(v) in _NUM_TYPES:
        if 0 <= v < MAX:
            return float(v)
        if where is not None:
            raise _out_of_range(where, f"{name}{field}", v, "a latency")
        return float(v) if -MAX < v < MAX else None
    if where is not None:
        raise bad(where, f"{name}{field} is {v!r}, not a number")
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if -MAX < f < MAX else None


def _is_fio2_direction(direction: dict[str, Any]) -> bool:
    """fio < 3.0: latencies in usec (``clat``, not ``clat_ns``) and no ``io_kbytes`` next to ``io_bytes``."""
    return ("io_kbytes" not in direction and "clat_ns" not in direction and "lat_ns" not in direction
            and isinstance(direction.get("clat") or direction.get("lat"), dict))


def _kib(kib: Any, key: str, where: tuple[str, str, str] | None) -> Any:
    """Bytes (or bytes/s) of a figure fio wrote in KiB; one so large that it has no value in bytes as a float
    is a damaged file (strict) or no figure (lenient)."""
    if kib * 1024 < MAX:
        return kib * 1024
    if where is not None:
        raise bad(where, f"{key} is {kib!r} (KiB): beyond any real figure")
    return None


_NO_IO = (0, 0.0, 0.0, 0.0, 0, None, None, None)

# What fio did not write, in the words the record keeps (``null_reasons``): a missing figure is null, never 0.
ABSENT = {"io_bytes": "fio wrote neither io_bytes nor io_kbytes", "total_ios": "fio wrote no total_ios",
          "bw_bytes": "fio wrote neither bw_bytes nor bw", "iops": "fio wrote no iops",
          "runtime_ms": "fio wrote no runtime", "lat_mean_ns": "fio wrote no lat mean",
          "lat_p99_ns": "fio reported no total-latency (lat) percentiles (it does only with lat_percentiles=1, "
                        "clat_p99_ns holds the completion-latency p99)",
          "clat_p99_ns": "fio reported no completion-latency (clat) percentiles"}


def _rate(d: dict[str, Any], key: str, where: tuple[str, str, str] | None) -> float | None:
    """A float field on the common path: a plain finite non-negative number as it is, else the slow reader
    (None when fio did not write it, or, lenient, wrote something that is not a number)."""
    v: Any = d.get(key)  # a JSON value: the class checks below narrow it (mypy cannot follow __class__)
    if (v.__class__ is float or v.__class__ is int) and 0 <= v < MAX:
        return float(v)
    n = number(d, key, where)
    return float(n) if n is not None else None


def direction_figures(d: dict[str, Any], where: tuple[str, str, str] | None) -> tuple[Any, ...]:
    """(io_bytes, bw_bytes, iops, runtime_ms, total_ios, lat_mean_ns, lat_p99_ns, clat_p99_ns) of one direction.

    ``lat_p99_ns`` is the total latency's (``lat_ns`` percentiles, written only with lat_percentiles=1),
    ``clat_p99_ns`` the completion latency's (fio's default percentiles): two quantities, kept apart. A
    rate, runtime or latency fio did not write is None, never 0. Every field it reads is checked as it is
    read (strict: anything but a finite, non-negative number is an error naming the field); plain fio 3
    numbers take the short path, written out rather than through a helper per field: this runs for every
    direction of every job of every file ingested.
    """
    get = d.get
    # JSON values, narrowed by class checks that mypy cannot follow: typed Any on purpose
    io_bytes: Any = get("io_bytes")
    if io_bytes.__class__ is not int or not 0 <= io_bytes < MAX:
        io_bytes = number(d, "io_bytes", where)  # None when fio did not write it
    ios: Any = get("total_ios")
    if ios.__class__ is not int or not 0 <= ios < MAX:
        ios = number(d, "total_ios", where)
        ios = int(ios) if ios is not None else None
    if "io_kbytes" not in d:
        if io_bytes is not None and _is_fio2_direction(d):
            io_bytes = _kib(io_bytes, "io_bytes", where)  # fio 2.x wrote KiB into "io_bytes" (stat.c: io_bytes >> 10)
    elif "io_bytes" not in d:  # io_kbytes is io_bytes >> 10: only a stand-in when io_bytes is absent
        kib = number(d, "io_kbytes", where)
        io_bytes = _kib(kib, "io_kbytes", where) if kib is not None else None
    if not io_bytes and not ios:
        return _NO_IO  # a direction the job did not use (or of which fio wrote no count): nothing is summed
    bw: Any = get("bw_bytes")
    if (bw.__class__ is not float and bw.__class__ is not int) or not 0 <= bw < MAX:
        if "bw_bytes" in d:
            bw = _rate(d, "bw_bytes", where)
        else:
            kib = _rate(d, "bw", where)  # fio < 3.2: KiB/s
            bw = _kib(kib, "bw", where) if kib is not None else None
    lat = get("lat_ns")
    if lat.__class__ is not dict:
        lat = _lat_ns(d, "lat", where)
    clat = get("clat_ns")
    if clat.__class__ is not dict:
        clat = _lat_ns(d, "clat", where)
    mean: Any = lat.get("mean") if lat is not None else None
    if mean.__class__ is not float or not 0 <= mean < MAX:
        mean = _mean(lat, "lat_ns" if "lat_ns" in d else "lat", where)
    # (read in the order a damaged file's first bad field has always been named in)
    iops: Any = get("iops")
    if (iops.__class__ is not float and iops.__class__ is not int) or not 0 <= iops < MAX:
        iops = _rate(d, "iops", where)
    runtime: Any = get("runtime")
    if (runtime.__class__ is not int and runtime.__class__ is not float) or not 0 <= runtime < MAX:
        runtime = _rate(d, "runtime", where)
    return (int(io_bytes) if io_bytes is not None else None, float(bw) if bw is not None else None,
            float(iops) if iops is not None else None, float(runtime) if runtime is not None else None, ios, mean,
            _p99(lat, "lat_ns", where), _p99(clat, "clat_ns", where))
