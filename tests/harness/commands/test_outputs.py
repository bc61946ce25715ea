"""The one output planner (commands/outputs.py): an output never replaces an input of the same command
(a perf sidecar where the tidy CSV would go, a file inside an input folder, either side of a compare), an
over-long output name is refused before anything is created, and the demo refuses a workbook it could not
write before booting anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import cli
import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"
DEMO_MATRIX = ROOT / "harness" / "matrices" / "demo.toml"
SUITE = """[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
"""


# --- one output planner: an output never replaces an input of the same command ------------------------

FIO_FILE = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
FIO_WRITE = DATA / "fio" / "fio3_randwrite_bs64k_qd4.json"
PERF_FILE = DATA / "perf" / "perf_stat_fio_process.csv"


def result_with_sidecar(folder: Path, stem: str = "r") -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    result, sidecar = folder / f"{stem}.json", folder / f"{stem}.csv"
    result.write_bytes(FIO_FILE.read_bytes())
    sidecar.write_bytes(PERF_FILE.read_bytes())
    return result, sidecar


def test_the_default_csv_never_replaces_the_perf_sidecar_it_reads(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    result, sidecar = result_with_sidecar(tmp_path)
    before = sidecar.read_bytes()
    code, text = cli(["report", str(result), "-o", str(tmp_path / "r.xlsx")], capsys)
    assert code == 2 and str(sidecar) in text and "Fix:" in text
    assert sidecar.read_bytes() == before and not (tmp_path / "r.xlsx").exists()
    # the valid neighbour: the same report with the CSV elsewhere works, and reads the sidecar
    code, text = cli(["report", str(result), "-o", str(tmp_path / "r.xlsx"), "--csv", str(tmp_path / "tidy.csv")],
                     capsys)
    assert code == 0, text
    assert sidecar.read_bytes() == before


@pytest.mark.parametrize("flag", ["--csv", "-o"])
def test_an_output_onto_a_file_found_inside_an_input_folder_is_refused(tmp_path: Path, flag: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    result, sidecar = result_with_sidecar(tmp_path / "in")
    other = tmp_path / "in" / "deep" / "w.json"
    other.parent.mkdir()
    other.write_bytes(FIO_WRITE.read_bytes())
    target = sidecar if flag == "--csv" else other.with_suffix(".xlsx")
    argv = ["report", str(tmp_path / "in"), "-o", str(tmp_path / "o.xlsx"), "--csv", str(sidecar)] \
        if flag == "--csv" else ["report", str(tmp_path / "in"), "-o", str(target)]
    if flag == "-o":  # the workbook's default CSV is deep/w.csv: not an input, so this one is fine
        code, text = cli(argv, capsys)
        assert code == 0, text
        return
    before = target.read_bytes()
    code, text = cli(argv, capsys)
    assert code == 2 and str(sidecar) in text
    assert target.read_bytes() == before


def test_compare_refuses_an_output_onto_either_sides_sidecar(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    a, a_csv = result_with_sidecar(tmp_path / "a")
    b, _ = result_with_sidecar(tmp_path / "b", "w")
    b.write_bytes(FIO_WRITE.read_bytes())
    before = a_csv.read_bytes()
    code, text = cli(["compare", str(a), str(b), "-o", str(tmp_path / "a" / "r.xlsx")], capsys)
    assert code == 2 and str(a_csv) in text
    assert a_csv.read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["report", str(FIO_FILE), "-o", "{tmp}/" + "n" * 250 + ".xlsx"],
    ["report", str(FIO_FILE), "-o", "{tmp}/ok.xlsx", "--csv", "{tmp}/" + "c" * 240 + ".csv"],
    ["compare", str(FIO_FILE), str(FIO_WRITE), "-o", "{tmp}/" + "n" * 230 + ".xlsx"],
    ["run", str(DEMO_MATRIX), "-o", "{tmp}/" + "d" * 300],
    ["demo", "-o", "{tmp}/" + "d" * 300],
    ["demo", "-o", "{tmp}/d", "--workbook", "{tmp}/" + "w" * 250 + ".xlsx"],
    ["suite", "run", "{suite}", "-o", "{tmp}/" + "s" * 256]])
def test_over_long_output_names_are_refused_before_anything_is_created(
        argv: list[str], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path_factory.mktemp("suite") / "s.toml"
    suite.write_text(SUITE)
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{suite}", str(suite)) for a in argv]
    code, text = cli(argv, capsys)
    assert code == 2, text
    assert "Traceback" not in text and ("too long" in text or "bytes long" in text), text
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_demo_refuses_a_workbook_it_could_not_write_before_booting_anything(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "-o", str(tmp_path / "d"), "--workbook", str(tmp_path / "w.txt")], capsys)
    assert code == 2 and ".xlsx" in text
    assert not (tmp_path / "d").exists()
