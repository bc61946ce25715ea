"""The ``vmware`` backend: ESXi through VMware PowerCLI, run by ``pwsh`` (``windows/StormatrixVMware``) on the
controller workstation.

- :mod:`.backend` — :class:`~.backend.VmwareBackend`, the cell's lifecycle and restore, the class the registry names;
- :mod:`.settings` — the ``[vmware]`` section and its credentials by reference;
- :mod:`.pwsh` — the one pwsh call: request and response JSON, errors mapped from PowerCLI's;
- :mod:`.cpu` — the host CPU collectors: vSphere's realtime statistics, or ``esxtop -b`` on the host over ssh;
- :mod:`.fleetspec` — a comparison suite's workers on ESXi (``[fleet] backend = "vmware"``): its ``[fleet]`` and
  ``[vmware]`` connection keys, validated, and the pwsh runner of that connection;
- :mod:`.fleetstate` — what that fleet's journal says it owns (its records, typed, replayed);
- :mod:`.fleet` — :class:`~.fleet.VmwareFleet`: plan, clone from a vSphere template, a test disk per datastore,
  power cycle, remove exactly what its journal owns;
- :mod:`.fleetsuite` — :class:`~.fleetsuite.VmwareFleetSuite`: a suite on that fleet, each datastore a side.

Nothing is imported here: the registry loads :mod:`.backend` (:mod:`.fleetsuite`) when a run (a fleet suite)
uses it, and reading a matrix needs only :mod:`.settings`.
"""
