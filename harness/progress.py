"""Progress and ETA of a run: the estimate `plan` prints before it, the bar (or one line per cell) during it.

Kept apart from the run loop (:mod:`stormatrix.runner`) so `plan` and the suite's arithmetic can use the
same estimate without the runner.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .core.model import Plan

# seconds a cell costs beyond ramp + measure before any cell has been timed (boot, teardown)
DEFAULT_OVERHEAD_S = 5.0

# ... when the VM booted during the cell before (local QEMU, [qemu] boot_ahead): taking it over, what the next
# cell waits for after a window closes, and the warm-up's and window's overrun beyond the 0.5 s every cell
# gets; measured on the demo matrix at load average 7 on 2 CPUs (benchmarks/bench_cell_overhead.py --breakdown:
# medians 1.12 s window closed -> next job sent, warm-up +1.13 s, window +0.32 s). Busier machines take
# longer: 19.5-27.1 s per 11 s cell at load 7-28 (benchmarks/bench_verdicts.py); the progress ETA then
# follows the measured pace.
BOOTED_AHEAD_OVERHEAD_S = 2.1

# ... when that VM is restored from its saved booted state ([qemu] restore) and its first job was sent to it
# ahead ([qemu] prepare_ahead): what is left of a cell beyond its warm-up, window and the 0.5 s every cell
# gets (the window's edges, a window waiting for the next VM's restore); measured on the demo matrix at load
# average 3-6 on 2 CPUs (benchmarks/bench_cell_overhead.py --breakdown --prime --compare
# prepare_ahead=false,true --repeats 1: span 125.2 s for 10 cells = 10 x 11.5 s + the first start + 9 x 0.9 s)
RESTORED_AHEAD_OVERHEAD_S = 0.9
# the run's first VM restored from its saved state, not booted: 1.5 s quiet, ~3 s at load 6 (measured)
FIRST_RESTORE_S = 2.5


def estimate_seconds(plan: Plan, ramp_s: float, measure_s: float, overhead_s: float = DEFAULT_OVERHEAD_S,
                     boot_ahead: bool = False, restore: bool = False) -> float:
    """ETA: every cell's warm-up and window, plus a VM start per disk configuration x repeat (only the
    first one when each next VM boots during the cell before; with ``restore`` each VM starts from a saved
    booted state, the first one too: the first start and every later one cost less)."""
    groups = len({(c.disk, c.repeat) for c in plan.cells})
    first = min(overhead_s, FIRST_RESTORE_S) if restore else overhead_s
    later = RESTORED_AHEAD_OVERHEAD_S if restore else BOOTED_AHEAD_OVERHEAD_S
    starts = first + max(groups - 1, 0) * later if boot_ahead else groups * first
    return len(plan.cells) * (ramp_s + measure_s + 0.5) + starts


def fmt_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def fmt_hours(seconds: float) -> str:
    """A span as people plan long runs: "21 min", "19.6 h" (the seeds' arithmetic, suite ETAs)."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min" if seconds % 60 else f"{seconds / 60:.0f} min"
    return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"


class Progress:
    """A progress bar with ETA on a terminal; one line per cell otherwise (logs, CI)."""

    def __init__(self, total: int, estimate_per_cell: float, stream: TextIO | None = None,
                 extra_max: int = 0, budget_s: float = 0.0) -> None:
        self.total, self.done = total, 0
        self.stream: TextIO = stream if stream is not None else sys.stderr  # (of the moment, not of the import)
        self.extra_max = extra_max  # extra repeats cv_limit_pct may still add (shown beside the ETA)
        self.budget_s = budget_s  # [run] time_budget_minutes: extra repeats start only within it (0: none)
        self.t0 = time.monotonic()
        self.estimate = estimate_per_cell
        self.tty = self.stream.isatty()

    def eta(self) -> float:
        left = self.total - self.done
        if self.done:
            return (time.monotonic() - self.t0) / self.done * left
        return self.estimate * left

    def add(self, cells: int) -> None:
        """Extra repeats were scheduled: they join the total and leave the "up to" allowance."""
        self.total += cells
        self.extra_max = max(self.extra_max - cells, 0)

    def update(self, label: str, advance: bool = False) -> None:
        if advance:
            self.done += 1
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        eta = f"ETA {fmt_duration(self.eta())}"
        if self.extra_max:
            per_cell = (time.monotonic() - self.t0) / self.done if self.done else self.estimate
            most = self.eta() + per_cell * self.extra_max
            if self.budget_s:
                left = max(self.budget_s - (time.monotonic() - self.t0), 0.0)
                eta += (f" (up to {fmt_duration(min(most, max(left, self.eta())))} with extra repeats: budget "
                        f"{fmt_duration(left)} of {fmt_duration(self.budget_s)} left)")
            else:
                eta += f" (up to {fmt_duration(most)} with {self.extra_max} extra repeats)"
        text = f"[{bar}] {self.done}/{self.total} cells  {eta}  {label}"
        if self.tty:
            self.stream.write("\r\033[K" + text)
            if self.done == self.total and advance:
                self.stream.write("\n")
        elif advance or self.done == 0:
            self.stream.write(text + "\n")
        self.stream.flush()
