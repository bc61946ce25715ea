"""The Proxmox node as a machine: commands there (here, or over ssh), the host collector's files put
there, the node's CPUs, and pinning QEMU's threads to some of them.

Everything here works the same whether stormatrix runs on the node (``[proxmox] ssh`` empty) or on a
workstation that reaches the node with ``ssh`` (built once, in :mod:`stormatrix.ssh`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
from pathlib import Path
from typing import Any, Callable

from ... import host
from ...core import oscompat
from ...core.errors import BackendError
from ...core.scope import ROLE_IOTHREAD, ROLE_VCPU, BlockStats, parse_cpuset
from ...ssh import Shell
from .settings import REMOTE_COLLECTOR_DIR

log = logging.getLogger("stormatrix.backend.proxmox")

_QM_MISSING = ("qm exists on a Proxmox node: run stormatrix there (transport = \"local\"), or reach the node "
               "with [proxmox] ssh, or set [proxmox] check_cmdline = false")


class NodeShell(Shell):
    """Commands on the Proxmox node: on this machine, or over ``ssh`` (``[proxmox] ssh``/``ssh_config``)."""

    def __init__(self, target: str = "", ssh_config: str = "", *, timeout: float = 60.0) -> None:
        super().__init__(target, ssh_config, timeout=timeout, what_key="[proxmox] ssh",
                         missing={"qm": _QM_MISSING, "pvesh": _QM_MISSING.replace("qm exists", "pvesh exists")})


# --- linux-host/ on the node -----------------------------------------------------------------------------

def collector_files(local_dir: Path | None = None) -> list[Path]:
    """The files of ``linux-host/`` that go to the node (standard library only, so python3 there runs them)."""
    if local_dir is None:
        local_dir = Path(host.__file__).resolve().parent
    return sorted(local_dir.glob("*.py"))


def remote_hashes(shell: Shell, remote_dir: str, names: list[str]) -> dict[str, str]:
    """SHA-256 of each of ``names`` in ``remote_dir`` on the node (missing files and folder: absent)."""
    proc = shell.run_shell(f"cd {shlex.quote(remote_dir)} 2>/dev/null && sha256sum -- "
                           + " ".join(shlex.quote(n) for n in names) + " 2>/dev/null", check=False)
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        digest, _, name = line.partition("  ")
        if re.fullmatch(r"[0-9a-f]{64}", digest) and name in names:
            out[name] = digest
    return out


def ensure_remote_collector(target: str, remote_dir: str = REMOTE_COLLECTOR_DIR, *, ssh_config: str = "") -> str:
    """``linux-host/`` on the node, byte-identical to this stormatrix's: copied when a file is missing or
    differs (SHA-256 of each file, compared on the node), checked again after copying. Returns
    ``"up to date"`` or ``"copied"``."""
    shell = NodeShell(target, ssh_config)
    files = collector_files()
    want = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    if remote_hashes(shell, remote_dir, sorted(want)) == want:
        return "up to date"
    shell.run(["mkdir", "-p", "-m", "700", remote_dir])
    shell.copy(files, remote_dir)
    have = remote_hashes(shell, remote_dir, sorted(want))
    if have != want:
        bad = sorted(n for n in want if have.get(n) != want[n])
        raise BackendError(f"copying linux-host/ to {target}:{remote_dir} did not give the same files "
                           f"({', '.join(bad)} differ): check the space and permissions there, "
                           "or set [proxmox] ssh_dir")
    log.info("copied linux-host/ to %s:%s", target, remote_dir)
    return "copied"


# --- the node's facts --------------------------------------------------------------------------------------

def node_inventory(shell: Shell, remote_dir: str) -> dict[str, Any]:
    """The node's facts for the Environment sheet: ``linux-host/inventory.py`` run there with python3 over
    the collector's ssh (copied there with the collector by :func:`ensure_remote_collector`), plus
    ``host_inventory_source`` naming where. When it cannot be read, ``{"host_inventory_error": why}``:
    the run goes on, and the sheet says the node was not described rather than showing this machine's facts."""
    where = f"ssh {shell.target}:{remote_dir}/inventory.py"
    try:
        proc = shell.run(["python3", "-B", f"{remote_dir}/inventory.py"], check=False, timeout=60)
    except BackendError as exc:
        return {"host_inventory_error": f"{where}: {exc}"}
    if proc.returncode != 0:
        return {"host_inventory_error": f"{where} exited {proc.returncode}: "
                                        f"{proc.stderr.strip()[-400:] or '(no message)'}"}
    try:
        facts = json.loads(proc.stdout)
    except ValueError as exc:
        return {"host_inventory_error": f"{where} did not print JSON ({exc}): {proc.stdout.strip()[:200]!r}"}
    if not isinstance(facts, dict):
        return {"host_inventory_error": f"{where} printed {type(facts).__name__}, not an object"}
    return {**facts, "host_inventory_source": where}


# --- processes and CPUs -----------------------------------------------------------------------------------

def local_process_cmdline(pid: int) -> list[str] | None:
    """The command line of process ``pid`` on this machine, or None when it is gone or not readable.

    psutil reads ``/proc/<pid>/cmdline`` and knows its edge cases (a zombie, a process that exits between
    the check and the read, a kernel thread's empty line)."""
    import psutil

    try:
        return psutil.Process(pid).cmdline() or None
    except (psutil.Error, OSError):
        return None


def node_cpus(shell: Shell) -> list[int]:
    """The node's online CPUs."""
    if shell.remote:
        text = shell.run(["cat", "/sys/devices/system/cpu/online"]).stdout
    else:
        try:
            text = Path("/sys/devices/system/cpu/online").read_text()
        except OSError:
            return oscompat.usable_cpus()
    return parse_cpuset(text.strip())


class Pinner:
    """Pins threads of one QEMU process to host CPUs, and puts back the affinity each had.

    ``thread_roles`` names the threads to pin (vCPUs and iothreads); ``local_ok`` says whether the
    process is on this machine (pinning over ssh otherwise)."""

    def __init__(self, shell: Shell, vmid: int) -> None:
        self.shell = shell
        self.vmid = vmid
        self.pinned: dict[int, set[int]] = {}  # tid -> original affinity

    def pin(self, roles: dict[int, str], cpus: list[int], *, local_ok: Callable[[], bool]) -> None:
        if not roles:
            raise BackendError(f"VM {self.vmid}: QEMU named no vCPU or iothreads to pin")
        if not self.shell.remote and not local_ok():
            raise BackendError(f"[proxmox] pin_cpus: VM {self.vmid}'s QEMU is not on this machine; set [proxmox] ssh "
                               "to pin its threads on the node")
        text = ",".join(map(str, cpus))
        for tid in sorted(roles):
            try:
                if self.shell.remote:
                    out = self.shell.run(["taskset", "-pc", str(tid)]).stdout
                    before = set(parse_cpuset(out.rsplit(":", 1)[-1].strip()))
                    self.shell.run(["taskset", "-pc", text, str(tid)])
                else:
                    before = oscompat.thread_affinity(tid)
                    oscompat.set_thread_affinity(tid, cpus)
            except OSError as exc:
                raise BackendError(f"pinning {roles[tid]} thread {tid} of VM {self.vmid} to CPUs {text} "
                                   f"failed: {exc.strerror}") from None
            self.pinned[tid] = before
        log.info("VM %s: pinned %s to CPUs %s", self.vmid, ", ".join(f"{roles[t]} {t}" for t in sorted(roles)), text)

    def unpin(self) -> None:
        """Put back the affinity :meth:`pin` found. A thread that is gone (QEMU restarted) is fine."""
        for tid, cpus in list(self.pinned.items()):
            del self.pinned[tid]
            text = ",".join(map(str, sorted(cpus)))
            try:
                if self.shell.remote:
                    proc = self.shell.run(["taskset", "-pc", text, str(tid)], check=False)
                    if proc.returncode != 0 and "No such process" not in proc.stderr:
                        log.warning("could not put back the CPU affinity %s of thread %s on %s: %s", text, tid,
                                    self.shell.target, proc.stderr.strip()[-200:])
                else:
                    oscompat.set_thread_affinity(tid, cpus)
            except ProcessLookupError:
                pass
            except (OSError, BackendError) as exc:
                log.warning("could not put back the CPU affinity %s of thread %s: %s", text, tid, exc)


# --- Thread ids and block statistics from QEMU's human monitor (HMP), as the Proxmox API's ----------
# ``POST .../monitor`` returns them, for nodes where the QMP socket is out of reach (the API without ssh).
#
# ``info cpus`` and ``info iothreads`` are the text forms of QMP's ``query-cpus-fast`` and
# ``query-iothreads``; ``info blockstats`` of ``query-blockstats``.
_HMP_CPU = re.compile(r"CPU #(\d+):.*?thread_id=(\d+)")
_HMP_IOTHREAD = re.compile(r"^(\S+):\s*\n\s*thread_id=(\d+)", re.M)


def parse_hmp_threads(cpus: str, iothreads: str) -> dict[int, str]:
    """Thread id -> role from HMP ``info cpus`` / ``info iothreads``."""
    roles = {int(tid): ROLE_VCPU for _, tid in _HMP_CPU.findall(cpus)}
    roles.update({int(tid): ROLE_IOTHREAD for _, tid in _HMP_IOTHREAD.findall(iothreads)})
    return roles


def parse_hmp_blockstats(text: str, drive_id: str) -> BlockStats:
    """The counters of ``drive_id`` (``drive-scsi1``) in HMP ``info blockstats``."""
    for line in text.splitlines():
        if line.startswith(drive_id + ":"):
            vals = dict(re.findall(r"(\w+)=(\d+)", line))
            try:
                return BlockStats(int(vals["rd_bytes"]), int(vals["wr_bytes"]), int(vals["rd_operations"]),
                                  int(vals["wr_operations"]))
            except KeyError as exc:
                raise BackendError(
                    f"the monitor's 'info blockstats' line for {drive_id} has no {exc.args[0]}") from None
    raise BackendError(f"the monitor's 'info blockstats' has no {drive_id}")
