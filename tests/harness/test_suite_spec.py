"""A suite file that cannot run is refused before anything starts, by `suite plan` as by `suite run`: a fio
client that cannot run, one guest listed twice, a network without room for the VMs, a side that is no
label, block sizes and sizes beyond the limits; different guests and a network with room are accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stormatrix.cli import main
from clirun import cli

SUITE = """[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
"""


# --- suite matrices that cannot run are refused before starting --------------------------------------------

def suite_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize("fio,says", [("/nonexistent/fio", "does not exist"), ("{dir}", "not an executable"),
                                      ("no-such-fio-binary", "no such program on PATH"), ("", "--fio is empty")])
def test_suite_run_refuses_a_fio_client_it_cannot_run_before_any_point(fio: str, says: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE)
    (tmp_path / "adir").mkdir()
    code, text = cli(["suite", "run", str(matrix), "-o", str(tmp_path / "run"),
                      "--fio", fio.replace("{dir}", str(tmp_path / "adir"))], capsys)
    assert code == 2 and says in text and "Fix:" in text
    assert not (tmp_path / "run" / "journal.ndjson").exists()  # no point journaled as an error


@pytest.mark.parametrize("guests", ['["a=BENCH-VM1.lab:8765", "b=bench-vm1.LAB:8765"]',
                                    '["vm1=10.0.0.1:8765", "VM1=10.0.0.2:8765"]'])
def test_one_guest_listed_twice_in_other_letter_case_is_refused(guests: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('["vm01=10.0.0.11:8765"]', guests))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 2 and "[suite] guests" in text and "case" in text, text


def test_different_guests_are_still_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('["vm01=10.0.0.11:8765"]',
                                                '["vm1=10.0.0.1:8765", "vm2=10.0.0.2:8765", "vm3=10.0.0.1:8766"]'))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 0, text


VMS_SUITE = """[suite]
side = "A"
filename = "/dev/sdb"
vms = [101, 102, 103]
network = "{net}"
[proxmox]
host = "10.0.0.2"
node = "pve"
token_id = "root@pam!t"
token_secret_env = "PVE_TOKEN"
"""


@pytest.mark.parametrize("net,says", [("127.0.0.0/8", "loopback"), ("10.0.0.5/32", "1 address(es) for 3 VMs"),
                                      ("10.0.0.4/31", "2 address(es)"), ("224.0.0.0/24", "multicast")])
def test_a_network_that_cannot_hold_the_vms_is_refused(net: str, says: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["suite", "plan", str(suite_file(tmp_path, VMS_SUITE.format(net=net)))], capsys)
    assert code == 2 and "[suite] network" in text and says in text, text


def test_a_network_with_room_for_the_vms_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["suite", "plan", str(suite_file(tmp_path, VMS_SUITE.format(net="10.0.0.0/29")))], capsys)
    assert code == 0, text


def test_suite_plan_output_refuses_what_suite_run_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "journal.ndjson").write_text(json.dumps({"schema": "stormatrix/record-1", "type": "run", "run_id": "r1", "suite": "s",
                                                        "side": "B", "guests": [{"name": "vm01"}]}) + "\n")
    matrix = suite_file(tmp_path, SUITE)
    code, plan_text = cli(["suite", "plan", str(matrix), "-o", str(run_dir)], capsys)
    assert code == 2 and "side" in plan_text
    code, run_text = cli(["suite", "run", str(matrix), "-o", str(run_dir)], capsys)
    assert code == 2 and plan_text.splitlines()[-1] == run_text.splitlines()[-1]


# --- [suite]: the side label, block sizes and size, refused as [[workload]] and --side refuse them -------

SIDE_SUITE = '[suite]\nside = {side}\nfilename = "/dev/vdb"\nguests = ["vm01=10.0.0.11:8765"]\nblock_sizes = {bs}\n'


def suite_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *, side: str = '"Proxmox VE 8.2"',
               bs: str = '["4k"]', extra: str = "") -> tuple[int, str]:
    path = tmp_path / "s.toml"
    path.write_text(SIDE_SUITE.format(side=side, bs=bs) + extra)
    code = main(["suite", "plan", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("side", ['""', '"  "', '"A\\nB"', '"' + "x" * 101 + '"', '"a\\u0000"'])
def test_a_suite_side_that_is_no_label_is_refused(side: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, text = suite_plan(tmp_path, capsys, side=side)
    assert code == 2 and "[suite] side" in text and str(tmp_path / "s.toml") in text and "Fix:" in text


def test_suite_block_sizes_and_size_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = suite_plan(tmp_path, capsys, bs='["4k", "1g"]', extra=f"size = {2**63 - 1}\n")
    assert code == 0 and "side 'Proxmox VE 8.2'" in text, text
    for bs in ('["4k", "2g"]', f"[{2**30 + 512}]", f"[{2**70}]"):
        code, text = suite_plan(tmp_path, capsys, bs=bs)
        assert code == 2 and "[suite] block_sizes" in text and "above 1 GiB" in text, text
    for size in (str(2**63), str(2**70), '"8388608t"'):
        code, text = suite_plan(tmp_path, capsys, extra=f"size = {size}\n")
        assert code == 2 and "[suite] size" in text and "2^63" in text, text
