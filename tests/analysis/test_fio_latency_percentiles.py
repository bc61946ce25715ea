"""Both p99s are measured: every fio job the harness builds asks for the total latency's percentiles.

fio writes completion-latency percentiles (``clat_ns.percentile``) by default and the total latency's
(``lat_ns.percentile``, submission to completion) only with ``lat_percentiles=1``; without it the record's
``lat_p99_ns`` was always blank. The job files of the local QEMU guest (``fio_job``) and of the fio-server
suite (``FioJob.render``) run here with the real fio, and the one summary (analysis/read/fio.py) must find the
two p99s apart. One ``qemu`` test shows a real local-QEMU cell record and its workbook row with both.
The Windows guest module's arguments run with the real fio in tests/pester/StormatrixGuest/Invoke-StormatrixFio.Linux.Tests.ps1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stormatrix.analysis.read.fio import jobs_named, summarize_jobs
from stormatrix.core.model import Timing, Workload
from stormatrix.executors.fioserver.inputs import FioJob
from stormatrix.executors.localagent import fio_job

from qemumatrix import small_matrix

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def _run_fio(job_text: str, tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "job.fio").write_text(job_text)
    out = subprocess.run(["fio", "--output-format=json", str(tmp_path / "job.fio")], capture_output=True,
                         text=True, timeout=120, check=True, cwd=tmp_path).stdout
    doc: dict[str, Any] = json.loads(out[out.index("{"):])
    return doc


def _target(tmp_path: Path) -> Path:
    target = tmp_path / "disk.img"
    with open(target, "wb") as fh:
        fh.truncate(8 * 2**20)
    return target


def _both_p99s(summary: dict[str, Any]) -> None:
    total = summary["total"]
    assert total["lat_p99_ns"] is not None and total["clat_p99_ns"] is not None
    assert total["lat_p99_ns"] > 0 and total["clat_p99_ns"] > 0
    # every I/O's total latency is its submission plus its completion latency: never below the latter
    assert total["lat_p99_ns"] >= total["clat_p99_ns"]
    assert "total.lat_p99_ns" not in summary.get("null_reasons", {})


@needs_fio
def test_local_guest_job_gives_fio_both_percentile_sets(tmp_path: Path) -> None:
    job = fio_job(Workload("rr", "randread", 4096, 1), Timing(0, 1), str(_target(tmp_path)), ioengine="psync",
                  markers=False)
    assert "lat_percentiles=1" in job.splitlines()
    doc = _run_fio(job, tmp_path)
    measure = jobs_named(doc, "measure")
    assert "percentile" in measure[0]["read"]["lat_ns"] and "percentile" in measure[0]["read"]["clat_ns"]
    _both_p99s(summarize_jobs(measure))


@needs_fio
def test_fio_server_job_gives_fio_both_percentile_sets(tmp_path: Path) -> None:
    job = FioJob(name="rr", rw="randread", bs=4096, iodepth=1, ramp_s=0, measure_s=1, filename="disk.img",
                 ioengine="psync", direct=False, size=8 * 2**20, numjobs=2)
    text = job.render(filename=str(_target(tmp_path)))
    assert "lat_percentiles=1" in text.splitlines()
    doc = _run_fio(text, tmp_path)
    _both_p99s(summarize_jobs(doc["jobs"]))  # group_reporting: one entry for both clones


@pytest.mark.qemu
@pytest.mark.slow
def test_a_real_local_qemu_cell_records_and_reports_both_p99s(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(small_matrix("p99", ["virtio-blk"], measure_seconds=3))
    run_dir = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "stormatrix", "run", str(matrix), "-o", str(run_dir), "--no-progress"],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr + res.stdout
    recs = [r for r in map(json.loads, (run_dir / "journal.ndjson").read_text().splitlines()) if r["type"] == "cell"]
    assert len(recs) == 1
    _both_p99s(recs[0]["fio"])
    wb_path = tmp_path / "p99.xlsx"
    rep = subprocess.run([sys.executable, "-m", "stormatrix", "report", str(run_dir), "-o", str(wb_path)],
                         capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0, rep.stderr
    import openpyxl

    ws = openpyxl.load_workbook(wb_path)["Measurements"]
    header = [c.value for c in ws[1]]
    row = dict(zip(header, next(ws.iter_rows(min_row=2, values_only=True))))
    lat = next(h for h in header if isinstance(h, str) and h.startswith("lat_p99_us"))
    clat = next(h for h in header if isinstance(h, str) and h.startswith("clat_p99_us"))
    assert row[lat] and row[clat] and row[lat] >= row[clat]
    assert lat == "lat_p99_us [total latency p99]"
