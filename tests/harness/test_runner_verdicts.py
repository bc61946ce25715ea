"""Extra repeats go first to the comparisons the findings rest on that are still open (``[run]
repeat_policy = "verdicts"``, harness/repeats.py): both sides of the best against the runner-up and of each
controller's aio modes, judged by the workbook's own bootstrap share; each record says which comparison.

Through the real runner with the in-process stand-ins (the agent stand-in as the guest, a collector whose
CPU per window the test scripts). The scripted values make one comparison plainly decided and one plainly
open; the shares are checked against the workbook `stormatrix report` writes, not against the function
under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.cli import main
from stormatrix.journal import read_journal
from stormatrix.repeats import comparisons, next_extra
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions, RunSummary
from stormatrix.registry import spec_from_dict
from stormatrix.cells import expand

# CPU seconds per window, per (controller, aio), repeat by repeat: virtio-blk's two aio modes are far apart
# with almost no spread (decided); sata's are 0.1 apart with a spread of 0.25 (open)
CPU = {("virtio-blk", "native"): [1.0, 1.01, 1.02, 1.01, 1.0], ("virtio-blk", "threads"): [3.0, 3.01, 3.02, 3.0, 3.01],
       ("sata", "native"): [2.0, 2.5, 2.2, 2.3, 2.4], ("sata", "threads"): [2.1, 2.6, 2.3, 2.2, 2.5]}


def matrix(**run: Any) -> dict[str, Any]:
    return {"run": {"name": "verdicts", "ramp_seconds": 0, "measure_seconds": 1, "repeats": 3, "max_repeats": 4,
                    "cv_limit_pct": 1000, "order": "grouped", **run},
            "matrix": {"controllers": ["virtio-blk", "sata"], "aio": ["native", "threads"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def run_matrix(run_dir: Path, raw: dict[str, Any]) -> RunSummary:
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 1.0
    backend = FakeVmBackend(spec, run_dir, {})
    left = {k: list(v) for k, v in CPU.items()}

    class Collector(FakeCollector):
        def stop(self) -> dict[str, Any]:
            host = super().stop()
            host["cpu_total"] = left[(backend.config["controller"], backend.config["aio"])].pop(0)
            return host

    return Runner(spec, run_dir, RunOptions(progress=False, backend=backend, collector_factory=Collector)).run()


def cells(run_dir: Path) -> list[dict[str, Any]]:
    return [r for r in read_journal(run_dir / "journal.ndjson").records if r["type"] == "cell"]


def test_only_the_sides_of_an_open_verdict_get_extra_repeats_and_say_which(tmp_path: Path) -> None:
    summary = run_matrix(tmp_path / "run", matrix())
    extra = [r for r in cells(tmp_path / "run") if "extra_repeat" in r]
    assert sorted(r["key"] for r in extra) == [f"sata/aio={aio}/iothread=0/cache=none/w/rep4"
                                               for aio in ("native", "threads")]
    for r in extra:
        why = r["extra_repeat"]
        assert why["basis"] == "open verdict" and why["after_repeats"] == 3
        comp = why["comparison"]
        assert comp["kind"] == "aio modes of sata"
        assert {comp["a"], comp["b"]} == {"sata aio=native", "sata aio=threads"}
        assert 0.05 < comp["share_a_lower"] < 0.95 and comp["resamples"] == 2000
        assert f"{comp['share_a_lower']:.1%}" in why["reason"]
    assert sorted(summary.extra_repeats) == sorted(r["key"] for r in extra)


def test_the_cv_policy_gives_no_extra_repeat_where_every_cv_is_within_the_limit(tmp_path: Path) -> None:
    run_matrix(tmp_path / "run", matrix(repeat_policy="cv"))
    assert not [r for r in cells(tmp_path / "run") if "extra_repeat" in r]
    assert len(cells(tmp_path / "run")) == 12


def test_open_verdicts_come_before_cv_and_the_share_is_the_workbooks(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_matrix(run_dir, matrix(max_repeats=3))  # no extra repeat runs: the planned ones only
    spec = spec_from_dict(matrix(cv_limit_pct=0.1, max_repeats=6))  # now every configuration is "unstable" too
    records = read_journal(run_dir / "journal.ndjson").measured_cells(run_dir / "journal.ndjson")
    wanted = next_extra(expand(spec), spec.run, records, set(), run_dir / "journal.ndjson")
    bases = [why["basis"] for _, why in wanted]
    assert bases == ["open verdict", "open verdict", "cv_limit_pct", "cv_limit_pct"]
    assert {c.disk.controller for c, _ in wanted[:2]} == {"sata"}
    by_cv = next_extra(expand(spec), {**spec.run, "repeat_policy": "cv"}, records, set(), run_dir / "journal.ndjson")
    assert [why["basis"] for _, why in by_cv] == ["cv_limit_pct"] * 4

    found, _ = comparisons(run_dir / "journal.ndjson")
    by_kind = {c.kind: c for c in found}
    assert set(by_kind) == {"best vs runner-up", "aio modes of virtio-blk", "aio modes of sata"}
    assert by_kind["aio modes of virtio-blk"].decided and not by_kind["aio modes of sata"].decided
    # the workbook's Scores sheet: each row's "Test vs next rank" holds the share against the next-ranked row
    assert main(["report", str(run_dir), "-o", str(tmp_path / "r.xlsx")]) == 0
    book = openpyxl.load_workbook(tmp_path / "r.xlsx", read_only=True)  # (read-only keeps its file open)
    rows = list(book["Scores"].iter_rows(values_only=True))
    book.close()
    head = list(rows[0])
    text = {r[head.index("Configuration")]: r[head.index("Test vs next rank")] for r in rows[1:]
            if r[head.index("Configuration")]}
    nxt = [r[head.index("Configuration")] for r in rows[1:] if r[head.index("Configuration")]]
    checked = 0
    for comp in found:
        if comp.a in nxt and nxt.index(comp.a) + 1 < len(nxt) and nxt[nxt.index(comp.a) + 1] == comp.b:
            assert f"{comp.b}: score lower in {comp.share:.1%} of 2,000 resamples" in text[comp.a]
            checked += 1
    assert checked >= 2  # best vs runner-up, and sata's aio modes (adjacent in rank)
