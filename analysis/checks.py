"""What makes a row unusable: the :class:`Problem` record, and the plausibility check every row passes.

A file (or journal line) that cannot be used becomes a Problem naming it and the reason; the rest of
the inputs are still processed. :func:`check_row` refuses numbers no real measurement can produce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataFileError


@dataclass(frozen=True)
class Problem:
    """A file (or a journal line) that could not be used, and why."""

    source: str
    reason: str

    def __str__(self) -> str:
        return self.reason if self.reason.startswith(self.source) else f"{self.source}: {self.reason}"



def is_number(value: Any) -> bool:
    """A real number (JSON's true/false are not measurements)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)



# Measured quantities: none of them can be negative or infinite in a real measurement. A NaN/Infinity
# literal, an overflowed 1e999 or a negative count means the file was damaged or edited.
MEASURED = ("iops", "read_iops", "write_iops", "bw_mib_s", "io_bytes", "mib", "total_ios", "runtime_ms",
            "lat_mean_us", "read_lat_mean_us", "write_lat_mean_us", "lat_p99_us", "cpu_total", "cpu_user",
            "cpu_system", "ctx_switches", "window_s", "cpu_per_mib", "ctx_per_mib", "rate_mib_s",
            "rate_target_mib_s", "rate_achieved_mib_s")
SHAPE = ("bs", "iodepth", "numjobs")  # the workload's shape: whole numbers above 0


def check_row(row: dict[str, Any], where: str) -> None:
    """Refuse a row whose numbers cannot come from a real measurement (raises DataFileError)."""
    fix = "use the unedited output of the run, or remove the file"
    for name in MEASURED:
        value = row.get(name)
        if is_number(value) and (not math.isfinite(value) or value < 0):
            raise DataFileError(where, f"'{name}' is {value!r}: a measurement cannot be negative, NaN or infinite", fix)
    for name in SHAPE:
        value = row.get(name)
        if value is not None and (not is_number(value) or not math.isfinite(value) or value <= 0 or value > 2**40):
            raise DataFileError(where, f"'{name}' is {value!r}: not a workload {name}", fix)
    if is_number(row.get("io_bytes")) and row["io_bytes"] == 0:
        raise DataFileError(where, "no I/O was measured (0 bytes)", fix)
    if is_number(row.get("io_bytes")) and row["io_bytes"] > 0 and is_number(row.get("runtime_ms")) \
            and row["runtime_ms"] <= 0:
        raise DataFileError(where, f"{row['io_bytes']} bytes in a runtime of {row['runtime_ms']} ms: no rate "
                            "can be computed", fix)

