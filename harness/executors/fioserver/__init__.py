"""The ``fio-server`` executor: one fio client driving the fio servers of many guests at once (a suite's
points, a fleet's workers).

- :mod:`.executor` — :class:`~.executor.FioServerExecutor`, the class the registry names;
- :mod:`.inputs` — the typed inputs (guests, jobs); :mod:`.client` — finding fio, its arguments, the client process;
- :mod:`.probe` — probing the servers until they answer; :mod:`.parse` — reading the client's JSON per guest.

Nothing is imported here: the registry loads :mod:`.executor` when a run uses it.
"""
