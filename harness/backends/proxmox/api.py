"""Talking to Proxmox VE: two transports behind one small client.

- :class:`ProxmoxerTransport`: the REST API over HTTPS through proxmoxer, with an API token. Written
  for proxmoxer 1.2 (Debian 12) and 2.x: both take ``ProxmoxAPI(host, user=, token_name=, token_value=,
  verify_ssl=, port=, timeout=)`` and raise ``ResourceException`` with ``status_code``/``content``/
  ``errors``. proxmoxer 1.2 never passes its ``timeout`` to requests for token auth (only the ticket
  login uses it), so a request could hang forever; we mount an adapter that gives every request a
  timeout, which also works on 2.x.
- :class:`PveshTransport`: ``pvesh`` on the node itself (same paths and parameters, no token needed),
  built as argument lists.

:class:`PveClient` adds what the backend needs on top: digest-guarded writes where a conflict is a
:class:`~stormatrix.core.errors.ConfigConflictError` (someone else is changing the VM), task
polling where a failed task becomes :class:`~stormatrix.core.errors.TaskFailed` carrying the task log tail,
and no retry loops anywhere (a 5xx is an error, surfaced as such).

The token secret is held by the transport only; it is read by :mod:`stormatrix.secrets` (by
reference, never from the matrix). Every message that leaves this module goes through
:func:`~stormatrix.secrets.scrub`, so the secret cannot reach a log, the journal or an exception text
even if a library echoes it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from ...core.errors import (BackendError, ConfigConflictError, EnvironmentProblem, PveApiError, PveAuthError,
                            TaskFailed)
from ...secrets import register, scrub

log = logging.getLogger("stormatrix.backend.proxmox")

# Proxmox's message for a digest mismatch (PVE::Tools::assert_if_modified / QemuConfig).
DIGEST_MESSAGE = "detected modified configuration - file changed by other user? Try again."


class Transport(Protocol):
    def request(self, method: str, path: str, params: dict[str, Any] | None = None) -> Any:
        """``method`` is GET/POST/PUT/DELETE; ``path`` like ``/nodes/n/qemu/100/config``; returns ``data``."""

    def close(self) -> None:
        """Release connections."""


def _error_from(status: int | None, reason: str, errors: Any) -> PveApiError:
    errs: dict[str, str] = {}
    if isinstance(errors, dict):
        errs = {str(k): scrub(str(v)) for k, v in errors.items()}
    elif isinstance(errors, (bytes, str)) and errors:
        text = errors.decode("utf-8", "replace") if isinstance(errors, bytes) else errors
        errs = {"body": scrub(text[:500])}
    reason = scrub(reason.strip())
    detail = "; ".join(f"{k}: {v}" for k, v in errs.items())
    message = f"Proxmox API error {status}: {reason}" + (f" ({detail})" if detail else "")
    if DIGEST_MESSAGE.split(" - ")[0] in reason:
        return ConfigConflictError(message, status=status, errors=errs)
    if status in (401, 403):
        return PveAuthError(message + ". Check [proxmox] user/token_id and the token secret, and that the "
                            "token has VM.Config.Disk, VM.Config.HWType, VM.PowerMgmt and VM.Monitor on the VM",
                            status=status, errors=errs)
    return PveApiError(message, status=status, errors=errs)


class ProxmoxerTransport:
    def __init__(self, host: str, *, port: int, user: str, token_name: str, token_value: str,
                 verify: bool | str, timeout: float) -> None:
        try:  # imported here, not at the top, so the qemu path never needs proxmoxer
            from proxmoxer import ProxmoxAPI
        except ImportError:
            raise EnvironmentProblem("the proxmox backend needs proxmoxer: apt-get install python3-proxmoxer "
                                     "(or pip install proxmoxer)") from None
        import requests.adapters

        register(token_value)
        self.timeout = timeout
        self._api = ProxmoxAPI(host, backend="https", port=port, user=user, token_name=token_name,
                               token_value=token_value, verify_ssl=verify, timeout=timeout)
        session = getattr(self._api, "_store", {}).get("session")
        if session is None:
            raise EnvironmentProblem("unsupported proxmoxer version: no HTTP session to configure")

        default_timeout = timeout

        class _TimeoutAdapter(requests.adapters.HTTPAdapter):
            # HTTPAdapter.send names each argument; this one passes them through
            def send(self, request: Any, **kwargs: Any) -> Any:
                if kwargs.get("timeout") is None:
                    kwargs["timeout"] = default_timeout
                return super().send(request, **kwargs)

        session.mount("https://", _TimeoutAdapter())
        self._session = session
        # proxmoxer 1.2 drops the body's per-parameter "errors" of a 400; keep them for the message.
        self._last_errors = threading.local()

        def keep_errors(resp: Any, *args: Any, **kwargs: Any) -> Any:
            errors = None
            if resp.status_code >= 400:
                try:
                    errors = resp.json().get("errors")
                except ValueError:
                    errors = None
            self._last_errors.value = errors
            return resp

        session.hooks["response"].append(keep_errors)
        # A CA bundle path is how a self-signed node certificate is trusted without turning checks off.
        session.verify = verify

    def request(self, method: str, path: str, params: dict[str, Any] | None = None) -> Any:
        from proxmoxer.core import ResourceException
        import requests

        resource = self._api(path.strip("/"))
        params = {k: _wire(v) for k, v in (params or {}).items()}
        try:
            if method == "GET":
                return resource.get(**params)
            if method == "POST":
                return resource.post(**params)
            if method == "PUT":
                return resource.put(**params)
            if method == "DELETE":
                return resource.delete(**params)
        except ResourceException as exc:
            errors = exc.errors or getattr(self._last_errors, "value", None)
            reason = exc.content if isinstance(exc.content, str) else str(exc.status_message or "")
            raise _error_from(exc.status_code, reason or str(exc.status_message or ""), errors) from None
        except requests.exceptions.SSLError as exc:
            raise BackendError(scrub(f"TLS verification of the Proxmox node failed ({exc.__class__.__name__}): "
                                     "give the node's CA as [proxmox] ca_file, or set verify_tls = false "
                                     "explicitly if you accept an unauthenticated connection")) from None
        except requests.exceptions.Timeout:
            raise BackendError(f"Proxmox API {method} {path} timed out after {self.timeout:g} s "
                               "(raise [proxmox] timeout)") from None
        except requests.exceptions.RequestException as exc:
            raise BackendError(scrub(f"cannot reach the Proxmox API for {method} {path}: "
                                     f"{exc.__class__.__name__}: {exc}")) from None
        raise ValueError(f"unknown HTTP method {method}")

    def close(self) -> None:
        self._session.close()


def _wire(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    return value


class PveshTransport:
    """``pvesh`` on the Proxmox node itself: same API, no network, no token."""

    VERBS = {"GET": "get", "POST": "create", "PUT": "set", "DELETE": "delete"}

    def __init__(self, *, timeout: float, pvesh: str = "pvesh") -> None:
        self.timeout = timeout
        self.pvesh = pvesh

    def argv(self, method: str, path: str, params: dict[str, Any] | None = None) -> list[str]:
        argv = [self.pvesh, self.VERBS[method], path, "--output-format", "json"]
        for k, v in (params or {}).items():
            if isinstance(v, (list, tuple)):  # an array parameter: the option repeated, each value attached
                argv += [f"--{k}={item}" for item in v]  # (so an item like --version is not read as an option)
            else:
                argv += [f"--{k}", str(_wire(v))]
        return argv

    def request(self, method: str, path: str, params: dict[str, Any] | None = None) -> Any:
        argv = self.argv(method, path, params)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, check=False)
        except FileNotFoundError:
            raise EnvironmentProblem(f"{self.pvesh} not found: transport = \"local\" only works on a Proxmox "
                                     "node; use transport = \"api\" elsewhere") from None
        except subprocess.TimeoutExpired:
            raise BackendError(f"pvesh {self.VERBS[method]} {path} did not answer within {self.timeout:g} s") from None
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip()
            first, _, rest = text.partition("\n")
            status = None
            head, _, tail = first.partition(" ")
            if head.isdigit():
                status, first = int(head), tail
            errors = {}
            for line in rest.splitlines():
                k, sep, v = line.partition(":")
                if sep and k.strip():
                    errors[k.strip()] = v.strip()
            raise _error_from(status, first, errors or None)
        out = proc.stdout.strip()
        if not out:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return out

    def close(self) -> None:
        pass


# --- the client ----------------------------------------------------------------------------------

def upid_starttime(upid: str) -> int:
    """The task's start (epoch seconds) from its UPID ``UPID:node:pid:pstart:starttime:type:id:user:``."""
    try:
        return int(upid.split(":")[4], 16)
    except (IndexError, ValueError):
        raise BackendError(f"not a Proxmox task id: {upid!r}") from None


@dataclass(frozen=True)
class TaskResult:
    upid: str
    exitstatus: str
    log_tail: list[str]


class PveClient:
    """The handful of calls the backend makes, for one VM on one node."""

    def __init__(self, transport: Transport, node: str, vmid: int, *, task_timeout: float = 300.0,
                 poll_interval: float = 0.25) -> None:
        self.t = transport
        self.node = node
        self.vmid = vmid
        self.task_timeout = task_timeout
        self.poll_interval = poll_interval

    @property
    def vm_path(self) -> str:
        return f"/nodes/{self.node}/qemu/{self.vmid}"

    def close(self) -> None:
        close = getattr(self.t, "close", None)
        if close is not None:
            close()

    def version(self) -> dict[str, Any]:
        return self.t.request("GET", "/version")

    def config(self, *, current: bool = False) -> dict[str, Any]:
        params = {"current": 1} if current else None
        data = self.t.request("GET", f"{self.vm_path}/config", params)
        if not isinstance(data, dict) or "digest" not in data:
            raise BackendError(
                f"VM {self.vmid} on {self.node}: the config answer has no digest ({type(data).__name__})")
        return {k: (str(v) if not isinstance(v, str) else v) for k, v in data.items()}

    def pending(self) -> list[dict[str, Any]]:
        data = self.t.request("GET", f"{self.vm_path}/pending")
        return list(data or [])

    def status(self) -> dict[str, Any]:
        return dict(self.t.request("GET", f"{self.vm_path}/status/current") or {})

    def update_config(self, params: dict[str, str], digest: str) -> None:
        """Synchronous ``PUT .../config`` guarded by ``digest``. Never passes ``force``."""
        if "force" in params:
            raise ValueError("force is never passed: it destroys volumes")
        try:
            self.t.request("PUT", f"{self.vm_path}/config", {**params, "digest": digest})
        except ConfigConflictError as exc:
            raise ConfigConflictError(
                f"VM {self.vmid}: its configuration changed while stormatrix was changing it "
                f"({exc.message}). Someone else is editing this VM: stop them, check the VM, then run again",
                status=exc.details.status) from None

    def power(self, action: str, **params: Any) -> str:
        if action not in ("start", "stop", "shutdown", "reboot", "reset"):
            raise ValueError(action)
        upid = self.t.request("POST", f"{self.vm_path}/status/{action}", params or None)
        if not isinstance(upid, str) or not upid.startswith("UPID:"):
            raise BackendError(f"VM {self.vmid}: {action} returned no task id ({upid!r})")
        return upid

    def task_status(self, upid: str) -> dict[str, Any]:
        return dict(self.t.request("GET", f"/nodes/{self.node}/tasks/{upid}/status") or {})

    def task_log(self, upid: str, limit: int = 50) -> list[str]:
        try:
            lines = self.t.request("GET", f"/nodes/{self.node}/tasks/{upid}/log",
                                   {"start": 0, "limit": 5000}) or []
        except BackendError as exc:
            return [f"(task log unavailable: {exc.message})"]
        return [scrub(str(x.get("t", ""))) for x in lines][-limit:]

    def wait_task(self, upid: str, *, what: str, timeout: float | None = None) -> TaskResult:
        """Poll a task until it stops. Not finishing in time, or ending with anything but ``OK``
        (or ``WARNINGS: n``), is a :class:`TaskFailed` with the end of the task's log."""
        deadline = time.monotonic() + (timeout or self.task_timeout)
        interval = self.poll_interval
        while True:
            st = self.task_status(upid)
            if st.get("status") == "stopped":
                exitstatus = str(st.get("exitstatus", ""))
                tail = self.task_log(upid, limit=20)
                if exitstatus == "OK" or exitstatus.startswith("WARNINGS"):
                    return TaskResult(upid, exitstatus, tail)
                raise TaskFailed(f"VM {self.vmid}: {what} failed: {exitstatus or 'no exit status'}"
                                 + ("\n  task log: " + "\n  ".join(tail[-10:]) if tail else ""),
                                 upid=upid, exitstatus=exitstatus, log=tail)
            if time.monotonic() > deadline:
                raise TaskFailed(f"VM {self.vmid}: {what} (task {upid}) still running after "
                                 f"{timeout or self.task_timeout:g} s", upid=upid)
            time.sleep(interval)
            interval = min(interval * 1.5, 2.0)

    def agent_ping(self) -> None:
        self.t.request("POST", f"{self.vm_path}/agent/ping")

    def tasks(self, *, typefilter: str, since: int) -> list[dict[str, Any]]:
        """This VM's tasks of one type started at or after ``since``, running ones included, oldest first.
        Other users' tasks (like the ``qmstart`` that qemu-server's ``qm cleanup`` runs as root@pam after
        an API reboot) are listed only with Sys.Audit on /nodes/{node}."""
        data = self.t.request("GET", f"/nodes/{self.node}/tasks", {"vmid": self.vmid, "typefilter": typefilter,
                                                                   "since": since, "source": "all"}) or []
        return sorted((dict(t) for t in data), key=lambda t: (int(t.get("starttime", 0)), str(t.get("upid"))))

    def monitor(self, command: str) -> str:
        return str(self.t.request("POST", f"{self.vm_path}/monitor", {"command": command}) or "")
