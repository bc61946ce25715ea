"""Hypervisor backends: how a test disk is attached and the VM restarted so that it takes effect.

The interface is :class:`stormatrix.backends.base.Backend`; the list of backends a matrix can name is
:data:`stormatrix.registry.BACKENDS` (one explicit dict; nothing registers itself on import).
"""
