"""The ``winrm`` executor: PowerShell scripts sent to a Windows guest over WinRM.

- :mod:`.executor` — :class:`~.executor.WinRMExecutor`, what a cell asks of the guest, the class the registry names;
- :mod:`.settings` — the ``[winrm]`` section; :mod:`.channel` — the WinRM session and its errors;
- :mod:`.encoding` — scripts and files encoded for the wire; :mod:`.parse` — the ``##stormatrix:`` output protocol;
- :mod:`.testdisk` — what the guest's facts say about the test disk: is it there, and if not, why.

Nothing is imported here: the registry loads :mod:`.executor` when a run uses it.
"""
