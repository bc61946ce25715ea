"""A-vs-B comparison (technotes 000/003) on a hand-computed 2 block sizes x 2 queue depths fixture,
through `stormatrix compare` on two directories of plain fio JSON files, and on the real captures.

The fixture files are a real fio 3.33 capture with the numbers below written into it. Everything
expected is computed in this file from the literal numbers (the arithmetic is the technotes'
formulas written out), never by calling the code under test.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import openpyxl
import pytest
from scipy import stats

from stormatrix.analysis.score.compare import compare
from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
import paths

DATA = paths.DATA
LABEL_A, LABEL_B = "VMware ESXi 7.0U3c", "Proxmox VE 7.2"
# (bs, qd) -> (iops per repeat, mean latency in us per repeat)
A = {(4096, 1): ([1000, 1100], [100, 110]), (4096, 8): ([5000, 5200], [400, 420]),
     (65536, 1): ([800, 820], [150, 160]), (65536, 8): ([2000, 2100], [500, 520])}
B = {(4096, 1): ([1500, 1600], [80, 85]), (4096, 8): ([4800, 5400], [380, 450]),
     (65536, 1): ([1200, 1260], [110, 115]), (65536, 8): ([2600, 2700], [520, 530])}


def mean(v):
    return sum(v) / len(v)


def var(v):
    m = mean(v)
    return sum((x - m) ** 2 for x in v) / (len(v) - 1)


def welch_p(b, a):
    """Welch's t-test written out: t = (mb - ma) / sqrt(vb/nb + va/na), Welch-Satterthwaite df."""
    sa, sb = var(a) / len(a), var(b) / len(b)
    t = (mean(b) - mean(a)) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa ** 2 / (len(a) - 1) + sb ** 2 / (len(b) - 1))
    return 2 * stats.t.sf(abs(t), df)


def expected_points():
    out = {}
    for key in A:
        (ia, la), (ib, lb) = A[key], B[key]
        bs = key[0]
        out[key] = {
            "iops_a": mean(ia), "iops_b": mean(ib), "lat_a": mean(la), "lat_b": mean(lb),
            "bw_a": mean(ia) * bs / 2**20, "bw_b": mean(ib) * bs / 2**20,
            "gain": (mean(ib) / mean(ia) - 1) * 100, "lat_red": (1 - mean(lb) / mean(la)) * 100,
            "p_iops": welch_p(ib, ia), "p_lat": welch_p(lb, la),
        }
    return out


def write_side(folder: Path, side: dict) -> None:
    template = json.loads((DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text())
    folder.mkdir(parents=True)
    for (bs, qd), (iops, lat) in side.items():
        for rep, (i, l) in enumerate(zip(iops, lat), start=1):
            doc = copy.deepcopy(template)
            job = doc["jobs"][0]
            job["job options"].update({"bs": str(bs), "iodepth": str(qd), "rw": "randread"})
            r = job["read"]
            r["iops"] = float(i)
            r["runtime"] = 10000
            r["total_ios"] = i * 10
            r["io_bytes"] = i * 10 * bs
            r["io_kbytes"] = r["io_bytes"] // 1024
            r["bw_bytes"] = i * bs
            r["bw"] = i * bs // 1024
            r["lat_ns"]["mean"] = l * 1000.0
            (folder / f"result_bs{bs}_qd{qd}_rep{rep}.json").write_text(json.dumps(doc))


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    write_side(tmp_path / "a", A)
    write_side(tmp_path / "b", B)
    return tmp_path / "a", tmp_path / "b"


def table(ws, header_row: int = 1) -> list[dict]:
    headers = [c.value for c in ws[header_row]]
    rows = []
    for row in ws.iter_rows(min_row=header_row + 1, values_only=True):
        if row[0] is None:
            break
        rows.append(dict(zip(headers, row)))
    return rows


def test_compare_cli_workbook_equals_hand_computation(sides, tmp_path):
    out = tmp_path / "ab.xlsx"
    code = main(["compare", str(sides[0]), str(sides[1]), "--label-a", LABEL_A, "--label-b", LABEL_B,
                 "-o", str(out)])
    assert code == 0
    wb = openpyxl.load_workbook(out)
    exp = expected_points()
    rows = {(r["Block size (bytes)"], r["QD"]): r for r in table(wb["Comparison"])}
    assert set(rows) == set(exp)
    for key, e in exp.items():
        r = rows[key]
        assert r[f"IOPS {LABEL_A}"] == pytest.approx(e["iops_a"], abs=1e-9)
        assert r[f"IOPS {LABEL_B}"] == pytest.approx(e["iops_b"], abs=1e-9)
        assert r["IOPS gain %"] == pytest.approx(e["gain"], abs=1e-9)
        assert r[f"Latency {LABEL_A} (us)"] == pytest.approx(e["lat_a"], abs=1e-9)
        assert r["Latency reduction %"] == pytest.approx(e["lat_red"], abs=1e-9)
        assert r[f"Bandwidth {LABEL_B} (MiB/s)"] == pytest.approx(e["bw_b"], abs=1e-9)
        assert r["p (IOPS, Welch)"] == pytest.approx(e["p_iops"], abs=1e-9)
        assert r["p (latency, Welch)"] == pytest.approx(e["p_lat"], abs=1e-9)
        assert r["IOPS significance"] == ("significant" if e["p_iops"] < 0.05 else "n.s.")
        assert r["B wins IOPS"] == (e["iops_b"] > e["iops_a"])
        assert r["B wins latency"] == (e["lat_b"] < e["lat_a"])
    # averages by queue depth (across block sizes) and by block size (across queue depths)
    avg = wb["Averages"]
    by_qd = {r["QD"]: r for r in table(avg)}
    for qd in (1, 8):
        gains = [exp[(bs, qd)]["gain"] for bs in (4096, 65536)]
        reds = [exp[(bs, qd)]["lat_red"] for bs in (4096, 65536)]
        assert by_qd[qd]["Mean IOPS gain % (across block sizes)"] == pytest.approx(mean(gains), abs=1e-9)
        assert by_qd[qd]["Mean latency reduction % (across block sizes)"] == pytest.approx(mean(reds), abs=1e-9)
    by_bs = {r["Block size (bytes)"]: r for r in table(avg, header_row=6)}
    for bs in (4096, 65536):
        gains = [exp[(bs, qd)]["gain"] for qd in (1, 8)]
        assert by_bs[bs]["Mean IOPS gain % (across queue depths)"] == pytest.approx(mean(gains), abs=1e-9)
    # summary: wins and peak bandwidth
    summary = {r[0]: r[1] for r in wb["Summary"].iter_rows(min_row=3, max_row=12, max_col=2, values_only=True)}
    assert summary[f"Points where {LABEL_B} has more IOPS"] == sum(e["iops_b"] > e["iops_a"] for e in exp.values()) == 3
    assert summary[f"Points where {LABEL_B} has lower latency"] == sum(e["lat_b"] < e["lat_a"] for e in exp.values()) == 2
    peak_a = max(e["bw_a"] for e in exp.values())
    peak_b = max(e["bw_b"] for e in exp.values())
    findings = [r[1] for r in wb["Summary"].iter_rows(min_row=1, values_only=True) if isinstance(r[1], str)]
    assert any(f"{peak_b:.1f} MiB/s for {LABEL_B}" in f and f"{peak_a:.1f} MiB/s for {LABEL_A}" in f for f in findings)
    assert any(f"{LABEL_B} beat {LABEL_A} in 3 of 4 tests in IOPS" in f for f in findings)
    # the tidy CSV of both sides sits next to the workbook
    assert len(out.with_suffix(".csv").read_text().splitlines()) == 1 + 16


def test_compare_on_real_captures_matches_raw_json(tmp_path):
    out = tmp_path / "real.xlsx"
    a_dir, b_dir = DATA / "fio" / "compare" / "A", DATA / "fio" / "compare" / "B"
    assert main(["compare", str(a_dir), str(b_dir), "-o", str(out)]) == 0
    raw = {}
    for side, d in (("a", a_dir), ("b", b_dir)):
        for f in sorted(d.glob("*.json")):
            doc = json.loads(f.read_text())
            job = doc["jobs"][0]
            key = (int(job["job options"]["bs"]), int(job["job options"]["iodepth"]))
            raw.setdefault((side, key), []).append(job["read"]["iops"])
    rows = {(r["Block size (bytes)"], r["QD"]): r for r in table(openpyxl.load_workbook(out)["Comparison"])}
    assert len(rows) == 4
    for key, r in rows.items():
        gain = (mean(raw[("b", key)]) / mean(raw[("a", key)]) - 1) * 100
        assert r["IOPS gain %"] == pytest.approx(gain, abs=1e-9)


def test_points_without_repeats_or_variance_are_marked_and_one_sided_points_noted(tmp_path):
    write_side(tmp_path / "a", {(4096, 1): ([100], [10]), (4096, 2): ([100, 100], [10, 10]),
                                (8192, 1): ([50, 60], [20, 21])})
    write_side(tmp_path / "b", {(4096, 1): ([200], [5]), (4096, 2): ([100, 100], [10, 10])})
    a, b = ingest([tmp_path / "a"]).frame, ingest([tmp_path / "b"]).frame
    r = compare(a, b)
    marks = dict(zip(r.points["point"], r.points["iops_significance"]))
    assert marks == {"randread 4k QD1": "no repeats", "randread 4k QD2": "no variance"}
    assert any("only A has 1 points (randread 8k QD1)" in n for n in r.notes)
    assert r.summary["points"] == 2 and r.summary["iops_wins"] == 1


def test_compare_refuses_sides_with_nothing_in_common(tmp_path):
    from stormatrix.core.errors import InputError

    write_side(tmp_path / "a", {(4096, 1): ([100], [10])})
    write_side(tmp_path / "b", {(8192, 1): ([100], [10])})
    with pytest.raises(InputError, match="no .* point in common"):
        compare(ingest([tmp_path / "a"]).frame, ingest([tmp_path / "b"]).frame)
