"""Collectors over many QEMU processes: one suite point's host cost, all VMs of a side in one window.

:class:`QemuProcessesCollector` measures the QEMU processes on this host (one collector per process,
merged into the journal's one ``host`` block); :class:`SshProcessesCollector` measures them on a remote
node in ONE ssh session per window (``linux-host/multicollector.py``). Both take the scopes from a
callable (:class:`Cached`: taken once, anew after a failed window, when a VM may have restarted).
"""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import threading
from typing import Any, Callable

from .backends.base import HostScope
from .core.errors import CollectorError

log = logging.getLogger("stormatrix.suitecollectors")


class Cached:
    """Scopes taken once before the suite (thread roles cost API calls: not at every window's opening),
    taken anew after a window failed (a VM may have restarted with a new pid)."""

    def __init__(self, fetch: Callable[[], list[HostScope]], first: list[HostScope]) -> None:
        self.fetch = fetch
        self.value: list[HostScope] | None = first

    def __call__(self) -> list[HostScope]:
        if self.value is None:
            self.value = self.fetch()
        return self.value

    def invalidate(self) -> None:
        self.value = None


# --- collectors over many QEMU processes ------------------------------------------------------------------

def _local_window_collector(scope: HostScope, use_perf: bool | None) -> Any:
    from .host.collector import WindowCollector

    if scope.ssh:
        raise CollectorError(f"{scope.vm or scope.pid}: its QEMU runs on {scope.ssh}; use SshProcessesCollector")
    return WindowCollector(scope.pid, dict(scope.threads), use_perf=use_perf)


class QemuProcessesCollector:
    """The suite's :class:`~stormatrix.suite.PointCollector` for many QEMU processes on this host.

    One :class:`WindowCollector` per QEMU process, merged with :func:`stormatrix.runner.merge_hosts` into
    the journal's one ``host`` block, so ``per_mib`` divides the whole side's host cost by the bytes all
    guests moved. ``scopes`` is called at every window start (a backend's ``scope()`` fits); if it has an
    ``invalidate()``, that is called after a failed window, so the next one takes the scopes anew.
    """

    def __init__(self, scopes: Callable[[], list[HostScope]], *, use_perf: bool | None = None,
                 factory: Callable[[HostScope, bool | None], Any] = _local_window_collector) -> None:
        from .host.collector import perf_available

        self.scopes = scopes
        # decided once: probing perf per VM per window would delay every window's opening
        self.use_perf = perf_available() if use_perf is None else use_perf
        self.factory = factory
        self._running: list[tuple[str, Any]] = []

    def start(self) -> None:
        from .core.errors import VmStartError
        from .host.collector import CollectorProblem
        from .qmp import QmpError

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
        from .host.collector import CollectorProblem
        from .runner import merge_hosts

        running, self._running = self._running, []
        results: list[dict[str, Any]] = []
        errors: list[str] = []
        for name, c in running:  # stop every one, even after a failure: each holds a perf process
            try:
                results.append(c.stop())
            except CollectorProblem as exc:
                errors.append(f"{name}: {exc}")
        if errors:
            self._invalidate()
            raise CollectorError(f"the host collector lost {len(errors)} of {len(running)} VMs: {'; '.join(errors)}")
        host = merge_hosts(results)
        if host is not None:
            host["vms"] = [name for name, _ in running]
        return host

    def abort(self) -> None:
        self._abort()

    def _invalidate(self) -> None:
        invalidate = getattr(self.scopes, "invalidate", None)
        if invalidate is not None:
            invalidate()

    def _abort(self) -> None:
        self._invalidate()
        running, self._running = self._running, []
        for _, c in running:
            c.abort()


class SshProcessesCollector:
    """Many QEMU processes on a remote node, measured by ONE ``ssh`` session per window.

    ``ssh -o BatchMode=yes [-F ssh_config] <target> -- python3 <ssh_dir>/multicollector.py`` (built by the
    proxmox backend's :class:`~stormatrix.backends.proxmox.NodeShell`); the request (pids, thread roles) and
    the results travel as JSON lines on stdin/stdout (see ``linux-host/multicollector.py``), so the remote
    command line holds fixed words only. ``scopes`` as for :class:`QemuProcessesCollector`.

    Not the backend's per-VM ``SshCollector``: that is two ssh logins per VM per window, which for the
    seeds' 32 VMs would delay each window's opening by seconds and run into sshd's ``MaxStartups``.
    """

    START_TIMEOUT_S = 30.0
    STOP_TIMEOUT_S = 60.0

    def __init__(self, shell: Any, scopes: Callable[[], list[HostScope]], *, remote_dir: str,
                 use_perf: bool | None = None, python: str = "python3") -> None:
        self.shell = shell
        self.target = shell.where
        self.scopes = scopes
        self.remote_dir = remote_dir
        self.use_perf = use_perf
        self.python = python
        self._proc: subprocess.Popen[str] | None = None
        self._lines: "queue.Queue[str | None]" = queue.Queue()
        self._stderr: list[str] = []
        self._names: list[str] = []

    def argv(self) -> list[str]:
        return self.shell.argv([self.python, f"{self.remote_dir}/multicollector.py"])

    def _read(self, stream: Any, into: "queue.Queue[str | None] | list[str]") -> None:
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
        if "Host key verification failed" in tail or "Permission denied" in tail:
            hint = (f" Fix: the login must work without a prompt (ssh -o BatchMode=yes {self.target} true) and "
                    "the node's host key must be known; check [proxmox] ssh and ssh_config")
        raise CollectorError(f"host collector on {self.target}: {what}; ssh: {tail or '(no output)'}.{hint}")

    def start(self) -> None:
        if self._proc is not None:
            raise CollectorError("the host collector is already measuring a window")
        scopes = self.scopes()
        self._names = [s.vm or str(s.pid) for s in scopes]
        request = {"processes": [{"pid": s.pid, "name": s.vm or str(s.pid),
                                  "roles": {str(t): r for t, r in s.threads.items()}} for s in scopes],
                   "use_perf": self.use_perf}
        self._lines = queue.Queue()
        self._stderr = []
        try:
            self._proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
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
            self._invalidate()
            raise CollectorError(f"host collector on {self.target} did not start: {doc.get('error', doc)}")

    def stop(self) -> dict[str, Any] | None:
        from .runner import merge_hosts

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
            self._invalidate()
            raise
        self._finish()
        results = doc.get("results")
        if not isinstance(results, list):
            self._invalidate()
            raise CollectorError(f"host collector on {self.target}: {doc.get('error', doc)}")
        errors = [f"{r.get('name')}: {r['error']}" for r in results if isinstance(r, dict) and "error" in r]
        if errors:
            self._invalidate()
            raise CollectorError(f"the host collector on {self.target} lost {len(errors)} of {len(results)} VMs: "
                                 + "; ".join(errors))
        host = merge_hosts([r["host"] for r in results])
        if host is not None:
            host["vms"] = [r.get("name") for r in results]
            host["node"] = self.target
        return host

    def abort(self) -> None:
        self._kill()
        self._invalidate()

    def _invalidate(self) -> None:
        invalidate = getattr(self.scopes, "invalidate", None)
        if invalidate is not None:
            invalidate()

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
