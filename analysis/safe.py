"""Make untrusted text safe to put in a spreadsheet cell or a CSV field.

VM names, side labels, file names and hostnames come from users and from remote systems. A string that
starts with ``=``, ``+``, ``-`` or ``@`` is taken as a formula by Excel and LibreOffice (in a CSV, and in
openpyxl, which stores any string starting with ``=`` as a formula); a leading tab or carriage return
lets the same trick through some importers ("CSV injection", OWASP). We neutralise such a string by
prefixing an apostrophe, the convention OWASP recommends: the text stays readable and can never run.

openpyxl also refuses XML control characters (it raises ``IllegalCharacterError``), which binary junk in
a file name or a label would otherwise bring in; we drop them.
"""

from __future__ import annotations

import math
import re
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# XML 1.0 forbids these (tab, LF and CR are allowed); openpyxl uses the same set.
_ILLEGAL_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def neutralize(text: str) -> str:
    """``text`` with control characters removed and a leading formula trigger defused."""
    cleaned = _ILLEGAL_XML.sub("", text)
    if cleaned.startswith(FORMULA_TRIGGERS):
        return "'" + cleaned
    return cleaned


def safe_value(value: Any) -> Any:
    """A value ready for a cell: strings neutralised, NaN/None as empty, numpy scalars as Python numbers."""
    if value is None:
        return None
    if isinstance(value, str):
        return neutralize(value)
    if isinstance(value, bool):
        return value
    if hasattr(value, "item") and not isinstance(value, (list, dict)):  # numpy / pandas scalar
        try:
            value = value.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, (int, float)):
        return value
    try:  # pandas NA / NaT
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return neutralize(str(value))
