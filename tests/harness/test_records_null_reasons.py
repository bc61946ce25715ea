"""The record builder invents nothing: what an engine did not report, or a check that cannot be made, is
None with the reason (``null_reasons`` / ``unchecked``), never 0.0, a default, or an exception.

The DiskSpd inputs are the repository's real ``-Rxml`` captures with one element taken out (what an
output without ``-L`` or without CPU sampling lacks); the fio shapes are the runner's summary's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stormatrix.analysis.read.diskspd import parse_diskspd_xml
from stormatrix.backends.base import BlockStats
from stormatrix.core.model import Cell, DiskConfig, Workload
from stormatrix.executors.base import WorkloadResult
from stormatrix.records import clock_check, crosscheck, diskspd_summary, rate_check
import paths

DATA = paths.DATA / "diskspd"
MIXED = DATA / "diskspd_randrw70_8k_qd16_t2.xml"
CELL = Cell(DiskConfig("pvscsi", "native", False, "none"), Workload("randrw70-8k", "randrw", 8192, 16,
                                                                     rwmixread=70, numjobs=2), 1)


def _summary(xml: str) -> dict[str, Any]:
    return diskspd_summary(WorkloadResult("diskspd", xml, {}), CELL)


def test_a_complete_diskspd_result_has_its_figures_and_says_what_diskspd_never_reports() -> None:
    s = _summary(MIXED.read_text())
    assert s["usr_cpu"] == pytest.approx(0.40) and s["sys_cpu"] == pytest.approx(5.70)
    assert s["total"]["lat_p99_ns"] == pytest.approx(1.3e6) and s["total"]["bw_bytes"] > 0
    # no context switches and no completion-latency percentile in DiskSpd: None with the reason, not 0
    assert s["ctx"] is None and "no context switches" in s["null_reasons"]["ctx"]
    assert s["total"]["clat_p99_ns"] is None and "completion-latency" in s["null_reasons"]["total.clat_p99_ns"]
    assert "usr_cpu" not in s["null_reasons"] and "total.lat_p99_ns" not in s["null_reasons"]


def test_diskspd_without_cpu_sampling_or_percentiles_leaves_them_null_with_why() -> None:
    xml = MIXED.read_text()
    no_cpu = re.sub(r"<Average>.*?</Average>", "", xml, count=1, flags=re.S)
    assert no_cpu != xml
    s = _summary(no_cpu)
    assert s["usr_cpu"] is None and s["sys_cpu"] is None  # was 0.0: a guest that used no CPU
    assert "UserPercent" in s["null_reasons"]["usr_cpu"] and "KernelPercent" in s["null_reasons"]["sys_cpu"]
    no_buckets = re.sub(r"<Bucket>.*?</Bucket>", "", xml, flags=re.S)
    s = _summary(no_buckets)
    assert s["total"]["lat_p99_ns"] is None and "-L" in s["null_reasons"]["total.lat_p99_ns"]
    row = parse_diskspd_xml(no_buckets)
    assert row["lat_p99_us"] is None and "lat_p99_us:" in row["null_reasons"]


def test_diskspd_mean_latency_is_not_made_up_from_one_direction() -> None:
    """Without AverageTotalMilliseconds the total mean is the I/O-weighted mean of both directions; with a
    direction's mean missing too, it is unknown (was: the missing direction counted as 0 ms)."""
    xml = MIXED.read_text().replace("<AverageTotalMilliseconds>0.400</AverageTotalMilliseconds>", "")
    both = parse_diskspd_xml(xml)
    assert both["lat_mean_us"] is not None and 250.0 < both["lat_mean_us"] < 750.0
    one = parse_diskspd_xml(xml.replace("<AverageWriteMilliseconds>0.750</AverageWriteMilliseconds>", ""))
    assert one["lat_mean_us"] is None and "writes" in one["null_reasons"]


def _fio(io_bytes: Any, runtime_ms: Any) -> dict[str, Any]:
    return {"total": {"io_bytes": io_bytes, "runtime_ms": runtime_ms}}


RATED = Cell(DiskConfig("virtio-blk", "io_uring", False, "none"), Workload("r", "randread", 4096, 1, rate_mib_s=4.0), 1)


@pytest.mark.parametrize("fio", [_fio(None, 1000.0), _fio(4 * 2**20, None), _fio(4 * 2**20, 0.0)])
def test_rate_check_that_cannot_be_made_says_so_without_a_verdict(fio: dict[str, Any]) -> None:
    out = rate_check(RATED, fio, 5.0)
    assert out is not None and out["missed"] is None and out["overshot"] is None
    assert out["achieved_mib_s"] is None and out["miss_pct"] is None and out["unchecked"]
    ok = rate_check(RATED, _fio(4 * 2**20, 1000.0), 5.0)
    assert ok is not None and ok["missed"] is False and "unchecked" not in ok


def test_crosscheck_without_fios_bytes_is_unchecked_and_with_them_compares() -> None:
    before, after = BlockStats(0, 0, 0, 0), BlockStats(2**20, 0, 256, 0)
    out = crosscheck(_fio(None, 1000.0), before, after, 2.0)
    assert out is not None and out["diff_pct"] is None and out["flag"] is None and "fio" in out["unchecked"]
    assert out["qemu_bytes"] == 2**20  # what QEMU measured is kept
    out = crosscheck(_fio(2**20, 1000.0), before, after, 2.0)
    assert out is not None and out["diff_pct"] == 0.0 and out["flag"] is False
    zero = crosscheck(_fio(0, 1000.0), before, after, 2.0)
    assert zero is not None and zero["diff_pct"] is None and zero["flag"] is True  # QEMU moved bytes fio did not


@pytest.mark.parametrize("fio, window", [(_fio(1, None), 10.0), (_fio(1, 10_000.0), 0.0), (_fio(1, 10_000.0), None)])
def test_clock_check_that_cannot_be_made_says_so(fio: dict[str, Any], window: float | None) -> None:
    out = clock_check(fio, window)
    assert out["diff_pct"] is None and out["flag"] is None and out["unchecked"]
    fast = clock_check(_fio(1, 100_000.0), 10.0)
    assert fast["flag"] is True and fast["diff_pct"] == pytest.approx(900.0)
