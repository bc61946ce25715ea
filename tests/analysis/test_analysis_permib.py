"""The one per-MiB function (stormatrix.core.metrics): the journal's units, and null with a reason."""

from __future__ import annotations

import math

import pytest

from stormatrix.core.metrics import CPU_PER_MIB_UNIT, cpu_total_of, per_mib


def test_cpu_time_is_milliseconds_per_mib_and_ctx_per_mib() -> None:
    out = per_mib(2**30, {"cpu_metric": "cpu_time", "cpu_total": 2.048, "ctx_switches": 4096})
    assert out == {"mib": 1024.0, "cpu": pytest.approx(2.0), "cpu_unit": "CPU-ms/MiB", "ctx": 4.0}


def test_cycles_use_cpu_total_and_fall_back_to_the_split() -> None:
    both = per_mib(2 * 2**20, {"cpu_metric": "cycles", "cpu_total": 600.0,
                               "cycles": {"user": 400.0, "kernel": 200.0}, "ctx_switches": 10})
    assert (both["cpu"], both["cpu_unit"]) == (300.0, "cycles/MiB")
    split_only = per_mib(2**20, {"cpu_metric": "cycles", "cycles": {"user": 10, "kernel": 5}, "ctx_switches": 1})
    assert (split_only["cpu"], split_only["cpu_unit"]) == (15.0, "cycles/MiB")
    # the split is not consulted for CPU time: seconds and cycles must never mix
    assert cpu_total_of({"cpu_metric": "cpu_time", "cycles": {"user": 1, "kernel": 1}}) is None


def test_no_host_gives_nulls_with_a_reason_never_zero() -> None:
    out = per_mib(2**20, None)
    assert out["mib"] == 1.0 and out["cpu"] is None and out["ctx"] is None and out["cpu_unit"] is None
    assert out["missing"] == {"cpu": "no host measurement", "ctx": "no host measurement"}


def test_no_bytes_moved_gives_nulls_not_a_division() -> None:
    out = per_mib(0, {"cpu_metric": "cpu_time", "cpu_total": 1.0, "ctx_switches": 5})
    assert out["cpu"] is None and out["ctx"] is None
    assert "no bytes" in out["missing"]["cpu"]
    assert per_mib(None, None)["mib"] is None


def test_missing_ctx_keeps_the_collectors_reason_and_the_cpu() -> None:
    host = {"cpu_metric": "cpu_time", "cpu_total": 1.0, "ctx_switches": None,
            "unmatched": {"ctx_switches": "ESXi has no context-switch counter for a VM"}}
    out = per_mib(2**20, host)
    assert out["cpu"] == 1000.0 and out["ctx"] is None
    assert out["missing"] == {"ctx": "ESXi has no context-switch counter for a VM"}
    bare = per_mib(2**20, {"cpu_metric": "cpu_time", "cpu_total": 1.0})
    assert bare["ctx"] is None and "no context switches" in bare["missing"]["ctx"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "12", True])
def test_a_non_number_is_null_with_its_value_named(value: object) -> None:
    out = per_mib(2**20, {"cpu_metric": "cpu_time", "cpu_total": value, "ctx_switches": value})
    assert out["cpu"] is None and out["ctx"] is None
    assert repr(value) in out["missing"]["cpu"] and repr(value) in out["missing"]["ctx"]
    assert out["cpu_unit"] == "CPU-ms/MiB"


def test_an_unknown_cpu_metric_is_not_guessed() -> None:
    out = per_mib(2**20, {"cpu_metric": "jiffies", "cpu_total": 5.0, "ctx_switches": 2})
    assert out["cpu"] is None and out["cpu_unit"] is None and out["ctx"] == 2.0
    assert "jiffies" in out["missing"]["cpu"]


def test_complete_measurement_has_no_missing_key() -> None:
    out = per_mib(3 * 2**20, {"cpu_metric": "cycles", "cpu_total": 3e9, "ctx_switches": 30})
    assert "missing" not in out
    assert math.isclose(out["cpu"], 1e9) and out["ctx"] == 10.0
    assert set(CPU_PER_MIB_UNIT) == {"cycles", "cpu_time"}
