"""benchmarks/bench_verdicts.py's counting: the threads-vs-native verdicts the workbook calls decided (the Answer
page's where the records carry the per-thread split, else the findings'), the extra repeats by reason, and the two
strategies' matrices.

The journal comes from the real runner with the in-process stand-ins (test_runner_verdicts.py's scripted CPU:
virtio-blk's aio modes far apart with almost no spread, sata's 0.1 apart with a spread of 0.25), so one
verdict is plainly decided and one plainly open whatever the bootstrap draws.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import openpyxl

from paths import ROOT
from rolerecords import journal, record
from test_runner_verdicts import matrix, run_matrix

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_verdicts as bench  # noqa: E402  (a script folder, not a package)

from stormatrix.cli import main  # noqa: E402


def test_decided_verdicts_and_extra_repeats_are_counted_from_the_journal(tmp_path: Path) -> None:
    summary = run_matrix(tmp_path / "run", matrix())
    journal = tmp_path / "run" / "journal.ndjson"
    verdicts = bench.aio_verdicts(journal)
    assert set(verdicts) == {"virtio-blk", "sata"}
    assert verdicts["virtio-blk"]["decided"] and verdicts["virtio-blk"]["best_aio"] == "native"
    assert verdicts["virtio-blk"]["status"] == ["significant"]
    assert not verdicts["sata"]["decided"]
    assert verdicts["sata"]["status"] == ["within noise"]
    assert all(v["finding"][0].startswith(f"For {c}, ") for c, v in verdicts.items())
    # only sata's open verdict asked for extra repeats: both of its sides, each record saying so
    extra = bench.extra_repeats(journal)
    assert extra == {"open verdict": len(summary.extra_repeats)}
    assert extra["open verdict"] == 2


def test_records_with_the_per_thread_split_are_counted_by_the_answer_pages_verdict(tmp_path: Path) -> None:
    """With host.by_role the verdict is the Answer page's (Welch's t on the I/O-path switches per I/O), the same
    one ``stormatrix report`` writes: ide's aio workers add 2 switches per I/O in every repeat (decided), sata's
    repeats of the two modes overlap (open)."""
    recs = [record("ide", aio, rep, 2000 + 3 * rep, 3000 + 9 * rep) for aio in ("native", "threads")
            for rep in (1, 2, 3)]
    recs += [record("sata", aio, rep, 0, (3000, 3600, 2700)[rep - 1])
             for aio in ("native", "threads") for rep in (1, 2, 3)]
    run = journal(tmp_path, recs)
    verdicts = bench.aio_verdicts(run / "journal.ndjson")
    assert {c: v["basis"] for c, v in verdicts.items()} == {"ide": "io-path", "sata": "io-path"}
    assert verdicts["ide"]["decided"] and verdicts["ide"]["best_aio"] == "native"
    assert verdicts["ide"]["finding"][0].startswith("ide: aio=threads costs 2.02 I/O-path switches per I/O")
    assert not verdicts["sata"]["decided"] and verdicts["sata"]["p"][0] > 0.05
    assert verdicts["ide"]["repeats"] == [3, 3]
    # the workbook's Answer page says the same per controller
    out = tmp_path / "w.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    answer = {r[0]: r for r in openpyxl.load_workbook(out)["Answer"].iter_rows(values_only=True) if r[0]}
    assert str(answer["ide"][5]).startswith("decided at 95 %") and not str(answer["sata"][5]).startswith("decided")


def test_the_strategies_set_order_and_repeat_policy_and_alternate() -> None:
    demo = (ROOT / "harness" / "matrices" / "demo.toml").read_text()
    base = tomllib.loads(demo)
    for name, want in (("new", ("rounds", "verdicts")), ("old", ("grouped", "cv"))):
        m = tomllib.loads(bench.with_run_settings(demo, bench.STRATEGIES[name]))
        assert (m["run"]["order"], m["run"]["repeat_policy"]) == want
        assert {k: v for k, v in m["run"].items() if k not in ("order", "repeat_policy")} == base["run"]
        assert {k: v for k, v in m.items() if k != "run"} == {k: v for k, v in base.items() if k != "run"}
    assert bench.schedule(3) == ["new", "old", "old", "new", "new", "old"]
