"""Every verdict points the way its numbers do (issue 21), and a score's interval is computed through the
whole normalization.

- the words of a comparison ("more"/"less", "fewer", "ranks above/below") follow the sign of the
  difference, tested with repeats where the significant difference points one way and then the other;
- the Evidence column of a finding and of the Scores sheet comes from the same verdict as its words: a
  finding that reports a significant half says "partly significant";
- the score intervals contain their plotted score and are >= 0; the share of resamples behind "ranks above"
  is checked against the same probability integrated by hand (scipy's t densities), not the product's draws.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sp

from stormatrix.analysis.score.bootstrap import RESAMPLES
from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.score.findings import efficiency_findings
from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.score.stats import (HIGHER, LOWER, PARTLY, SIGNIFICANT, TIED, WITHIN_NOISE, Verdict, welch)

from test_analysis_iopath import qemu_record, write_journal


def journal(tmp: Path, cpu: dict[str, list[float]], ctx: dict[str, list[float]],
            controller: dict[str, str] | None = None) -> Path:
    """One record per (configuration, repeat): ``cpu`` in CPU-ms/MiB, ``ctx`` in switches/MiB (100 MiB each);
    configurations named by aio mode on one controller unless ``controller`` maps them."""
    recs = []
    for name, values in cpu.items():
        ctrl, aio = (controller or {}).get(name, "virtio-blk"), name.split("@")[0]
        for rep, (c, x) in enumerate(zip(values, ctx[name]), start=1):
            recs.append(qemu_record(ctrl, aio, rep, vcpu_s=c / 10 - 0.1, io_s=0.1, io_ctx=int(round(x * 100)) - 50,
                                    vcpu_ctx=50))
    return write_journal(tmp, recs, accel="kvm")


def scored(tmp: Path, cpu: dict[str, list[float]], ctx: dict[str, list[float]], **kw):  # type: ignore[no-untyped-def]
    return score_cells(ingest([journal(tmp, cpu, ctx, **kw)], strict=True).frame)


@pytest.mark.parametrize("native_lower", [True, False])
def test_pair_words_follow_the_sign_of_a_significant_difference(tmp_path: Path, native_lower: bool):
    low, high = [20.0, 20.2, 19.9], [25.0, 25.3, 24.8]
    few, many = [40.0, 41.0, 40.5], [60.0, 61.0, 60.2]
    cpu = {"native": low if native_lower else high, "threads": high if native_lower else low}
    # context switches point the other way from CPU: the sentence must join them with "but"
    ctx = {"native": many if native_lower else few, "threads": few if native_lower else many}
    result = scored(tmp_path / "r", cpu, ctx)
    pair = next(f for f in efficiency_findings(result) if f.text.startswith("virtio-blk with aio="))
    name_a = pair.text.split(" is ")[0]
    a_is_native = "aio=native" in name_a
    a_cpu, b_cpu = (cpu["native"], cpu["threads"]) if a_is_native else (cpu["threads"], cpu["native"])
    a_ctx, b_ctx = (ctx["native"], ctx["threads"]) if a_is_native else (ctx["threads"], ctx["native"])
    assert welch(a_cpu, b_cpu).p < 0.05 and welch(a_ctx, b_ctx).p < 0.05
    cpu_word = "less CPU intensive" if np.mean(a_cpu) < np.mean(b_cpu) else "more CPU intensive"
    ctx_word = "fewer context switches" if np.mean(a_ctx) < np.mean(b_ctx) else "more context switches"
    assert cpu_word in pair.text and ctx_word in pair.text and " but " in pair.text
    assert pair.status == SIGNIFICANT


@pytest.mark.parametrize("native_lower", [True, False])
def test_vs_next_says_ranks_above_only_for_the_lower_score(tmp_path: Path, native_lower: bool):
    """Three configurations: the Scores sheet's words point from each row to the next-ranked one, and
    "ranks above" is said only where the row's score is lower and the share of resamples says so."""
    good, bad = [20.0, 20.2, 19.9], [25.0, 25.3, 24.8]
    cpu = {"native": good if native_lower else bad, "threads": bad if native_lower else good,
           "io_uring": [22.0, 22.4, 21.7]}
    ctx = {"native": [40.0, 40.6, 40.2] if native_lower else [60.0, 60.5, 60.2],
           "threads": [60.0, 60.5, 60.2] if native_lower else [40.0, 40.6, 40.2], "io_uring": [50.0, 50.4, 49.8]}
    result = scored(tmp_path / "r", cpu, ctx)
    cells = result.cells.reset_index(drop=True)
    assert cells.loc[0, "config"] == ("virtio-blk aio=native" if native_lower else "virtio-blk aio=threads")
    for i in range(len(cells) - 1):
        row, nxt = cells.loc[i], cells.loc[i + 1]
        share = result.draws.groups[row["norm_group"]].share_lower(row["config"], nxt["config"])
        if row["vs_next"].startswith("ranks above"):
            assert row["score"] < nxt["score"] and share >= 0.95 and row["evidence"] == SIGNIFICANT
        elif row["vs_next"].startswith("ranks below"):
            assert share <= 0.05 and row["evidence"] == SIGNIFICANT
        else:
            assert row["vs_next"].startswith("tied within noise") and row["evidence"] == WITHIN_NOISE
        assert f"{share:.1%}" in row["vs_next"] and nxt["config"] in row["vs_next"]
    assert cells.loc[0, "vs_next"].startswith("ranks above")


def test_verdict_words_come_from_its_direction():
    lower = Verdict.of_test(welch([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]))
    higher = Verdict.of_test(welch([2.0, 2.1, 1.9], [1.0, 1.1, 0.9]))
    tied = Verdict.of_test(welch([1.0, 2.0, 1.5], [1.2, 2.1, 1.4]))
    assert (lower.direction, higher.direction, tied.direction) == (LOWER, HIGHER, TIED)
    assert lower.status == higher.status == SIGNIFICANT and tied.status == WITHIN_NOISE
    assert [v.words("less", "more", "same") for v in (lower, higher, tied)] == ["less", "more", "same"]
    assert Verdict.of_share(0.97, 2000, tested=True).direction == LOWER
    assert Verdict.of_share(0.03, 2000, tested=True).direction == HIGHER
    assert Verdict.of_share(0.50, 2000, tested=True).status == WITHIN_NOISE
    assert Verdict.of_share(1.0, 2000, tested=False).status == "indicative"


def test_a_finding_with_one_significant_half_says_partly(tmp_path: Path):
    """CPU overlaps, context switches are separated: Evidence is "partly significant", naming the half."""
    cpu = {"native": [20.0, 24.0, 18.0], "threads": [21.0, 25.0, 19.0]}
    ctx = {"native": [40.0, 40.5, 40.2], "threads": [60.0, 60.4, 60.1]}
    result = scored(tmp_path / "r", cpu, ctx)
    pair = next(f for f in efficiency_findings(result) if f.text.startswith("virtio-blk with aio="))
    assert "same CPU per MiB within noise" in pair.text and "fewer context switches (Welch p" in pair.text
    assert pair.status == PARTLY and pair.detail.startswith("ctx/MiB significant")


def test_intervals_contain_their_score_and_are_not_negative(tmp_path: Path):
    rng = np.random.default_rng(7)
    names = ["native", "threads", "io_uring"]
    ctrls = ["virtio-blk", "ide", "sata"]
    cpu, ctx, where = {}, {}, {}
    for c in ctrls:
        for a in names:
            key = f"{a}@{c}"
            base = rng.uniform(15, 30)
            cpu[key] = list(base * rng.normal(1, 0.15, 3))
            ctx[key] = list(rng.uniform(30, 70) * rng.normal(1, 0.15, 3))
            where[key] = c
    result = scored(tmp_path / "r", cpu, ctx, controller=where)
    cells = result.cells
    assert len(cells) == 9
    assert (cells["score_ci_low"] >= 0).all()
    assert (cells["score_ci_low"] <= cells["score"]).all() and (cells["score"] <= cells["score_ci_high"]).all()
    assert (cells["score_ci_high"] <= np.sqrt(2) + 1e-12).all()
    # the same data scored twice gives the same intervals (fixed seed)
    again = scored(tmp_path / "r2", cpu, ctx, controller=where).cells
    assert again["score_ci_low"].tolist() == cells["score_ci_low"].tolist()


def test_share_matches_the_probability_integrated_by_hand(tmp_path: Path):
    """Two configurations with equal context switches: the score is 0 for the lower CPU draw and 1 for the
    other, so the share of resamples in which A is lower estimates P(mean_A* < mean_B*), where each mean* is
    mean + t(n - 1) x SE. That probability integrated numerically must match within Monte-Carlo error."""
    a, b = [20.0, 21.5, 19.0], [21.0, 23.0, 21.4]
    cpu = {"native": a, "threads": b}
    ctx = {"native": [50.0] * 3, "threads": [50.0] * 3}
    result = scored(tmp_path / "r", cpu, ctx)
    group = result.cells["norm_group"].iloc[0]
    share = result.draws.groups[group].share_lower("virtio-blk aio=native", "virtio-blk aio=threads")
    ma, mb = np.mean(a), np.mean(b)
    sa, sb = np.std(a, ddof=1) / np.sqrt(3), np.std(b, ddof=1) / np.sqrt(3)
    t = sp.t(2)
    # P(ma + sa Ta < mb + sb Tb) = E_Ta[ P(Tb > (ma - mb + sa Ta) / sb) ]
    p, _ = integrate.quad(lambda x: t.pdf(x) * t.sf((ma - mb + sa * x) / sb), -np.inf, np.inf)
    assert share == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / RESAMPLES) + 0.005)
    assert 0.6 < p < 0.95  # a case in between: neither certain nor a coin toss
