"""The built-in demo matrices keep what `demo --help` and their own comments promise.

``make demo`` has a 10-minute budget and its findings must be able to be significant (Welch's t at
95 % needs at least two repeats on each side, and has useful power from three). Checked on the plan,
not on a clock: the planned time of the cells, and the time budget that caps extra repeats, stay
within 10 minutes; what `demo --help` says about the matrix is what the matrix holds.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

from stormatrix.core.model import Plan
from stormatrix.registry import backend_class
from stormatrix.repeats import possible_extra
from stormatrix.progress import estimate_seconds
from stormatrix.cells import expand
from stormatrix.spec import MatrixSpec
from stormatrix.registry import load_spec

BUDGET_S = 10 * 60


def matrix(name: str) -> tuple[MatrixSpec, Plan, float]:
    """The built-in matrix, its plan, and its planned time (boot-ahead, as `plan` prints it)."""
    with resources.as_file(resources.files("stormatrix").joinpath("matrices", name)) as path:
        spec = load_spec(path)
    cls = backend_class(spec.run["backend"])
    plan = expand(spec, backend_controllers=cls.controllers)
    return spec, plan, estimate_seconds(plan, spec.timing.ramp_s, spec.timing.measure_s,
                                        boot_ahead=cls.boots_ahead(spec))


def demo_help() -> str:
    out = subprocess.run([sys.executable, "-m", "stormatrix", "demo", "--help"], capture_output=True, text=True,
                         check=True).stdout
    return " ".join(out.split())


def test_demo_repeats_allow_a_significance_test_and_fit_the_budget() -> None:
    spec, plan, eta = matrix("demo.toml")
    run = spec.run
    assert run["repeats"] >= 3  # one repeat is indicative only; two leave the t-test almost no power
    configs = {(c.disk, c.workload) for c in plan.cells}
    assert len(plan.cells) == len(configs) * run["repeats"] and not plan.skipped
    # extra repeats are possible, and only within a budget that leaves the workbook time inside 10 min
    assert run["max_repeats"] > run["repeats"] and run["cv_limit_pct"] > 0
    assert possible_extra(plan, run) == len(configs) * (run["max_repeats"] - run["repeats"])
    assert eta < run["time_budget_minutes"] * 60 < BUDGET_S


def test_demo_help_says_what_the_matrix_holds() -> None:
    spec, plan, _ = matrix("demo.toml")
    text = demo_help()
    run, m = spec.run, spec.matrix
    assert f"{len(plan.cells)} cells" in text
    assert f"{spec.timing.ramp_s:g} s warm-up + {spec.timing.measure_s:g} s window" in text
    assert len(m["controllers"]) == 5 and "five controllers" in text
    assert " and ".join(f"aio={a}" for a in m["aio"]) in text
    assert run["repeats"] == 3 and "three repeats" in text
    assert f"more than {run['cv_limit_pct']:g} %" in text and f"{run['max_repeats']}th repeat" in text
    assert f"within {run['time_budget_minutes']:g} min ([run] time_budget_minutes)" in text


def test_demo_full_keeps_its_promised_size_and_time() -> None:
    spec, plan, eta = matrix("demo-full.toml")
    assert f"{spec.run['repeats']} repeats: {len(plan.cells)} cells, about 17 min" in demo_help()
    assert 16 * 60 <= eta <= 18 * 60  # "about 17 min", as planned
    assert not possible_extra(plan, spec.run)  # no extra repeats can stretch it
