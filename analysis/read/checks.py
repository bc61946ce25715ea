"""What makes a row unusable: the :class:`Problem` record, and the plausibility check every row passes.

A file (or journal line) that cannot be used becomes a Problem naming it and the reason; the rest of
the inputs are still processed. :func:`check_row` refuses numbers no real measurement can produce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ...core.errors import DataFileError
from .safe import escape_unencodable


@dataclass(frozen=True)
class Problem:
    """A file (or a journal line) that could not be used, and why."""

    source: str
    reason: str

    def __str__(self) -> str:  # (a file name that is not UTF-8, a lone surrogate in a job name: shown escaped)
        text = self.reason if self.reason.startswith(self.source) else f"{self.source}: {self.reason}"
        return escape_unencodable(text)


def is_number(value: Any) -> bool:
    """A real number (JSON's true/false are not measurements)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Measured quantities: none of them can be negative or infinite in a real measurement. A NaN/Infinity
# literal, an overflowed 1e999 or a negative count means the file was damaged or edited.
MEASURED = ("iops", "read_iops", "write_iops", "bw_mib_s", "io_bytes", "mib", "total_ios", "runtime_ms",
            "lat_mean_us", "read_lat_mean_us", "write_lat_mean_us", "lat_p99_us", "clat_p99_us", "cpu_total",
            "cpu_user", "cpu_system", "ctx_switches", "window_s", "cpu_per_mib", "ctx_per_mib", "rate_mib_s",
            "rate_target_mib_s", "rate_achieved_mib_s")
SHAPE = ("bs", "iodepth", "numjobs")  # the workload's shape: whole numbers above 0
COUNTS = ("io_bytes", "total_ios")    # kept as exact 64-bit integers in the tidy frame
INT64_MAX = 2**63 - 1
RATE_TOLERANCE_PCT = 1.0
_INF = float("inf")
_FIX = "use the unedited output of the run, or remove the file"
_PLAIN = {float, int, type(None)}


def _bad_measure(value: Any) -> bool:
    """Negative, NaN or infinite (an int of any size compares with inf without overflowing)."""
    if value is None or value.__class__ is str:
        return False
    if type(value) is float or type(value) is int:
        return not 0 <= value < _INF
    return is_number(value) and not 0 <= value < _INF


def check_row(row: dict[str, Any], where: str, measured: tuple[str, ...] = MEASURED) -> None:
    """Refuse a row whose numbers cannot come from a real measurement (raises DataFileError).

    Besides single values (negative, NaN, infinite, a workload shape that is not a positive whole number),
    the rates must agree with what was moved: fio derives bandwidth and IOPS from the bytes, I/Os and
    runtime it writes next to them, so a bandwidth or IOPS more than :data:`RATE_TOLERANCE_PCT` away from
    ``io_bytes / runtime`` or ``total_ios / runtime`` (beyond the rounding of the unit fio wrote) is an
    edited or corrupted file, flagged rather than written into a workbook as data.

    ``measured`` names the values to look at one by one (all of :data:`MEASURED`). A reader whose every
    measured value was refused as it was read unless it is None or a finite, non-negative number (the
    strict fio summary, :func:`~stormatrix.analysis.read.fio.summarize_jobs`) passes ``()``: the workload's
    shape, the counts and the rates are still checked here.
    """
    # A row's values are whatever the file held; _number() narrows them, which mypy cannot follow.
    get: Callable[[str], Any] = row.get
    plain = True
    if measured:
        values = list(map(get, measured))
        try:  # the common case at C speed: plain numbers or None, none negative, their sum finite (no NaN/inf)
            present: list[Any] = list(filter(None, values))  # (zeros go too: they pass every test here)
            plain = set(map(type, values)) <= _PLAIN and min(present, default=0) >= 0 and \
                math.isfinite(math.fsum(present))
        except (OverflowError, ValueError):  # an int beyond any float
            plain = False
        if not plain:  # value by value, to name the one that is wrong
            _check_measured(get, measured, where)
    bs, iodepth, numjobs = get("bs"), get("iodepth"), get("numjobs")
    if not (bs.__class__ is int and iodepth.__class__ is int and numjobs.__class__ is int and
            0 < bs <= 2**40 and 0 < iodepth <= 2**40 and 0 < numjobs <= 2**40):
        _check_shape(get, where)
    # where the values are plain, a number is what is not None; otherwise text or true/false may be there
    io_bytes, runtime_ms = get("io_bytes"), get("runtime_ms")
    has_bytes = io_bytes is not None if plain else _number(io_bytes)
    has_runtime = runtime_ms is not None if plain else _number(runtime_ms)
    if has_bytes and io_bytes == 0:
        raise DataFileError(where, "no I/O was measured (0 bytes)", _FIX)
    if has_bytes and io_bytes > 0 and has_runtime and runtime_ms <= 0:
        raise DataFileError(where, f"{io_bytes} bytes in a runtime of {runtime_ms} ms: no rate can be computed", _FIX)
    for name in COUNTS:
        value = get(name)
        if (value is not None if plain else _number(value)) and value > INT64_MAX:
            raise DataFileError(where, f"'{name}' is {value!r} (2^{math.log2(value):.1f}): more than any run can "
                                       "move; the file was damaged or edited", _FIX)
    if has_bytes and has_runtime and runtime_ms > 0:
        _check_rates(row, io_bytes, runtime_ms / 1000.0, where, plain)


def _check_shape(get: Callable[[str], Any], where: str) -> None:
    """The workload's shape, value by value: absent, or a whole number above 0 (a float that is one too)."""
    for name in SHAPE:
        value = get(name)
        if value is not None and (value.__class__ is not int or not 0 < value <= 2**40) and \
                (not is_number(value) or _bad_measure(value) or value <= 0 or value > 2**40):
            raise DataFileError(where, f"'{name}' is {value!r}: not a workload {name}", _FIX)


def _check_measured(get: Callable[[str], Any], measured: tuple[str, ...], where: str) -> None:
    for name in measured:
        value = get(name)
        if value is None:
            continue
        kind = value.__class__
        if (kind is float or kind is int) and 0 <= value < _INF:
            continue
        if _bad_measure(value):
            raise DataFileError(where, f"'{name}' is {value!r}: a measurement cannot be negative, NaN or "
                                       "infinite", _FIX)


def _number(value: Any) -> bool:
    """:func:`is_number`, with the two common classes first (this runs several times per row)."""
    kind = value.__class__
    return kind is float or kind is int or (kind is not bool and isinstance(value, (int, float)))


def _off(value: float, expected: float, slack: float, summed: bool) -> bool:
    """Is ``value`` further from ``expected`` than ``slack``? For a sum over several clients only a value
    below ``expected`` is: each client's rate is over its own window, none longer than the longest
    (the row's runtime), so their sum is at least the bytes over the longest window, and more when the
    windows differ (clients started apart on a busy host)."""
    return (expected - value if summed else abs(value - expected)) > slack


def _check_rates(row: dict[str, Any], io_bytes: float, seconds: float, where: str, plain: bool) -> None:
    clients: Any = row.get("clients")
    summed = _number(clients) and clients > 1  # a suite point: the clients' own rates summed
    bw: Any = row.get("bw_mib_s")  # narrowed by _number(), as in check_row
    if (bw is not None) if plain else _number(bw):
        expected = io_bytes / seconds / 2**20
        # fio < 3.2 wrote bandwidth in whole KiB/s: allow that rounding on top of the tolerance
        if _off(bw, expected, expected * RATE_TOLERANCE_PCT / 100.0 + 1.0 / 1024, summed):
            raise DataFileError(where, f"bandwidth {bw:.6g} MiB/s disagrees with {io_bytes} bytes moved in "
                                       f"{seconds:g} s ({expected:.6g} MiB/s) by more than "
                                       f"{RATE_TOLERANCE_PCT:g} %: an impossible rate", _FIX)
    iops: Any = row.get("iops")
    ios: Any = row.get("total_ios")
    if (iops is not None and ios is not None) if plain else (_number(iops) and _number(ios)):
        expected = ios / seconds
        if _off(iops, expected, expected * RATE_TOLERANCE_PCT / 100.0 + 1.0, summed):  # fio 2 wrote whole IOPS
            raise DataFileError(where, f"IOPS {iops:.6g} disagrees with {ios} I/Os in {seconds:g} s "
                                       f"({expected:.6g} IOPS) by more than {RATE_TOLERANCE_PCT:g} %: "
                                       "an impossible rate", _FIX)
