"""The fleet on VMware ESXi / vCenter: plan, deploy, attach a datastore's test disks, power-cycle, detach, destroy.

The same stages as :mod:`stormatrix.backends.proxmox.fleet`, through the StormatrixVMware module (PowerCLI) run
by ``pwsh`` the way the ``vmware`` backend runs it (:class:`~stormatrix.backends.vmware.pwsh.PwshRunner`: one
process per call, one JSON request, nothing spliced into script text):

- plan: ``Get-StormatrixVMwareFleetTarget`` (the template is a template, the host and datastores exist, each
  datastore is accessible and has room, no worker name is taken by a VM that is not this fleet's);
- deploy: ``New-StormatrixVMwareFleet`` (``New-VM -Template`` per worker, annotated with the fleet's id);
- a storage under test is a **datastore**: ``Add-StormatrixVMwareFleetDisk`` (``New-HardDisk -Datastore`` on a
  controller of ``[fleet] controller``), ``Remove-StormatrixVMwareFleetDisk`` (``Remove-HardDisk
  -DeletePermanently``);
- ``Restart-StormatrixVMwareFleet`` (Stop-VM, Start-VM, VMware Tools, each guest's IPv4 address);
- destroy: ``Remove-StormatrixVMwareFleet`` (``Remove-VM -DeletePermanently``).

Ownership (issue 24): the journal (``fleet.ndjson``, :class:`stormatrix.fleet.journal.FleetJournal`'s file
discipline) gets every worker's name before its clone is requested and every disk (VM, datastore) before it is
created; the module writes one object per VM or disk the moment it exists, and each is journaled as it arrives
(:meth:`PwshRunner.call`'s ``on_item``). Removal goes by the journal: VMs by id, or by exact name when a crash
kept the id from the journal, and the module touches only VMs whose annotation names this fleet's id.

The records of the journal are :mod:`.fleetstate`'s; the ``[fleet]`` and ``[vmware]`` it reads, :mod:`.fleetspec`'s.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ... import secrets
from ...core.errors import InputError, MatrixError
from ...fleet.journal import FleetJournal
from ...fleet.records import replay
from ...fleet.spec import refuse_fio_versions, refuse_problems
from ...fleet.template import fio_declaration, fio_declaration_note, fio_declaration_problem
from .fleetspec import STORAGE_FORMATS, VmwareFleetSpec
from .fleetstate import VmwareFleetState
from .pwsh import PwshRunner
from .settings import CONTROLLER_TYPES

log = logging.getLogger("stormatrix.fleet")

#: the variable of pwsh's own environment that carries a guest password read from [fleet] guest_password_file
GUEST_FILE_VARIABLE = "STORMATRIX_GUEST_PASSWORD_FROM_FILE"


# --- the plan ---------------------------------------------------------------------------------------------

@dataclass
class VmwareFleetPlan:
    template: str
    vmhost: str
    names: list[str]
    storages: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    fio: str = ""  # what the template's Notes declare about its fio (template.fio_declaration_note)

    def describe(self) -> list[str]:
        lines = [f"ESXi host {self.vmhost}: {len(self.names)} workers cloned from template {self.template}",
                 "  " + ", ".join(self.names)]
        if self.fio:
            lines.append(f"  fio: {self.fio}")
        for s in self.storages:
            lines.append(f"  datastore {s['storage']} ({s.get('type') or '?'}): needs {s['needed'] / 2**30:.1f} GiB, "
                         f"{s.get('avail', 0) / 2**30:.1f} GiB free")
        return lines


class VmwareFleet:
    """One fleet (one run directory's ``fleet.ndjson``) on one vCenter or ESXi host. ``fio``: the controller's
    ``fio --version`` line, which the fio the template's Notes declare must match (None: not checked at plan)."""

    backend = "vmware"

    def __init__(self, spec: VmwareFleetSpec, runner: PwshRunner, run_dir: str | Path, *,
                 fio: str | None = None) -> None:
        self.spec = spec
        self.fio = fio
        self.runner = runner
        self.journal = FleetJournal(run_dir)
        st = self.state()
        if st.header is not None and st.header.backend != "vmware":
            raise MatrixError(str(self.journal.path), "fleet",
                              f"was deployed on {st.header.backend}, not vmware",
                              "use the run directory of this fleet, or a new one")
        self.fleet_id = st.header.fleet_id if st.header else uuid.uuid4().hex[:12]

    def state(self) -> VmwareFleetState:
        return replay(self.journal, VmwareFleetState())

    def record_fio(self, version_line: str) -> str:
        """``stormatrix fleet template --record``: a vSphere template declares its fio in its Notes, which this
        fleet does not write (the user's template is not changed)."""
        raise MatrixError(self.spec.path, "[fleet] backend", "is \"vmware\": --record writes a Proxmox template's "
                          "description only", f"add the line {fio_declaration(version_line)!r} to the Notes of the "
                          f"vSphere template {self.spec.template}; plan then reads it")

    def owned(self) -> VmwareFleetState:
        """What the journal says the fleet owns (``stormatrix fleet plan -o``)."""
        return self.state()

    def close(self) -> None:
        """Nothing to close: each module call is a pwsh process of its own (the same interface as the
        Proxmox fleet's, whose transport holds a session)."""

    def __enter__(self) -> "VmwareFleet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, command: str, parameters: dict[str, Any],
              on_item: Callable[[dict[str, Any]], None] | None = None) -> Any:
        return self.runner.call(command, parameters, on_item=on_item)

    # --- plan ------------------------------------------------------------------------------------------
    def plan(self) -> VmwareFleetPlan:
        s = self.spec
        names = s.names()
        t = self._call("Get-StormatrixVMwareFleetTarget", {"Template": s.template, "VMHost": s.vmhost,
                                                           "Datastore": list(s.storages), "Name": names,
                                                           "RunId": self.fleet_id}) or {}
        problems: list[tuple[str, str]] = []
        tpl = t.get("Template") or {}
        if not tpl.get("IsTemplate"):
            problems.append(("template", str(tpl.get("Problem") or f"template {s.template!r} not found")
                             + "; give the name of a vSphere template (a Linux image with VMware Tools and fio)"))
        fio_note = ""
        if tpl.get("IsTemplate"):
            where = f"template {s.template}"
            fio_problem = fio_declaration_problem(where, tpl.get("Notes"), self.fio, where="Notes")
            if fio_problem:
                problems.append(("template", f"{fio_problem} (on ESXi the declaration is a line of the "
                                 "template's Notes, edited in the vSphere Client)"))
            fio_note = fio_declaration_note(where, tpl.get("Notes"), self.fio, where="Notes")
        esx = t.get("Host") or {}
        if not esx.get("Found"):
            problems.append(("vmhost", str(esx.get("Problem") or f"ESXi host {s.vmhost!r} not found")))
        plan = VmwareFleetPlan(s.template, s.vmhost, names, fio=fio_note)
        needed = s.workers * s.disk_size
        for ds in t.get("Datastores") or []:
            name = str(ds.get("Name"))
            if not ds.get("Found"):
                problems.append(("storages", f"datastore {name!r}: {ds.get('Problem') or 'not found'}"))
                continue
            avail = int(float(ds.get("FreeSpaceGB") or 0) * 2**30)
            plan.storages.append({"storage": name, "type": ds.get("Type"), "avail": avail, "needed": needed})
            if not ds.get("Accessible"):
                problems.append(("storages", f"datastore {name} is not accessible from vCenter (unmounted, or its "
                                             "storage is down)"))
            elif avail < needed and s.storage_format != "thin":
                problems.append(("storages", f"datastore {name} has {avail / 2**30:.1f} GiB free, the fleet's "
                                             f"{s.storage_format} disks need {needed / 2**30:.1f} GiB ({s.workers} x "
                                             f"{s.disk_size / 2**30:g} GiB); free space, or lower workers or "
                                             "disk_size"))
        clash = [str(x.get("Name")) for x in t.get("Taken") or [] if not x.get("Ours")]
        if clash:
            problems.append(("name_prefix", f"VMs named {', '.join(clash)} exist and are not this fleet's; choose "
                                            "another name_prefix (nothing is ever removed by name alone)"))
        plan.problems = problems
        return plan

    def check(self, plan: VmwareFleetPlan) -> None:
        refuse_problems(self.spec.path, plan.problems)

    @property
    def marker(self) -> str:
        """The annotation every worker carries (the module writes it from the run id)."""
        return f"stormatrix fleet {self.fleet_id}: a benchmark worker; `stormatrix fleet destroy` removes it"

    # --- deploy ----------------------------------------------------------------------------------------
    def deploy(self, *, on_step: Callable[[str, str], None] | None = None) -> list[str]:
        """Clone and configure every worker not yet ready; resumes from the journal. Returns the VM ids."""
        s = self.spec
        step = on_step or (lambda _stage, _name: None)
        st = self.state()
        if st.header is None:
            self.check(self.plan())
            self.journal.append({"type": "fleet", "fleet_id": self.fleet_id, "backend": "vmware",
                                 "server": s.vmware.get("server"), "template": s.template, "vmhost": s.vmhost,
                                 "workers": s.workers, "names": s.names(), "marker": self.marker})
        header = self.state().header
        names = header.names if header is not None and header.names is not None else s.names()
        pending = [n for n in names if not (n in st.vms and st.vms[n].ready)]
        if pending:
            for name in pending:
                if name not in st.vms:
                    self.journal.append({"type": "esx-vm", "name": name})

            def made(item: dict[str, Any]) -> None:
                if item.get("Stage") == "Created":
                    self.journal.append({"type": "esx-vm-made", "name": item["Name"], "id": item["Id"],
                                         "disks": list(item.get("Disks") or [])})
                    step("clone", str(item["Name"]))
                elif item.get("Stage") == "Configured":
                    self.journal.append({"type": "esx-vm-ready", "name": item["Name"], "id": item["Id"]})

            self._call("New-StormatrixVMwareFleet", {
                "Name": pending, "Template": s.template, "VMHost": s.vmhost, "Datastore": s.vm_datastore,
                "RunId": self.fleet_id, "NumCpu": s.vcpus, "MemoryGB": round(s.memory_mib / 1024, 3),
                "Parallel": s.parallel}, on_item=made)
        st = self.state()
        return [str(st.vms[n].id) for n in names]

    # --- a datastore's test disks ---------------------------------------------------------------------
    def attach(self, storage: str, vmids: list[str], *, on_step: Callable[[str, str], None] | None = None) -> None:
        """Create each worker's test disk on datastore ``storage`` on a controller of ``[fleet] controller``."""
        step = on_step or (lambda _stage, _vm: None)
        st = self.state()
        by_id = {v.id: v for v in st.vms.values() if v.id}
        todo = []
        for vmid in vmids:
            vm = by_id[vmid]
            disk = st.disks.get((vm.name, storage))
            if disk is not None and disk.attached:
                continue
            if disk is None:
                self.journal.append({"type": "esx-disk", "vm": vm.name, "id": vmid, "datastore": storage})
            todo.append(vmid)
        if not todo:
            return
        names = {v.id: v.name for v in st.vms.values()}

        def made(item: dict[str, Any]) -> None:
            vm = names.get(str(item.get("VMId")), str(item.get("VMName")))
            kind = "esx-disk-attached" if item.get("Stage") == "Attached" else "esx-disk-made"
            self.journal.append({"type": kind, "vm": vm, "datastore": storage, "filename": item.get("Filename")})
            step("attach" if kind == "esx-disk-attached" else "allocate", vm)

        self._call("Add-StormatrixVMwareFleetDisk", {
            "VMId": todo, "RunId": self.fleet_id, "Datastore": storage,
            "CapacityGB": round(self.spec.disk_size / 2**30, 6),
            "ControllerType": CONTROLLER_TYPES[self.spec.controller],
            "StorageFormat": STORAGE_FORMATS[self.spec.storage_format], "BaseFilename": st.base_files()}, on_item=made)

    def detach(self, storage: str | None = None, *, on_step: Callable[[str, str], None] | None = None) -> None:
        """Remove every journaled test disk (on ``storage``, or all) that is not gone yet."""
        step = on_step or (lambda _stage, _vm: None)
        st = self.state()
        stores = sorted({d.datastore for d in st.disks.values() if storage is None or d.datastore == storage})
        for ds in stores:
            disks = [d for d in st.disks.values() if d.datastore == ds]

            def gone(item: dict[str, Any], ds: str = ds) -> None:
                vm = next((d.vm for d in disks if d.id == item.get("VMId")), None)
                if vm is None:
                    return
                if item.get("State") == "NotOurs":
                    log.warning("VM %s (%s) does not carry this fleet's annotation: its disks are left alone",
                                vm, item.get("VMId"))
                self.journal.append({"type": "esx-gone", "kind": "disk", "vm": vm, "datastore": ds,
                                     "filename": item.get("Filename"), "state": item.get("State")})
                step("free", vm)

            self._call("Remove-StormatrixVMwareFleetDisk", {
                "VMId": sorted({d.id for d in disks}), "RunId": self.fleet_id, "Datastore": ds,
                "BaseFilename": st.base_files()}, on_item=gone)
            # the module removed every test disk these VMs had on the datastore: a journaled disk it did not
            # report never came to exist (its creation was cut short before vSphere made it)
            left = self.state()
            for d in disks:
                if (d.vm, ds) in left.disks:
                    self.journal.append({"type": "esx-gone", "kind": "disk", "vm": d.vm, "datastore": ds,
                                         "filename": d.filename, "state": "None"})

    # --- power ------------------------------------------------------------------------------------------
    def power_cycle(self, vmids: list[str]) -> list[dict[str, Any]]:
        """Stop, then start every worker, wait for VMware Tools and each guest's address: ``[{Name, Id,
        IPAddress}]`` in ``vmids``' order."""
        ready: list[dict[str, Any]] = []
        self._call("Restart-StormatrixVMwareFleet", {"VMId": list(vmids), "RunId": self.fleet_id,
                                                     "ReadyTimeoutSeconds": int(self.spec.ready_timeout)},
                   on_item=ready.append)
        return ready

    # --- fio in the workers -----------------------------------------------------------------------------
    def guest_credentials(self) -> dict[str, str]:
        """The module's guest-account parameters (variable NAMES): the user's variable must be set and the
        password readable, checked before anything is created (exit 2, by name only). A password read from
        a file goes to pwsh's environment only, registered for scrubbing (:func:`stormatrix.secrets.resolve`)."""
        s = self.spec
        if not os.environ.get(s.guest_user_env):
            raise InputError(f"{s.path}: [fleet] guest_user_env: environment variable {s.guest_user_env} (the "
                             "workers' guest account, which runs `fio --version` in each of them) is not set; set it "
                             "in the shell that runs stormatrix")
        assert s.guest_password is not None
        password = secrets.resolve(s.guest_password, strip=False)
        variable = s.guest_password.env
        if not variable:
            self.runner.child_env[GUEST_FILE_VARIABLE] = password.reveal()
            variable = GUEST_FILE_VARIABLE
        return {"GuestUserVariable": s.guest_user_env, "GuestPasswordVariable": variable}

    def check_fio_versions(self, vmids: list[str], want: str | None) -> dict[str, str]:
        """The fio each worker's guest runs (``fio --version`` through VMware Tools guest operations,
        ``Get-StormatrixVMwareFleetFioVersion``) must be the controller's (``want``). Every worker is asked;
        any mismatch or failure is one MatrixError (exit 2) naming each worker and the fix, raised before the
        first point. Returns VM name -> version.

        A check that passed is journaled (``esx-fio``: the controller's version, the VM ids, each one's fio):
        a rerun after a crash, with the same workers and the same controller fio, takes it from the journal
        instead of asking every guest again (a power cycle does not change a guest's fio)."""
        for rec in self.state().fio_checks:
            if rec.controller == want and rec.vms == sorted(vmids):
                return dict(rec.versions)
        found: dict[str, str] = {}
        problems: list[str] = []
        answers = self._call("Get-StormatrixVMwareFleetFioVersion",
                             {"VMId": list(vmids), "RunId": self.fleet_id, **self.guest_credentials()}) or []
        answers = answers if isinstance(answers, list) else [answers]
        refused = [str(a.get("Name")) for a in answers if "authenticate" in str(a.get("Problem") or "")]
        if refused:
            raise MatrixError(self.spec.path, "[fleet] guest_user_env",
                              f"the guests of {', '.join(refused)} refused the account in {self.spec.guest_user_env} "
                              "(VMware Tools: 'Failed to authenticate with the guest operating system')",
                              f"set {self.spec.guest_user_env} and the guest password to an account of template "
                              f"{self.spec.template}'s image; nothing was measured")
        for a in answers:
            name, version = str(a.get("Name")), a.get("Version")
            if a.get("Problem") or not version:
                problems.append(f"VM {name}: {a.get('Problem') or 'fio --version printed nothing'}")
                continue
            found[name] = str(version)
            if want is not None and version != want:
                problems.append(f"VM {name} runs {version}, the controller {want}")
        refuse_fio_versions(self.spec.path, self.spec.template, want, problems)
        self.journal.append({"type": "esx-fio", "controller": want, "vms": sorted(vmids), "versions": found})
        return found

    # --- destroy ----------------------------------------------------------------------------------------
    def destroy(self, *, on_step: Callable[[str, str], None] | None = None) -> VmwareFleetState:
        """Remove the journal's VMs (by id, or by exact name when only the name was journaled) that carry
        this fleet's annotation, their disks with them. A VM without it is reported and left alone."""
        step = on_step or (lambda _stage, _name: None)
        st = self.state()
        if not st.vms:
            return st
        by_id = {v.id: v.name for v in st.vms.values() if v.id}
        by_name = [v.name for v in st.vms.values() if not v.id]

        def gone(item: dict[str, Any]) -> None:
            name = by_id.get(str(item.get("Id"))) if item.get("Id") in by_id else item.get("Name")
            if name not in st.vms:
                return
            if item.get("State") == "NotOurs":
                log.warning("%s (%s) does not carry this fleet's annotation: not ours, left alone", name,
                            item.get("Id"))
            self.journal.append({"type": "esx-gone", "kind": "vm", "name": name, "id": item.get("Id"),
                                 "state": item.get("State")})
            step("destroy", str(name))

        self._call("Remove-StormatrixVMwareFleet", {"VMId": sorted(by_id), "VMName": by_name, "RunId": self.fleet_id},
                   on_item=gone)
        return self.state()
