"""The order cells run in (``[run] order``, ``[run] seed``; harness/runorder.py): shuffled rounds by
default, grouped on request; the seed in the run record; a resumed run keeps the order; `plan` lists it.

The runner tests go through the real runner with the in-process stand-ins (the agent stand-in as the
guest, the VM stand-in that keeps its config); the expected orders are worked out here from the rule
("every configuration once per round, round n = repeat n") and from an uninterrupted run, not taken
from the ordering function under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.cli import main
from stormatrix.core.errors import MatrixError
from stormatrix.journal import read_journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions, RunSummary
from stormatrix.runorder import ordered_cells, place
from stormatrix.registry import spec_from_dict
from stormatrix.cells import expand

CONTROLLERS = ["ide", "sata", "virtio-blk", "virtio-scsi-single", "pvscsi"]


def matrix(**run: Any) -> dict[str, Any]:
    return {"run": {"name": "order", "ramp_seconds": 0, "measure_seconds": 1, "repeats": 3, **run},
            "matrix": {"controllers": CONTROLLERS, "aio": ["native", "threads"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def config(key: str) -> str:
    return key.rpartition("/rep")[0]


def run_matrix(run_dir: Path, raw: dict[str, Any], stop_after: int | None = None) -> RunSummary:
    """Run (or resume) ``raw`` into ``run_dir``; with ``stop_after``, the run is interrupted (Ctrl-C) as
    that many more windows have closed."""
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 1.0
    backend = FakeVmBackend(spec, run_dir, {})
    windows = [0]

    class Collector(FakeCollector):
        def start(self) -> None:
            if stop_after is not None and windows[0] >= stop_after:
                raise KeyboardInterrupt
            windows[0] += 1

    return Runner(spec, run_dir, RunOptions(progress=False, backend=backend, collector_factory=Collector)).run()


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return read_journal(run_dir / "journal.ndjson").records


def cell_keys(run_dir: Path) -> list[str]:
    return [r["key"] for r in journal(run_dir) if r["type"] == "cell"]


def test_rounds_are_the_default_every_configuration_once_per_round_and_the_seed_is_journaled(tmp_path: Path) -> None:
    summary = run_matrix(tmp_path / "r", matrix())
    keys = cell_keys(tmp_path / "r")
    configs = {config(k) for k in keys}
    assert len(configs) == 10 and len(keys) == 30
    for n in (1, 2, 3):  # round n: the n-th ten cells, each configuration once, all of repeat n
        chunk = keys[(n - 1) * 10:n * 10]
        assert {config(k) for k in chunk} == configs
        assert all(k.endswith(f"/rep{n}") for k in chunk)
    rounds = [[config(k) for k in keys[i:i + 10]] for i in (0, 10, 20)]
    assert len({tuple(r) for r in rounds}) > 1  # shuffled per round, not one fixed order repeated
    header = next(r for r in journal(tmp_path / "r") if r["type"] == "run")
    assert header["order"] == "rounds" and isinstance(header["seed"], int) and header["seed"] > 0
    assert summary.seed == header["seed"] and summary.order == "rounds"


def test_the_same_seed_gives_the_same_order_and_another_seed_another(tmp_path: Path) -> None:
    run_matrix(tmp_path / "a", matrix(seed=42))
    run_matrix(tmp_path / "b", matrix(seed=42))
    run_matrix(tmp_path / "c", matrix(seed=43))
    assert cell_keys(tmp_path / "a") == cell_keys(tmp_path / "b")
    assert cell_keys(tmp_path / "a") != cell_keys(tmp_path / "c")
    assert next(r for r in journal(tmp_path / "a") if r["type"] == "run")["seed"] == 42


def test_grouped_runs_a_configurations_repeats_together_in_matrix_order(tmp_path: Path) -> None:
    run_matrix(tmp_path / "g", matrix(order="grouped"))
    keys = cell_keys(tmp_path / "g")
    expected = [f"{c}/aio={a}/iothread=0/cache=none/w/rep{r}" for c in CONTROLLERS for a in ("native", "threads")
                for r in (1, 2, 3)]
    assert keys == expected
    assert next(r for r in journal(tmp_path / "g") if r["type"] == "run")["order"] == "grouped"


def test_a_resumed_run_keeps_the_drawn_seed_and_puts_every_pending_cell_where_it_was(tmp_path: Path) -> None:
    run_dir = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_matrix(run_dir, matrix(), stop_after=13)  # in the middle of round 2
    first = cell_keys(run_dir)
    assert len(first) == 13
    seed = next(r for r in journal(run_dir) if r["type"] == "run")["seed"]
    run_matrix(run_dir, matrix())  # no seed in the matrix: the journal's is kept
    keys = cell_keys(run_dir)
    assert keys[:13] == first and len(keys) == 30 and len(set(keys)) == 30
    headers = [r for r in journal(run_dir) if r["type"] == "run"]
    assert [h["seed"] for h in headers] == [seed, seed]
    # the same as an uninterrupted run with that seed
    run_matrix(tmp_path / "whole", matrix(seed=seed))
    assert keys == cell_keys(tmp_path / "whole")


def test_resuming_with_another_seed_or_order_is_refused_before_anything_is_appended(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        run_matrix(run_dir, matrix(seed=7), stop_after=4)
    before = (run_dir / "journal.ndjson").read_bytes()
    with pytest.raises(MatrixError, match=r"\[run\] seed: was 7 .*now 8"):
        run_matrix(run_dir, matrix(seed=8))
    with pytest.raises(MatrixError, match=r"\[run\] order: was \"rounds\", now \"grouped\""):
        run_matrix(run_dir, matrix(seed=7, order="grouped"))
    assert (run_dir / "journal.ndjson").read_bytes() == before
    run_matrix(run_dir, matrix(seed=7))  # the same seed written out: resumes
    assert len(cell_keys(run_dir)) == 30


def test_a_place_depends_only_on_seed_round_and_key_so_any_subset_keeps_its_relative_order() -> None:
    plan = expand(spec_from_dict(matrix()))
    whole = ordered_cells(plan.cells, "rounds", 5)
    some = [c for i, c in enumerate(plan.cells) if i % 3 != 1]  # any subset, e.g. what a resume still owes
    assert ordered_cells(some, "rounds", 5) == [c for c in whole if c in some]
    assert place(5, 2, "ide/x") == place(5, 2, "ide/x") != place(5, 3, "ide/x")


def test_plan_lists_the_cells_in_the_order_the_run_measures_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = matrix(seed=42)
    assert main(["plan", str(write_matrix(tmp_path / "m.toml", raw))]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    listed = [f"{r[1]}/aio={r[2]}/iothread=0/cache=none/{r[5]}/rep{r[6]}" for r in rows]
    run_matrix(tmp_path / "run", raw)
    assert listed == cell_keys(tmp_path / "run")
    assert "order: rounds" in out and "seed 42 ([run] seed)" in out
    raw["run"]["order"] = "grouped"
    assert main(["plan", str(write_matrix(tmp_path / "g.toml", raw))]) == 0
    assert "order: grouped" in capsys.readouterr().out


def write_matrix(path: Path, raw: dict[str, Any]) -> Path:
    lines = []
    for section in ("run", "matrix"):
        lines.append(f"[{section}]")
        for k, v in raw[section].items():
            val = (f'"{v}"' if isinstance(v, str) else str(v).lower() if isinstance(v, bool)
                   else "[" + ", ".join(f'"{x}"' if isinstance(x, str) else str(x).lower() for x in v) + "]"
                   if isinstance(v, list) else str(v))
            lines.append(f"{k} = {val}")
    lines += ["[[workload]]", 'name = "w"', 'rw = "randread"', 'bs = "4k"']
    path.write_text("\n".join(lines) + "\n")
    return path
