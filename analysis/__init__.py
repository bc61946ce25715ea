"""Analysis: pure functions over pandas DataFrames, and one workbook writer.

Importable from a notebook::

    from stormatrix.analysis import fio
"""
