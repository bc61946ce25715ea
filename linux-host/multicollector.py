#!/usr/bin/env python3
"""Host collector for many QEMU processes in one window: a suite's VMs on a Proxmox node, over ONE ssh session.

Standard library only, next to ``collector.py`` and its siblings (every ``linux-host/*.py`` goes to the node).
The controller runs ``ssh NODE -- python3 .../multicollector.py`` at each suite point's window and speaks one
JSON line at a time on stdin/stdout, so nothing but fixed words ever goes through the remote shell:

1. controller -> ``{"processes": [{"pid": 1234, "name": "vm01", "roles": {"1240": "vcpu"}}, ...],
   "use_perf": null, "cpus": "2-3", "root": "/"}`` (``use_perf``: null = when perf works, false = /proc only;
   ``cpus``, optional: a CPU set measured system-wide around the processes, ``[host] scope = "cpus"``;
   ``root``, optional: where /proc is read, "/" unless a stand-in's fake tree);
2. collector -> ``{"started": [1234, ...]}`` once every process is being measured (or
   ``{"error": "..."}`` and exit 1);
3. controller -> any line (or closes stdin) at the window's end;
4. collector -> ``{"results": [{"name": "vm01", "host": {...WindowCollector result...}} |
   {"name": "vm01", "error": "..."}, ...]}``, with ``"cpus": {...CpuSetCollector result...}`` (or
   ``"cpus_error": "..."``) when a set was asked for. The set's window holds the processes' (started before
   them, stopped after them); the controller puts the processes' merged figures under the set's ``process``.

One session per window instead of one per VM: 32 simultaneous ssh logins would run into sshd's
``MaxStartups`` (10 pending logins by default, then connections are dropped at random).
"""

from __future__ import annotations

import json
import sys
from typing import Any

try:  # imported as stormatrix.host.multicollector (tests), or run as a script next to collector.py
    from .collector import WindowCollector
    from .cpulist import parse_cpulist
    from .cpuset import CpuSetCollector
    from .perfrun import perf_available
    from .procfs import CollectorProblem
except ImportError:  # pragma: no cover - the script case is exercised through ssh
    # the same names from the files next to this one (mypy checks the package, where they are relative)
    from collector import WindowCollector  # type: ignore[import,no-redef]
    from cpulist import parse_cpulist  # type: ignore[import,no-redef]
    from cpuset import CpuSetCollector  # type: ignore[import,no-redef]
    from perfrun import perf_available  # type: ignore[import,no-redef]
    from procfs import CollectorProblem  # type: ignore[import,no-redef]


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def parse_set(line: str) -> tuple[list[int] | None, str]:
    """The request's CPU set (None: the processes alone) and /proc root."""
    try:
        doc = json.loads(line)
        cpus = doc.get("cpus")
        root = doc.get("root") or "/"
        if not isinstance(root, str):
            raise ValueError("root must be a path")
        return (parse_cpulist(cpus) if cpus else None), root
    except (ValueError, TypeError, AttributeError) as exc:
        raise CollectorProblem(f"bad request from the controller: {exc}") from None


def parse_request(line: str) -> tuple[list[tuple[int, str, dict[int, str]]], bool | None]:
    """(pid, name, roles) per process and the perf choice, from the controller's first line."""
    try:
        doc = json.loads(line)
        procs = []
        for p in doc["processes"]:
            pid = int(p["pid"])
            if pid <= 0:
                raise ValueError(f"pid {pid}")
            roles = {int(tid): str(role) for tid, role in (p.get("roles") or {}).items()}
            procs.append((pid, str(p.get("name") or pid), roles))
        use_perf = doc.get("use_perf")
        if use_perf not in (None, False, True) or not (procs or doc.get("cpus")):
            raise ValueError("use_perf must be null, true or false, and processes not empty")
    except (ValueError, KeyError, TypeError) as exc:
        raise CollectorProblem(f"bad request from the controller: {exc}") from None
    return procs, use_perf


def main() -> int:
    cpu_set: CpuSetCollector | None = None
    try:
        line = sys.stdin.readline()
        procs, use_perf = parse_request(line)
        cpus, root = parse_set(line)
        if use_perf is None:
            use_perf = perf_available()  # once, not per process: each probe runs perf
        running: list[tuple[str, WindowCollector]] = []
        try:
            if cpus is not None:  # first: the set's window holds every process's
                cpu_set = CpuSetCollector(cpus, use_perf=use_perf, root=root, exclude=tuple(p for p, _, _ in procs))
                cpu_set.start()
            for pid, name, roles in procs:
                c = WindowCollector(pid, roles, use_perf=use_perf, root=root)
                c.start()
                running.append((name, c))
        except CollectorProblem:
            for _, c in running:
                c.abort()
            if cpu_set is not None:
                cpu_set.abort()
            raise
    except CollectorProblem as exc:
        _emit({"error": str(exc)})
        return 1
    if cpu_set is not None:
        cpu_set.wait_ready()
    _emit({"started": [c.pid for _, c in running]})
    sys.stdin.readline()  # the window's end, or EOF when the controller went away
    results: list[dict[str, Any]] = []
    for name, c in running:  # stop every one, even after a failure: each may hold a perf process
        try:
            results.append({"name": name, "host": c.stop()})
        except CollectorProblem as exc:
            results.append({"name": name, "error": str(exc)})
    doc: dict[str, Any] = {"results": results}
    if cpu_set is not None:
        try:
            doc["cpus"] = cpu_set.stop()
        except CollectorProblem as exc:
            doc["cpus_error"] = str(exc)
    _emit(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
