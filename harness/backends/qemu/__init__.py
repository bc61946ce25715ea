"""The ``qemu`` backend: local QEMU under software emulation with the devices Proxmox would create, booting
the tiny Linux guest (the embedded default of ``make demo`` and the tests).

One module per job:

- :mod:`.backend` — :class:`~.backend.QemuBackend`, the ``[qemu]`` section and a cell's lifecycle (booting or
  restoring the VM, booting the next ones ahead, readiness), the one class the registry names;
- :mod:`.devices` — the test disk's ``-device``/``-drive`` arguments as qemu-server writes them;
- :mod:`.vm` — one QEMU process: its command line, start, QMP, threads, stop;
- :mod:`.testdisks` — the raw test-disk images, cached per size and claimed by one run at a time;
- :mod:`.state` — the cache of saved booted states a configuration's VM is restored from;
- :mod:`.pinning` — pinning QEMU's threads for the measurement window.

The local fleet (``[fleet] backend = "qemu"`` in a suite file; ``stormatrix demo --suite``), reached only through
:data:`stormatrix.registry.FLEET_SUITES`:

- :mod:`.fleet` — its ``[fleet]`` section, its plan, and what it creates (volumes, storage servers, workers),
  journaled and removed;
- :mod:`.fleetstate` — what its journal says it owns (its records, typed, replayed);
- :mod:`.storages` — the storages under test on loopback: tgtd iSCSI opened by QEMU's libiscsi,
  qemu-storage-daemon NBD, plain files;
- :mod:`.guests` — one side's workers, server-mode QEMU guests (the suite layer: it reads the guest's READY line
  and probes fio servers);
- :mod:`.fleetsuite` — the suite on it, each storage a side, then the comparison workbook (the run loop's layer).

Nothing is imported here: the registry loads :mod:`.backend` when a run uses it, :mod:`.fleetsuite` when a
suite's fleet is local.
"""
