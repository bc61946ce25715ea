"""The ``proxmox`` backend: one VM of a Proxmox VE node, its test disk reconfigured per cell.

One module per job:

- :mod:`.backend` — :class:`~.backend.ProxmoxBackend`, the cell's lifecycle on the VM (prepare, apply,
  restart, readiness, restore), the one class the registry names;
- :mod:`.restart` — applying a cell on the VM: digest-guarded writes, the restart tasks, the checks after them,
  the wait for the guest;
- :mod:`.measure` — what is measured on the running VM: its QEMU threads, block counters, endpoints, the host
  collector;
- :mod:`.settings` — the ``[proxmox]`` section, its cross-key checks and the transport it describes;
- :mod:`.api` — the API client (REST through proxmoxer, or ``pvesh`` on the node), tasks, digests;
- :mod:`.drives`, :mod:`.storage`, :mod:`.change`, :mod:`.sharing` — the VM config as data: drive
  property strings, what the storage under the disk decides, the minimal change of a cell and the way
  back, which other disks share the test disk's controller;
- :mod:`.cmdline` — the test disk as QEMU really gets it (``qm showcmd``, ``/proc/<pid>/cmdline``);
- :mod:`.node` — the node as a machine: commands there, the host collector's files, CPUs, pinning, and
  QEMU's human monitor read through the API;
- :mod:`.restore` — putting the VM back, at the end of a run or from a journal after a crash.

What the platform offers a comparison suite (layered above the backends: they are suite and run-loop code):

- :mod:`.vms` — a suite's VM list (``[suite] vms``): guest addresses from the QEMU guest agent;
  :class:`~.vms.ProxmoxVmGuests` is the side's guests;
- :mod:`.vmcollector` — the host collector over those VMs' QEMU processes (here, or over ssh on the node);
- :mod:`.fleetspec` — the ``[fleet]`` of a Proxmox fleet and the suite's ``[proxmox]`` (connection keys only);
- :mod:`.fleetplan` — a fleet's plan: the template, the VMIDs and the storages' room, checked before a deploy;
- :mod:`.fleetstate` — what that fleet's journal says it owns (its records, typed, replayed);
- :mod:`.fleet` — :class:`~.fleet.ProxmoxFleet`: plan, deploy by clone, attach a storage's volumes,
  power-cycle, detach and free, destroy exactly what its journal owns;
- :mod:`.fleetsuite` — :class:`~.fleetsuite.ProxmoxFleetSuite`: a suite on that fleet, each storage a side.

Nothing is imported here: the registry loads :mod:`.backend` (:mod:`.vms`, :mod:`.fleetsuite`) when a run
(a suite, a fleet) uses it, and reading a matrix needs only :mod:`.settings`.
"""
