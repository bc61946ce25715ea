"""The small local-QEMU matrix the end-to-end tests boot: one fixed-rate random-read workload on a 64 MiB
test disk, short windows. One text, so a change of the matrix schema is made once for all of them."""

from __future__ import annotations


def small_matrix(name: str, controllers: list[str], *, aio: str = "native", ramp_seconds: float = 1,
                 measure_seconds: float = 5, qemu_extra: str = "", order: str = "grouped") -> str:
    """The matrix file's text; ``qemu_extra`` adds lines to its ``[qemu]`` section. ``order`` is grouped:
    the tests name their cells in matrix order (shuffled rounds are tests/harness/test_run_order.py's)."""
    listed = ", ".join(f'"{c}"' for c in controllers)
    return f"""
[run]
name = "{name}"
ramp_seconds = {ramp_seconds:g}
measure_seconds = {measure_seconds:g}
retries = 0
order = "{order}"

[matrix]
controllers = [{listed}]
aio = ["{aio}"]
cache = ["none"]

[[workload]]
name = "rr"
rw = "randread"
bs = "64k"
iodepth = 4
rate_mib_s = 16

[qemu]
disk_size_mib = 64
{qemu_extra}"""
