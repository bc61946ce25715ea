"""A Linux host's settings of the CPU-set scope as the host itself has them: files under a root, and irqbalance.

:class:`Host` reads and writes them; hostsettings.py (the ``read``/``apply``/``restore``/``off-set`` protocol)
decides what to change. Standard library only: it runs on a Proxmox node next to hostsettings.py, or on this
machine. Every path is relative to ``root`` (``/`` on a node), so a fake /proc and /sys tree stands in for a
node in tests.

What it reads and changes (paths under the root):

- ``proc/interrupts``: numbered IRQs whose line (after the per-CPU counts: chip, hwirq, device names)
  contains one of the ``irqs`` patterns; each one's ``proc/irq/N/smp_affinity_list`` (a cpulist);
- irqbalance (it rewrites IRQ affinities every 10 s otherwise): ``systemctl is-active irqbalance``, else a
  process whose ``proc/PID/comm`` is ``irqbalance``; stopped with ``systemctl stop`` or SIGTERM to its pid,
  put back with ``systemctl start`` or by running its command line again (``proc/PID/cmdline``);
- ``sys/devices/virtual/workqueue/cpumask`` (unbound work queues) and the ``cpumask`` of every queue that
  has one there (WQ_SYSFS unbound queues such as open-iscsi's ``iscsi_q_N``): hex masks;
- ``sys/class/net/IF/queues/rx-N/rps_cpus`` and ``tx-N/xps_cpus`` of each of ``interfaces``: hex masks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

try:  # imported as stormatrix.host.hostnode, or run next to its siblings (on a node)
    from .cpulist import parse_cpulist
except ImportError:  # pragma: no cover - the script case is exercised through ssh and stdin
    # the same module, found next to this file on a node (mypy checks the package, where it is relative)
    from cpulist import parse_cpulist  # type: ignore[import,no-redef]

WORKQUEUE = "sys/devices/virtual/workqueue"
NET = "sys/class/net"
ONLINE = "sys/devices/system/cpu/online"
SYSTEMCTL = "systemctl"
IRQBALANCE_UNIT = "irqbalance"


class HostProblem(Exception):
    """A setting could not be read or written (the message names the file and the fix)."""


class Host:
    """The host under ``root``; ``systemctl``: the program that manages services (None: none here)."""

    def __init__(self, root: str = "/", systemctl: str | None = SYSTEMCTL) -> None:
        self.root = root or "/"
        self.systemctl = systemctl

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel.lstrip("/"))

    def read(self, rel: str) -> str:
        with open(self.path(rel)) as fh:
            return fh.read().strip()

    def write(self, rel: str, value: str) -> None:
        try:
            with open(self.path(rel), "w") as fh:
                fh.write(value + "\n")
        except OSError as exc:
            raise HostProblem(f"writing {value!r} to /{rel} failed: {exc.strerror or exc}") from None

    def writable(self, rel: str) -> bool:
        return os.access(self.path(rel), os.W_OK)

    def online(self) -> list[int]:
        return parse_cpulist(self.read(ONLINE))

    # IRQs -------------------------------------------------------------------------------------------
    def irqs(self) -> dict[str, str]:
        """Numbered IRQ -> its description (the /proc/interrupts line after the per-CPU counts)."""
        lines = self.read("proc/interrupts").splitlines()
        if not lines:
            return {}
        ncpu = len(lines[0].split())
        out: dict[str, str] = {}
        for line in lines[1:]:
            head, sep, rest = line.partition(":")
            if not sep or not head.strip().isdigit():
                continue
            fields = rest.split()
            out[head.strip()] = " ".join(fields[ncpu:])
        return out

    def matching_irqs(self, patterns: list[str]) -> tuple[dict[str, str], list[str]]:
        """(IRQ -> description for the IRQs matching any pattern, the patterns matching none)."""
        irqs = self.irqs()
        found: dict[str, str] = {}
        unmatched = []
        for pat in patterns:
            hit = {n: d for n, d in irqs.items() if pat.lower() in d.lower()}
            if not hit:
                unmatched.append(pat)
            found.update(hit)
        return dict(sorted(found.items(), key=lambda kv: int(kv[0]))), unmatched

    # irqbalance -------------------------------------------------------------------------------------
    def _systemctl(self, *args: str) -> subprocess.CompletedProcess[str] | None:
        if not self.systemctl:
            return None
        try:
            return subprocess.run([self.systemctl, *args], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None

    def irqbalance_pids(self) -> list[int]:
        pids = []
        try:
            names = os.listdir(self.path("proc"))
        except OSError:
            return []
        for name in names:
            if not name.isdigit():
                continue
            try:
                if self.read(f"proc/{name}/comm") == "irqbalance" and _alive(int(name), self):
                    pids.append(int(name))
            except OSError:
                continue
        return sorted(pids)

    def irqbalance(self) -> dict[str, Any]:
        """irqbalance's state: ``{"how": "systemd"|"pid"|"none", "active": bool, ...}``."""
        proc = self._systemctl("is-active", IRQBALANCE_UNIT)
        if proc is not None and proc.stdout.strip() == "active":
            return {"how": "systemd", "active": True, "unit": IRQBALANCE_UNIT}
        pids = self.irqbalance_pids()
        if not pids:
            return {"how": "none", "active": False}
        pid = pids[0]
        try:
            with open(self.path(f"proc/{pid}/cmdline"), "rb") as fh:
                argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            argv = []
        return {"how": "pid", "active": True, "pid": pid, "cmdline": argv}

    def stop_irqbalance(self, state: dict[str, Any]) -> None:
        if not state.get("active"):
            return
        if state["how"] == "systemd":
            proc = self._systemctl("stop", IRQBALANCE_UNIT)
            check = self._systemctl("is-active", IRQBALANCE_UNIT)
            if proc is None or (check is not None and check.stdout.strip() == "active"):
                raise HostProblem("systemctl stop irqbalance did not stop it: "
                                  f"{(proc.stderr.strip() if proc else 'systemctl did not run') or 'no message'}")
            return
        for pid in self.irqbalance_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            except OSError as exc:
                raise HostProblem(f"cannot stop irqbalance (pid {pid}): {exc.strerror}") from None
        deadline = time.monotonic() + 10
        while self.irqbalance_pids():
            if time.monotonic() > deadline:
                raise HostProblem("irqbalance did not exit within 10 s of SIGTERM")
            time.sleep(0.05)

    def start_irqbalance(self, state: dict[str, Any]) -> str | None:
        """Put irqbalance back as ``state`` says it was; what was done (None: nothing to do)."""
        if not state.get("active"):
            return None
        if state["how"] == "systemd":
            check = self._systemctl("is-active", IRQBALANCE_UNIT)
            if check is not None and check.stdout.strip() == "active":
                return None
            proc = self._systemctl("start", IRQBALANCE_UNIT)
            if proc is None or proc.returncode != 0:
                raise HostProblem("systemctl start irqbalance failed: "
                                  f"{(proc.stderr.strip() if proc else 'systemctl did not run') or 'no message'}")
            return "irqbalance: started again (systemctl start irqbalance)"
        if self.irqbalance_pids():
            return None
        argv = list(state.get("cmdline") or [])
        if not argv:
            raise HostProblem("irqbalance ran without a readable command line: start it again by hand")
        try:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
        except OSError as exc:
            raise HostProblem(f"starting irqbalance again ({' '.join(argv)}) failed: {exc.strerror}") from None
        deadline = time.monotonic() + 10
        while not self.irqbalance_pids():
            if time.monotonic() > deadline:
                raise HostProblem(f"irqbalance ({' '.join(argv)}) did not come back within 10 s")
            time.sleep(0.05)
        return f"irqbalance: started again ({' '.join(argv)})"

    # work queues and steering -------------------------------------------------------------------------
    def workqueue_masks(self) -> dict[str, str]:
        """Relative path -> current hex mask: the unbound default and each queue's own ``cpumask``."""
        out: dict[str, str] = {}
        base = f"{WORKQUEUE}/cpumask"
        if os.path.isfile(self.path(base)):
            out[base] = self.read(base)
        try:
            names = sorted(os.listdir(self.path(WORKQUEUE)))
        except OSError:
            names = []
        for name in names:
            rel = f"{WORKQUEUE}/{name}/cpumask"
            if os.path.isfile(self.path(rel)):
                try:
                    out[rel] = self.read(rel)
                except OSError:
                    continue
        return out

    def steering_masks(self, interface: str) -> dict[str, str] | None:
        """Relative path -> current hex mask of ``interface``'s RPS/XPS files; None: no such interface."""
        base = f"{NET}/{interface}/queues"
        if not os.path.isdir(self.path(f"{NET}/{interface}")):
            return None
        out: dict[str, str] = {}
        try:
            queues = sorted(os.listdir(self.path(base)))
        except OSError:
            queues = []
        for q in queues:
            name = "rps_cpus" if q.startswith("rx-") else "xps_cpus" if q.startswith("tx-") else None
            if name is None:
                continue
            rel = f"{base}/{q}/{name}"
            try:
                out[rel] = self.read(rel)
            except OSError:  # xps_cpus of a single-queue device reads as an error: nothing to steer there
                continue
        return out


def _alive(pid: int, host: Host) -> bool:
    if not os.path.isdir(host.path(f"proc/{pid}")):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
