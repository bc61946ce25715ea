"""The CPU-set scope on a Proxmox node (``[host] scope = "cpus"``): what the run changes there, and the way back.

Technote 004 measures "the CPUs executing the guest, QEMU worker threads, kernel iSCSI initiator logic, and
related system functions (i.e., IRQs)" after confining that work to them. On a Proxmox node that is:

- the VM's ``affinity`` option (PVE 7.3 and later: qemu-server starts QEMU under ``taskset --cpu-list
  --all-tasks``), written through the API like the test disk, pending until the next start, and put back by
  :func:`~.restore.restore_vm` from the journaled original config;
- the node's IRQ affinities of the ``[host] irqs`` patterns (irqbalance stopped, else it rewrites them), the
  unbound work queues' masks and the RPS/XPS masks of ``[host] interfaces``: ``linux-host/hostsettings.py`` run on
  the node over ``[proxmox] ssh`` (or here when stormatrix runs on the node), it and the modules it imports
  (``SOURCE_FILES``) in one program on stdin (:func:`source`) so nothing has to be copied first (``stormatrix
  restore`` after a kill -9 works the same). Its ``read`` gives the previous values, journaled in the run
  record's ``original_config.host_settings`` before anything is changed; ``restore`` writes them back,
  idempotently;
- the harness's own processes on the node (the collector's ssh session and the collector) run on the CPUs
  outside the set (``hostsettings.py off-set``, from the copy of ``linux-host/`` the collector runs from).

``plan`` reads the node (:func:`plan_lines`) and lists every change, or refuses the host with the fix.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ... import host
from ...core.errors import BackendError, MatrixError
from ...core.scope import format_cpuset, parse_cpuset
from ...spec import HostSettings
from ...ssh import Shell

log = logging.getLogger("stormatrix.backend.proxmox")

SOURCE_DIR = Path(host.__file__).resolve().parent
#: what :func:`source` sends: ``hostsettings.py`` (the entry point) and the ``linux-host/`` modules it imports
SOURCE_FILES = ("cpulist.py", "hostnode.py", "hostsettings.py")

# The program ``python3 -`` runs on the node: the modules above, imported from this text (a finder ahead of every
# other, so no file on the node stands in for them and nothing is written there), then hostsettings' main().
# Each module's own fallback imports (``from cpulist import ...``, as when run next to its siblings) find them.
_LOADER = """\
import importlib.abc
import importlib.util
import sys

SOURCES = {sources}


class Bundled(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in SOURCES else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        exec(compile(SOURCES[name], "linux-host/" + name + ".py", "exec"), module.__dict__)


sys.meta_path.insert(0, Bundled())
import hostsettings

sys.exit(hostsettings.main())
"""


@dataclass(frozen=True)
class CpuScope:
    """``[host]`` with ``scope = "cpus"``, as the Proxmox backend uses it."""

    cpus: str  # a kernel cpulist, normalised (``2-3``)
    irqs: tuple[str, ...]
    interfaces: tuple[str, ...]
    root: str  # where the node's /proc and /sys are ([proxmox] node_root)

    @property
    def cpu_list(self) -> list[int]:
        return parse_cpuset(self.cpus)


def check_host(host: HostSettings, path: str) -> HostSettings:
    """``[host]`` as the proxmox backend takes it: ``cpus`` required with ``scope = "cpus"`` (there is no CPU the
    backend could choose on someone's node), ``irqs``/``interfaces`` only with it (they are steered onto the set)."""
    if host.scope == "cpus" and not host.cpus:
        raise MatrixError(path, "[host] cpus", "is empty, but scope = \"cpus\" on the proxmox backend needs the "
                          "measured CPU set", "set cpus = \"2-3\" (host CPUs for the VM and its I/O path; the harness "
                          "and everything else keep the others)")
    if host.scope != "cpus":
        for key in ("irqs", "interfaces"):
            if getattr(host, key):
                raise MatrixError(path, f"[host] {key}", f"is steered onto the measured CPU set, but this matrix "
                                  f"measures {host.scope!r}", f"set [host] scope = \"cpus\" and cpus, or remove {key}")
    return host


def cpu_scope(host: HostSettings, proxmox: Mapping[str, Any]) -> CpuScope | None:
    """The CPU-set scope of a Proxmox run (``host`` checked by :func:`check_host`), or None for the process scope."""
    if host.scope != "cpus":
        return None
    return CpuScope(format_cpuset(host.cpus), tuple(host.irqs), tuple(host.interfaces),
                    str(proxmox.get("node_root") or "/"))


def source() -> str:
    """``linux-host/hostsettings.py`` and the modules it imports (``SOURCE_FILES``) as one program for ``python3 -``
    on the node: standard library only, nothing but their source (no setting, no secret) in it."""
    sources = {Path(f).stem: (SOURCE_DIR / f).read_text(encoding="utf-8") for f in SOURCE_FILES}
    return _LOADER.format(sources=repr(sources))


class NodeSettings:
    """``linux-host/hostsettings.py`` on the node (:func:`source` on stdin): ``read``, ``apply``, ``restore``, each one
    call."""

    def __init__(self, shell: Shell, scope: CpuScope, *, python: str = "python3") -> None:
        self.shell = shell
        self.scope = scope
        self.python = python

    def _call(self, *args: str, root: str | None = None, what: str) -> dict[str, Any]:
        argv = [self.python, "-B", "-", *args, "--root", root or self.scope.root]
        proc = self.shell.run(argv, input=source(), check=False, timeout=120)
        doc: Any = None
        for line in reversed(proc.stdout.strip().splitlines()):
            try:
                doc = json.loads(line)
                break
            except ValueError:
                continue
        if not isinstance(doc, dict):
            raise BackendError(f"{what} on {self.shell.where} (linux-host/hostsettings.py) exited {proc.returncode} "
                               f"without an answer: {proc.stderr.strip()[-400:] or '(no message)'}. The node needs "
                               "python3 (every Proxmox node has it)")
        if "error" in doc:
            raise BackendError(f"{what} on {self.shell.where}: {doc['error']}")
        return doc

    def read(self) -> dict[str, Any]:
        args = ["read", "--cpus", self.scope.cpus]
        for p in self.scope.irqs:
            args += ["--irq", p]
        for i in self.scope.interfaces:
            args += ["--interface", i]
        return self._call(*args, what="reading the host settings")

    def apply(self, state: dict[str, Any]) -> list[str]:
        doc = self._call("apply", "--cpus", self.scope.cpus, "--state", json.dumps(state),
                         what=f"steering the node onto CPUs {self.scope.cpus}")
        return list(doc.get("applied") or [])

    def restore(self, state: dict[str, Any]) -> list[str]:
        """Put back what ``state`` (as :meth:`read` gave it, journaled) holds; a BackendError names what failed."""
        doc = self._call("restore", "--state", json.dumps(state), root=str(state.get("root") or self.scope.root),
                         what="putting the host settings back")
        failed = list(doc.get("failed") or [])
        if failed:
            raise BackendError(f"the node {self.shell.where}: these host settings could not be put back: "
                               + "; ".join(failed))
        return list(doc.get("restored") or [])

    def off_set_prefix(self, remote_dir: str) -> list[str]:
        """The words that run a command on the node off the set (it and its ssh session)."""
        return [self.python, "-B", f"{remote_dir}/hostsettings.py", "off-set", "--cpus", self.scope.cpus,
                "--root", self.scope.root, "--"]


def refusal(path: str, where: str, problems: list[dict[str, str]]) -> MatrixError:
    """The plan-time refusal of a node that cannot be steered: every problem with its fix."""
    text = "; ".join(f"{p['what']} (fix: {p['fix']})" for p in problems)
    return MatrixError(path, "[host] scope = \"cpus\"",
                       f"the node ({where}) cannot be confined to the set: {text}",
                       "change what each problem names, or measure the QEMU process only: [host] scope = \"process\"")


def change_lines(vmid: int, scope: CpuScope, doc: dict[str, Any], where: str) -> list[str]:
    """What ``plan`` prints: every setting the run changes, and where the harness runs."""
    online = parse_cpuset(doc["state"]["online"])
    rest = format_cpuset(sorted(set(online) - set(scope.cpu_list)))
    lines = [f"[host] scope = \"cpus\": the CPU set {scope.cpus} of node {where} is measured system-wide; every "
             "setting below is journaled before it changes and put back at the end, on error, on Ctrl-C and by "
             "'stormatrix restore'",
             f"VM {vmid}: affinity = {scope.cpus} (through the API; applied at each start, the original value put "
             "back)"]
    lines += [f"node: {c}" for c in doc["changes"]]
    lines.append(f"node: the harness's collector and its ssh session run on CPUs {rest}")
    return lines


def check_reachable(path: str, opts: Mapping[str, Any]) -> None:
    """The node's files are read over ``[proxmox] ssh``, or here when stormatrix runs on the node."""
    if not opts.get("ssh") and opts.get("transport") != "local":
        raise MatrixError(path, "[proxmox] ssh", "is empty, but [host] scope = \"cpus\" changes the node's IRQ, "
                          "work-queue and RPS/XPS settings, which the API cannot reach",
                          "set ssh = \"root@NODE\" (root: those files are root's), or run stormatrix on the node "
                          "(transport = \"local\")")
