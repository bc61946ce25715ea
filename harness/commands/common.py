"""Helpers shared by the CLI commands."""

from __future__ import annotations

from ..spec import EXTRA_SECTIONS, extra_sections


def import_sections() -> None:
    """Make every matrix section known to code that still reads ``spec.EXTRA_SECTIONS`` directly.

    The parser itself asks :func:`stormatrix.registry.sections`; nothing needs this call any more,
    and it goes once every caller reads the registry.
    """
    EXTRA_SECTIONS.update(extra_sections())
