"""The vSphere CPU source checks how much of the window its samples cover, as the esxtop source does:
under 80 % the window is refused (not measured); above, the CPU total is scaled up to the whole window and
the record says so (``vmware.coverage``, ``covered_s``, ``prorated``, ``scale``).

The module runs for real on pwsh against the fake vCenter (tests/pwsh/FakeVCenter), whose
lab holds 20-second realtime samples; samples are taken out of the lab to make a window the statistics do
not fully cover (the last samples not yet written, as when stats_wait_seconds runs out).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from stormatrix.backends.vmware import backend as vm
from stormatrix.backends.vmware.cpu import MIN_COVERAGE, check_coverage
from stormatrix.core.errors import CollectorError

from test_vmware_pwsh import FakeVCenter, backend_for  # noqa: F401 (fixture's class)


#: the fake lab's VM uses 4000 ms of CPU in every 20 s sample (add_cpu_samples): 0.2 s per second
RATE = 4.0 / 20


@pytest.fixture()
def vcenter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeVCenter:
    return FakeVCenter(tmp_path, monkeypatch)


def _window_with_samples_until(vcenter: FakeVCenter, tmp_path: Path, window_s: float, samples_until_s: float) -> dict:
    """Stop a collector whose window began ``window_s`` ago, with the lab's samples ending no later than
    ``samples_until_s`` into the window."""
    now = datetime.now(timezone.utc)
    vcenter.add_cpu_samples(now, span_s=300)
    b = backend_for(tmp_path)
    collector = b.collector_factory(b.scope()[0])
    assert isinstance(collector, vm.VmwareCpuCollector)
    collector.start()
    assert collector.t0 is not None
    collector.t0 -= timedelta(seconds=window_s)
    cutoff = collector.t0 + timedelta(seconds=samples_until_s)
    lab = vcenter.read()
    for row in lab["stats"]:
        row["samples"] = [s for s in row["samples"]
                          if datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00")) <= cutoff]
    vcenter.write(lab)
    return collector.stop()


def test_a_window_the_samples_mostly_cover_is_scaled_up_and_says_so(vcenter: FakeVCenter, tmp_path: Path) -> None:
    host = _window_with_samples_until(vcenter, tmp_path, 200.0, 190.0)
    v = host["vmware"]
    assert MIN_COVERAGE <= v["coverage"] < 1.0 and v["prorated"] is True
    assert v["coverage"] == pytest.approx(v["covered_s"] / host["window_s"])
    assert v["scale"] == pytest.approx(host["window_s"] / v["covered_s"])
    # what the samples hold stays as it is; the total is scaled to the window: the VM's even 0.2 s/s
    assert v["vm_used_s"] == pytest.approx(RATE * v["covered_s"])
    assert host["cpu_total"] == pytest.approx(RATE * host["window_s"])
    assert host["cpu_total"] == pytest.approx(v["vm_used_s"] * v["scale"])
    # the per-vCPU rows (2500 and 1500 ms per sample) are scaled the same way, so they add up to the total
    assert host["by_role"]["vcpu"]["runtime_s"] == pytest.approx(host["cpu_total"])


def test_a_window_the_samples_cover_under_80_percent_is_refused(vcenter: FakeVCenter, tmp_path: Path) -> None:
    with pytest.raises(CollectorError, match=r"vSphere realtime statistics of VM 'bench01': it covers \d+% of the "
                                             r"1\d\d\.\d s window \(minimum 80%\).*Fix: .*stats_wait_seconds"):
        _window_with_samples_until(vcenter, tmp_path, 100.0, 50.0)


def test_a_fully_covered_window_is_not_scaled(vcenter: FakeVCenter, tmp_path: Path) -> None:
    host = _window_with_samples_until(vcenter, tmp_path, 60.0, 400.0)
    v = host["vmware"]
    assert v["coverage"] == pytest.approx(1.0) and v["prorated"] is False and v["scale"] == pytest.approx(1.0)
    assert host["cpu_total"] == pytest.approx(v["vm_used_s"])


@pytest.mark.parametrize("vmware", [None, {}, {"coverage": None}, {"coverage": "0.9"}, {"coverage": float("nan")}])
def test_a_record_without_its_coverage_is_refused(vmware: object) -> None:
    with pytest.raises(CollectorError, match="no sample coverage"):
        check_coverage({"vmware": vmware}, "src", 30.0, "fix it")
    check_coverage({"vmware": {"coverage": MIN_COVERAGE}}, "src", 30.0, "fix it")  # the edge is accepted
