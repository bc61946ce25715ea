"""Where a test finds the repository and the captured data, wherever under tests/ its file lives.

The tests sit in folders that mirror the packages (tests/harness/backends/proxmox/, tests/analysis/,
tests/windows/, ...); the data they read stays in one place, tests/data/. pytest puts tests/ on
sys.path (``pythonpath`` in pyproject.toml), so ``import paths`` works from every folder, and so do the
shared helpers next to this file (standins/, qemumatrix.py, pwshengine.py).
"""

from __future__ import annotations

from pathlib import Path

#: tests/
TESTS = Path(__file__).resolve().parent
#: the repository (harness/, analysis/, linux-host/, windows/, benchmarks/)
ROOT = TESTS.parent
#: tests/data/: captured outputs and reference files
DATA = TESTS / "data"
