"""The ``qemu`` backend: local QEMU under software emulation with the devices Proxmox would create, booting
the tiny Linux guest (the embedded default of ``make demo`` and the tests).

One module per job:

- :mod:`.backend` — :class:`~.backend.QemuBackend`, the ``[qemu]`` section and a cell's lifecycle (booting or
  restoring the VM, booting the next ones ahead, readiness), the one class the registry names;
- :mod:`.devices` — the test disk's ``-device``/``-drive`` arguments as qemu-server writes them;
- :mod:`.vm` — one QEMU process: its command line, start, QMP, threads, stop, and its test disk images;
- :mod:`.state` — the cache of saved booted states a configuration's VM is restored from;
- :mod:`.pinning` — pinning QEMU's threads for the measurement window.

The demo suite's local guests are :mod:`stormatrix.backends.qemu_suite` (they sit in the suite layer).
Nothing is imported here: the registry loads :mod:`.backend` when a run uses it.
"""
