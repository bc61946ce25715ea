"""Analysis: pure functions over pandas DataFrames, and one workbook writer.

Importable from a notebook::

    from stormatrix.analysis.read.ingest import ingest               # journals, fio JSON, DiskSpd XML, perf CSV
    from stormatrix.analysis.score.efficiency import score_cells     # technote 004 (efficiency): scores and ranks
    from stormatrix.analysis.score.compare import compare            # technotes 000/003: A vs B per point
    from stormatrix.analysis.score.findings import efficiency_findings
    from stormatrix.analysis.score.comparisonfindings import comparison_findings
    from stormatrix.analysis.write.workbook import write_efficiency_workbook, write_comparison_workbook
    from stormatrix.analysis.efficiency_report import efficiency_report  # all of it, as `stormatrix report` runs it

    data = ingest(["runs/x"])                 # data.frame: one row per cell x repeat; data.problems
    scores = score_cells(data.frame).cells    # one row per configuration

Only the write stage (:mod:`.write`) writes files; everything else takes and returns DataFrames and dicts.
"""
