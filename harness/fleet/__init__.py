"""The worker fleet: the VMs a comparison suite runs on, and the storages under test they attach.

The seeds' comparisons (``000_*``, ``003_*``) run the same grid on many worker VMs, once per storage
(or platform), and compare the sides. This package owns what the suite needs around the workers:

- :mod:`.template`: what a worker's guest needs (cloud-init user-data installing fio and a
  ``fio --server`` unit), and the fio a template declares;
- :mod:`.journal`: ``fleet.ndjson``, what a run owns, written down before it is created;
- :mod:`.records`: its records, typed (each platform declares its kinds in its backend's ``fleetstate.py``), and
  :func:`~.records.replay`, the one loop every platform's fleet state is built by;
- :mod:`.spec`: what every platform's ``[fleet]`` shares (worker limits, name prefix, a plan's refusals);
- :mod:`.interface`: the :class:`~.interface.Fleet` and fleet-suite protocols the registry hands out, typed;
- :mod:`.suiterun`: :class:`~.suiterun.FleetSuite`, the stages every platform's fleet suite shares.

Only what knows no platform is here: each platform's fleet (its ``[fleet]`` keys, its deploy and removal, its
fleet suite) is in its backend's package (:mod:`stormatrix.backends.proxmox`, :mod:`stormatrix.backends.vmware`,
:mod:`stormatrix.backends.qemu`: the local fleet and its storages on loopback),
named in :data:`stormatrix.registry.FLEET_SUITES`.
"""
