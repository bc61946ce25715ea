"""Stage 2, score: the tidy frame judged: statistics, efficiency scores and ranks, A vs B, the findings.

Imports the read stage, never the write stage (tests/test_import_graph.py).
"""
