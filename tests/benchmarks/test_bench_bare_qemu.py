"""benchmarks/bench_bare_qemu.py's bookkeeping: threads classified by the collector's rule, and per configuration
each side's mean and CV and the harness's share (harness - bare)."""

from __future__ import annotations

import sys

import pytest
from paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_bare_qemu as bench  # noqa: E402  (a script folder, not a package)


def test_threads_are_classified_as_the_collector_classifies_them() -> None:
    assert bench.role(100, 100, "qemu-system-x86") == "main-loop"
    assert bench.role(100, 101, "CPU 0/TCG") == "vcpu"
    assert bench.role(100, 102, "worker") == "aio-worker"
    assert bench.role(100, 103, "IO iothread0") == "iothread"
    assert bench.role(100, 104, "call_rcu") == "other"


def test_the_summary_gives_each_side_and_the_harness_share() -> None:
    def window(side: str, aio: str, main: float, workers: float) -> dict:
        return {"side": side, "controller": "sata", "aio": aio,
                "figures": {"main-loop": main, "aio-worker": workers, "path": main + workers, "vcpu": 1.5}}

    windows = [window("bare", "native", 2.5, 0.0), window("bare", "native", 2.7, 0.0),
               window("harness", "native", 2.6, 0.0), window("harness", "native", 3.0, 0.0),
               window("bare", "threads", 2.0, 2.0), window("harness", "threads", 2.1, 2.0)]
    rows = {r["aio"]: r for r in bench.summary(windows)}
    native = rows["native"]
    assert native["bare_n"] == 2 and native["harness_n"] == 2
    assert native["bare_path"] == pytest.approx(2.6) and native["harness_path"] == pytest.approx(2.8)
    assert native["diff_path"] == pytest.approx(0.2) and native["diff_aio-worker"] == 0.0
    assert native["bare_path_cv"] == pytest.approx(0.1414214 / 2.6, rel=1e-5)
    threads = rows["threads"]
    assert threads["diff_main-loop"] == pytest.approx(0.1) and threads["bare_path_cv"] is None  # one window
