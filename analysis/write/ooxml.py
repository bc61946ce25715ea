"""Parts of the workbook written in the order the Open XML schema gives their children.

openpyxl 3.0 writes two elements with their children out of the schema's sequence: a chart's ``c:errBars``
(``minus`` before ``plus``; CT_ErrBars is errDir, errBarType, errValType, noEndCap, plus, minus, val, spPr)
and a style sheet's ``font`` (``name`` first; CT_Font as Office reads it is b, i, strike, condense, extend,
outline, shadow, u, vertAlign, sz, color, name, family, charset, scheme). LibreOffice reads both; Excel
reads parts by the schema's sequence and offers to "repair" such a file, dropping the charts. The classes
here are openpyxl's with the sequence put right; ``tests/openxmlcheck.py`` checks every workbook the tests
write with Microsoft's Open XML SDK validator.
"""

from __future__ import annotations

from openpyxl import Workbook
from openpyxl.chart.error_bar import ErrorBars
from openpyxl.styles.fonts import Font
from openpyxl.utils.indexed_list import IndexedList

ERR_BARS_ORDER = ("errDir", "errBarType", "errValType", "noEndCap", "plus", "minus", "val", "spPr")
FONT_ORDER = ("b", "i", "strike", "condense", "extend", "outline", "shadow", "u", "vertAlign", "sz", "color",
              "name", "family", "charset", "scheme")


class SchemaErrorBars(ErrorBars):
    """``c:errBars`` with its children in CT_ErrBars' sequence."""

    tagname = "errBars"
    # the serialiser's lists are built from a class's own attributes: openpyxl's, the sequence put right
    __elements__ = ERR_BARS_ORDER
    __nested__ = ErrorBars.__nested__
    __attrs__ = ErrorBars.__attrs__


class SchemaFont(Font):
    """A style sheet ``font`` with its children in CT_Font's sequence."""

    tagname = "font"
    __elements__ = FONT_ORDER
    __nested__ = Font.__nested__
    __attrs__ = Font.__attrs__


assert set(ERR_BARS_ORDER) == set(ErrorBars.__elements__), "openpyxl's ErrorBars children changed"
assert set(FONT_ORDER) == set(Font.__elements__), "openpyxl's Font children changed"


def schema_fonts(wb: Workbook) -> None:
    """Every font of ``wb``'s style sheet as a :class:`SchemaFont`, at the same index (cells refer to fonts
    by index)."""
    fonts = []
    for font in wb._fonts:  # the style sheet's font list (openpyxl keeps it private)
        if type(font) is not SchemaFont:
            copy = SchemaFont()
            copy.__dict__.update(font.__dict__)
            font = copy
        fonts.append(font)
    wb._fonts = IndexedList(fonts)
