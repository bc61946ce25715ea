"""Analysis: pure functions over pandas DataFrames, and one workbook writer.

Importable from a notebook::

    from stormatrix.analysis.ingest import ingest            # journals, fio JSON, DiskSpd XML, perf CSV
    from stormatrix.analysis.efficiency import score_cells   # technote 004 (efficiency): scores and ranks
    from stormatrix.analysis.compare import compare          # technotes 000/003: A vs B per point
    from stormatrix.analysis.findings import efficiency_findings, comparison_findings
    from stormatrix.analysis.workbook import write_efficiency_workbook, write_comparison_workbook

    data = ingest(["runs/x"])                 # data.frame: one row per cell x repeat; data.problems
    scores = score_cells(data.frame).cells    # one row per configuration

Only :mod:`.workbook` writes files; everything else takes and returns DataFrames and dicts.
"""
