"""Stage 1, read: every input (journals, fio JSON, DiskSpd XML, perf CSV, esxtop captures) into one tidy frame.

:func:`.ingest.ingest` is the entry; the readers import nothing of the later stages (score, write), which
tests/test_import_graph.py checks.
"""
