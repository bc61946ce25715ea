"""benchmarks/bench_repeatability.py's reading: the verdict figure (I/O-path switches per I/O) of each repeat from
a journal, read as ``stormatrix report`` reads it, and the goals judged on it across runs (CV <= 5 % per
configuration, the same threads-vs-native order in every run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from paths import ROOT
from rolerecords import journal, record

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_repeatability as bench  # noqa: E402  (a script folder, not a package)


def _run(tmp_path: Path, name: str, main_vol: tuple[int, int, int]) -> Path:
    """ide and sata, native and threads: the workers add ~2 switches per I/O; the main loop's switches per
    repeat are ``main_vol`` (1000 I/Os a window, 20 involuntary switches and 3 of an 'other' thread beside)."""
    recs = [record(c, aio, rep, 2000, main_vol[rep - 1]) for c in ("ide", "sata") for aio in ("native", "threads")
            for rep in (1, 2, 3)]
    (tmp_path / name).mkdir()
    return journal(tmp_path / name, recs)


def test_the_verdict_figure_per_repeat_comes_from_the_records_per_thread_split(tmp_path: Path) -> None:
    run = _run(tmp_path, "a", (3000, 3010, 3020))
    fig = bench.verdict_figure(run)
    assert set(fig) == {("ide", "native"), ("ide", "threads"), ("sata", "native"), ("sata", "threads")}
    # main loop (vol + 20 invol) + other (3): per 1000 I/Os; threads add the workers' 2000 + 11
    assert fig[("ide", "native")] == pytest.approx([3.023, 3.033, 3.043])
    assert fig[("ide", "threads")] == pytest.approx([5.034, 5.044, 5.054])


def test_the_goals_are_judged_on_the_verdict_figure_across_runs(tmp_path: Path) -> None:
    steady = [bench.verdict_figure(_run(tmp_path, n, (3000, 3010, 3020))) for n in ("a", "b")]
    out = bench.summarise([{}, {}], steady)
    assert out["goal_figure"] == "I/O-path switches per I/O"
    assert out["cells_within_goal"] == 4 and out["goal_cv_met"]
    assert all(o["same_in_every_run"] and o["threads_costs_more"] == [True, True] for o in out["order"])
    assert all(o["significant"] == [True, True] for o in out["order"])
    # a second run whose main loop lands elsewhere: the CV over both runs leaves the goal, the order holds
    moved = [steady[0], bench.verdict_figure(_run(tmp_path, "c", (3800, 3810, 3820)))]
    out = bench.summarise([{}, {}], moved)
    assert out["cells_within_goal"] == 0 and not out["goal_cv_met"] and out["goal_order_met"]
    cell = next(c for c in out["cells"] if (c["controller"], c["aio"]) == ("ide", "native"))
    assert cell["cv_path_within_runs_pct"][0] < 1.0 < cell["cv_path_all_pct"]
