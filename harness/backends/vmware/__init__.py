"""The ``vmware`` backend: ESXi through VMware PowerCLI, run by ``pwsh`` (``windows/StormatrixVMware``) on the
controller workstation.

- :mod:`.backend` — :class:`~.backend.VmwareBackend`, the cell's lifecycle and restore, the class the registry names;
- :mod:`.settings` — the ``[vmware]`` section and its credentials by reference;
- :mod:`.pwsh` — the one pwsh call: request and response JSON, errors mapped from PowerCLI's;
- :mod:`.cpu` — the host CPU collectors: vSphere's realtime statistics, or ``esxtop -b`` on the host over ssh.

Nothing is imported here: the registry loads :mod:`.backend` when a run uses it, and reading a matrix
needs only :mod:`.settings`.
"""
