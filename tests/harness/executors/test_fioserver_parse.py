"""fio client-mode output, parsed from real captures (fio 3.33, loopback servers; tests/data/fio-server).

The captures were made with this module's own job files against ``fio --server`` processes on
127.0.0.1: three guests; two guests with numjobs=2; three guests with g02's server process group
SIGKILLed mid-run; three guests with g03's server SIGSTOPped mid-run (fio gave up after ~40 s); and
a probe with g02's server gone (connection refused).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stormatrix.core.errors import DataFileError
from stormatrix.executors.fioserver.client import FioClientRun, client_args
from stormatrix.executors.fioserver.inputs import FioGuest, FioJob
from stormatrix.executors.fioserver.parse import (lost_hosts_in_text, noise_lines, parse_client_output, read_iops_logs,
                                                  window_skew)
from stormatrix.executors.fioserver.probe import PROBE_JOB, _probe_verdicts
import paths

DATA = paths.DATA / "fio-server"


def capture(name: str) -> tuple[str, str, list[FioGuest]]:
    guests = [FioGuest(**g) for g in json.loads((DATA / f"{name}.guests.json").read_text())]
    return ((DATA / f"{name}.stdout.txt").read_text(), (DATA / f"{name}.stderr.txt").read_text(), guests)


class TestThreeGuests:
    def test_every_guest_has_its_own_result(self) -> None:
        out, _, guests = capture("fio333-client-3guests")
        parsed = parse_client_output(out, guests)
        assert sorted(parsed.per_guest) == ["g01", "g02", "g03"]
        assert parsed.missing == []
        assert all(r["total"]["io_bytes"] > 0 and r["error"] == 0 for r in parsed.per_guest.values())
        assert parsed.per_guest["g01"]["version"] == "fio-3.33"

    def test_aggregate_equals_sum_and_fio_all_clients(self) -> None:
        out, _, guests = capture("fio333-client-3guests")
        parsed = parse_client_output(out, guests)
        assert parsed.aggregate is not None and parsed.fio_all_clients is not None
        total = sum(r["total"]["io_bytes"] for r in parsed.per_guest.values())
        assert parsed.aggregate["total"]["io_bytes"] == total
        assert parsed.fio_all_clients["total"]["io_bytes"] == total
        iops = sum(r["total"]["iops"] for r in parsed.per_guest.values())
        assert parsed.aggregate["total"]["iops"] == pytest.approx(iops)
        assert parsed.check["match"] is True
        assert parsed.check["read"]["sum_io_bytes"] == parsed.check["read"]["fio_io_bytes"]

    def test_noise_lines_are_the_servers_text(self) -> None:
        out, _, _ = capture("fio333-client-3guests")
        noise = noise_lines(out)
        assert sum(1 for n in noise if n.endswith("Starting 1 process")) == 3
        assert all(n.startswith("<") for n in noise)

    def test_a_guest_matched_on_host_and_port(self) -> None:
        out, _, guests = capture("fio333-client-3guests")
        renamed = [FioGuest("vm-a", guests[0].host, guests[0].port), FioGuest("vm-b", guests[1].host, guests[1].port)]
        parsed = parse_client_output(out, renamed)
        assert sorted(parsed.per_guest) == ["vm-a", "vm-b"]
        assert len(parsed.unknown_entries) == 1  # g03's entry belongs to no listed guest
        # the aggregate is the sum of the listed guests, so fio's All clients (3 guests) disagrees
        assert parsed.check["match"] is False


def test_numjobs_clones_sum_into_one_guest_result() -> None:
    out, _, guests = capture("fio333-client-2guests-numjobs2")
    parsed = parse_client_output(out, guests)
    assert sorted(parsed.per_guest) == ["g01", "g02"]
    assert {"read", "write", "total"} <= set(parsed.per_guest["g01"])  # randrw 70/30
    assert parsed.check["match"] is True
    assert parsed.aggregate is not None
    assert parsed.aggregate["write"]["io_bytes"] == sum(r["write"]["io_bytes"] for r in parsed.per_guest.values())


def test_killed_guest_is_missing_and_named_by_fio() -> None:
    out, err, guests = capture("fio333-client-3guests-g02-killed")
    parsed = parse_client_output(out, guests)
    assert [g.name for g in parsed.missing] == ["g02"]
    assert sorted(parsed.per_guest) == ["g01", "g03"]
    # fio's All clients then covers the survivors only, and still equals their sum
    assert parsed.check["match"] is True and parsed.check["clients"] == 2
    evidence = lost_hosts_in_text(out + err)
    assert [(h, line) for h, _, line in evidence] == [("127.0.0.1", "client: host=127.0.0.1 disconnected")]


def test_hung_guest_is_missing_and_fio_writes_no_all_clients() -> None:
    out, err, guests = capture("fio333-client-3guests-g03-hung")
    parsed = parse_client_output(out, guests)
    assert [g.name for g in parsed.missing] == ["g03"]
    assert parsed.fio_all_clients is None
    assert parsed.check["match"] is None  # nothing to compare with: never reported as a match
    lines = [line for _, _, line in lost_hosts_in_text(out + "\n" + err)]
    assert "fio: client 127.0.0.1 timed out" in lines
    assert any("timeout on SEND_ETA" in line for line in lines)


def test_probe_names_the_refused_guest_with_its_port() -> None:
    out, err, guests = capture("fio333-probe-g02-refused")
    run = FioClientRun(args=[], stdout=out, stderr=err, returncode=0, timed_out=False, elapsed_s=1.4,
                       rusage={}, started_lines=1, window={})
    verdicts = {v.guest.name: v for v in _probe_verdicts(guests, run)}
    assert verdicts["g01"].ok and verdicts["g01"].detail == "answered"
    assert not verdicts["g02"].ok
    assert f"failed to connect to 127.0.0.1:{guests[1].port}" in verdicts["g02"].detail


def test_other_client_mode_capture_with_warnings_before_the_json() -> None:
    """analysis' own capture (tausworthe warnings as server text) parses the same way."""
    text = (paths.DATA / "fio" / "client_server_2clients_noise.json").read_text()
    doc_ports = sorted({e["port"] for e in json.loads(text[text.index("\n{") + 1:])["client_stats"]})
    guests = [FioGuest(f"vm{i}", "127.0.0.1", p) for i, p in enumerate(doc_ports)]
    parsed = parse_client_output(text, guests)
    assert parsed.missing == [] and parsed.check["match"] is True


def test_output_without_json_is_a_data_error() -> None:
    with pytest.raises(DataFileError):
        parse_client_output("fio: failed to connect to 127.0.0.1:1\n", [FioGuest("g", "127.0.0.1", 1)])


def test_single_client_has_no_all_clients_entry() -> None:
    out, _, guests = capture("fio333-client-3guests")
    doc = json.loads(out[out.index("\n{") + 1:])
    doc["client_stats"] = [e for e in doc["client_stats"] if e.get("port") == guests[0].port and e["jobname"] != "All clients"]
    parsed = parse_client_output(json.dumps(doc), guests[:1])
    assert parsed.fio_all_clients is None and parsed.check["match"] is None
    assert parsed.aggregate is not None
    assert parsed.aggregate["total"]["io_bytes"] == parsed.per_guest["g01"]["total"]["io_bytes"]


class TestJobFiles:
    def job(self, **kw: object) -> FioJob:
        base: dict[str, object] = dict(name="randread-4k-qd32", rw="randread", bs=4096, iodepth=32, ramp_s=60,
                                       measure_s=1200, filename="/dev/sdb")
        base.update(kw)
        return FioJob(**base)  # type: ignore[arg-type]

    def test_seed_job_renders_like_the_technote(self) -> None:
        text = self.job().render()
        lines = text.splitlines()
        for want in ("rw=randread", "direct=1", "ioengine=libaio", "time_based=1", "runtime=1200",
                     "ramp_time=60", "numjobs=1", "filename=/dev/sdb", "bs=4096", "iodepth=32"):
            assert want in lines
        assert "group_reporting=1" not in lines

    def test_log_prefix_and_subsecond_times(self) -> None:
        lines = self.job(ramp_s=0.5, measure_s=1.5).render(log_prefix="g01").splitlines()
        assert "ramp_time=500ms" in lines and "runtime=1500ms" in lines
        assert {"log_unix_epoch=1", "write_iops_log=g01", "log_avg_msec=187"} <= set(lines)

    def test_per_guest_target_and_colon_escaped(self) -> None:
        lines = self.job().render(filename="/dev/disk/by-id/virtio-a:b").splitlines()
        assert "filename=/dev/disk/by-id/virtio-a\\:b" in lines

    def test_numjobs_reports_per_guest(self) -> None:
        assert "group_reporting=1" in self.job(numjobs=4).render().splitlines()

    @pytest.mark.parametrize("bad", [dict(filename="/dev/sdb\n[evil]"), dict(rw="bogus"), dict(bs=0),
                                     dict(name="All clients"), dict(ioengine="libaio\nexec"), dict(measure_s=0)])
    def test_bad_values_are_refused(self, bad: dict[str, object]) -> None:
        with pytest.raises(ValueError):
            self.job(**bad)

    def test_probe_job_does_no_disk_io(self) -> None:
        assert "ioengine=null" in PROBE_JOB.render().splitlines()

    def test_client_args_give_each_client_its_own_job_file(self) -> None:
        guests = [FioGuest("a", "127.0.0.1", 9001), FioGuest("b", "127.0.0.1", 9002)]
        args = client_args("/usr/bin/fio", [(guests[0], Path("/w/a.fio")), (guests[1], Path("/w/b.fio"))])
        assert args == ["/usr/bin/fio", "--output-format=json", "--client=127.0.0.1,9001", "/w/a.fio",
                        "--client=127.0.0.1,9002", "/w/b.fio"]


class TestGuests:
    def test_parse_name_host_port(self) -> None:
        assert FioGuest.parse("vm01=10.0.0.11:8766") == FioGuest("vm01", "10.0.0.11", 8766)
        assert FioGuest.parse("vm01=localhost").port == 8765

    @pytest.mark.parametrize("text", ["vm01", "=h:1", "vm 1=h:1", "vm01=h:x", "vm01=h:70000", "vm01=h,1:2"])
    def test_bad_guests(self, text: str) -> None:
        with pytest.raises(ValueError):
            FioGuest.parse(text)


def test_iops_logs_date_each_window(tmp_path: Path) -> None:
    # two clones of g01 (numjobs=2) and one job of g02, samples every 250 ms, unix ms
    (tmp_path / "g01_iops.1.log.127.0.0.1").write_text("1000250, 10, 0, 0, 0\n1000500, 11, 0, 0, 0\n")
    (tmp_path / "g01_iops.2.log.127.0.0.1").write_text("1000260, 10, 0, 0, 0\n1000510, 11, 0, 0, 0\n")
    (tmp_path / "g02_iops.1.log.127.0.0.1").write_text("1000650, 10, 0, 0, 0\n1000900, 11, 0, 0, 0\n")
    w1 = read_iops_logs(tmp_path, "g01", 250)
    w2 = read_iops_logs(tmp_path, "g02", 250)
    assert w1 == {"start_ms": 1000000.0, "end_ms": 1000510.0, "samples": 4}
    assert w2 is not None and w2["start_ms"] == 1000400.0
    assert read_iops_logs(tmp_path, "g03", 250) is None
    skew = window_skew({"g01": w1, "g02": w2, "g03": None})
    assert skew["start_skew_s"] == pytest.approx(0.4)
    assert skew["clients_dated"] == 2
    assert skew["overlap_s"] == pytest.approx(0.11)


def test_fio_all_clients_rates_use_the_longest_runtime() -> None:
    """8 rate-limited guests whose runtimes differ (1501-1504 ms): counts are equal, rates are not.

    fio's "All clients" IOPS is summed I/Os over the longest runtime; the aggregate we journal is the
    sum of the guests' own IOPS. The check verifies fio against its own definition and keeps both.
    """
    out, _, guests = capture("fio333-client-8guests-runtimes-differ")
    parsed = parse_client_output(out, guests)
    assert len(parsed.per_guest) == 8
    runtimes = {r["read"]["runtime_ms"] for r in parsed.per_guest.values()}
    assert len(runtimes) > 1
    row = parsed.check["read"]
    assert row["sum_io_bytes"] == row["fio_io_bytes"] and row["sum_total_ios"] == row["fio_total_ios"]
    assert row["sum_iops"] > row["fio_iops"]
    assert row["fio_iops"] == pytest.approx(row["sum_total_ios"] * 1000 / max(runtimes), rel=1e-6)
    assert parsed.check["match"] is True
    assert parsed.aggregate is not None
    assert parsed.aggregate["read"]["iops"] == pytest.approx(sum(r["read"]["iops"] for r in parsed.per_guest.values()))


def test_the_aggregate_check_gives_no_verdict_on_a_figure_fio_did_not_write() -> None:
    """The real 3-guest capture with one guest's read ``runtime`` deleted (what a damaged or truncated client
    entry looks like): the summary leaves the runtime null, and the check says it cannot compare it instead
    of raising or calling it a match; the counts are still compared."""
    out, _, guests = capture("fio333-client-3guests")
    doc = json.loads(out[out.index("{"):])
    entry = next(e for e in doc["client_stats"] if e.get("jobname") != "All clients")
    del entry["read"]["runtime"]
    parsed = parse_client_output(json.dumps(doc), guests)
    row = parsed.check["read"]
    assert row["match"] is None and "runtime_ms" in row["unchecked"]
    assert row["sum_io_bytes"] == row["fio_io_bytes"]
    assert parsed.check["match"] is None  # not True: one direction could not be checked
    assert parsed.check["total"]["match"] is True  # the totals compare counts only
