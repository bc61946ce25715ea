"""Stage 3, write: the workbook's sheets and charts, the tidy CSV, and saving them (the only stage that writes files).

Imports the read and score stages (tests/test_import_graph.py).
"""
