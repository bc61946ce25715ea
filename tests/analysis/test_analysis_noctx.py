"""Cells without context-switch counts (ESXi): ingest, scoring on CPU/MiB alone, findings, workbook, compare.

ESXi has no context-switch counter for a VM: both vmware collectors write ``host.ctx_switches: null``
with the reason in ``host.unmatched.ctx_switches`` (docs/esxi.md). Hand-built journals in that shape,
results computed by hand (CPU-ms/MiB, 100 MiB per cell):

ESXi only, workload randread-64k, one group "randread-64k [CPU-ms/MiB]" (an ESXi configuration is its
controller alone: ESXi has no aio, iothread or cache setting):

    config                 CPU/MiB    mean   normalized CPU = (v - 9) / (15 - 9)   score   rank
    pvscsi                 10, 12     11     2/6 = 1/3                             1/3     2
    lsilogic-sas           15, 15     15     1                                     1       3
    nvme                    9,  9      9     0                                     0       1

  score = sqrt(norm_cpu^2) = norm_cpu; normalized ctx, ctx/MiB and Rank by ctx stay empty.

Mixed (QEMU cells with ctx and an ESXi cell without, same workload and CPU metric, one group):

    config                       CPU/MiB   ctx/MiB   norm CPU   score (CPU alone)   rank   rank by ctx
    virtio-blk aio=native        20, 20    10, 10    0          0                   1      2
    virtio-scsi-single native    30, 30     5,  5    1          1                   3      1
    pvscsi (ESXi)                24, 26    -         0.5        0.5                 2      -

  Were ctx used for the two QEMU cells, virtio-blk would score sqrt(0^2 + 1^2) = 1: the rule is that a
  group is ranked on the dimensions every cell has. A second workload of QEMU cells only keeps both:

    a: cpu 1 ctx 1, b: cpu 3 ctx 2, c: cpu 2 ctx 5 -> norm cpu 0, 1, 0.5; norm ctx 0, 0.25, 1;
    scores 0, sqrt(1.0625), sqrt(1.25).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from stormatrix.analysis.score.efficiency import BASIS_BOTH, score_cells
from stormatrix.analysis.score.findings import efficiency_findings
from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
from stormatrix.core.errors import DataFileError

ESX_REASON = "vSphere statistics have no context-switch counter for a VM"
MIB = 100.0


def record(controller: str, aio: str | None, rep: int, cpu: float, ctx: float | None, *,
           workload: str = "randread-64k", reason: Any = ESX_REASON, per_mib: bool = True) -> dict[str, Any]:
    """A cell record as the runner journals it; ``ctx=None`` is a host record without a count (null +
    reason, as ESXi's); ``aio=None`` an ESXi cell (vmware backend: no aio, iothread or cache; keyed by
    the controller alone)."""
    esxi = aio is None
    disk = controller if esxi else f"{controller}/aio={aio}/iothread=0/cache=none"
    key = f"{disk}/{workload}/rep{rep}"
    host: dict[str, Any] = {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": cpu * MIB / 1000.0,
                            "cpu_user": None, "cpu_system": None, "cycles": None,
                            "ctx_switches": ctx * MIB if ctx is not None else None,
                            "source": "vsphere-realtime" if ctx is None else "perf+proc",
                            "scope": "esxi-vm" if ctx is None else "qemu-process", "window_s": 10.0}
    if ctx is None and reason is not None:
        host["unmatched"] = {"ctx_switches": reason, "cycles": "vSphere statistics report no hardware cycle counts"}
    rec = {"schema": "stormatrix/record-1", "type": "cell", "run_id": "hand", "key": key,
           "cell": {"disk": {"controller": controller, "aio": aio, "iothread": None if esxi else False,
                             "cache": None if esxi else "none"},
                    "workload": {"name": workload, "rw": "randread", "bs": 65536, "iodepth": 8, "numjobs": 1,
                                 "rate_mib_s": None, "rwmixread": None},
                    "repeat": rep, "key": key},
           "backend": "vmware" if esxi else "qemu", "side": None, "vm": "bench01",
           "times": {"measure_start": f"2026-11-22T03:0{rep}:00+00:00", "window_s": 10.0},
           "fio": {"version": "fio-3.33", "total": {"io_bytes": int(MIB * 2**20), "bw_bytes": MIB * 2**20 / 10,
                                                    "iops": 160.0, "total_ios": 1600, "runtime_ms": 10000,
                                                    "lat_mean_ns": 5e6, "lat_p99_ns": 9e6}},
           "host": host, "rate": None, "crosscheck": None, "clients": None, "raw": {"engine": "fio", "output": ""}}
    if per_mib:
        rec["per_mib"] = {"mib": MIB, "cpu": cpu, "cpu_unit": "CPU-ms/MiB", "ctx": ctx}
    return rec


def journal(folder: Path, records: list[dict[str, Any]], backend: str = "vmware") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    run = {"schema": "stormatrix/record-1", "type": "run", "run_id": "hand", "started": "2026-11-22T03:00:00+00:00",
           "backend": backend, "side": None, "environment": {"host": "esx01.lab"}, "matrix": {}}
    (folder / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in [run, *records]))
    return folder


ESX = {("pvscsi", None): [10.0, 12.0], ("lsilogic-sas", None): [15.0, 15.0], ("nvme", None): [9.0, 9.0]}


@pytest.fixture
def esx_run(tmp_path: Path) -> Path:
    return journal(tmp_path / "esx", [record(c, a, rep, cpu[rep - 1], None) for (c, a), cpu in ESX.items()
                                      for rep in (1, 2)])


def mixed_records() -> list[dict[str, Any]]:
    recs = [record("virtio-blk", "native", rep, 20.0, 10.0) for rep in (1, 2)]
    recs += [record("virtio-scsi-single", "native", rep, 30.0, 5.0) for rep in (1, 2)]
    recs += [record("pvscsi", None, rep, cpu, None) for rep, cpu in ((1, 24.0), (2, 26.0))]
    recs += [record(c, "native", 1, cpu, ctx, workload="seqwrite-1m")
             for c, cpu, ctx in (("a", 1.0, 1.0), ("b", 3.0, 2.0), ("c", 2.0, 5.0))]
    return recs


def by_config(cells, group: str | None = None) -> dict[str, Any]:
    sel = cells if group is None else cells[cells["norm_group"] == group]
    return {r["config"]: r for _, r in sel.iterrows()}


# --- ingest -----------------------------------------------------------------------------------------------

def test_null_with_a_reason_is_read_and_ctx_per_mib_stays_empty(esx_run: Path) -> None:
    data = ingest([esx_run], strict=True)
    df = data.frame
    assert len(df) == 6 and not data.problems
    assert df["ctx_switches"].isna().all() and df["ctx_per_mib"].isna().all()      # never 0
    assert (df["ctx_note"] == ESX_REASON).all()
    assert sorted(df["cpu_per_mib"]) == [9.0, 9.0, 10.0, 12.0, 15.0, 15.0]


def test_ctx_per_mib_is_not_derived_from_a_null_count(tmp_path: Path) -> None:
    """Without per_mib the row derives CPU/MiB = 1.1 s x 1000 / 100 MiB = 11 CPU-ms/MiB; ctx/MiB stays empty."""
    run = journal(tmp_path / "r", [record("pvscsi", None, 1, 11.0, None, per_mib=False)])
    df = ingest([run], strict=True).frame
    assert df["cpu_per_mib"].iloc[0] == pytest.approx(11.0, abs=1e-12)
    assert math.isnan(df["ctx_per_mib"].iloc[0]) and math.isnan(df["ctx_switches"].iloc[0])


@pytest.mark.parametrize("reason", [None, "", "   ", 42, {"why": "none"}])
def test_null_without_a_reason_is_refused_naming_file_line_key_and_fix(tmp_path: Path, reason: Any) -> None:
    rec = record("pvscsi", None, 1, 11.0, None, reason=reason)
    if reason is not None:
        rec["host"]["unmatched"] = {"ctx_switches": reason}
    run = journal(tmp_path / "bad", [record("nvme", None, 1, 9.0, None), rec])
    data = ingest([run])
    assert len(data.frame) == 1                                   # the good line is still read
    (problem,) = data.problems
    assert problem.source == f"{run / 'journal.ndjson'}:3"
    assert "'host.ctx_switches' is null" in problem.reason and "host.unmatched.ctx_switches" in problem.reason
    assert "pvscsi/randread-64k/rep1" in problem.reason
    with pytest.raises(DataFileError) as err:
        ingest([run], strict=True)
    assert "journal.ndjson:3" in str(err.value) and "Fix:" in str(err.value)


def test_null_without_a_reason_is_exit_2_in_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = record("pvscsi", None, 1, 11.0, None, reason=None)
    run = journal(tmp_path / "bad", [rec])
    assert main(["report", str(run), "-o", str(tmp_path / "x.xlsx")]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'journal.ndjson'}:2: cell pvscsi/randread-64k/rep1" in err
    assert "'host.ctx_switches' is null and 'host.unmatched.ctx_switches' gives no reason" in err
    assert "writes null and the reason in host.unmatched.ctx_switches" in err          # the fix
    assert main(["report", str(run), "-o", str(tmp_path / "x.xlsx"), "--strict"]) == 2
    assert not (tmp_path / "x.xlsx").exists()


def test_a_ctx_per_mib_without_a_count_or_a_count_that_is_text_is_refused(tmp_path: Path) -> None:
    contradictory = record("pvscsi", None, 1, 11.0, None)
    contradictory["per_mib"]["ctx"] = 3.0
    text = record("nvme", None, 1, 9.0, 1.0)
    text["host"]["ctx_switches"] = "n/a"
    data = ingest([journal(tmp_path / "bad", [contradictory, text])])
    assert data.frame.empty
    reasons = sorted(p.reason for p in data.problems)
    assert "'host.ctx_switches' is 'n/a', not a number" in reasons[0]
    assert "'per_mib.ctx' is 3.0 but 'host.ctx_switches' is null" in reasons[1]


# --- scoring ----------------------------------------------------------------------------------------------

def test_a_run_without_ctx_is_scored_on_cpu_alone(esx_run: Path) -> None:
    result = score_cells(ingest([esx_run], strict=True).frame)
    cells = by_config(result.cells)
    assert set(cells) == {"pvscsi", "lsilogic-sas", "nvme"}
    expected = {"pvscsi": (11.0, 1 / 3, 2), "lsilogic-sas": (15.0, 1.0, 3), "nvme": (9.0, 0.0, 1)}
    for name, (mean, norm, rank) in expected.items():
        c = cells[name]
        assert c["cpu_per_mib_mean"] == pytest.approx(mean, abs=1e-12)
        assert c["norm_cpu"] == pytest.approx(norm, abs=1e-12)
        assert c["score"] == pytest.approx(norm, abs=1e-12)          # sqrt(norm_cpu^2)
        assert (c["rank"], c["rank_cpu"]) == (rank, rank)
        assert math.isnan(c["norm_ctx"]) and math.isnan(c["ctx_per_mib_mean"]) and math.isnan(c["ctx_per_mib_cv"])
        assert c["rank_ctx"] is pd_na()
        assert c["ctx_note"] == ESX_REASON
        assert c["score_basis"] == "CPU/MiB alone: no configuration in this group has context-switch counts"
    assert cells["pvscsi"]["cpu_per_mib_cv"] == pytest.approx(math.sqrt(2) / 11, abs=1e-12)
    # CV sqrt(2)/11 = 12.9 % > 10 %: flagged on CPU; no ctx CV to flag
    assert cells["pvscsi"]["cv_flag"] and cells["pvscsi"]["cv_note"] == "CPU CV > 10%"
    assert any(n.startswith("6 of 6 measurements have host CPU but no context-switch counts") for n in result.notes)
    assert "group randread-64k [CPU-ms/MiB]: scored and ranked on CPU/MiB alone: no configuration in this group " \
           "has context-switch counts" in result.notes


def pd_na() -> Any:
    import pandas as pd

    return pd.NA


def test_mixed_group_is_ranked_on_the_dimension_every_cell_has(tmp_path: Path) -> None:
    result = score_cells(ingest([journal(tmp_path / "m", mixed_records())], strict=True).frame)
    mixed = by_config(result.cells, "randread-64k [CPU-ms/MiB]")
    expected = {"virtio-blk aio=native": (20.0, 10.0, 0.0, 1, 2), "virtio-scsi-single aio=native": (30.0, 5.0, 1.0, 3, 1),
                "pvscsi": (25.0, None, 0.5, 2, None)}
    for name, (cpu, ctx, score, rank, rank_ctx) in expected.items():
        c = mixed[name]
        assert c["cpu_per_mib_mean"] == pytest.approx(cpu, abs=1e-12)
        assert c["norm_cpu"] == pytest.approx(score, abs=1e-12) and c["score"] == pytest.approx(score, abs=1e-12)
        assert math.isnan(c["norm_ctx"])              # ctx is not a dimension of this group's score
        assert c["rank"] == rank
        if ctx is None:
            assert math.isnan(c["ctx_per_mib_mean"]) and c["rank_ctx"] is pd_na() and c["ctx_note"] == ESX_REASON
        else:
            assert c["ctx_per_mib_mean"] == pytest.approx(ctx, abs=1e-12) and c["rank_ctx"] == rank_ctx
            assert c["ctx_note"] is None
        assert c["score_basis"] == ("CPU/MiB alone: 1 of 3 configurations in this group have no context-switch "
                                    "counts, so all 3 are scored on CPU/MiB alone; Rank by ctx ranks the 2 that "
                                    "have them")
    # the other workload has ctx everywhere: the full score of technote 004
    full = by_config(result.cells, "seqwrite-1m [CPU-ms/MiB]")
    for name, (ncpu, nctx) in {"a aio=native": (0.0, 0.0), "b aio=native": (1.0, 0.25),
                               "c aio=native": (0.5, 1.0)}.items():
        c = full[name]
        assert (c["norm_cpu"], c["norm_ctx"]) == (pytest.approx(ncpu, abs=1e-12), pytest.approx(nctx, abs=1e-12))
        assert c["score"] == pytest.approx(math.sqrt(ncpu ** 2 + nctx ** 2), abs=1e-12)
        assert c["score_basis"] == BASIS_BOTH
    assert [full[n]["rank"] for n in ("a aio=native", "b aio=native", "c aio=native")] == [1, 2, 3]
    assert any(n.startswith("group randread-64k [CPU-ms/MiB]: scored and ranked on CPU/MiB alone: 1 of 3")
               for n in result.notes)
    assert not any("seqwrite-1m" in n for n in result.notes)


def test_a_cell_with_ctx_in_only_some_repeats_has_no_ctx_mean(tmp_path: Path) -> None:
    """Rep 1 counted 10 ctx/MiB, rep 2 none: a mean of the one would rest on other repeats than CPU/MiB's."""
    recs = [record("virtio-blk", "native", 1, 20.0, 10.0), record("virtio-blk", "native", 2, 22.0, None),
            record("sata", "native", 1, 40.0, 30.0)]
    result = score_cells(ingest([journal(tmp_path / "p", recs)], strict=True).frame)
    cells = by_config(result.cells)
    blk = cells["virtio-blk aio=native"]
    assert blk["cpu_per_mib_mean"] == pytest.approx(21.0) and blk["n"] == 2
    assert math.isnan(blk["ctx_per_mib_mean"])
    assert blk["ctx_note"] == f"1 of 2 repeats have no context-switch count ({ESX_REASON})"
    # CPU alone: (21 - 21) / 19 = 0 and 1
    assert (blk["score"], cells["sata aio=native"]["score"]) == (0.0, 1.0)
    assert cells["sata aio=native"]["rank_ctx"] == 1 and blk["rank_ctx"] is pd_na()


# --- findings ---------------------------------------------------------------------------------------------

def test_findings_say_the_score_rests_on_cpu_alone(esx_run: Path) -> None:
    findings = efficiency_findings(score_cells(ingest([esx_run], strict=True).frame))
    texts = [f.text for f in findings]
    # nvme 9, 9 vs pvscsi 10, 12 CPU-ms/MiB: rank 1 is not beyond noise (Welch)
    assert texts[0].startswith("nvme and pvscsi are tied within noise for the best overall efficiency score "
                               "(0.000 and 0.333; lower is better; scored on CPU/MiB alone): ")
    assert findings[0].status == "within noise" and "of 2,000 resamples" in texts[0]
    assert texts[1] == ("The efficiency scores rest on CPU/MiB alone: none of the 3 configurations has "
                        f"context-switch counts ({ESX_REASON}).")
    assert (findings[1].value, findings[1].numbers) == (3.0, {"configurations without ctx/MiB": 3.0,
                                                              "configurations": 3.0})
    pair = next(f for f in findings if f.text.startswith("pvscsi and nvme "))   # no "With aio=...": ESXi has none
    assert pair.value == pytest.approx((11 / 9 - 1) * 100, abs=1e-12)
    assert pair.text.startswith("pvscsi and nvme need the same CPU per MiB within noise (22.2% apart: ")
    assert pair.text.endswith("(no context-switch counts for pvscsi and nvme).")
    worst = next(f for f in findings if "worst" in f.text)
    assert worst.text.startswith("pvscsi and lsilogic-sas are tied within noise for the worst efficiency score "
                                 "(0.333 and 1.000)")
    for f in findings:                                # no finding without its number, and no NaN among them
        assert f.numbers and math.isfinite(f.value) and all(math.isfinite(v) for v in f.numbers.values())
        assert "nan" not in f.text.lower()


def test_findings_of_a_mixed_group(tmp_path: Path) -> None:
    result = score_cells(ingest([journal(tmp_path / "m", mixed_records())], strict=True).frame)
    findings = [f for f in efficiency_findings(result) if f.group == "randread-64k [CPU-ms/MiB]"]
    texts = [f.text for f in findings]
    assert texts[0].startswith("[randread-64k [CPU-ms/MiB]] virtio-blk aio=native and pvscsi are tied within noise "
                               "for the best overall efficiency score (0.000 and 0.500; lower is better; scored on "
                               "CPU/MiB alone): ")
    assert texts[1] == ("[randread-64k [CPU-ms/MiB]] The efficiency scores rest on CPU/MiB alone: 1 of 3 "
                        f"configurations (pvscsi) have no context-switch counts ({ESX_REASON}), so "
                        "all 3 are ranked on the one metric they all have; ctx/MiB is compared only among the "
                        "other 2.")
    # two cells that both have ctx are still compared on both: (30/20 - 1) x 100 = 50, (5/10 - 1) x 100 = -50
    pair = next(f for f in findings if "With aio=native" in f.text)
    assert "virtio-scsi-single is 50.0% more CPU intensive than virtio-blk but generates 50.0% fewer context " \
           "switches (CPU: Welch p < 0.0001; context switches: Welch p < 0.0001)." in pair.text
    assert pair.numbers["context switch difference %"] == pytest.approx(-50.0)
    worst = next(f for f in findings if "worst" in f.text)
    assert "pvscsi and virtio-scsi-single aio=native are tied within noise for the worst efficiency score " \
           "(0.500 and 1.000)" in worst.text
    full = [f.text for f in efficiency_findings(result) if f.group == "seqwrite-1m [CPU-ms/MiB]"]
    assert not any("CPU/MiB alone" in t for t in full)
    assert any("primarily due to high context switching rates" in t for t in full)   # c: norm ctx 1 >= cpu 0.5
    assert all(t.startswith("[seqwrite-1m [CPU-ms/MiB]] Indicative (single repeat, not tested): ") for t in full
               if "measured once" not in t)                                         # one repeat each


# --- workbook and the commands ----------------------------------------------------------------------------

def rows(ws) -> list[dict[str, Any]]:
    headers = [c.value for c in ws[1]]
    return [dict(zip(headers, r)) for r in ws.iter_rows(min_row=2, values_only=True)]


def test_report_workbook_shows_blank_ctx_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = journal(tmp_path / "m", mixed_records())
    out = tmp_path / "m.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    assert "no context-switch counts" in capsys.readouterr().err                        # said on the terminal too
    wb = openpyxl.load_workbook(out)
    scores = {r["Configuration"]: r for r in rows(wb["Scores"])}
    esx = scores["pvscsi"]
    assert esx["ctx/MiB mean"] is None and esx["ctx/MiB std"] is None and esx["Normalized ctx"] is None
    assert esx["Rank by ctx"] is None and esx["ctx/MiB note"] == ESX_REASON
    assert esx["Efficiency score"] == pytest.approx(0.5) and esx["Rank"] == 2
    assert esx["Score basis"].startswith("CPU/MiB alone: 1 of 3 configurations")
    blk = scores["virtio-blk aio=native"]
    assert blk["ctx/MiB mean"] == pytest.approx(10.0) and blk["ctx/MiB note"] is None and blk["Rank by ctx"] == 2
    assert blk["Normalized ctx"] is None and blk["Score basis"] == esx["Score basis"]
    assert scores["a aio=native"]["Score basis"] == "CPU/MiB and ctx/MiB"
    assert scores["c aio=native"]["Normalized ctx"] == pytest.approx(1.0)
    measurements = rows(wb["Measurements"])
    no_ctx = [m for m in measurements if m["controller"] == "pvscsi"]
    assert len(no_ctx) == 2 and all(m["ctx_per_mib"] is None and m["ctx_switches"] is None for m in no_ctx)
    assert all(m["ctx_note"] == ESX_REASON and m["cpu_per_mib"] > 0 for m in no_ctx)
    assert all(m["ctx_note"] is None and m["ctx_per_mib"] > 0 for m in measurements if m["controller"] != "pvscsi")
    method = " ".join(str(c.value) for row in wb["Method"].iter_rows() for c in row if c.value)
    assert "Score without context switches" in method
    summary = " ".join(str(c.value) for row in wb["Summary"].iter_rows() for c in row if c.value)
    assert "The efficiency scores rest on CPU/MiB alone" in summary


def test_compare_reads_an_esxi_run(tmp_path: Path) -> None:
    """ESXi (A, no ctx) against a QEMU host (B) at the same point: CPU compared, ctx blank."""
    a = journal(tmp_path / "esx", [record("pvscsi", None, 1, 8.0, None)])
    b = journal(tmp_path / "pve", [record("virtio-scsi-single", "native", 1, 6.0, 30.0)], backend="qemu")
    out = tmp_path / "ab.xlsx"
    assert main(["compare", str(a), str(b), "-o", str(out), "--label-a", "esx", "--label-b", "pve"]) == 0
    (point,) = rows(openpyxl.load_workbook(out)["Comparison"])
    assert point["Host CPU/MiB reduction %"] == pytest.approx(25.0)                   # (1 - 6/8) x 100
    assert point["ctx/MiB esx"] is None and point["ctx/MiB reduction %"] is None
    assert point["ctx/MiB pve"] == pytest.approx(30.0)


# --- charts: no empty CPU vs ctx scatter charts -----------------------------------------------------------

def chart_sheet(path: Path) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str]]]:
    """The Charts sheet as (0-based anchor row, title, chart) per chart and (0-based row, text) per note."""
    wb = openpyxl.load_workbook(path)
    ws = wb["Charts"]
    charts = []
    for ch in ws._charts:
        title = "".join(r.t for r in ch.title.tx.rich.p[0].r)
        charts.append((ch.anchor._from.row, title, ch))
    notes = [(c.row - 1, str(c.value)) for row in ws.iter_rows() for c in row if c.value is not None]
    return charts, notes


def series_titles(chart: Any) -> list[str]:
    return [s.tx.v for s in chart.series]


def test_an_esxi_only_report_has_no_empty_scatter_charts_and_says_why(esx_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "esx.xlsx"
    assert main(["report", str(esx_run), "-o", str(out)]) == 0
    charts, notes = chart_sheet(out)
    group = "randread-64k [CPU-ms/MiB]"
    # the bars only; a score has no unit, so its title names the workload and the CPU metric
    assert [t for _, t, _ in charts] == ["Efficiency score (lower is better) - randread-64k (CPU time)"]
    assert notes == [(0, f"No CPU vs context-switch charts for {group}: no configuration has context-switch "
                         f"counts ({ESX_REASON}); the group is scored on CPU/MiB alone (score chart below, Scores "
                         "sheet).")]
    (row, _, bars), = charts
    assert row > 0                                                   # below the note, not over it
    ws = openpyxl.load_workbook(out)["Charts"]
    assert "A1:J4" in {str(m) for m in ws.merged_cells.ranges}       # the note is as wide as a chart and wraps
    assert ws["A1"].alignment.wrap_text
    # the bars still point at the scores, best first: nvme 0, pvscsi 1/3, lsilogic-sas 1
    from test_workbook_roundtrip import cells_of, refs
    cats, vals = refs(bars)[0]
    wb = openpyxl.load_workbook(out)
    assert cells_of(wb, cats) == ["nvme", "pvscsi", "lsilogic-sas"]
    # coloured as "no aio setting", not as an aio mode and not as the grey of an unknown one
    assert [pt.graphicalProperties.solidFill.srgbClr for pt in bars.series[0].dPt] == ["9467BD"] * 3
    assert cells_of(wb, vals) == [pytest.approx(0.0), pytest.approx(1 / 3), pytest.approx(1.0)]


def test_a_mixed_report_keeps_the_measured_points_and_notes_the_rest(tmp_path: Path) -> None:
    """randread-64k: QEMU cells with ctx and an ESXi cell without (CPU alone); seqwrite-1m: ctx everywhere."""
    out = tmp_path / "m.xlsx"
    assert main(["report", str(journal(tmp_path / "m", mixed_records())), "-o", str(out)]) == 0
    charts, notes = chart_sheet(out)
    mixed, full = "randread-64k [CPU-ms/MiB]", "seqwrite-1m [CPU-ms/MiB]"
    plain_mixed, plain_full = "randread-64k (CPU time)", "seqwrite-1m (CPU time)"   # unitless charts: no unit
    assert [t for _, t, _ in charts] == [
        f"Measured CPU and context switches per MiB - {mixed}",
        f"Efficiency score (lower is better) - {plain_mixed}",
        f"Measured CPU and context switches per MiB - {full} - INDICATIVE: single repeats, not tested",
        f"Normalized CPU and context switches per MiB - {plain_full} - INDICATIVE: single repeats, not tested",
        f"Efficiency score (lower is better) - {plain_full} - INDICATIVE: single repeats, not tested"]
    raw = charts[0][2]
    # only the configurations with ctx/MiB are points; pvscsi would be a legend entry without one
    assert series_titles(raw) == ["virtio-blk / aio=native", "virtio-scsi-single / aio=native"]
    from test_workbook_roundtrip import cells_of, refs
    wb = openpyxl.load_workbook(out)
    assert [cells_of(wb, y) for _, y in refs(raw)] == [[pytest.approx(10.0)], [pytest.approx(5.0)]]
    assert [t for _, t in notes] == [
        f"Not on the measured CPU vs context-switch chart of {mixed}: pvscsi (no context-switch "
        f"counts: {ESX_REASON}).",
        f"No normalized CPU vs context-switch chart for {mixed}: 1 of 3 configurations have no context-switch "
        "counts, so the group is scored on CPU/MiB alone and has no normalized ctx/MiB (score chart below, "
        "Scores sheet)."]
    # each note on the printed page of the chart after it: the one naming pvscsi above the measured chart,
    # the one for the normalized chart in its place, above the score bars; nothing overlaps
    rows_in_order = sorted([(r, "chart") for r, _, _ in charts] + [(r, "note") for r, _ in notes])
    assert [k for _, k in rows_in_order] == ["note", "chart", "note", "chart", "chart", "chart", "chart"]
    breaks = [b.id for b in openpyxl.load_workbook(out)["Charts"].row_breaks.brk]
    assert [sum(1 for b in breaks if b < r + 1) for r, _ in notes] == [0, 1]   # pages 1 and 2
    starts = [r for r, _ in rows_in_order]
    assert all(b - a >= 5 for a, b in zip(starts, starts[1:]))
    assert all(b - a >= 21 for a, b in zip(starts, starts[1:]) if (a, "chart") in rows_in_order)
    assert len(series_titles(charts[3][2])) == 3                     # the full group keeps both scatters whole


# --- ESXi has no aio, iothread or cache -------------------------------------------------------------------

def test_an_esxi_cell_is_its_controller_alone_even_from_an_older_journal(tmp_path: Path) -> None:
    """The vmware backend journals aio/iothread/cache as null; records written before that carried the
    matrix's default aio (io_uring), which ESXi never had: both read as aio n/a, named by controller."""
    old = record("pvscsi", None, 2, 12.0, None)
    old["key"] = old["cell"]["key"] = "pvscsi/aio=io_uring/iothread=0/cache=none/randread-64k/rep2"
    old["cell"]["disk"].update(aio="io_uring", iothread=False, cache="none")
    frame = ingest([journal(tmp_path / "e", [record("pvscsi", None, 1, 10.0, None), old])], strict=True).frame
    assert list(frame["aio"]) == ["n/a", "n/a"] and list(frame["cache"]) == ["n/a", "n/a"]
    assert frame["iothread"].isna().all()
    (cell,) = score_cells(frame).cells.to_dict("records")              # one configuration, two repeats
    assert (cell["config"], cell["n"], cell["cpu_per_mib_mean"]) == ("pvscsi", 2, pytest.approx(11.0))


def test_qemus_pvscsi_and_esxis_pvscsi_are_two_configurations(tmp_path: Path) -> None:
    """QEMU pvscsi aio=native 20, aio=threads 30 CPU-ms/MiB; ESXi pvscsi 25 (no ctx: the group is CPU alone)."""
    recs = [record("pvscsi", "native", 1, 20.0, 10.0), record("pvscsi", "threads", 1, 30.0, 12.0),
            record("pvscsi", None, 1, 25.0, None)]
    out = tmp_path / "p.xlsx"
    assert main(["report", str(journal(tmp_path / "p", recs)), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    scores = {r["Configuration"]: r for r in rows(wb["Scores"])}
    assert set(scores) == {"pvscsi aio=native", "pvscsi aio=threads", "pvscsi"}
    assert (scores["pvscsi"]["aio"], scores["pvscsi"]["cache"], scores["pvscsi"]["Efficiency score"]) == \
        ("n/a", "n/a", pytest.approx(0.5))
    findings = [str(c.value) for c in wb["Summary"]["B"] if c.value]
    # aio modes are compared among QEMU's pvscsi only: ESXi's is no "aio=n/a" mode
    assert "Indicative (single repeat, not tested): For pvscsi, aio=native is the most efficient aio mode (score " \
           "0.000); aio=threads is the least efficient (1.000)." in findings
    assert not any("aio=n/a" in f for f in findings)
    # the chart data's series column (controller / aio) names the ESXi configuration by controller alone
    series = [a for a, b in wb["Chart data"].iter_rows(min_col=1, max_col=2, values_only=True) if b == "pvscsi"]
    assert series == ["pvscsi"]
    method = {r[0]: r[1] for r in wb["Method"].iter_rows(min_col=1, max_col=2, values_only=True) if r[0]}
    assert method["aio n/a"].startswith("ESXi has no aio, iothread or cache setting")


def test_a_linux_collectors_null_count_with_its_own_reason_is_a_blank_not_a_damaged_record(tmp_path: Path) -> None:
    """The Linux collector leaves ``ctx_switches`` null when a thread lacked its counter, naming the thread in
    ``host.null_reasons`` (not ``unmatched``): read as a measurement without ctx, the reason in null_reasons."""
    why = "thread 4242 (CPU 0/KVM) has no voluntary_ctxt_switches line in its status"
    rec = record("virtio-blk", "native", 1, 20.0, None, reason=None, per_mib=False)
    rec["host"].update(source="perf+proc", scope="qemu-process",
                       null_reasons={"ctx_switches": why, "cpu_user": "no utime split"})
    run = journal(tmp_path / "r", [rec], backend="qemu")
    data = ingest([run], strict=True)
    row = data.frame.iloc[0]
    assert row["cpu_per_mib"] == pytest.approx(20.0) and math.isnan(row["ctx_per_mib"])
    assert why in row["null_reasons"] and "no utime split" in row["null_reasons"]
    rec["host"]["null_reasons"] = {"cpu_user": "no utime split"}          # the ctx reason gone: damaged
    run = journal(tmp_path / "bad", [rec], backend="qemu")
    with pytest.raises(DataFileError, match="host.null_reasons.ctx_switches"):
        ingest([run], strict=True)
