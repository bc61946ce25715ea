"""Guest executors: how a workload runs inside the guest and how its result comes back.

The interface is :class:`stormatrix.executors.base.GuestExecutor`; the list of executors a matrix can
name is :data:`stormatrix.registry.EXECUTORS` (one explicit dict; nothing registers itself on import).
"""
