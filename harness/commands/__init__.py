"""CLI subcommands, one module each, listed explicitly in :data:`COMMANDS` (order = --help order).

Each module has ``register(subparsers) -> None`` which adds its parser and sets ``func`` to a
callable ``(args) -> int``.
"""

from __future__ import annotations

from . import compare, demo, fleet, guest, image, plan, report, restore, run, suite

COMMANDS = [plan, run, suite, fleet, report, compare, demo, guest, restore, image]
