"""Host collectors: what every one of them does, and the one place their results are merged.

A host collector measures the hypervisor side of one measurement window: CPU and context switches of
the QEMU process(es) (or, on ESXi, of the VM's worlds). The runner starts one when the window opens and
stops it when the window closes; the record keeps the one ``host`` block it returns.

Kinds, all satisfying :class:`HostCollector` structurally (no base class to inherit):

- ``linux-host/collector.py``'s ``WindowCollector``: one process on this machine;
- :class:`ProcessesCollector`: many processes on this machine, one ``WindowCollector`` each;
- :class:`RemoteProcessesCollector`: 1..N processes on another machine (a Proxmox node), ONE ssh session
  per window running ``linux-host/multicollector.py`` there (the only remote path: one login whatever
  the number of VMs, instead of sshd's ``MaxStartups`` refusing the 11th of 32 simultaneous logins);
- the ESXi sources of the vmware backend (vSphere statistics, esxtop over ssh).

:func:`merge_hosts` adds up the results of many processes into one block: the only place results are
merged, so per-MiB cost always divides the whole side's host cost by the bytes every guest moved.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any, Callable, Protocol, Sequence

from .core.errors import CollectorError, QmpError, VmStartError
from .core.scope import HostScope
from .host.collector import WindowCollector
from .host.cpuset import CpuSetCollector, with_process
from .host.perfrun import perf_available
from .host.procfs import CollectorProblem
from .ssh import Shell


class HostCollector(Protocol):
    """One measurement window's host side: ``start`` when it opens, ``stop`` when it closes (the host
    block, or None when this collector measured nothing), ``abort`` when the cell failed in between."""

    def start(self) -> None: ...

    def stop(self) -> dict[str, Any] | None: ...

    def abort(self) -> None: ...


#: the per-process counters that add up across processes
_SUMMED = ("cpu_total", "cpu_user", "cpu_system", "ctx_switches", "ctx_voluntary", "ctx_involuntary")


def _add(values: list[Any]) -> Any:
    """The sum, or None when any value is unknown (a sum over part of the processes is not the total)."""
    return None if any(v is None for v in values) else sum(values)


class CpuSetHostCollector:
    """``[host] scope = "cpus"`` on this machine: the set measured system-wide (``CpuSetCollector``) around the
    QEMU process's own collector (``process``: a ``WindowCollector``, or any :class:`HostCollector`), the set's
    window holding the process's (started first, stopped last), so the set's counts cover every one of the
    process's. The block: the set's figures in the usual keys, the process's under ``process``
    (``cpuset.with_process``)."""

    def __init__(self, cpus: list[int], process: Any | None, *, exclude: tuple[int, ...] = (),
                 use_perf: bool | None = None, root: str = "/") -> None:
        self.cpus = cpus
        self.process = process
        self.set = CpuSetCollector(cpus, use_perf=perf_available() if use_perf is None else use_perf, root=root,
                                   exclude=exclude)

    def start(self) -> None:
        try:
            self.set.start()
        except CollectorProblem as exc:
            raise CollectorError(f"cannot measure CPU set {self.cpus}: {exc}") from exc
        try:
            if self.process is not None:
                self.process.start()
        except BaseException:
            self.set.abort()
            raise

    def stop(self) -> dict[str, Any] | None:
        try:
            proc = self.process.stop() if self.process is not None else None
        except BaseException:
            self.set.abort()
            raise
        try:
            return with_process(self.set.stop(), proc)
        except CollectorProblem as exc:
            raise CollectorError(f"the CPU set's collector failed: {exc}") from exc

    def abort(self) -> None:
        try:
            if self.process is not None:
                self.process.abort()
        finally:
            self.set.abort()


def merge_hosts(results: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One host block for one or many QEMU processes (many VMs in a suite, or collectors of one window).

    A figure one process lacks is null in the merged block, and ``null_reasons`` keeps each process's own
    reason prefixed with its pid (``pid 1234: ctx_voluntary unknown for ...``), as the collector writes it."""
    measured = [r for r in results if r is not None]
    if not measured:
        return None
    if len(measured) == 1:
        return measured[0]
    if any(r.get("scope") == "cpus" for r in measured):  # each already covers every task on its set
        raise CollectorError("a window measured a CPU set and something else: a set's figures are not added to "
                             "others'; give the window one CPU-set collector with every QEMU process in it")
    metrics = {r["cpu_metric"] for r in measured}
    if len(metrics) != 1:
        raise CollectorError("VMs were measured with different CPU metrics; cannot add them up")
    out = dict(measured[0])
    # each process's own note on its user + system vs task-clock, never the first one's for all of them
    notes = [f"pid {r.get('pid')}: {r['cpu_split_note']}" for r in measured if r.get("cpu_split_note")]
    out.pop("cpu_split_note", None)
    if notes:
        out["cpu_split_note"] = "; ".join(notes)
    for k in _SUMMED:
        out[k] = _add([r.get(k) for r in measured])
    # per_mib() reads the cycles split when the metric is cycles: it must cover every VM, not the first
    if all(isinstance(r.get("cycles"), dict) for r in measured):
        out["cycles"] = {k: sum(r["cycles"][k] for r in measured) for k in ("user", "kernel")}
    if all(isinstance(r.get("cpu_time_s"), dict) for r in measured):
        out["cpu_time_s"] = {k: _add([r["cpu_time_s"].get(k) for r in measured]) for k in ("total", "user", "system")}
    by_role: dict[str, dict[str, Any]] = {}
    for r in measured:
        for role, agg in (r.get("by_role") or {}).items():
            into = by_role.setdefault(role, {k: 0 for k in agg})
            for k, v in agg.items():
                into[k] = _add([into.get(k, 0), v])
    out["by_role"] = by_role
    why: dict[str, str] = {}
    for r in measured:
        for k, v in (r.get("null_reasons") or {}).items():
            why[k] = "; ".join(filter(None, (why.get(k), f"pid {r.get('pid')}: {v}")))
    out.pop("null_reasons", None)
    if why:
        out["null_reasons"] = dict(sorted(why.items()))
    windows = [r["window_s"] for r in measured if isinstance(r.get("window_s"), (int, float))]
    out["window_s"] = max(windows) if windows else None  # the longest process window; unknown, not 0
    out["split_approximate"] = any(r.get("split_approximate") for r in measured)
    out["threads"] = [t for r in measured for t in r["threads"]]
    out["pid"] = [r["pid"] for r in measured]
    out["scope"] = f"{len(measured)} qemu processes"
    return out


def _invalidate(scopes: Any) -> None:
    """Scopes that cache (thread roles cost API calls) are taken anew after a failed window: a VM may
    have restarted with a new pid."""
    invalidate = getattr(scopes, "invalidate", None)
    if invalidate is not None:
        invalidate()


def default_collector_factory(scope: HostScope) -> Any:
    """The collector of one QEMU process on this machine (a backend whose host is elsewhere has its own)."""
    if scope.ssh:
        raise CollectorError(f"remote collection over SSH ({scope.ssh}) needs the backend's collector")
    return WindowCollector(scope.pid, dict(scope.threads))


def _local_window_collector(scope: HostScope, use_perf: bool | None) -> Any:
    if scope.ssh:
        raise CollectorError(f"{scope.vm or scope.pid}: its QEMU runs on {scope.ssh}; use RemoteProcessesCollector")
    return WindowCollector(scope.pid, dict(scope.threads), use_perf=use_perf)


class ProcessesCollector:
    """Many QEMU processes on this machine: one ``WindowCollector`` each, merged by :func:`merge_hosts`.

    ``scopes`` is called at every window start (a backend's ``scope()`` fits); if it has an
    ``invalidate()``, that is called after a failed window, so the next one takes the scopes anew.
    """

    def __init__(self, scopes: Callable[[], list[HostScope]], *, use_perf: bool | None = None,
                 factory: Callable[[HostScope, bool | None], Any] = _local_window_collector) -> None:
        self.scopes = scopes
        # decided once: probing perf per VM per window would delay every window's opening
        self.use_perf = perf_available() if use_perf is None else use_perf
        self.factory = factory
        self._running: list[tuple[str, Any]] = []

    def start(self) -> None:
        if self._running:
            raise CollectorError("the host collector is already measuring a window")
        name = "?"
        try:
            for scope in self.scopes():
                name = scope.vm or str(scope.pid)
                c = self.factory(scope, self.use_perf)
                c.start()
                self._running.append((name, c))
        except (CollectorProblem, QmpError, VmStartError, OSError) as exc:
            self._abort()
            raise CollectorError(f"cannot start the host collector for {name}: {exc}") from exc
        except BaseException:
            self._abort()
            raise

    def stop(self) -> dict[str, Any] | None:
        running, self._running = self._running, []
        results: list[dict[str, Any]] = []
        errors: list[str] = []
        for name, c in running:  # stop every one, even after a failure: each holds a perf process
            try:
                results.append(c.stop())
            except CollectorProblem as exc:
                errors.append(f"{name}: {exc}")
        if errors:
            _invalidate(self.scopes)
            raise CollectorError(f"the host collector lost {len(errors)} of {len(running)} VMs: {'; '.join(errors)}")
        host = merge_hosts(results)
        if host is not None:
            host["vms"] = [name for name, _ in running]
        return host

    def abort(self) -> None:
        self._abort()

    def _abort(self) -> None:
        _invalidate(self.scopes)
        running, self._running = self._running, []
        for _, c in running:
            c.abort()


class RemoteProcessesCollector:
    """1..N QEMU processes on a remote node, measured by ONE ``ssh`` session per window.

    ``ssh -o BatchMode=yes [-F ssh_config] <target> -- python3 <remote_dir>/multicollector.py`` (built by
    :mod:`stormatrix.ssh`); the request (pids, thread roles) and the results travel as JSON lines on
    stdin/stdout (see ``linux-host/multicollector.py``), so the remote command line holds fixed words only.
    ``scopes`` as for :class:`ProcessesCollector`. With one process the result is that process's block
    (what the local collector gives); with many, :func:`merge_hosts` adds them up; ``name_vms`` adds
    ``vms`` and ``node`` to the block (a suite's record says which VMs it covers).
    """

    START_TIMEOUT_S = 30.0
    STOP_TIMEOUT_S = 60.0

    def __init__(self, shell: Shell, scopes: Callable[[], list[HostScope]], *, remote_dir: str,
                 use_perf: bool | None = None, python: str = "python3", name_vms: bool = True,
                 cpus: str | None = None, root: str | None = None, prefix: Sequence[str] = ()) -> None:
        self.shell = shell
        #: [host] scope = "cpus": the node's CPU set (a kernel cpulist) measured system-wide around the processes;
        #: the block is then the set's, the processes' merged figures under ``process``
        self.cpus = cpus
        self.root = root  # where the node's /proc is read ("/" unless a stand-in's fake tree)
        #: words before the collector's command on the node (the CPU-set scope runs it off the set)
        self.prefix = list(prefix)
        self.name_vms = name_vms  # a suite's block names its VMs and node; one VM's block is the plain one
        self.target = shell.where
        self.scopes = scopes
        self.remote_dir = remote_dir
        self.use_perf = use_perf
        self.python = python
        self._proc: subprocess.Popen[str] | None = None
        self._lines: "queue.Queue[str | None]" = queue.Queue()
        self._stderr: list[str] = []

    def argv(self) -> list[str]:
        # -B: no __pycache__ next to the copied files (ensure_remote_collector compares the folder's *.py only)
        return self.shell.argv([*self.prefix, self.python, "-B", f"{self.remote_dir}/multicollector.py"])

    @staticmethod
    def _read(stream: Any, into: "queue.Queue[str | None] | list[str]") -> None:
        for line in stream:
            if isinstance(into, list):
                into.append(line)
            else:
                into.put(line)
        if not isinstance(into, list):
            into.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            line = None
            what += f" (no answer within {timeout:g} s)"
        if line is not None:
            try:
                doc = json.loads(line)
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                return doc
        self._kill()
        tail = "".join(self._stderr).strip()[-500:]
        hint = ""
        if self.shell.ssh_failure(255, tail) or "Permission denied" in tail:
            hint = (f" Fix: {self.shell.opts.login_hint()}; check {self.shell.what_key} and ssh_config")
        raise CollectorError(f"host collector on {self.target}: {what}; ssh: {tail or '(no output)'}.{hint}")

    def start(self) -> None:
        if self._proc is not None:
            raise CollectorError("the host collector is already measuring a window")
        scopes = self.scopes()
        request: dict[str, Any] = {
            "processes": [{"pid": s.pid, "name": s.vm or str(s.pid), "roles": {str(t): r for t, r in s.threads.items()}}
                          for s in scopes],
            "use_perf": self.use_perf}
        if self.cpus:
            request["cpus"] = self.cpus
        if self.root:
            request["root"] = self.root
        self._lines = queue.Queue()
        self._stderr = []
        try:
            self._proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, encoding="utf-8")  # (the node's)
        except OSError as exc:
            raise CollectorError(f"cannot run ssh for the host collector on {self.target}: {exc}") from None
        threading.Thread(target=self._read, args=(self._proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self._proc.stderr, self._stderr), daemon=True).start()
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # ssh already exited: _next reports its stderr
        doc = self._next(self.START_TIMEOUT_S, "the collector did not start")
        if "started" not in doc:
            self._kill()
            _invalidate(self.scopes)
            raise CollectorError(f"host collector on {self.target} did not start: {doc.get('error', doc)}")

    def stop(self) -> dict[str, Any] | None:
        if self._proc is None:
            return None
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write("stop\n")
            self._proc.stdin.flush()
        except OSError:
            pass
        try:
            doc = self._next(self.STOP_TIMEOUT_S, "no result at the window's end")
        except CollectorError:
            _invalidate(self.scopes)
            raise
        self._finish()
        results = doc.get("results")
        if not isinstance(results, list):
            _invalidate(self.scopes)
            raise CollectorError(f"host collector on {self.target}: {doc.get('error', doc)}")
        errors = [f"{r.get('name')}: {r['error']}" for r in results if isinstance(r, dict) and "error" in r]
        if errors:
            _invalidate(self.scopes)
            raise CollectorError(f"the host collector on {self.target} lost {len(errors)} of {len(results)} VMs: "
                                 + "; ".join(errors))
        host = merge_hosts([r["host"] for r in results])
        if self.cpus:
            if not isinstance(doc.get("cpus"), dict):
                _invalidate(self.scopes)
                raise CollectorError(f"the host collector on {self.target} did not measure CPU set {self.cpus}: "
                                     f"{doc.get('cpus_error', 'no result for the set')}")
            host = with_process(doc["cpus"], host)
        if host is not None and self.name_vms:
            host["vms"] = [r.get("name") for r in results]
            host["node"] = self.target
        return host

    def abort(self) -> None:
        self._kill()
        _invalidate(self.scopes)

    def _finish(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _kill(self) -> None:
        """End the session: closing stdin makes the remote collector stop its perf; then ssh goes."""
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        self._finish()
