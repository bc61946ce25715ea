"""What each QEMU thread role costs per I/O, and the verdict native vs threads per controller.

Every journal record splits the QEMU process's threads by role (``host.by_role``: ``vcpu``, ``main-loop``,
``iothread``, ``aio-worker``, ``other``; linux-host/collector.py). Divided by the cell's I/Os (fio's total
I/Os in the window), each role's context switches (voluntary + involuntary) and CPU time (the threads' own
run time, ``schedstat`` in nanoseconds, where the collector read it; else user + system from /proc ticks)
say what that role adds per I/O: technote 004's "context switches" are the sum of these.

**The verdict figure** (fixed by the method before any run, never chosen after seeing which decides): the
*I/O-path context switches per I/O*: the switches of every QEMU thread but the vCPUs (main loop, iothreads,
aio workers, other helpers) per I/O. Why this one:

- under software emulation (TCG) the vCPU thread *is* the emulated guest: its run time and switches are the
  emulator's (measured on the demo's 2-CPU machine: the vCPU ran 2.6-3.6 s of a 6 s window for the same 3,072
  I/Os), not the host's I/O path, and they swamp a difference of 2 switches per I/O; under KVM it is the
  guest's own CPU, which a storage setting does not choose either;
- the aio mode's mechanism lives in the other threads: aio=threads hands every request to a thread-pool
  worker and back (2.0 switches per I/O of the ``aio-worker`` role, in every window measured), aio=native
  submits with io_submit (from the vCPU thread for an emulated AHCI/IDE/SCSI controller, from the main loop
  for virtio's ioeventfd kick) and the main loop reaps the completions;
- with those threads alone on the measured CPU and the vCPU beside the harness (the qemu backend's scope
  "cpus" under TCG), and the local guest's fio spinning out its rate gaps (a sleeping fio arms a guest timer
  per I/O, which under TCG is a QEMU timer the main loop runs: 2.5 more main-loop switches per I/O in the
  windows where it slept), their switches per I/O repeat to 0-1 % on a quiet host (docs/demo-noise.md); what
  else runs on their CPU shows there first.

The CPU per I/O of the same threads is reported beside it (how much, with its spread), not decided on.

What differs on a KVM host: the vCPU thread also enters the host for the guest's device accesses (VM exits;
an ioeventfd kick is handled in the kernel) and halts and wakes per interrupt; this figure leaves those out on
both hosts alike, so it counts the same threads, but a KVM host's whole-process figures hold more host I/O
work in the vCPU role than TCG's do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..read.byrole import ROLES, STEM
from .stats import ALPHA, half_width, welch

IO_PATH_ROLES = tuple(r for r in ROLES if r != "vcpu")
VERDICT_FIGURE = "I/O-path context switches per I/O"
VERDICT_WHY = ("the switches of every QEMU thread but the vCPUs (main loop, iothreads, aio workers, other "
               "helpers), divided by the window's I/Os: where a storage setting's mechanism lives (aio=threads: a "
               "thread-pool hand-off per request), not the guest. Fixed by the method before the run. Under "
               "software emulation the vCPU thread is the emulated guest, whose run time and switches vary with the "
               "emulator (not the I/O path) and would swamp the difference; under KVM the vCPU also does the "
               "guest's device exits, halts and wake-ups, which this figure leaves out there too.")


def per_io_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Per measurement: each role's switches and CPU-µs per I/O, the I/O path's (every role but the vCPU) and
    the process's, with the configuration's keys. Rows without I/Os or a per-role split are left out."""
    need = [f"{STEM[r]}_ctx" for r in ROLES]
    if frame.empty or any(c not in frame.columns for c in need) or "total_ios" not in frame.columns:
        return pd.DataFrame()
    f = frame[frame["total_ios"].fillna(0) > 0].dropna(subset=need)
    if f.empty:
        return pd.DataFrame()
    ios = f["total_ios"].astype(float)
    out = pd.DataFrame({k: f[k] for k in ("config", "controller", "aio", "iothread", "cache", "workload", "bs",
                                          "repeat") if k in f.columns})
    out["ios"] = ios
    for r in ROLES:
        out[f"{STEM[r]}_ctx_io"] = f[f"{STEM[r]}_ctx"].astype(float) / ios
        out[f"{STEM[r]}_cpu_us_io"] = f[f"{STEM[r]}_cpu_s"].astype(float) * 1e6 / ios
    out["path_ctx_io"] = sum(out[f"{STEM[r]}_ctx_io"] for r in IO_PATH_ROLES)
    out["path_cpu_us_io"] = sum(out[f"{STEM[r]}_cpu_us_io"] for r in IO_PATH_ROLES)
    out["roles_ctx_io"] = out["path_ctx_io"] + out["vcpu_ctx_io"]
    out["roles_cpu_us_io"] = out["path_cpu_us_io"] + out["vcpu_cpu_us_io"]
    if "ctx_switches" in f.columns:
        out["process_ctx_io"] = f["ctx_switches"].astype(float) / ios
    return out


FIGURES = [(f"{STEM[r]}_ctx_io", f"{r} switches per I/O") for r in ROLES] + \
          [(f"{STEM[r]}_cpu_us_io", f"{r} CPU µs per I/O") for r in ROLES] + \
          [("path_ctx_io", "I/O-path switches per I/O"), ("path_cpu_us_io", "I/O-path CPU µs per I/O")]


def role_table(per_io: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: n, and for every figure of :data:`FIGURES` its mean, standard deviation and CV."""
    if per_io.empty:
        return pd.DataFrame()
    keys = [k for k in ("config", "workload") if k in per_io.columns]
    rows = []
    for key, g in per_io.groupby(keys, sort=False):
        row: dict[str, Any] = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["controller"], row["aio"] = g["controller"].iloc[0], g["aio"].iloc[0]
        row["n"] = len(g)
        for col, _ in FIGURES:
            v = g[col].astype(float)
            mean = float(v.mean())
            sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
            row[f"{col}_mean"], row[f"{col}_sd"] = mean, sd
            row[f"{col}_cv"] = sd / mean if mean and math.isfinite(sd) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class AioVerdict:
    """aio=threads against aio=native for one controller (with the same iothread, cache and workload)."""

    controller: str
    workload: str
    group: str  # the other settings held equal: "iothread=0, cache=none"
    native: list[float]  # the verdict figure per repeat
    threads: list[float]
    diff: float  # threads - native, switches per I/O
    low: float  # 95 % CI of the difference (Welch-Satterthwaite)
    high: float
    p: float
    per_mib: float  # the difference per MiB (x I/Os per MiB)
    cpu_diff_us: float  # threads - native, I/O-path CPU-µs per I/O
    cpu_low: float
    cpu_high: float
    cpu_p: float
    cv_native: float
    cv_threads: float

    @property
    def decided(self) -> bool:
        return math.isfinite(self.p) and self.p < ALPHA

    @property
    def words(self) -> str:
        if not math.isfinite(self.p):
            return "not tested (a single repeat)"
        if not self.decided:
            return "within noise"
        return "aio=threads costs more" if self.diff > 0 else "aio=threads costs less"


def _flag(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)) or str(v) in ("True", "False"):
        return "1" if str(v) == "True" else "0"
    return str(v)


def _diff_ci(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(mean(b) - mean(a), 95 % CI low, high, Welch p)."""
    if len(a) < 2 or len(b) < 2:
        d = float(b.mean() - a.mean())
        return d, float("nan"), float("nan"), float("nan")
    from scipy import stats as sp  # the same test as stats.welch; its interval needs the Welch df

    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    d = float(b.mean() - a.mean())
    se = math.sqrt(va + vb)
    p = welch(list(b), list(a)).p
    if se == 0:
        return d, d, d, p
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = float(sp.t.ppf(0.975, df))
    return d, d - t * se, d + t * se, p


def aio_verdicts(per_io: pd.DataFrame) -> list[AioVerdict]:
    """One verdict per controller x (iothread, cache, workload) measured with both aio=native and aio=threads."""
    out: list[AioVerdict] = []
    if per_io.empty or "aio" not in per_io:
        return out
    keys = [k for k in ("controller", "iothread", "cache", "workload") if k in per_io.columns]
    for key, g in per_io.groupby(keys, sort=False, dropna=False):
        kv = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        n, t = g[g["aio"] == "native"], g[g["aio"] == "threads"]
        if n.empty or t.empty:
            continue
        a, b = n["path_ctx_io"].to_numpy(float), t["path_ctx_io"].to_numpy(float)
        d, lo, hi, p = _diff_ci(a, b)
        ca, cb = n["path_cpu_us_io"].to_numpy(float), t["path_cpu_us_io"].to_numpy(float)
        cd, clo, chi, cp = _diff_ci(ca, cb)
        bs = float(g["bs"].dropna().iloc[0]) if "bs" in g and g["bs"].notna().any() else float("nan")
        per_mib = d * (2 ** 20 / bs) if bs and math.isfinite(bs) else float("nan")

        def cv(v: np.ndarray) -> float:
            return float(v.std(ddof=1) / v.mean()) if len(v) > 1 and v.mean() else float("nan")

        group = ", ".join(f"{k}={_flag(v)}" for k, v in kv.items() if k in ("iothread", "cache"))
        out.append(AioVerdict(str(kv["controller"]), str(kv.get("workload", "")), group, list(a), list(b), d, lo,
                              hi, p, per_mib, cd, clo, chi, cp, cv(a), cv(b)))
    return out


def verdict_sentence(v: AioVerdict, named: bool = True) -> str:
    """One controller's answer, with how much (per I/O and per MiB) and how sure."""
    head = f"{v.controller}: " if named else ""
    nums = (f"{abs(v.diff):.2f} I/O-path switches per I/O ({abs(v.per_mib):.1f} per MiB)")
    if not math.isfinite(v.p):
        return head + f"indicative only (a single repeat): threads minus native {v.diff:+.2f} switches per I/O."
    ci = f"95 % CI {v.low:+.2f} to {v.high:+.2f}"
    if v.decided:
        more = "more" if v.diff > 0 else "fewer"
        return head + (f"aio=threads costs {nums} {more} than aio=native ({ci}, Welch p = {v.p:.2g}); "
                       + cpu_clause(v) + ".")
    return head + (f"aio=threads and aio=native are within noise: difference {v.diff:+.2f} switches per I/O "
                   f"({ci}, Welch p = {v.p:.2g}).")


def cpu_clause(v: AioVerdict) -> str:
    """The I/O path's CPU difference beside the verdict, with its own interval and test: it is not what decides,
    and where its repeats overlap the sentence says so rather than give a bare number."""
    head = f"I/O-path CPU {v.cpu_diff_us:+.1f} µs per I/O"
    if not (math.isfinite(v.cpu_p) and math.isfinite(v.cpu_low) and math.isfinite(v.cpu_high)):
        return head
    tail = "" if v.cpu_p < 0.05 else ": within noise"
    return head + f" (95 % CI {v.cpu_low:+.1f} to {v.cpu_high:+.1f}, p = {v.cpu_p:.2g}{tail})"


def summary(per_io: pd.DataFrame) -> tuple[int, int]:
    """(controllers decided at 95 %, controllers compared)."""
    vs = aio_verdicts(per_io)
    return sum(v.decided for v in vs), len(vs)


def half(values: list[float]) -> float:
    return half_width(values)
