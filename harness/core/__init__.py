"""The layer both the harness and the analysis stand on: the domain model and the error hierarchy.

``stormatrix.core`` imports nothing else of stormatrix, so ``stormatrix.analysis`` (which imports only
``core``) and the harness proper (which imports ``analysis`` and ``core``) form no cycle.
"""

from __future__ import annotations

__version__ = "0.1.0"
