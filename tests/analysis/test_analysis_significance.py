"""Findings only where the data says so: Welch's t-test at 95 % over the repeats.

The p values here are computed by hand from Welch's formulas (t = (m1 - m2) / sqrt(s1^2/n1 + s2^2/n2),
Welch-Satterthwaite degrees of freedom, the t distribution's two-sided tail), not by the product's code.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest
from scipy.special import stdtr

from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.score.findings import INDICATIVE_LEAD, efficiency_findings
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.score.stats import INDICATIVE, SIGNIFICANT, WITHIN_NOISE, welch
from stormatrix.cli import main

from test_analysis_iopath import qemu_record, write_journal


def welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch p by hand."""
    def mv(x: list[float]) -> tuple[float, float]:
        m = sum(x) / len(x)
        return m, sum((v - m) ** 2 for v in x) / (len(x) - 1)
    (ma, va), (mb, vb) = mv(a), mv(b)
    sa, sb = va / len(a), vb / len(b)
    t = (ma - mb) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa ** 2 / (len(a) - 1) + sb ** 2 / (len(b) - 1))
    return 2 * stdtr(df, -abs(t))


def test_welch_by_hand():
    a, b = [10.0, 10.2, 9.9], [12.0, 12.3, 11.8]
    t = welch(a, b)
    assert t.p == pytest.approx(welch_p(a, b), rel=1e-9) and t.verdict == SIGNIFICANT
    c, d = [10.0, 12.0, 9.0], [10.5, 13.0, 9.5]
    t = welch(c, d)
    assert t.p == pytest.approx(welch_p(c, d), rel=1e-9) and t.p > 0.05 and t.verdict == WITHIN_NOISE
    assert welch([10.0], [12.0, 12.1]).verdict == INDICATIVE and math.isnan(welch([10.0], [12.0, 12.1]).p)


def run(tmp: Path, cpu: dict[str, list[float]], ctx: dict[str, list[float]]) -> Path:
    """One record per (aio mode, repeat) with the given whole-process CPU-ms/MiB and switches/MiB."""
    recs = []
    for aio, values in cpu.items():
        for rep, (c, x) in enumerate(zip(values, ctx[aio]), start=1):
            # whole process = vCPU + I/O path; 100 MiB moved: CPU-ms/MiB = seconds x 10, switches/MiB = n / 100
            recs.append(qemu_record("virtio-blk", aio, rep, vcpu_s=c / 10 - 0.1, io_s=0.1,
                                    io_ctx=int(x * 100) - 50, vcpu_ctx=50))
    return write_journal(tmp, recs, accel="kvm")


def test_separated_repeats_make_a_better_finding(tmp_path: Path):
    cpu = {"native": [20.0, 20.2, 19.9], "threads": [25.0, 25.3, 24.8]}
    ctx = {"native": [40.0, 41.0, 40.5], "threads": [60.0, 61.0, 60.2]}
    result = score_cells(ingest([run(tmp_path / "r", cpu, ctx)], strict=True).frame)
    findings = efficiency_findings(result)
    best = findings[0]
    assert best.status == SIGNIFICANT
    assert best.text.startswith("virtio-blk aio=native achieves the best overall efficiency score")
    assert "below virtio-blk aio=threads's 1.414 in" in best.text and "of the resamples" in best.text
    pair = next(f for f in findings if f.text.startswith("virtio-blk with aio=native is"))
    assert pair.status == SIGNIFICANT and "less CPU intensive" in pair.text and "fewer context switches" in pair.text
    assert pair.numbers["CPU/MiB Welch p"] == pytest.approx(welch_p(cpu["native"], cpu["threads"]), rel=1e-6)
    assert pair.numbers["ctx/MiB Welch p"] == pytest.approx(welch_p(ctx["native"], ctx["threads"]), rel=1e-6)


def test_overlapping_repeats_are_within_noise_with_the_numbers(tmp_path: Path):
    cpu = {"native": [20.0, 24.0, 18.0], "threads": [21.0, 25.0, 19.0]}
    ctx = {"native": [40.0, 48.0, 36.0], "threads": [42.0, 50.0, 38.0]}
    result = score_cells(ingest([run(tmp_path / "r", cpu, ctx)], strict=True).frame)
    findings = efficiency_findings(result)
    best = findings[0]
    assert best.status == WITHIN_NOISE and "tied within noise" in best.text
    assert "achieves the best" not in best.text and "of 2,000 resamples" in best.text
    pair = next(f for f in findings if "need the same CPU per MiB within noise" in f.text)
    p = welch_p(cpu["native"], cpu["threads"])
    assert pair.status == WITHIN_NOISE and p > 0.05
    assert pair.numbers["CPU/MiB Welch p"] == pytest.approx(p, rel=1e-6)
    assert f"{sum(cpu['native']) / 3:.4g}" in pair.text and "(n=3)" in pair.text   # the means and CIs
    assert not any(" is " in f.text and "more CPU intensive" in f.text and f.status != SIGNIFICANT for f in findings)
    cells = result.cells.set_index("config")
    assert cells.loc["virtio-blk aio=native", "rank"] == 1                          # the rank stays
    assert cells.loc["virtio-blk aio=native", "evidence"] == WITHIN_NOISE
    assert "tied within noise" in cells.loc["virtio-blk aio=native", "vs_next"]


def test_single_repeat_findings_are_indicative_everywhere(tmp_path: Path):
    cpu = {"native": [20.0], "threads": [25.0]}
    ctx = {"native": [40.0], "threads": [60.0]}
    journal = run(tmp_path / "r", cpu, ctx)
    result = score_cells(ingest([journal], strict=True).frame)
    findings = efficiency_findings(result)
    compared = [f for f in findings if f.status]
    assert compared and all(f.status == INDICATIVE for f in compared)
    assert all(f.text.startswith(INDICATIVE_LEAD) for f in compared if "measured once" not in f.text)
    out = tmp_path / "r.xlsx"
    assert main(["report", str(journal), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    summary = [r for r in wb["Summary"].iter_rows(values_only=True) if r and isinstance(r[1], str)]
    head = next(r for r in summary if r[1] == "Finding")
    rows = [r for r in summary if isinstance(r[0], int)]
    assert rows and any(r[head.index("Evidence (Welch's t-test or bootstrap, 95 %)")] == INDICATIVE for r in rows)
    scores = wb["Scores"]
    sh = [c.value for c in scores[1]]
    assert {r[sh.index("Evidence vs next rank")] for r in scores.iter_rows(min_row=2, values_only=True)} <= \
        {INDICATIVE, None}
    # single repeats: the interval is only the other configurations' spread, and the chart draws no bars
    assert not any("<errBars>" in str(c.series[0].errBars or "") for c in wb["Charts"]._charts[-1:])
    titles = [" ".join("".join(x.t for x in c.title.tx.rich.p[0].r).split()) for c in wb["Charts"]._charts]
    assert titles and all("INDICATIVE" in t for t in titles)
    method = " ".join(str(c.value) for row in wb["Method"].iter_rows() for c in row if c.value)
    assert "Welch's t-test" in method and "Indicative" in method
