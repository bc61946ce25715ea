"""Repeatable cells: QEMU's threads pinned for the measurement window, and put back after it.

Two placements, by the matrix's ``[host] scope`` (issue 33):

- ``"cpus"`` (the qemu backend's default): the QEMU under test runs on the measured set (``[host] cpus``, by
  default the last usable CPU), and the harness, its collector (and the perf it starts) and the VMs booting
  ahead (paused) on the other CPUs, so the set carries QEMU's threads and the kernel's work for them, and is
  measured system-wide (technote 004's scope). :func:`plan_placement`. Which of QEMU's threads: with
  ``accel = kvm`` every one, the vCPUs too (a KVM vCPU thread runs the guest and does its device exits: the
  guest is part of 004's set). With ``accel = tcg`` every one but the vCPUs, which run beside the harness:
  under software emulation a vCPU thread *is* the emulated guest (translating and running its instructions,
  seconds of CPU per window), not the host's I/O path, and sharing one CPU with it made the I/O path's
  threads' switches per I/O flip between modes from window to window (15-25 % CV, against 2-3 % with the
  vCPU off the set, measured by benchmarks/bench_demo_modes.py; docs/demo-noise.md).
- ``"process"``: ``[qemu] pin_threads`` as below; the collector measures the QEMU process.

Measured without pinning, the same configuration gives context switches per MiB of about 140 or about
270, decided by whether the scheduler puts the vCPU thread and QEMU's main loop on the same core —
host placement, not the controller. So while the window is open:

- the vCPU thread(s) (thread ids from QMP ``query-cpus-fast``) run on one set of host CPUs;
- everything else of QEMU — main loop, iothreads (``query-iothreads``), thread-pool aio workers
  (``/proc/<pid>/task/*/comm`` = ``worker``), other helpers — on another set. aio workers QEMU starts
  during the window are created by the main loop or an iothread and inherit its CPUs;
- every thread of the harness itself (the executor talking to the guest, the collector, perf started
  by it) is moved off the vCPU's CPUs onto the second set too.

Each thread's own affinity is saved and put back when the window closes — also when the cell failed
(the runner closes the window in every case) and, as a last resort, when the backend stops. The
placement (CPU sets, thread ids by role, threads QEMU started in the window) goes into every record.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import MatrixError
from ...spec import HostSettings
from ...core.scope import ROLE_IOTHREAD, ROLE_MAIN, ROLE_OTHER, ROLE_VCPU, ROLE_WORKER, format_cpuset, parse_cpuset

log = logging.getLogger("stormatrix.qemu")

KEY = "[qemu] pin_threads"
#: the run record's reason (environment.host_scope.why) for the vCPUs' place under accel = tcg
VCPU_OFF_SET_WHY = ("accel = tcg: a vCPU thread is the emulated guest (it translates and runs the guest's "
                    "instructions), not the host's I/O path; it runs beside the harness so that the set holds QEMU's "
                    "I/O path (main loop, iothreads, aio workers) and the kernel's work for it alone")


def check_setting(value: str) -> None:
    """The ``pin_threads`` value's syntax (a Field check: raises ValueError naming the problem)."""
    text = value.strip().lower()
    if text in ("auto", "on", "off"):
        return
    vcpu, slash, other = value.partition("/")
    if not slash:
        raise ValueError(f"{value!r} is not auto, on, off or VCPU_CPUS/OTHER_CPUS such as \"1/0\" or \"2-3/0-1\"")
    a, b = parse_cpuset(vcpu), parse_cpuset(other)
    if set(a) & set(b):
        raise ValueError(f"{value!r}: CPU {format_cpuset(set(a) & set(b))} is in both sets; the vCPUs need CPUs "
                         "of their own")


@dataclass(frozen=True)
class PinPlan:
    """Which host CPUs the vCPUs get and which everything else gets."""

    vcpu_cpus: tuple[int, ...]
    other_cpus: tuple[int, ...]
    #: [host] scope = "cpus": QEMU's threads on ``vcpu_cpus`` (the measured set), not only the vCPUs
    whole_qemu: bool = False
    #: with ``whole_qemu``: whether the vCPU threads are on the set too (KVM) or beside the harness (TCG)
    vcpu_on_set: bool = True

    def on_set(self, role: str) -> bool:
        """Whether a QEMU thread of ``role`` runs on ``vcpu_cpus`` (else on ``other_cpus``) in the window."""
        if self.whole_qemu:
            return role != ROLE_VCPU or self.vcpu_on_set
        return role == ROLE_VCPU

    def describe(self) -> str:
        if self.whole_qemu and self.vcpu_on_set:
            return ("every QEMU thread (vCPUs, main loop, iothreads, aio workers) on CPU "
                    f"{format_cpuset(self.vcpu_cpus)}, which is measured system-wide ([host] scope = \"cpus\"); the "
                    f"harness, its collector and the VMs booting ahead on CPU {format_cpuset(self.other_cpus)}")
        if self.whole_qemu:
            return ("QEMU's I/O path (main loop, iothreads, aio workers) on CPU "
                    f"{format_cpuset(self.vcpu_cpus)}, which is measured system-wide ([host] scope = \"cpus\"); its "
                    "vCPU threads (under software emulation the emulated guest itself), the harness, its collector "
                    f"and the VMs booting ahead on CPU {format_cpuset(self.other_cpus)}")
        return (f"vCPU threads on CPU {format_cpuset(self.vcpu_cpus)}; QEMU's main loop, iothreads and aio "
                f"workers, and the harness and its collector, on CPU {format_cpuset(self.other_cpus)}")


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (a cgroup or taskset may have narrowed the online ones)."""
    return sorted(os.sched_getaffinity(0))


def plan_pinning(value: str, path: str, cpus: list[int] | None = None) -> tuple[PinPlan | None, str]:
    """The plan for ``pin_threads = value`` on a host whose usable CPUs are ``cpus``: (plan or None, why).

    ``auto``: pin where there are at least two CPUs — the last one for the vCPU(s), the others for the
    rest. ``on``: the same, but fewer than two CPUs is an error. ``A/B``: exactly those sets. A CPU the
    host does not offer is a :class:`MatrixError` (exit 2) naming the key and the usable CPUs.
    """
    cpus = usable_cpus() if cpus is None else cpus
    text = value.strip().lower()
    if text == "off":
        return None, "pin_threads = off"
    if text in ("auto", "on"):
        if len(cpus) < 2:
            if text == "on":
                raise MatrixError(path, KEY, f"pinning needs two host CPUs and this process may use only CPU "
                                  f"{format_cpuset(cpus)}", "set pin_threads = \"off\" (or \"auto\"), or run where "
                                  "two CPUs are available")
            return None, f"one usable CPU ({format_cpuset(cpus)}): nothing to separate"
        return PinPlan((cpus[-1],), tuple(cpus[:-1])), "auto"
    vcpu, _, other = value.partition("/")
    plan = PinPlan(tuple(parse_cpuset(vcpu)), tuple(parse_cpuset(other)))
    missing = sorted((set(plan.vcpu_cpus) | set(plan.other_cpus)) - set(cpus))
    if missing:
        raise MatrixError(path, KEY, f"{value!r} names CPU {format_cpuset(missing)}, which this process may not use "
                          f"(usable: {format_cpuset(cpus)})",
                          f"give CPUs out of {format_cpuset(cpus)}, e.g. pin_threads = "
                          f"\"{cpus[-1]}/{format_cpuset(cpus[:-1]) or cpus[-1]}\", or \"off\"")
    return plan, "given"


HOST_KEY = "[host] cpus"


def plan_placement(pin_threads: str, host: HostSettings, path: str, *, pin_given: bool = False,
                   cpus: list[int] | None = None, accel: str = "tcg") -> tuple[PinPlan | None, str]:
    """The window's placement for ``[host]`` (resolved) and ``[qemu] pin_threads`` on a host whose usable CPUs
    are ``cpus``: (plan or None, why). Scope "process": :func:`plan_pinning`. Scope "cpus": QEMU's threads
    on the set (``host.cpus``, else the last usable CPU) — with ``accel`` "tcg" all but the vCPUs, which go
    with everything else on the rest (the module's docstring says why); a CPU the host does not
    offer, a set that leaves no CPU for the harness, a pin_threads given with it, are :class:`MatrixError`
    naming the key and the fix. With fewer than two usable CPUs and no scope in the matrix: (None, why), and
    the backend measures the process (:meth:`QemuBackend.host` says so)."""
    cpus = usable_cpus() if cpus is None else cpus
    if host.scope != "cpus":
        return plan_pinning(pin_threads, path, cpus)
    if pin_given:
        raise MatrixError(path, KEY, "applies under [host] scope = \"process\"; with scope \"cpus\" (the qemu "
                          "backend's default) every QEMU thread runs on the measured set ([host] cpus) and the harness "
                          "on the other CPUs", "remove pin_threads, or set [host] scope = \"process\" to keep it")
    if not host.cpus and len(cpus) < 2:
        if host.scope_given:
            raise MatrixError(path, "[host] scope", "\"cpus\" needs two host CPUs (one measured, one for the "
                              f"harness) and this process may use only CPU {format_cpuset(cpus)}",
                              "set scope = \"process\", or run where two CPUs are available")
        return None, f"one usable CPU ({format_cpuset(cpus)}): no CPU set can be kept for the VM alone"
    chosen = list(host.cpus) or [cpus[-1]]
    missing = sorted(set(chosen) - set(cpus))
    example = f"cpus = \"{cpus[-1]}\"" if len(cpus) > 1 else "scope = \"process\""
    if missing:
        raise MatrixError(path, HOST_KEY, f"{format_cpuset(chosen)!r} names CPU {format_cpuset(missing)}, which this "
                          f"host does not offer to this process (usable: {format_cpuset(cpus)})",
                          f"give CPUs out of {format_cpuset(cpus)}, leaving one for the harness, e.g. {example}")
    rest = sorted(set(cpus) - set(chosen))
    if not rest:
        raise MatrixError(path, HOST_KEY, f"{format_cpuset(chosen)!r} takes every usable CPU ({format_cpuset(cpus)}) "
                          "and leaves none for the harness, its collector and everything else",
                          f"leave at least one CPU out of the set, e.g. {example}")
    return (PinPlan(tuple(chosen), tuple(rest), whole_qemu=True, vcpu_on_set=accel != "tcg"),
            "[host] scope = cpus" + (", vCPUs off the set (accel = tcg)" if accel == "tcg" else ""))


def _tasks(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def _comm(pid: int, tid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return ""


def qemu_roles(pid: int, named: dict[int, str]) -> dict[int, str]:
    """Every thread of QEMU ``pid`` with its role: QMP's names (vCPU, iothread) first, then the main
    loop (the pid), aio workers (``worker``) and the rest."""
    roles: dict[int, str] = {}
    for tid in _tasks(pid):
        if tid in named:
            roles[tid] = named[tid]
        elif tid == pid:
            roles[tid] = ROLE_MAIN
        else:
            roles[tid] = ROLE_WORKER if _comm(pid, tid) == "worker" else ROLE_OTHER
    return roles


class ThreadPinner:
    """Pins one QEMU's threads and the harness's own threads for a window; :meth:`unpin` puts every
    thread's own affinity back (a thread that ended meanwhile is fine)."""

    def __init__(self, plan: PinPlan) -> None:
        self.plan = plan
        self._saved: dict[int, set[int]] = {}  # tid -> its affinity before the window
        self._pid: int | None = None
        self._roles: dict[int, str] = {}

    @property
    def active(self) -> bool:
        return bool(self._saved)

    def _set(self, tid: int, cpus: tuple[int, ...]) -> bool:
        try:
            before = set(os.sched_getaffinity(tid))
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            return False  # the thread ended between listing and pinning
        self._saved.setdefault(tid, before)
        return True

    def pin(self, pid: int, named: dict[int, str]) -> None:
        """Pin QEMU ``pid`` (``named``: QMP's vCPU/iothread ids) and this process's threads."""
        if self.active:
            self.unpin()
        self._pid = pid
        self._roles = qemu_roles(pid, named)
        if not any(role == ROLE_VCPU for role in self._roles.values()):
            raise OSError(f"QEMU {pid} named no vCPU thread (query-cpus-fast) to pin")
        try:
            for tid, role in self._roles.items():
                self._set(tid, self.plan.vcpu_cpus if self.plan.on_set(role) else self.plan.other_cpus)
            for tid in _tasks(os.getpid()):
                self._set(tid, self.plan.other_cpus)
        except OSError:
            self.unpin()
            raise
        log.debug("pinned QEMU %d: %s", pid, self.plan.describe())

    def keep_off(self, pid: int) -> None:
        """Put every thread of another process of ours (a VM booting ahead, paused for the window) on the other
        CPUs for the window; :meth:`unpin` gives each its own affinity back."""
        for tid in _tasks(pid):
            try:
                self._set(tid, self.plan.other_cpus)
            except OSError:
                pass

    def release(self, pid: int) -> None:
        """Give a process started while the window is pinned (it inherited the harness's CPUs) the CPUs
        the harness had before the window, so that it is not confined to the other set for good."""
        before = self._saved.get(os.getpid())
        if not before:
            return
        for tid in _tasks(pid):
            try:
                os.sched_setaffinity(tid, before)
            except OSError:
                pass

    def placement(self) -> dict[str, Any]:
        """Where QEMU's threads are now, by role (read back from the kernel), and the threads QEMU started
        since :meth:`pin` (aio workers spawned in the window) with the CPUs they got."""
        out: dict[str, Any] = {"pinned": True}
        if self.plan.whole_qemu:  # the measured set, and whether the vCPUs ran there (KVM) or beside the harness
            out.update({"scope": "cpus", "set_cpus": format_cpuset(self.plan.vcpu_cpus),
                        "harness_cpus": format_cpuset(self.plan.other_cpus), "vcpu_on_set": self.plan.vcpu_on_set})
        else:
            out.update({"vcpu_cpus": format_cpuset(self.plan.vcpu_cpus),
                        "other_cpus": format_cpuset(self.plan.other_cpus)})
        out["roles"] = {}
        if self._pid is None:
            return out
        now = qemu_roles(self._pid, {t: r for t, r in self._roles.items() if r in (ROLE_VCPU, ROLE_IOTHREAD)})
        for tid, role in sorted(now.items()):
            try:
                cpus = format_cpuset(os.sched_getaffinity(tid))
            except OSError:
                continue
            entry = out["roles"].setdefault(role, {"threads": 0, "cpus": []})
            entry["threads"] += 1
            if cpus not in entry["cpus"]:
                entry["cpus"].append(cpus)
        out["started_in_window"] = len(set(now) - set(self._roles))
        out["harness_threads"] = sum(1 for t in self._saved if t in set(_tasks(os.getpid())))
        return out

    def unpin(self) -> None:
        """Give every pinned thread its own affinity back. Never raises."""
        saved, self._saved = self._saved, {}
        for tid, cpus in saved.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:
                pass
            except OSError as exc:
                log.warning("could not put back the CPU affinity %s of thread %d: %s", format_cpuset(cpus), tid, exc)
        self._pid = None
        self._roles = {}


class PlacementCollector:
    """The runner's host collector for one scope, with the window's CPU placement added to its result
    (the record's ``host.placement``): collected while the threads are still pinned."""

    def __init__(self, inner: Any, placement: Any) -> None:
        self.inner = inner
        self._placement = placement

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> Any:
        host = self.inner.stop()
        if isinstance(host, dict):
            host = {**host, "placement": self._placement()}
        return host

    def abort(self) -> None:
        self.inner.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
