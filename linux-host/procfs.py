"""/proc readers of the host collector: one thread's and one process's CPU time and switches, every task of
the host (where it last ran, its CPU time so far), per-CPU /proc/stat, /proc/uptime, /proc/interrupts and
/proc/softirqs, and whether a process catches SIGINT.

Standard library only, like the rest of ``linux-host/`` (copied to a Proxmox node and run there). Every read
takes a ``root`` ("/" on a real host, a folder a test or a stand-in fills with the same files), and raises
:class:`CollectorProblem`, the one error of the collectors, where a window cannot be measured without it.
Nothing here keeps state across a window: the collectors (``collector.py``, ``cpuset.py``) take the deltas.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

# (a Windows workstation imports this module for its words, never runs it there: it has no sysconf)
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class CollectorProblem(Exception):
    """The window could not be measured (the process vanished, perf failed)."""


@dataclass
class ThreadSample:
    tid: int
    name: str
    utime: int  # clock ticks
    stime: int
    runtime_ns: int | None  # None: no /proc/PID/task/TID/schedstat (CONFIG_SCHEDSTATS off) or unreadable
    vcsw: int | None  # None: the status file has no voluntary_ctxt_switches line
    ivcsw: int | None


def _read(path: str) -> str:
    with open(path, "r") as fh:
        return fh.read()


def _parse_stat(text: str) -> tuple[str, int, int]:
    """(comm, utime, stime) from a /proc stat line; comm may contain spaces and parentheses."""
    lpar, rpar = text.index("("), text.rindex(")")
    comm = text[lpar + 1:rpar]
    rest = text[rpar + 2:].split()
    # fields after comm: state(3) ppid ... utime is field 14, stime 15 (1-based in proc(5))
    return comm, int(rest[11]), int(rest[12])


def _proc(root: str, rel: str) -> str:
    """``rel`` (``proc/1/stat``, ``sys/...``) under ``root``: "/" on a real host, a folder a test or a stand-in
    fills with the same files (a fake /proc and /sys tree)."""
    return os.path.join(root, rel)


def sample_thread(pid: int, tid: int, root: str = "/") -> ThreadSample | None:
    base = _proc(root, f"proc/{pid}/task/{tid}")
    try:
        comm, ut, st = _parse_stat(_read(f"{base}/stat"))
        status = _read(f"{base}/status")
        try:
            runtime_ns: int | None = int(_read(f"{base}/schedstat").split()[0])
        except (OSError, ValueError, IndexError):
            runtime_ns = None
    except (OSError, ValueError):
        return None  # the thread exited between listing and reading
    return ThreadSample(tid, comm, ut, st, runtime_ns, _status_count(status, "voluntary_ctxt_switches:"),
                        _status_count(status, "nonvoluntary_ctxt_switches:"))


def _status_count(status: str, label: str) -> int | None:
    """A counter line of /proc/.../status, or None when the kernel did not write it (never 0)."""
    for line in status.splitlines():
        if line.startswith(label):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def sample_process(pid: int, root: str = "/") -> dict[int, ThreadSample]:
    out: dict[int, ThreadSample] = {}
    try:
        tids = os.listdir(_proc(root, f"proc/{pid}/task"))
    except OSError:
        raise CollectorProblem(f"process {pid} is gone") from None
    for t in tids:
        s = sample_thread(pid, int(t), root)
        if s is not None:
            out[s.tid] = s
    return out


def process_cpu_ticks(pid: int, root: str = "/") -> tuple[int, int]:
    try:
        _, ut, st = _parse_stat(_read(_proc(root, f"proc/{pid}/stat")))
    except (OSError, ValueError):
        raise CollectorProblem(f"process {pid} is gone") from None
    return ut, st


def catches_sigint(pid: int) -> bool | None:
    """Whether process ``pid`` has a SIGINT handler (``SigCgt`` in /proc/PID/status); None when it is gone."""
    try:
        status = _read(f"/proc/{pid}/status")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return None


#: /proc/stat's per-CPU columns, in order (proc(5)); the first ``len`` a kernel writes are read
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


def read_cpu_stat(root: str = "/") -> dict[int, dict[str, int]]:
    """Per CPU, /proc/stat's columns in clock ticks (USER_HZ), keyed by CPU number."""
    out: dict[int, dict[str, int]] = {}
    path = _proc(root, "proc/stat")
    try:
        text = _read(path)
    except OSError as exc:
        raise CollectorProblem(f"cannot read {path}: {exc.strerror}") from None
    for line in text.splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu") or words[0] == "cpu":
            continue
        try:
            cpu = int(words[0][3:])
            values = [int(w) for w in words[1:]]
        except ValueError:
            raise CollectorProblem(f"{path}: {line[:80]!r} is not a per-CPU line (cpuN and numbers)") from None
        if len(values) < 8:  # steal (2.6.11) is the last column every kernel of these machines writes
            raise CollectorProblem(f"{path}: {words[0]} has {len(values)} columns, not the 8 or more of "
                                   "user nice system idle iowait irq softirq steal")
        out[cpu] = dict(zip(STAT_FIELDS, values))
    if not out:
        raise CollectorProblem(f"{path} has no per-CPU lines (cpu0 ...)")
    return out


def read_uptime(root: str = "/") -> float | None:
    """/proc/uptime's first figure (seconds since boot, 0.01 s); None when unreadable."""
    try:
        return float(_read(_proc(root, "proc/uptime")).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_per_cpu_counts(root: str, rel: str) -> tuple[list[int], dict[str, tuple[str, list[int]]]]:
    """/proc/interrupts or /proc/softirqs: (the header's CPU numbers, {label: (description, count per column)}).
    A line with fewer counts than CPUs (``ERR:``, ``MIS:``: one system-wide count) is left out: it belongs to no
    CPU. None of it is fatal: an unreadable file gives no rows (the leak then says it was not seen)."""
    try:
        lines = _read(_proc(root, rel)).splitlines()
    except OSError:
        return [], {}
    if not lines:
        return [], {}
    try:
        cpus = [int(w[3:]) for w in lines[0].split() if w.startswith("CPU")]
    except ValueError:
        return [], {}
    rows: dict[str, tuple[str, list[int]]] = {}
    for line in lines[1:]:
        label, colon, rest = line.partition(":")
        if not colon:
            continue
        words = rest.split()
        counts: list[int] = []
        for w in words[:len(cpus)]:
            if not w.isdigit():
                break
            counts.append(int(w))
        if len(counts) < len(cpus) or not cpus:
            continue
        rows[label.strip()] = (" ".join(words[len(cpus):]), counts)
    return cpus, rows


@dataclass
class TaskSample:
    pid: int  # the thread group (process) it belongs to
    comm: str
    cpu: int | None  # the CPU it last ran on (/proc/PID/task/TID/stat field 39, "processor")
    run_s: float  # its CPU time so far: schedstat's run time (ns) where the file exists, else utime + stime


def scan_tasks(root: str = "/") -> dict[int, TaskSample]:
    """Every task (thread) of the host: tid -> where it last ran and its CPU time so far. A task that ends
    between listing and reading is left out."""
    out: dict[int, TaskSample] = {}
    proc = _proc(root, "proc")
    try:
        pids = [int(n) for n in os.listdir(proc) if n.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            tids = [int(n) for n in os.listdir(os.path.join(proc, str(pid), "task")) if n.isdigit()]
        except OSError:
            continue
        for tid in tids:
            base = os.path.join(proc, str(pid), "task", str(tid))
            try:
                text = _read(os.path.join(base, "stat"))
                lpar, rpar = text.index("("), text.rindex(")")
                rest = text[rpar + 2:].split()
                comm = text[lpar + 1:rpar]
                cpu = int(rest[36]) if len(rest) > 36 else None
                run_s = (int(rest[11]) + int(rest[12])) / CLK_TCK
            except (OSError, ValueError, IndexError):
                continue
            try:
                run_s = int(_read(os.path.join(base, "schedstat")).split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                pass
            out[tid] = TaskSample(pid, comm, cpu, run_s)
    return out
