"""Make untrusted text safe to put in a spreadsheet cell or a CSV field.

VM names, side labels, file names and hostnames come from users and from remote systems. A string that
starts with ``=``, ``+``, ``-`` or ``@`` is taken as a formula by Excel and LibreOffice (in a CSV, and in
openpyxl, which stores any string starting with ``=`` as a formula); a leading tab or carriage return
lets the same trick through some importers ("CSV injection", OWASP). We neutralise such a string by
prefixing an apostrophe, the convention OWASP recommends: the text stays readable and can never run.

openpyxl also refuses XML control characters (it raises ``IllegalCharacterError``), which binary junk in
a file name or a label would otherwise bring in; we drop them.

Text that cannot be encoded at all is shown escaped: a lone surrogate (valid JSON, ``"\\ud800"`` in a fio
job name) as ``\\ud800``, and a byte of a file name that is not UTF-8 (Python holds it as a surrogate
escape, U+DC80-U+DCFF) as ``\\xe9``: UTF-8, which every workbook and CSV is written in, has no such
character, and writing one raised UnicodeEncodeError.
"""

from __future__ import annotations

import math
import re
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# XML 1.0 forbids these (tab, LF and CR are allowed; openpyxl uses the same set), and UTF-8 cannot encode
# a surrogate: the first are dropped, the second escaped (:func:`escape_unencodable`)
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
    return ""  # an XML control character: dropped


def escape_unencodable(text: str) -> str:
    """``text`` with every character UTF-8 cannot encode shown escaped: a byte of a file name that is not
    UTF-8 (a surrogate escape) as ``\\xe9``, a lone surrogate as ``\\ud800``. For messages and names."""
    return _SURROGATE.sub(lambda m: _escaped(m.group()), text) if _SURROGATE.search(text) else text


def neutralize(text: str) -> str:
    """``text`` with control characters removed, unencodable characters escaped and a leading formula trigger
    defused."""
    cleaned = _ILLEGAL_XML.sub(lambda m: _escaped(m.group()), text)
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
