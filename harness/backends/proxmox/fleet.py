"""The fleet on Proxmox VE: plan, deploy, attach a storage's volumes, power-cycle, detach, destroy.

Every call is one of Proxmox's documented API calls (the part of its API schema the tests hold in
``tests/data/pve-api-fleet.json``): ``GET /cluster/nextid``, ``GET /cluster/resources``, ``POST
.../qemu/{template}/clone`` (a task), ``PUT .../config`` (tags, cores, memory, the test disk), ``POST
/nodes/{node}/storage/{storage}/content`` (``pvesm alloc``), ``DELETE .../storage/{storage}/content/{volume}`` (a
task), ``POST .../status/stop|start`` (tasks), ``POST .../agent/ping``, ``DELETE /nodes/{node}/qemu/{vmid}`` (a
task).

Ownership (issue 24, "nothing left behind, nothing touched that is not ours"): a VM is journaled
(:mod:`stormatrix.fleet.journal`, fsynced) before its clone is requested, a volume before its allocation; every worker
carries the tag ``stormatrix`` and a description naming the fleet's id (:meth:`ProxmoxFleet.marker`).
Removal goes by the journal only, and a journaled VMID whose VM does not carry this fleet's marker (the
clone never happened and someone else took the VMID) is never stopped, changed or deleted.

What a deploy would create, checked before anything is (``plan``), is :mod:`.fleetplan`'s; the journal's records, and
what they say the fleet owns, :mod:`.fleetstate`'s.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

from ...core.errors import BackendError, MatrixError, PveApiError, StormatrixError, TaskFailed
from ...core.model import CONTROLLERS, iothread_effective
from ...fleet.journal import FleetJournal
from ...fleet.records import replay
from ...fleet.spec import refuse_fio_versions, refuse_problems
from ...fleet.template import fio_declaration, with_declaration
from .drives import drive_for, print_drive
from .fleetplan import FleetPlan, plan_fleet
from .fleetspec import FleetSpec
from .fleetstate import OwnedVolume, ProxmoxFleetState

log = logging.getLogger("stormatrix.fleet")

TAG = "stormatrix"
#: the test disk's slot on every worker (the template's boot disk is slot 0)
TEST_SLOT = 1
#: tasks (clones, stops, destroys) a fleet has running on the node at once: Proxmox runs each task in a
#: worker process of its own, and a 64-worker fleet waited on one task at a time spends minutes polling
PARALLEL_TASKS = 8


def _digest(conf: dict[str, Any]) -> dict[str, str]:
    """The config's digest for a guarded write (someone else's edit in between fails the write)."""
    return {"digest": str(conf["digest"])} if conf.get("digest") else {}


class ProxmoxFleet:
    """One fleet (one run directory's ``fleet.ndjson``) on one Proxmox node. ``fio``: the controller's
    ``fio --version`` line, which the template's declared fio must match (None: not checked at plan time)."""

    def __init__(self, spec: FleetSpec, transport: Any, run_dir: str | Path, *, poll: float = 0.1,
                 fio: str | None = None) -> None:
        self.spec = spec
        self.fio = fio
        self.t = transport
        self.node = spec.node
        self.journal = FleetJournal(run_dir)
        self.poll = poll
        st = self.state()
        self.fleet_id = st.header.fleet_id if st.header else uuid.uuid4().hex[:12]
        # where each VM is (the template's node is learnt by plan): every per-VM call goes to its node
        self.vm_nodes: dict[int, str] = {vmid: str(rec.node or self.node) for vmid, rec in st.vms.items()}

    def state(self) -> ProxmoxFleetState:
        """What the journal says the fleet owns now (its records replayed)."""
        return replay(self.journal, ProxmoxFleetState())

    def owned(self) -> ProxmoxFleetState:
        """What the journal says the fleet owns (``stormatrix fleet plan -o``)."""
        return self.state()

    def close(self) -> None:
        close = getattr(self.t, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> "ProxmoxFleet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plain API calls --------------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.t.request("GET", path, params)

    def node_of(self, vmid: int) -> str:
        return self.vm_nodes.get(vmid, self.node)

    def _vm_path(self, vmid: int) -> str:
        return f"/nodes/{self.node_of(vmid)}/qemu/{vmid}"

    def wait_task(self, upid: Any, what: str) -> None:
        if not isinstance(upid, str) or not upid.startswith("UPID:"):
            raise BackendError(f"{what}: Proxmox returned no task id ({upid!r})")
        deadline = time.monotonic() + self.spec.task_timeout
        node = upid.split(":")[1] or self.node  # UPID:<node>:...: a task is read on the node that runs it
        while True:
            st = self._get(f"/nodes/{node}/tasks/{upid}/status") or {}
            if st.get("status") == "stopped":
                exitstatus = str(st.get("exitstatus", ""))
                if exitstatus == "OK" or exitstatus.startswith("WARNINGS"):
                    return
                raise TaskFailed(f"{what} failed: {exitstatus or 'no exit status'}", upid=upid, exitstatus=exitstatus)
            if time.monotonic() > deadline:
                raise TaskFailed(f"{what} (task {upid}) still running after {self.spec.task_timeout:g} s", upid=upid)
            time.sleep(self.poll)

    @property
    def marker(self) -> str:
        """The description every worker carries: how destroy recognises a VM as this fleet's."""
        return f"stormatrix fleet {self.fleet_id}: a benchmark worker; `stormatrix fleet destroy` removes it"

    def config(self, vmid: int) -> dict[str, Any] | None:
        """The VM's config, or None when no VM has that VMID."""
        try:
            return dict(self._get(f"{self._vm_path(vmid)}/config") or {})
        except PveApiError as exc:
            if "does not exist" in exc.message:
                return None
            raise

    def ours(self, conf: dict[str, Any] | None) -> bool:
        return conf is not None and self.fleet_id in str(conf.get("description", ""))

    def record_fio(self, version_line: str) -> str:
        """Declare in the template's description the fio its guests run (``stormatrix fleet template
        --record``): the declaration line set, the rest of the description kept, the write guarded by the
        config's digest. Returns the line. The user's template is changed only on this explicit request."""
        conf = self.config(self.spec.template)
        if conf is None:
            raise MatrixError(self.spec.path, "[fleet] template", f"VM {self.spec.template} does not exist",
                              "give the VMID of the workers' template")
        line = fio_declaration(version_line)
        self.t.request("PUT", f"{self._vm_path(self.spec.template)}/config",
                       {"description": with_declaration(str(conf.get("description") or ""), version_line),
                        **_digest(conf)})
        return line

    # --- plan ------------------------------------------------------------------------------------------
    def plan(self) -> FleetPlan:
        """Everything a deploy needs, checked before anything is created; every problem is listed
        (:func:`.fleetplan.plan_fleet`)."""
        return plan_fleet(self.spec, self.state(), self._get, self.config, self.vm_nodes, node=self.node,
                          fio=self.fio)

    def check(self, plan: FleetPlan) -> None:
        refuse_problems(self.spec.path, plan.problems)

    # --- deploy ----------------------------------------------------------------------------------------
    def deploy(self, *, on_step: Callable[[str, int], None] | None = None) -> list[int]:
        """Clone and configure every worker not yet ready; resumes from the journal. Returns the VMIDs."""
        plan = self.plan()
        self.check(plan)
        s = self.spec
        state = self.state()
        if state.header is None:
            self.journal.append({"type": "fleet", "fleet_id": self.fleet_id, "backend": "proxmox",
                                 "node": self.node, "nodes": sorted(set(plan.placed)), "template": s.template,
                                 "workers": s.workers,
                                 "vmids": plan.vmids, "marker": self.marker})
        step = on_step or (lambda _stage, _vmid: None)
        node_for = dict(zip(plan.vmids, plan.placed))
        todo = [(vmid, name) for vmid, name in zip(plan.vmids, plan.names) if vmid not in state.ready]
        for at in range(0, len(todo), PARALLEL_TASKS):
            chunk = todo[at:at + PARALLEL_TASKS]
            clones: list[tuple[str, Callable[[], Any], Callable[[], None]]] = []
            for vmid, name in chunk:
                conf = self.config(vmid) if vmid in state.vms else None
                if conf is not None and not self.ours(conf):
                    conf = self._wait_unlocked(vmid)
                    if not self.ours(conf):
                        other = (conf or {}).get("name")
                        raise BackendError(f"VMID {vmid} holds a VM this fleet did not create ({other}); it is left "
                                           "alone. Give [fleet] vmids a free range and run again")
                if conf is None:
                    node = node_for[vmid]
                    self.journal.append({"type": "vm", "vmid": vmid, "name": name, "node": node})
                    self.vm_nodes[vmid] = node
                    step("clone", vmid)
                    target = {"target": node} if node != self.node_of(s.template) else {}
                    what = f"clone of template {s.template} as VM {vmid}" + (f" on node {node}" if target else "")
                    clones.append((what,
                                   partial(self.t.request, "POST", f"{self._vm_path(s.template)}/clone",
                                           {"newid": vmid, "name": name, "full": int(s.clone == "full"),
                                            "description": self.marker, **target}),
                                   lambda: None))
            self.run_tasks(clones)
            for vmid, _name in chunk:
                step("configure", vmid)
                conf = self.config(vmid) or {}
                self.t.request("PUT", f"{self._vm_path(vmid)}/config",
                               {"tags": TAG, "cores": s.vcpus, "memory": s.memory_mib, **_digest(conf)})
                self.journal.append({"type": "vm-ready", "vmid": vmid})
        return plan.vmids

    def run_tasks(self, tasks: list[tuple[str, Callable[[], Any], Callable[[], None]]]) -> None:
        """Start each task (``(what, start -> UPID, done)``), at most :data:`PARALLEL_TASKS` at a time, and
        wait for them; ``done`` runs for each that ended OK. Every started task is waited for before the
        first failure is raised, so nothing is left running unseen."""
        for at in range(0, len(tasks), PARALLEL_TASKS):
            started: list[tuple[str, Any, Callable[[], None]]] = []
            failures: list[StormatrixError] = []
            for what, start, done in tasks[at:at + PARALLEL_TASKS]:
                try:
                    started.append((what, start(), done))
                except StormatrixError as exc:
                    failures.append(exc)
                    break
            for what, upid, done in started:
                try:
                    self.wait_task(upid, what)
                    done()
                except StormatrixError as exc:
                    failures.append(exc)
            if failures:
                raise failures[0]

    def _wait_unlocked(self, vmid: int) -> dict[str, Any] | None:
        """A journaled VM still locked by its clone (the harness died while the task ran): wait for it."""
        deadline = time.monotonic() + self.spec.task_timeout
        while True:
            conf = self.config(vmid)
            if conf is None or conf.get("lock") != "clone" or time.monotonic() > deadline:
                return conf
            time.sleep(self.poll)

    # --- a storage's volumes ----------------------------------------------------------------------------
    def disk_option(self, volid: str) -> dict[str, str]:
        """The config keys that attach ``volid`` as the test disk: its drive value, built by the Proxmox
        backend's one builder (:func:`~stormatrix.backends.proxmox.drives.drive_for`), and ``scsihw``.
        ``[fleet] iothread`` (true by default) asks for an iothread where Proxmox gives one (virtio-blk,
        virtio-scsi-single); on any other controller the disk goes without, as it always did."""
        disk = self.spec.disk
        if disk.iothread and not iothread_effective(disk.controller):
            disk = replace(disk, iothread=False)
        out = {self._slot(): print_drive(drive_for(disk, {"file": volid}))}
        scsihw = CONTROLLERS[disk.controller][1]
        if scsihw:
            out["scsihw"] = scsihw
        return out

    def attach(self, storage: str, vmids: list[int], *, on_step: Callable[[str, int], None] | None = None) -> None:
        """Allocate each worker's volume on ``storage`` and attach it (as ``pvesm alloc`` + ``qm set``)."""
        step = on_step or (lambda _stage, _vmid: None)
        index = self.spec.storages.index(storage) + 1 if storage in self.spec.storages else 9
        state = self.state()
        for vmid in vmids:
            filename = f"vm-{vmid}-disk-smx{index}"
            vol = state.volumes.get((storage, filename))
            if vol is None or vol.volid is None:
                if vol is None:
                    self.journal.append({"type": "volume", "storage": storage, "vmid": vmid, "filename": filename})
                    existing = None
                else:
                    existing = self._find_volume(storage, vmid, filename)
                step("allocate", vmid)
                volid = existing or str(self.t.request(
                    "POST", f"/nodes/{self.node_of(vmid)}/storage/{storage}/content",
                    {"vmid": vmid, "filename": filename, "size": f"{self.spec.disk_size // 2**20}M"}))
                self.journal.append({"type": "volume-made", "storage": storage, "filename": filename, "volid": volid})
                vol = OwnedVolume(storage, vmid, filename, volid)
            if vol.attached:
                continue
            step("attach", vmid)
            conf = self.config(vmid) or {}
            assert vol.volid is not None
            self.t.request("PUT", f"{self._vm_path(vmid)}/config",
                           {**self.disk_option(vol.volid), **_digest(conf)})
            self.journal.append({"type": "attached", "vmid": vmid, "slot": self._slot(), "volid": vol.volid})

    def _slot(self) -> str:
        return f"{CONTROLLERS[self.spec.disk.controller][0]}{TEST_SLOT}"

    def _find_volume(self, storage: str, vmid: int, filename: str) -> str | None:
        """The volume an interrupted allocation may have made (its name starts with ``filename``)."""
        for item in self._get(f"/nodes/{self.node_of(vmid)}/storage/{storage}/content", {"vmid": vmid}) or []:
            volid = str(item.get("volid", ""))
            name = volid.partition(":")[2].rpartition("/")[2]
            if name == filename or name.startswith(filename + "."):
                return volid
        return None

    def detach(self, storage: str | None = None, *, on_step: Callable[[str, int], None] | None = None) -> None:
        """Detach and free every journaled volume (of ``storage``, or all) that is not gone yet."""
        step = on_step or (lambda _stage, _vmid: None)
        # (storage, node) -> its volumes now: one listing per storage and node, not per volume
        present: dict[tuple[str, str], set[str]] = {}
        for vol in self.state().live_volumes():
            if storage is not None and vol.storage != storage:
                continue
            node = self.node_of(vol.vmid)
            if (vol.storage, node) not in present:
                present[vol.storage, node] = {str(item.get("volid")) for item in
                                              self._get(f"/nodes/{node}/storage/{vol.storage}/content") or []}
            volid = vol.volid or self._find_volume(vol.storage, vol.vmid, vol.filename)
            conf = self.config(vol.vmid)
            if volid is not None and self.ours(conf):
                assert conf is not None
                slot = next((k for k, v in conf.items()
                             if str(v).split(",")[0] == volid and not k.startswith("unused")), None)
                if slot is not None:
                    step("detach", vol.vmid)
                    self.t.request("PUT", f"{self._vm_path(vol.vmid)}/config", {"delete": slot, **_digest(conf)})
                    self.journal.append({"type": "detached", "vmid": vol.vmid, "slot": slot, "volid": volid})
            if volid is not None and volid in present[vol.storage, node]:
                step("free", vol.vmid)
                upid = self.t.request("DELETE", f"/nodes/{node}/storage/{vol.storage}/content/{volid}")
                if upid:
                    self.wait_task(upid, f"freeing volume {volid}")
            self.journal.append({"type": "gone", "kind": "volume", "volid": volid, "storage": vol.storage,
                                 "filename": vol.filename})

    # --- power ------------------------------------------------------------------------------------------
    def power_cycle(self, vmids: list[int], *, agent_timeout: float = 300.0,
                    actions: tuple[str, ...] = ("stop", "start")) -> None:
        """Stop, then start every worker (so the attached disk takes effect), then wait for each agent.
        ``actions=("start",)`` only starts the workers that are not running."""
        for action in actions:
            upids = []
            for vmid in vmids:
                st = self._get(f"{self._vm_path(vmid)}/status/current") or {}
                if (st.get("status") == "running") == (action == "start"):
                    continue
                upids.append((vmid, self.t.request("POST", f"{self._vm_path(vmid)}/status/{action}")))
            for vmid, upid in upids:
                self.wait_task(upid, f"{action} of VM {vmid}")
        deadline = time.monotonic() + agent_timeout
        for vmid in vmids:
            while True:
                try:
                    self.t.request("POST", f"{self._vm_path(vmid)}/agent/ping")
                    break
                except PveApiError as exc:
                    if time.monotonic() > deadline:
                        raise BackendError(f"VM {vmid}: the guest agent did not answer within {agent_timeout:g} s "
                                           f"after the start ({exc.message})") from None
                    time.sleep(self.poll)

    # --- the guests ------------------------------------------------------------------------------------
    def guest_exec(self, vmids: list[int], command: list[str], *, timeout: float = 60.0) -> dict[int, dict[str, Any]]:
        """Run ``command`` in every worker's guest through its QEMU guest agent (``POST .../agent/exec``, then
        ``GET .../agent/exec-status`` until it exited), all started before any is waited for. vmid -> the
        exec-status answer (``exitcode``, ``out-data``, ``err-data``), or ``{"error": why}``."""
        pids: dict[int, int] = {}
        out: dict[int, dict[str, Any]] = {}
        for vmid in vmids:
            try:
                answer = self.t.request("POST", f"{self._vm_path(vmid)}/agent/exec", {"command": list(command)})
                pids[vmid] = int((answer or {})["pid"])
            except PveApiError as exc:
                out[vmid] = {"error": exc.message}
            except (KeyError, TypeError, ValueError):
                out[vmid] = {"error": f"the agent answered {answer!r}, not a pid"}
        deadline = time.monotonic() + timeout
        for vmid, pid in pids.items():
            while True:
                try:
                    st = dict(self._get(f"{self._vm_path(vmid)}/agent/exec-status", {"pid": pid}) or {})
                except PveApiError as exc:
                    out[vmid] = {"error": exc.message}
                    break
                if st.get("exited"):
                    out[vmid] = st
                    break
                if time.monotonic() > deadline:
                    out[vmid] = {"error": f"{' '.join(command)} still running after {timeout:g} s"}
                    break
                time.sleep(self.poll)
        return out

    def check_fio_versions(self, vmids: list[int], want: str | None) -> dict[int, str]:
        """The fio each worker's guest runs (``fio --version`` through the agent) must be the controller's
        (``want``): client and server speak one protocol version (docs/fio-server.md). Every worker is
        asked; any mismatch or failure is one MatrixError (exit 2) naming each worker and the fix, raised
        before the first point. Returns vmid -> version."""
        found: dict[int, str] = {}
        problems: list[str] = []
        for vmid, st in self.guest_exec(vmids, ["fio", "--version"]).items():
            version = str(st.get("out-data") or "").strip().splitlines()[:1]
            if "error" in st:
                problems.append(f"VM {vmid}: `fio --version` through the guest agent failed: {st['error']}")
            elif st.get("exitcode") != 0 or not version:
                problems.append(f"VM {vmid}: `fio --version` exited with {st.get('exitcode')} "
                                f"({str(st.get('err-data') or '').strip()[:200] or 'no output'})")
            else:
                found[vmid] = version[0]
                if want is not None and version[0] != want:
                    problems.append(f"VM {vmid} runs {version[0]}, the controller {want}")
        refuse_fio_versions(self.spec.path, self.spec.template, want, problems)
        return found

    # --- destroy ----------------------------------------------------------------------------------------
    def destroy(self, *, on_step: Callable[[str, int], None] | None = None) -> ProxmoxFleetState:
        """Free the journal's volumes, then stop and destroy the journal's VMs that carry this fleet's
        marker. A journaled VMID without the marker is reported and left alone. Returns what is left."""
        step = on_step or (lambda _stage, _vmid: None)
        self.detach(on_step=on_step)
        mine: list[int] = []
        for vmid in self.state().live_vms():
            conf = self._wait_unlocked(vmid)
            if conf is None:
                self.journal.append({"type": "gone", "kind": "vm", "vmid": vmid})
            elif not self.ours(conf):
                log.warning("VMID %d (%s) does not carry this fleet's marker: not ours, left alone", vmid,
                            conf.get("name", "?"))
                self.journal.append({"type": "gone", "kind": "vm", "vmid": vmid, "note": "not ours: left alone"})
            else:
                mine.append(vmid)
        stops: list[tuple[str, Callable[[], Any], Callable[[], None]]] = []
        for vmid in mine:
            if (self._get(f"{self._vm_path(vmid)}/status/current") or {}).get("status") == "running":
                step("stop", vmid)
                stop = partial(self.t.request, "POST", f"{self._vm_path(vmid)}/status/stop")
                stops.append((f"stop of VM {vmid}", stop, lambda: None))
        self.run_tasks(stops)
        destroys: list[tuple[str, Callable[[], Any], Callable[[], None]]] = []
        for vmid in mine:
            step("destroy", vmid)
            destroys.append((f"destroy of VM {vmid}",
                             partial(self.t.request, "DELETE", self._vm_path(vmid),
                                     {"destroy-unreferenced-disks": 1, "purge": 1}),
                             partial(self.journal.append, {"type": "gone", "kind": "vm", "vmid": vmid})))
        self.run_tasks(destroys)
        return self.state()
