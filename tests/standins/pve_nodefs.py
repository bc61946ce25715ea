"""The Proxmox node's own files for tests: a fake /proc and /sys tree in a temporary folder, built from a data
description (:class:`NodeDescription`), at the paths the host collector and ``linux-host/hostsettings.py`` read
under their root prefix.

What is there, from the kernel's documented formats (proc(5), Documentation/core-api/irq/irq-affinity.rst,
Documentation/networking/scaling.rst, Documentation/core-api/workqueue.rst), never from the product's code:

- ``sys/devices/system/cpu/{online,possible}``: ``0-(N-1)``;
- ``proc/stat`` (``cpu`` and ``cpuN`` lines), ``proc/softirqs`` and ``proc/interrupts`` with N CPU columns, the
  numbered IRQs of the description (an iSCSI NIC's queues, an NVMe's queues...) and the usual ``NMI``/``LOC`` rows;
- ``proc/irq/N/smp_affinity_list`` (every CPU at first) and ``proc/irq/default_smp_affinity``;
- ``sys/devices/virtual/workqueue/cpumask`` and, for each unbound WQ_SYSFS queue, ``<name>/cpumask`` (per-CPU
  queues have ``per_cpu`` = 1 and no cpumask);
- ``sys/class/net/<if>/queues/rx-N/rps_cpus`` (``0``: RPS off) and ``tx-N/xps_cpus``;
- irqbalance, really running: a small daemon (a real process, ``comm`` irqbalance) that, like irqbalance, rewrites
  every IRQ's ``smp_affinity_list`` every ``rebalance_s`` (spreading them over the CPUs), with its own
  ``proc/PID/{comm,cmdline}`` in the tree while it lives. ``irqbalance = "systemd"``: managed by a fake
  ``systemctl`` (:meth:`NodeTree.install_systemctl`; ``is-active``/``stop``/``start`` irqbalance, exit codes as
  systemctl's: 0 active, 3 inactive); ``"pid"``: started directly, no unit (stopped by its pid, started again by its
  command line); ``None``: not running.

A real file under /proc or /sys checks what is written (the kernel answers EINVAL); plain files cannot, so
:meth:`NodeTree.problems` checks every file's content afterwards the way the kernel would have.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WQ = "sys/devices/virtual/workqueue"


@dataclass(frozen=True)
class NodeDescription:
    """A node: N CPUs, named IRQs, work queues, NICs with queues, irqbalance."""

    cpus: int = 4
    #: IRQ number -> (chip, hwirq, name) as /proc/interrupts prints them
    irqs: dict[int, tuple[str, str, str]] = field(default_factory=lambda: {
        40: ("PCI-MSIX-0000:05:00.0", "0-edge", "ens19-TxRx-0"),
        41: ("PCI-MSIX-0000:05:00.0", "1-edge", "ens19-TxRx-1"),
        42: ("PCI-MSIX-0000:05:00.0", "2-edge", "ens19"),
        50: ("PCI-MSIX-0000:06:00.0", "0-edge", "nvme0q0"),
        51: ("PCI-MSIX-0000:06:00.0", "1-edge", "nvme0q1"),
        60: ("PCI-MSIX-0000:02:00.0", "0-edge", "eno1-TxRx-0"),
    })
    #: work queue -> unbound (has its own cpumask) or per-CPU
    workqueues: dict[str, bool] = field(default_factory=lambda: {
        "iscsi_q_2": True, "writeback": True, "blkcg_punt_bio": True, "kblockd": False})
    #: interface -> (rx queues, tx queues)
    interfaces: dict[str, tuple[int, int]] = field(default_factory=lambda: {"ens19": (2, 2), "eno1": (1, 1)})
    irqbalance: str | None = "systemd"  # "systemd", "pid" or None
    rebalance_s: float = 0.1
    #: ``proc/stat`` and ``proc/uptime`` are this machine's (symlinks), so a CPU-set collector reading the node
    #: measures real busy time on the set's CPUs this machine has (the VM's "QEMU" runs there for real); False:
    #: fixed files of N CPUs
    live_stat: bool = False


def _mask(cpus: range | list[int]) -> str:
    value = sum(1 << c for c in cpus)
    return f"{value:x}"


IRQBALANCE = r'''
import os, signal, sys, time
root, interval, pidfile = sys.argv[1], float(sys.argv[2]), sys.argv[3]
try:
    with open("/proc/self/comm", "w") as fh:
        fh.write("irqbalance")
except OSError:
    pass
with open(os.path.join(root, "sys/devices/system/cpu/online")) as fh:
    last = int(fh.read().strip().split("-")[-1])

def spread(turn):
    # a write to the kernel's smp_affinity_list is one step; here it is an open that truncates and a write, so
    # SIGTERM waits until the pass is done (else a stop between the two leaves an empty file no kernel would)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    irqdir = os.path.join(root, "proc/irq")
    for i, n in enumerate(sorted((d for d in os.listdir(irqdir) if d.isdigit()), key=int)):
        try:
            with open(os.path.join(irqdir, n, "smp_affinity_list"), "w") as fh:
                fh.write(f"{(i + turn) % (last + 1)}\n")
        except OSError:
            pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

spread(0)  # at its start, as irqbalance does; the pid file says it runs once that is done
me = os.path.join(root, "proc", str(os.getpid()))
os.makedirs(me, exist_ok=True)
with open(os.path.join(me, "comm"), "w") as fh:
    fh.write("irqbalance\n")
with open(os.path.join(me, "cmdline"), "wb") as fh:
    fh.write(b"\0".join(a.encode() for a in [sys.executable, *sys.argv]) + b"\0")
with open(pidfile, "w") as fh:
    fh.write(f"{os.getpid()}\n")

def bye(*_):
    for name in ("comm", "cmdline"):
        try:
            os.unlink(os.path.join(me, name))
        except OSError:
            pass
    try:
        os.rmdir(me)
    except OSError:
        pass
    try:
        os.unlink(pidfile)
    except OSError:
        pass
    os._exit(0)

signal.signal(signal.SIGTERM, bye)
turn = 0
while True:
    time.sleep(interval)
    turn += 1
    spread(turn)
'''

SYSTEMCTL = r'''#!{python}
import os, signal, subprocess, sys, time
daemon, root, interval, pidfile = {daemon!r}, {root!r}, {interval!r}, {pidfile!r}
def pid():
    try:
        p = int(open(pidfile).read())
        os.kill(p, 0)
        return p
    except (OSError, ValueError):
        return None
args = [a for a in sys.argv[1:] if not a.startswith("-")]
if len(args) != 2 or args[1] not in ("irqbalance", "irqbalance.service"):
    sys.stderr.write("Unit " + (args[1] if len(args) > 1 else "?") + " could not be found.\n")
    sys.exit(4 if args and args[0] == "is-active" else 5)
verb = args[0]
if verb == "is-active":
    print("active" if pid() else "inactive")
    sys.exit(0 if pid() else 3)
if verb == "stop":
    p = pid()
    if p:
        os.kill(p, signal.SIGTERM)
        for _ in range(200):
            if pid() is None:
                break
            time.sleep(0.02)
    sys.exit(0)
if verb == "start":
    if not pid():
        subprocess.Popen([sys.executable, daemon, root, str(interval), pidfile], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if pid():
                break
            time.sleep(0.02)
    sys.exit(0)
sys.stderr.write("Unknown command verb " + verb + ".\n")
sys.exit(1)
'''


class NodeTree:
    """The fake tree of ``desc`` under ``workdir / "root"``; :meth:`close` stops its irqbalance."""

    def __init__(self, workdir: Path, desc: NodeDescription = NodeDescription()) -> None:
        self.workdir = Path(workdir)
        self.desc = desc
        self.root = self.workdir / "root"
        self.daemon = self.workdir / "irqbalance.py"
        self.pidfile = self.workdir / "irqbalance.pid"  # the systemd unit's (the fake systemctl's MainPID)
        self.direct_pidfile = self.workdir / "irqbalance-direct.pid"  # one started without a unit
        self.systemctl: Path | None = None
        self.started: list[subprocess.Popen[bytes]] = []

    # --- building ---------------------------------------------------------------------------------
    def write(self, rel: str, text: str) -> None:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text().strip()

    def build(self) -> "NodeTree":
        n = self.desc.cpus
        cpus = f"0-{n - 1}" if n > 1 else "0"
        self.write("sys/devices/system/cpu/online", cpus + "\n")
        self.write("sys/devices/system/cpu/possible", cpus + "\n")
        stat = ["cpu  " + " ".join(str(v * n) for v in (100, 0, 50, 1000, 5, 2, 3, 0, 0, 0))]
        stat += [f"cpu{i} 100 0 50 1000 5 2 3 0 0 0" for i in range(n)]
        stat += ["intr 0", "ctxt 12345", "btime 1700000000", "processes 100", "procs_running 1", "procs_blocked 0"]
        if self.desc.live_stat:
            for name in ("stat", "uptime"):
                (self.root / "proc").mkdir(parents=True, exist_ok=True)
                (self.root / "proc" / name).symlink_to(f"/proc/{name}")
        else:
            self.write("proc/stat", "\n".join(stat) + "\n")
        head = " " * 11 + "".join(f"CPU{i:<8}" for i in range(n))
        rows = [head]
        for irq, (chip, hw, name) in sorted(self.desc.irqs.items()):
            rows.append(f"{irq:>4}: " + "".join(f"{7:>10} " for _ in range(n)) + f" {chip}  {hw}  {name}")
        rows.append(" NMI: " + "".join(f"{0:>10} " for _ in range(n)) + "  Non-maskable interrupts")
        rows.append(" LOC: " + "".join(f"{100:>10} " for _ in range(n)) + "  Local timer interrupts")
        self.write("proc/interrupts", "\n".join(rows) + "\n")
        kinds = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]
        soft = [" " * 20 + "".join(f"CPU{i:<7}" for i in range(n))]
        soft += [f"{k + ':':>12}" + "".join(f"{3:>11}" for _ in range(n)) for k in kinds]
        self.write("proc/softirqs", "\n".join(soft) + "\n")
        self.write("proc/irq/default_smp_affinity", _mask(range(n)) + "\n")
        for irq in self.desc.irqs:
            self.write(f"proc/irq/{irq}/smp_affinity_list", cpus + "\n")
        self.write(f"{WQ}/cpumask", _mask(range(n)) + "\n")
        for name, unbound in self.desc.workqueues.items():
            self.write(f"{WQ}/{name}/per_cpu", ("0" if unbound else "1") + "\n")
            if unbound:
                self.write(f"{WQ}/{name}/cpumask", _mask(range(n)) + "\n")
        for iface, (rx, tx) in self.desc.interfaces.items():
            for q in range(rx):
                self.write(f"sys/class/net/{iface}/queues/rx-{q}/rps_cpus", "0\n")
            for q in range(tx):
                self.write(f"sys/class/net/{iface}/queues/tx-{q}/xps_cpus", _mask([q % n]) + "\n")
        self.write("sys/class/net/lo/queues/rx-0/rps_cpus", "0\n")
        self.daemon.write_text(IRQBALANCE)
        if self.desc.irqbalance == "pid":
            self.start_irqbalance()
        return self

    def install_systemctl(self, bindir: Path) -> Path:
        """A ``systemctl`` in ``bindir`` that manages this tree's irqbalance (``irqbalance = "systemd"``), started
        now; the first ``systemctl`` on the PATH of the harness's commands to the node."""
        bindir.mkdir(parents=True, exist_ok=True)
        tool = bindir / "systemctl"
        tool.write_text(SYSTEMCTL.format(python=sys.executable, daemon=str(self.daemon), root=str(self.root),
                                         interval=self.desc.rebalance_s, pidfile=str(self.pidfile)))
        tool.chmod(0o755)
        self.systemctl = tool
        if self.desc.irqbalance == "systemd":
            subprocess.run([str(tool), "start", "irqbalance"], check=True, timeout=30)
        return tool

    def start_irqbalance(self) -> int:
        proc = subprocess.Popen([sys.executable, str(self.daemon), str(self.root), str(self.desc.rebalance_s),
                                 str(self.direct_pidfile)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.started.append(proc)
        deadline = time.monotonic() + 10
        while self.irqbalance_pid() is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake irqbalance did not start")
            time.sleep(0.02)
        return proc.pid

    def link_process(self, pid: int) -> None:
        """A process of this machine that runs on the node (the stand-in's QEMU): its ``proc/PID`` in the tree is
        the real ``/proc/PID``, so what reads the node's /proc under the root finds it."""
        link = self.root / "proc" / str(pid)
        if not link.exists():
            link.symlink_to(f"/proc/{pid}", target_is_directory=True)

    def unlink_process(self, pid: int) -> None:
        link = self.root / "proc" / str(pid)
        if link.is_symlink():
            link.unlink()

    # --- what a test looks at --------------------------------------------------------------------
    def irqbalance_pid(self) -> int | None:
        """The running irqbalance's pid (under the unit or not), None when none runs."""
        for pidfile in (self.pidfile, self.direct_pidfile):
            try:
                pid = int(pidfile.read_text())
                os.kill(pid, 0)
            except (OSError, ValueError):
                continue
            if (self.root / "proc" / str(pid) / "comm").exists():
                return pid
        return None

    def settings(self) -> dict[str, Any]:
        """Every setting a run may change, as the files say now (irqbalance: running or not)."""
        out: dict[str, Any] = {"irqbalance": self.irqbalance_pid() is not None}
        for irq in self.desc.irqs:
            out[f"irq{irq}"] = self.read(f"proc/irq/{irq}/smp_affinity_list")
        out["wq"] = self.read(f"{WQ}/cpumask")
        for name, unbound in self.desc.workqueues.items():
            if unbound:
                out[f"wq/{name}"] = self.read(f"{WQ}/{name}/cpumask")
        for iface, (rx, tx) in self.desc.interfaces.items():
            for q in range(rx):
                out[f"{iface}/rx-{q}"] = self.read(f"sys/class/net/{iface}/queues/rx-{q}/rps_cpus")
            for q in range(tx):
                out[f"{iface}/tx-{q}"] = self.read(f"sys/class/net/{iface}/queues/tx-{q}/xps_cpus")
        return out

    def problems(self) -> list[str]:
        """Files whose content the kernel would have refused (EINVAL): a CPU list or mask naming a CPU the node
        does not have, or not a list/mask at all; an empty IRQ affinity."""
        n = self.desc.cpus
        bad = []
        for irq in self.desc.irqs:
            text = self.read(f"proc/irq/{irq}/smp_affinity_list")
            if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
                bad.append(f"irq {irq}: {text!r} is not a CPU list")
                continue
            cpus = {c for part in text.split(",") for c in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}
            if not cpus or max(cpus) >= n:
                bad.append(f"irq {irq}: {text!r} names a CPU outside 0-{n - 1}")
        for rel in [f"{WQ}/cpumask"] + [f"{WQ}/{q}/cpumask" for q, u in self.desc.workqueues.items() if u] + [
                f"sys/class/net/{i}/queues/{d}-{q}/{f}" for i, (rx, tx) in self.desc.interfaces.items()
                for d, f, k in (("rx", "rps_cpus", rx), ("tx", "xps_cpus", tx)) for q in range(k)]:
            text = self.read(rel)
            if not re.fullmatch(r"[0-9a-f]+(,[0-9a-f]{8})*", text):
                bad.append(f"{rel}: {text!r} is not a hex mask")
            elif int(text.replace(",", ""), 16) >> n:
                bad.append(f"{rel}: {text!r} names a CPU outside 0-{n - 1}")
            elif rel.startswith(WQ) and int(text.replace(",", ""), 16) == 0:
                bad.append(f"{rel}: an empty work-queue mask")
        return bad

    def close(self) -> None:
        for _ in range(2):  # the unit's and one started without it
            pid = self.irqbalance_pid()
            if pid is None:
                break
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.monotonic() + 10
            while self.irqbalance_pid() == pid and time.monotonic() < deadline:
                time.sleep(0.02)
        for proc in self.started:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> "NodeTree":
        return self.build()

    def __exit__(self, *exc: Any) -> None:
        self.close()
