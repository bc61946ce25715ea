"""Making a cell's configuration the running one: the writes, the restart through the API, the checks after it.

The backend decides what to change (:func:`~.change.plan_cell`) and in which order (``stop``, write, ``start``;
or, with ``[proxmox] restart = "reboot"``, write while the VM runs and reboot); this module does it on the VM:

- :func:`write_until` writes the change step by step, each write with the digest of the config it was computed
  from, until nothing is left;
- :func:`reboot` is the API ``reboot`` task, then :func:`wait_restart` until the VM runs again in a new QEMU
  process (qemu-server's ``qm cleanup`` starts it in a ``qmstart`` task of its own, followed where the token may
  list the node's tasks);
- :func:`verify_running`: nothing pending, the VM running, its running config the cell's;
- :func:`wait_ready`: the guest agent's ping, a TCP port, or nothing (``ready = "executor"``: the executor waits).

``own_upids``: the tasks the backend started itself, so that the restart after a reboot is told from them.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from typing import Any, Mapping

from ...core.errors import BackendError, GuestNotReady, PveAuthError, TaskFailed
from .api import PveClient, upid_starttime

log = logging.getLogger("stormatrix.backend.proxmox")


def write_until(c: PveClient, planner: Any) -> None:
    """Read, plan, write the first step with the digest just read; again until nothing is left.

    Re-reading between the steps of a bus move means each write carries the digest of the config
    it was computed from, and a crash between them leaves a state the next plan understands."""
    for _ in range(4):
        config = c.config()
        plan = planner(config)
        if plan.empty:
            return
        write = plan.writes[0]
        log.info("VM %s: set %s delete %s", c.vmid, write.set, ",".join(write.delete) or "-")
        c.update_config(write.params(), config["digest"])
    raise BackendError(f"VM {c.vmid}: the configuration did not converge after 4 writes")


def reboot(c: PveClient, opts: Mapping[str, Any], what: str, own_upids: set[str]) -> None:
    """API reboot (qemu-server ``vm_reboot``): the task writes a reboot request and shuts the guest
    down cleanly (guest agent, else the ACPI power button), then ends. qmeventd sees QEMU exit and
    runs ``qm cleanup``, which starts the VM again in a ``qmstart`` task of its own (as root@pam);
    that start applies the pending changes. So the VM is briefly stopped after the reboot task."""
    pid0 = int(c.status().get("pid") or 0)
    wait = int(opts["reboot_timeout"])
    upid = c.power("reboot", timeout=wait)
    own_upids.add(upid)
    try:
        c.wait_task(upid, what=f"reboot to apply {what}", timeout=wait + float(opts["task_timeout"]))
    except TaskFailed as exc:
        if "powerdown failed" not in str(exc.details.exitstatus or exc.message):
            raise
        raise TaskFailed(
            f"{exc.message}\n  the guest did not shut down within [proxmox] reboot_timeout = {wait} s. An API "
            "reboot is a clean shutdown (guest agent 'guest-shutdown', else the ACPI power button) and a "
            "guest with neither a running agent nor ACPI handling ignores it: use [proxmox] restart = "
            "\"stop-start\", or give the guest the QEMU guest agent (agent: 1) or acpid",
            details=exc.details) from None
    wait_restart(c, opts, pid0, upid_starttime(upid), what, own_upids)


def wait_restart(c: PveClient, opts: Mapping[str, Any], pid0: int, since: int, what: str,
                 own_upids: set[str]) -> None:
    """Until the VM runs again in a new QEMU process. The ``qmstart`` task of ``qm cleanup`` is
    followed when the token may list the node's tasks (Sys.Audit), so a failed start is an error
    with its log; without that privilege the VM's status is all there is."""
    timeout = float(opts["task_timeout"])
    deadline = time.monotonic() + timeout
    follow = True
    while True:
        st = c.status()
        pid = int(st.get("pid") or 0)
        if st.get("status") == "running" and pid and pid != pid0:
            return
        if follow:
            starts: list[dict[str, Any]] = []
            try:
                starts = [t for t in c.tasks(typefilter="qmstart", since=since)
                          if str(t.get("upid")) not in own_upids]
            except PveAuthError:
                follow = False
                log.info("VM %s: the token may not list the node's tasks (Sys.Audit on /nodes/%s): waiting "
                         "for the VM to run again without following its start task", c.vmid, c.node)
            except BackendError as exc:
                follow = False
                log.info("VM %s: cannot list the node's tasks (%s): waiting for the VM only", c.vmid, exc)
            if starts:
                follow = False
                upid = str(starts[0]["upid"])
                try:
                    c.wait_task(upid, what=f"the start after the reboot (qm cleanup, to apply {what})",
                                timeout=max(1.0, deadline - time.monotonic()))
                except PveAuthError:
                    pass
                continue
        if time.monotonic() > deadline:
            raise BackendError(
                f"VM {c.vmid} did not run again within [proxmox] task_timeout = {timeout:g} s after the reboot "
                f"task ended (status {st.get('status')!r}). qemu-server starts it again from qmeventd's "
                "'qm cleanup': look for a failed qmstart task in the node's task log")
        time.sleep(c.poll_interval)


def verify_running(c: PveClient, check: Any, what: str) -> dict[str, Any]:
    """After the restart: nothing left pending, the VM running, and ``check`` true of its running config
    (``what`` names it in the error). Returns that config."""
    left = [p for p in c.pending() if "pending" in p or "delete" in p]
    if left:
        raise BackendError(f"VM {c.vmid}: changes still pending after the restart: "
                           + ", ".join(f"{p['key']}={p.get('pending', '<delete>')}" for p in left))
    st = c.status()
    if st.get("status") != "running":
        raise BackendError(f"VM {c.vmid} is {st.get('status')!r} after the start task, not running")
    current = c.config(current=True)
    if not check(current):
        raise BackendError(f"VM {c.vmid}: the running configuration is not {what}")
    return current


def ready_mode(opts: Mapping[str, Any], original_config: Mapping[str, Any]) -> str:
    """``[proxmox] ready``, with ``auto`` decided: the guest agent where the VM's original config enables it,
    else a TCP port where ``guest_host`` and ``guest_port`` name one, else the executor's own wait."""
    mode = str(opts["ready"])
    if mode != "auto":
        return mode
    agent = str(original_config.get("agent", "0"))
    if re.match(r"(?:enabled=)?(1|on|yes|true)", agent):
        return "agent"
    if opts["guest_host"] and opts["guest_port"]:
        return "tcp"
    return "executor"


def wait_ready(c: PveClient, opts: Mapping[str, Any], original_config: Mapping[str, Any], timeout: float) -> None:
    """Until the guest is ready by :func:`ready_mode`, for at most ``timeout`` seconds ([run] boot_timeout_seconds)."""
    mode = ready_mode(opts, original_config)
    if mode == "executor":
        return
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            if mode == "agent":
                c.agent_ping()
            else:
                with socket.create_connection((opts["guest_host"], opts["guest_port"]), timeout=2):
                    pass
            return
        except (BackendError, OSError) as exc:
            last = str(exc)
        time.sleep(1.0)
    what = "the guest agent did not answer" if mode == "agent" else \
        f"nothing listened on {opts['guest_host']}:{opts['guest_port']}"
    raise GuestNotReady(f"VM {c.vmid}: {what} within {timeout:g} s (last: {last})")
