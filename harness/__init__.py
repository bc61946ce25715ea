"""stormatrix: how much host CPU and how many context switches each virtual storage configuration
costs per MiB moved, measured end to end and handed over as a spreadsheet.

The package maps the product's fixed top-level folders onto one import namespace:

- ``stormatrix``            -> ``harness/``    (CLI, matrix spec, runner, journal, backends, executors)
- ``stormatrix.analysis``   -> ``analysis/``   (pure pandas functions and the workbook writer)
- ``stormatrix.host``       -> ``linux-host/`` (collector and inventory that also run on a hypervisor node)
"""

from __future__ import annotations

from .core import __version__  # one version, kept in the leaf layer analysis may import

__all__ = ["__version__"]
