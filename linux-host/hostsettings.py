#!/usr/bin/env python3
"""Host settings of the CPU-set scope: read them, steer the guest's I/O path onto a CPU set, put them back.

Technote 004 counts the CPUs that carry the guest's I/O after confining that work with "network IRQ affinity,
transmit flow steering, receive flow steering, and Linux work queue affinity". This module changes exactly
those settings on a Linux host (a Proxmox node): what the run changes, how, and how it is put back. Where each
setting is on the host (its files, irqbalance) is hostnode.py's; the CPU list and mask formats are cpulist.py's.
Standard library only, so it runs on the node over ssh (``python3 - <command> ...`` with the three modules in
one program on stdin, as the Proxmox backend's ``hostscope.source()`` builds it: nothing has to be copied
first, which ``stormatrix restore`` after a crash relies on), from the node's copy of linux-host/ (``off-set``)
or on this machine. Every path is under ``--root`` (default ``/``), so a fake /proc and /sys tree stands in for
a node in tests.

The protocol (one JSON document on stdout; exit 0, or 1 with ``{"error": ...}``):

- ``read --cpus SET [--irq PAT]... [--interface IF]...``: ``{"state": ..., "problems": [...], "changes":
  [...]}``: the current values of everything the run will change (the ``state``, journaled by the
  controller BEFORE anything changes), what makes the host unfit (each ``{"what", "fix"}``: a CPU the host
  does not have, a set that leaves no CPU for the harness, a pattern or interface that matches nothing, a
  file that cannot be written, irqbalance that cannot be stopped) and one line per change;
- ``apply --cpus SET --state JSON``: stop irqbalance, then write the set into every file ``state`` lists;
- ``restore --state JSON``: write back every value ``state`` holds where it differs now, and start
  irqbalance again if it ran; idempotent (a second restore writes nothing); every failure is reported, the
  rest still restored;
- ``off-set --cpus SET -- ARGV...``: move this process and its parents up to the ssh session's ``sshd``
  onto the CPUs outside SET, then exec ARGV (the harness's own processes on the node stay off the set).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

try:  # imported as stormatrix.host.hostsettings, or run as a script next to its siblings (on a node)
    from .cpulist import format_cpulist, format_mask, parse_cpulist, parse_mask
    from .hostnode import NET, SYSTEMCTL, Host, HostProblem
except ImportError:  # pragma: no cover - the script case is exercised through ssh and stdin
    # the same modules, found next to this file on a node (mypy checks the package, where they are relative)
    from cpulist import format_cpulist, format_mask, parse_cpulist, parse_mask  # type: ignore[import,no-redef]
    from hostnode import NET, SYSTEMCTL, Host, HostProblem  # type: ignore[import,no-redef]


# --- the three steps --------------------------------------------------------------------------------

def read_state(host: Host, cpus: list[int], irq_patterns: list[str], interfaces: list[str]) -> dict[str, Any]:
    """What the run will change, with its current values, what makes the host unfit, one line per change."""
    problems: list[dict[str, str]] = []
    changes: list[str] = []
    online = host.online()
    setlist = format_cpulist(cpus)
    if not cpus:
        problems.append({"what": "the CPU set is empty", "fix": "set [host] cpus, a CPU list like \"2-3\""})
    missing = sorted(set(cpus) - set(online))
    if missing:
        problems.append({"what": f"the set {setlist} names CPU {format_cpulist(missing)}, which the host does not "
                                 f"have online (its online CPUs: {format_cpulist(online)})",
                         "fix": f"give [host] cpus out of {format_cpulist(online)}"})
    rest = sorted(set(online) - set(cpus))
    if not rest:
        problems.append({"what": f"the set {setlist} is every online CPU of the host, which leaves none for the "
                                 "harness (collector, ssh session) and the host's other work",
                         "fix": f"leave at least one CPU out of [host] cpus, e.g. cpus = "
                                f"\"{format_cpulist(online[1:]) or online[0]}\""})
    euid = os.geteuid() if hasattr(os, "geteuid") else -1
    found, unmatched = host.matching_irqs(irq_patterns)
    irqs: dict[str, dict[str, str]] = {}
    for pat in unmatched:
        problems.append({"what": f"[host] irqs: {pat!r} matches no IRQ in /proc/interrupts",
                         "fix": "name a substring of the storage device's or NIC's IRQ names there (e.g. \"nvme\", "
                                "\"ens19\"), or remove it"})
    for n, desc in found.items():
        rel = f"proc/irq/{n}/smp_affinity_list"
        try:
            value = host.read(rel)
        except OSError as exc:
            problems.append({"what": f"IRQ {n} ({desc}): /{rel} cannot be read ({exc.strerror})",
                             "fix": "remove the pattern that matched it from [host] irqs"})
            continue
        irqs[n] = {"name": desc, "smp_affinity_list": value}
        if not host.writable(rel):
            problems.append({"what": f"IRQ {n}: /{rel} is not writable by uid {euid}",
                             "fix": "reach the node as root: [proxmox] ssh = \"root@NODE\""})
        else:
            # the value it has, written back: a no-op the kernel refuses (EIO) only for an IRQ whose affinity
            # it manages itself (NVMe queue IRQs on recent kernels), which no run could steer
            try:
                host.write(rel, value)
            except HostProblem as exc:
                problems.append({"what": f"IRQ {n} ({desc}): the kernel refuses to change its affinity ({exc})",
                                 "fix": "leave this IRQ out of [host] irqs (a kernel-managed IRQ stays where the "
                                        "kernel put it: choose the set among the CPUs its queue serves)"})
        if parse_cpulist(value) != cpus:
            changes.append(f"IRQ {n} ({desc}): smp_affinity_list {value} -> {setlist}")
    irqbalance = host.irqbalance()
    if irqbalance["active"]:
        if irqbalance["how"] == "systemd":
            if euid not in (0, -1):
                problems.append({"what": f"irqbalance runs (systemd) and uid {euid} cannot stop it",
                                 "fix": "reach the node as root: [proxmox] ssh = \"root@NODE\""})
            changes.append("irqbalance: stopped during the run (systemctl stop irqbalance), started again at the end")
        else:
            pid = irqbalance["pid"]
            try:
                os.kill(pid, 0)
                killable = True
            except PermissionError:
                killable = False
            except ProcessLookupError:
                killable = True
            if not killable:
                problems.append({"what": f"irqbalance (pid {pid}) runs as another user and cannot be stopped",
                                 "fix": "reach the node as root: [proxmox] ssh = \"root@NODE\""})
            elif not irqbalance["cmdline"]:
                problems.append({"what": f"irqbalance (pid {pid}) runs without systemd and its command line cannot "
                                         "be read, so it could not be started again after the run",
                                 "fix": "run irqbalance as the systemd unit irqbalance.service, or stop it by hand "
                                        "before the run"})
            changes.append(f"irqbalance: pid {pid} stopped during the run (SIGTERM), started again at the end "
                           f"({' '.join(irqbalance['cmdline'])})")
    mask = format_mask(cpus)
    workqueues = host.workqueue_masks()
    for rel, value in workqueues.items():
        if not host.writable(rel):
            problems.append({"what": f"/{rel} is not writable by uid {euid}",
                             "fix": "reach the node as root: [proxmox] ssh = \"root@NODE\""})
        if parse_mask(value) != cpus:
            changes.append(f"work queue mask /{rel}: {value} -> {mask}")
    steering: dict[str, dict[str, str]] = {}
    for iface in interfaces:
        masks = host.steering_masks(iface)
        if masks is None:
            have = sorted(os.listdir(host.path(NET))) if os.path.isdir(host.path(NET)) else []
            problems.append({"what": f"[host] interfaces: the host has no network interface {iface!r}",
                             "fix": f"name the storage NIC as in /sys/class/net (it has {', '.join(have) or 'none'})"})
            continue
        if not masks:
            problems.append({"what": f"[host] interfaces: {iface} has no rx-N/rps_cpus or tx-N/xps_cpus to steer",
                             "fix": f"remove {iface!r} from [host] interfaces"})
        steering[iface] = masks
        for rel, value in masks.items():
            if not host.writable(rel):
                problems.append({"what": f"/{rel} is not writable by uid {euid}",
                                 "fix": "reach the node as root: [proxmox] ssh = \"root@NODE\""})
            if parse_mask(value) != cpus:
                changes.append(f"{iface} steering /{rel}: {value} -> {mask}")
    state = {"root": host.root, "cpus": setlist, "online": format_cpulist(online), "irqs": irqs,
             "irqbalance": irqbalance, "workqueues": workqueues, "steering": steering}
    return {"state": state, "problems": problems, "changes": changes}


def _files(state: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(relative path, its original value, the kind: "list" or "mask") of every file ``state`` lists."""
    out = [(f"proc/irq/{n}/smp_affinity_list", v["smp_affinity_list"], "list") for n, v in state["irqs"].items()]
    out += [(rel, v, "mask") for rel, v in state["workqueues"].items()]
    out += [(rel, v, "mask") for masks in state["steering"].values() for rel, v in masks.items()]
    return out


def apply_state(host: Host, cpus: list[int], state: dict[str, Any]) -> list[str]:
    """Stop irqbalance, then write ``cpus`` into every file of ``state`` (the first failure raises: the
    controller then restores from the journaled state)."""
    done: list[str] = []
    if state["irqbalance"].get("active"):
        host.stop_irqbalance(state["irqbalance"])
        done.append("irqbalance stopped")
    for rel, _, kind in _files(state):
        value = format_cpulist(cpus) if kind == "list" else format_mask(cpus)
        host.write(rel, value)
        done.append(f"/{rel} = {value}")
    return done


def _same(kind: str, a: str, b: str) -> bool:
    try:
        return (parse_cpulist(a) == parse_cpulist(b)) if kind == "list" else (parse_mask(a) == parse_mask(b))
    except ValueError:
        return a.strip() == b.strip()


def restore_state(host: Host, state: dict[str, Any]) -> dict[str, list[str]]:
    """Write back every original value of ``state`` that differs now, then start irqbalance if it ran.
    Every file is tried; ``failed`` lists those that could not be put back."""
    restored: list[str] = []
    failed: list[str] = []
    for rel, value, kind in _files(state):
        try:
            now = host.read(rel)
        except OSError as exc:
            failed.append(f"/{rel}: cannot be read ({exc.strerror}); put back {value!r} by hand")
            continue
        if _same(kind, now, value):
            continue
        try:
            host.write(rel, value)
            restored.append(f"/{rel} = {value}")
        except HostProblem as exc:
            failed.append(f"{exc}; put back {value!r} by hand")
    try:
        what = host.start_irqbalance(state["irqbalance"])
        if what:
            restored.append(what)
    except HostProblem as exc:
        failed.append(str(exc))
    return {"restored": restored, "failed": failed}


def off_set(host: Host, cpus: list[int]) -> list[int]:
    """Move this process and its ancestors up to the ssh session's sshd (at most 4) off ``cpus``."""
    rest = sorted(set(host.online()) - set(cpus))
    try:  # the CPUs this kernel really has (the same as the root's on a node; a fake tree may name more)
        with open("/sys/devices/system/cpu/online") as fh:
            real = set(parse_cpulist(fh.read()))
    except OSError:
        real = set(rest)
    allowed = [c for c in rest if c in real] or rest
    moved = []
    pid = os.getpid()
    for _ in range(5):
        try:
            os.sched_setaffinity(pid, allowed)
            moved.append(pid)
        except OSError:
            break
        try:
            with open(f"/proc/{pid}/stat") as fh:
                text = fh.read()
            comm = text[text.index("(") + 1:text.rindex(")")]
            ppid = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            break
        if comm.startswith("sshd") or ppid <= 1:
            break
        pid = ppid
    return moved


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Read, steer onto a CPU set, and put back a host's IRQ affinities, "
                                             "irqbalance, work-queue masks and RPS/XPS.")
    ap.add_argument("command", choices=("read", "apply", "restore", "off-set"))
    ap.add_argument("--root", default="/", help="where the host's /proc and /sys are (a fake tree in tests)")
    ap.add_argument("--cpus", default="", help="the CPU set, a kernel cpulist")
    ap.add_argument("--irq", action="append", default=[], help="a substring of /proc/interrupts names")
    ap.add_argument("--interface", action="append", default=[], help="a network interface to steer")
    ap.add_argument("--state", default="", help="the state 'read' gave (JSON)")
    ap.add_argument("--systemctl", default=SYSTEMCTL, help="the service manager's program ('' = none)")
    words = list(sys.argv[1:] if argv is None else argv)
    command = words[words.index("--") + 1:] if "--" in words else []  # off-set: the command to run off the set
    args = ap.parse_args(words[:words.index("--")] if "--" in words else words)
    host = Host(args.root, args.systemctl or None)
    try:
        cpus = parse_cpulist(args.cpus)
        if args.command == "read":
            _emit(read_state(host, cpus, args.irq, args.interface))
        elif args.command == "apply":
            _emit({"applied": apply_state(host, cpus, json.loads(args.state))})
        elif args.command == "restore":
            result = restore_state(host, json.loads(args.state))
            _emit(result)
            return 1 if result["failed"] else 0
        else:
            off_set(host, cpus)
            if not command:
                raise HostProblem("off-set needs a command to run after --")
            sys.stdout.flush()
            os.execvp(command[0], command)
    except (HostProblem, ValueError, KeyError, OSError) as exc:
        _emit({"error": f"{type(exc).__name__}: {exc}" if not isinstance(exc, HostProblem) else str(exc)})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
