"""Findings carry their numbers, and those numbers are the ones on the Scores / Comparison sheets."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormatrix.analysis.score.compare import compare
from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.score.comparisonfindings import comparison_findings, signed
from stormatrix.analysis.score.findings import efficiency_findings
from stormatrix.analysis.read.ingest import ingest
import paths

DATA = paths.DATA


def test_efficiency_findings_match_the_scores():
    """sample_run: 2 repeats per cell. Rank 1 vs rank 2 and the virtio-scsi vs virtio-blk pair overlap (within
    noise, with their numbers); native vs threads per controller is separated (significant)."""
    result = score_cells(ingest([DATA / "journal" / "sample_run"]).frame)
    cells = result.cells.set_index("config")
    findings = efficiency_findings(result)
    texts = [f.text for f in findings]
    assert texts[0].startswith("virtio-blk aio=native and virtio-scsi-single aio=native iothread are tied within "
                               "noise for the best overall efficiency score")
    assert findings[0].value == cells.loc["virtio-blk aio=native", "score"] and findings[0].status == "within noise"
    assert "of 2,000 resamples" in texts[0]
    # not every controller's aio order is beyond noise: no "most efficient for each controller type" claim
    assert not any("for each controller type" in t for t in texts)
    # 004-style named pair: virtio-scsi-single vs virtio-blk with aio=native, by hand from the sheet numbers
    pair = next(f for f in findings if f.text.startswith("With aio=native, virtio-scsi-single"))
    cpu = (31.1 / 30.3 - 1) * 100
    ctx = (1 - 39.8 / 40.4) * 100
    assert pair.value == pytest.approx(cpu) and pair.status == "within noise"
    assert f"need the same CPU per MiB within noise ({cpu:.1f}% apart" in pair.text
    assert f"the same within noise ({ctx:.1f}% apart" in pair.text
    assert pair.numbers["virtio-blk aio=native CPU/MiB mean (CPU-ms/MiB)"] == cells.loc["virtio-blk aio=native", "cpu_per_mib_mean"]
    native = next(f for f in findings if f.text.startswith("virtio-blk with aio=native is"))
    assert native.status == "significant" and "less CPU intensive than virtio-blk with aio=threads" in native.text
    worst = next(f for f in findings if "worst" in f.text)
    assert "sata aio=threads" in worst.text and worst.value == pytest.approx(2 ** 0.5)
    for f in findings:                                  # no finding without its number
        assert f.numbers and f.value == f.value


def test_comparison_findings_use_the_summary_numbers():
    a, b = ingest([DATA / "fio" / "compare" / "A"]).frame, ingest([DATA / "fio" / "compare" / "B"]).frame
    r = compare(a, b, label_a="ESXi", label_b="PVE")
    f = comparison_findings(r)
    pts = r.points
    assert f[0].text.startswith(f"PVE beat ESXi in {int((pts['iops_b'] > pts['iops_a']).sum())} of 4 tests in IOPS")
    assert f[0].value == pytest.approx(pts["iops_gain_pct"].mean())
    assert f"(IOPS gain {signed(pts['iops_gain_pct'].mean())})" in f[0].text
    assert f[3].numbers["PVE peak MiB/s"] == pytest.approx(pts["bw_mib_s_b"].max())
