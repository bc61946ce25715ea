"""Real ``fio --server`` processes on 127.0.0.1, driven by one real fio client process.

Each server runs in its own directory and process group and is killed when the test ends, also on
failure. Targets are 16 MiB files in the servers' directories; points last 0.5 s + 1-2 s.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from stormatrix.core.errors import GuestDisconnected, GuestNotReady
from stormatrix.executors.fioserver.executor import FioServerExecutor, run_point
from stormatrix.executors.fioserver.inputs import FioJob
from stormatrix.executors.fioserver.probe import probe_servers, require_servers
from stormatrix.journal import Journal
from standins.fioservers import LocalFioServers, processes_in
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.registry import executor_class, suite_from_dict
from stormatrix.suiteguests import AddressGuests
from stormatrix.suiterun import run_suite

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

SMALL = 16 << 20


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[LocalFioServers]:
    with LocalFioServers(3, tmp_path / "servers") as servers:
        yield servers


def job(measure_s: float = 1.0, **kw: Any) -> FioJob:
    base: dict[str, Any] = dict(name="randread-4k-qd4", rw="randread", bs=4096, iodepth=4, ramp_s=0.5,
                                measure_s=measure_s, filename="target.dat", size=SMALL)
    base.update(kw)
    return FioJob(**base)


class Recorder:
    """A stand-in host collector: records when the window opened and closed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []
        self.on_start: list[Any] = []

    def start(self) -> None:
        self.events.append(("start", time.time()))
        for hook in self.on_start:
            hook(len([e for e in self.events if e[0] == "start"]))

    def stop(self) -> dict[str, Any]:
        self.events.append(("stop", time.time()))
        return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 0.25, "ctx_switches": 100,
                "source": "test-recorder"}


def test_probe_answers_and_names_a_dead_server(farm: LocalFioServers, tmp_path: Path) -> None:
    assert all(r.ok for r in probe_servers(farm.guests, tmp_path / "probe"))
    farm.kill("g03")
    with pytest.raises(GuestNotReady) as info:
        require_servers(farm.guests, tmp_path / "probe", point="unknown/randread-4k-qd1/rep1")
    msg = str(info.value)
    assert "1 of 3 guests" in msg and f"g03 (127.0.0.1:{farm.guest('g03').port})" in msg
    assert "Connection refused" in msg or "failed to connect" in msg
    assert "g01" not in msg and info.value.details.guests == ["g03"]


def test_one_point_on_three_guests(farm: LocalFioServers, tmp_path: Path) -> None:
    rec = Recorder()

    class Window:
        def measure_started(self) -> None:
            rec.start()

        def measure_ended(self) -> None:
            rec.stop()

    t0 = time.time()
    r = run_point(farm.guests, job(), tmp_path / "p1", window=Window())
    t1 = time.time()
    assert [c["name"] for c in r.clients] == ["g01", "g02", "g03"]
    assert all(c["fio"]["total"]["io_bytes"] > 0 for c in r.clients)
    assert r.aggregate["total"]["io_bytes"] == sum(c["fio"]["total"]["io_bytes"] for c in r.clients)
    assert r.aggregate_check["match"] is True
    assert r.skew["clients_dated"] == 3 and r.skew["start_skew_s"] >= 0, r.skew  # (its size: the host's load)
    assert [e for e, _ in rec.events] == ["start", "stop"]
    opened = rec.events[0][1]
    closed = rec.events[1][1]
    # the window encloses each client's measured I/O, and lies within the call (no figure of this machine)
    measured_s = max(c["fio"]["total"]["runtime_ms"] for c in r.clients) / 1000
    assert measured_s * 0.99 <= closed - opened <= t1 - t0
    assert r.controller["returncode"] == 0 and r.controller["cpu_s"] > 0
    assert (tmp_path / "p1" / "g02.fio").read_text().count("write_iops_log=g02") == 1


def test_executor_runs_a_matrix_cell(farm: LocalFioServers, tmp_path: Path) -> None:
    cls = executor_class("fio-server")
    assert cls is FioServerExecutor
    ex = FioServerExecutor.for_guests([(g.name, g.host, g.port) for g in farm.guests[:2]],
                                      {"filename": "target.dat", "size": "16m", "workdir": tmp_path / "ex"})
    facts = ex.wait_ready(time.monotonic() + 20)
    assert facts["guests"] == ["g01", "g02"]
    cell = Cell(DiskConfig("virtio-blk", "io_uring", False, "none"),
                Workload("randread-4k", "randread", 4096, 2), 1)

    class NoWindow:
        def measure_started(self) -> None: ...

        def measure_ended(self) -> None: ...

    res = ex.run(cell, Timing(0.5, 1.0), NoWindow())
    assert res.engine == "fio" and res.window_source == "timed"
    assert [c["name"] for c in res.data["clients"]] == ["g01", "g02"]
    assert "client_stats" in res.data["document"]


def suite_raw(farm: LocalFioServers, **suite: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"run": {"name": "loop"}, "suite": {
        "side": "A", "block_sizes": ["4k"], "queue_depths": [1, 2, 4], "ramp_seconds": 0.5,
        "measure_seconds": 1.5, "filename": "target.dat", "size": "16m",
        "guests": [f"{g.name}={g.host}:{g.port}" for g in farm.guests]}}
    raw["suite"].update(suite)
    return raw


def test_guest_killed_mid_point_is_named_and_the_suite_resumes_there(farm: LocalFioServers, tmp_path: Path) -> None:
    suite = suite_from_dict(suite_raw(farm), "loop.toml")
    keys = [p.key for p in suite.points()]
    run_dir = tmp_path / "run"
    rec = Recorder()
    # kill g02 half a second into the second point's measurement window
    rec.on_start.append(lambda n: n == 2 and threading.Timer(0.5, farm.kill, args=("g02",)).start())
    with pytest.raises(GuestDisconnected) as info:
        run_suite(suite, run_dir, AddressGuests(suite.settings(), suite.guests, collector=rec))
    msg = str(info.value)
    assert f"g02 (127.0.0.1:{farm.guest('g02').port})" in msg
    assert keys[1] in msg  # the point
    assert "g01" not in msg and "g03" not in msg

    records = Journal(run_dir).records()
    cells = [r for r in records if r["type"] == "cell"]
    errors = [r for r in records if r["type"] == "cell-error"]
    assert [c["key"] for c in cells] == [keys[0]]
    assert len(errors) == 1 and errors[0]["key"] == keys[1] and errors[0]["stage"] == "run"
    assert errors[0]["error"]["type"] == "GuestDisconnected" and errors[0]["error"]["guests"] == ["g02"]
    assert sorted(c["name"] for c in errors[0]["partial_clients"]) == ["g01", "g03"]

    first = cells[0]
    assert first["side"] == "A" and first["cell"]["disk"]["controller"] == "unknown"
    assert first["cell"]["workload"] == {"name": "randread-4k-qd1", "rw": "randread", "bs": 4096, "iodepth": 1,
                                         "numjobs": 1, "rate_mib_s": None, "rwmixread": None}
    assert [c["name"] for c in first["clients"]] == ["g01", "g02", "g03"]
    assert first["fio"]["total"]["io_bytes"] == sum(c["fio"]["total"]["io_bytes"] for c in first["clients"])
    assert first["aggregate_check"]["match"] is True
    assert first["host"]["source"] == "test-recorder"
    assert first["per_mib"]["cpu_unit"] == "CPU-ms/MiB" and first["per_mib"]["cpu"] > 0
    # the window encloses the point's measured I/O (fio's runtime, in ms)
    assert first["times"]["window_s"] >= max(c["fio"]["total"]["runtime_ms"] for c in first["clients"]) / 1000 * 0.99
    assert "client_stats" in first["raw"]["fio_json"]

    # the guest comes back: the same command resumes at the failed point
    farm.restart("g02")
    outcome = run_suite(suite, run_dir, AddressGuests(suite.settings(), suite.guests, collector=Recorder()))
    assert outcome.already_done == [keys[0]]
    assert outcome.measured == keys[1:]
    cells = [r for r in Journal(run_dir).records() if r["type"] == "cell"]
    assert [c["key"] for c in cells] == keys
    assert all(len(c["clients"]) == 3 for c in cells)


def test_dead_guest_before_a_point_stops_with_guest_not_ready(farm: LocalFioServers, tmp_path: Path) -> None:
    suite = suite_from_dict(suite_raw(farm, queue_depths=[1]), "loop.toml")
    farm.kill("g01")
    with pytest.raises(GuestNotReady, match="g01"):
        run_suite(suite, tmp_path / "run")
    errors = [r for r in Journal(tmp_path / "run").records() if r["type"] == "cell-error"]
    assert errors[0]["stage"] == "ready"


def test_a_run_directory_holds_one_side(farm: LocalFioServers, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix.core.errors import MatrixError

    monkeypatch.chdir(tmp_path)  # a relative run directory, as `stormatrix suite run -o runs/a` gives
    a = suite_from_dict(suite_raw(farm, queue_depths=[1], measure_seconds=1.0), "a.toml")
    assert len(run_suite(a, Path("runs") / "a").measured) == 1
    b = suite_from_dict(suite_raw(farm, queue_depths=[1], side="B"), "b.toml")
    with pytest.raises(MatrixError, match="holds side 'A'"):
        run_suite(b, Path("runs") / "a")


def test_an_abandoned_point_stops_the_jobs_in_the_guests(farm: LocalFioServers, tmp_path: Path) -> None:
    """When the controller gives up on fio (deadline, Ctrl-C), the guests must not keep running the job.

    A SIGKILLed fio client leaves each server's job running, orphaned, until its runtime ends; the
    executor sends SIGINT first, which makes fio tell every server to stop.
    """
    from stormatrix.executors.fioserver.client import client_args, run_fio_client

    g = farm.guests[0]
    long_job = job(measure_s=30)
    (tmp_path / "j.fio").write_text(long_job.render())
    server = farm.procs[g.name]
    run = run_fio_client(client_args("fio", [(g, tmp_path / "j.fio")]), cwd=tmp_path, n_clients=1,
                         timeout_s=3.0)
    assert run.timed_out and run.returncode is not None
    home = tmp_path / "servers" / g.name  # fio's job processes setsid() but keep the server's cwd
    deadline = time.monotonic() + 5
    while len(processes_in(home)) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_in(home) == [server.pid]  # only the listening server is left


def test_local_servers_leave_no_process_behind(tmp_path: Path) -> None:
    """Closing the farm mid-job kills the job processes too (they setsid() out of the server's group)."""
    from stormatrix.executors.fioserver.client import client_args, run_fio_client

    with LocalFioServers(1, tmp_path / "servers") as servers:
        g = servers.guests[0]
        (tmp_path / "j.fio").write_text(job(measure_s=30).render())
        proc_count: list[int] = []

        class Window:
            def measure_started(self) -> None:
                proc_count.append(len(processes_in(tmp_path / "servers")))
                servers.close()  # the guest disappears while its job runs

            def measure_ended(self) -> None: ...

        run_fio_client(client_args("fio", [(g, tmp_path / "j.fio")]), cwd=tmp_path, n_clients=1,
                       ramp_s=0.5, measure_s=30, window=Window(), timeout_s=60)
    assert proc_count and proc_count[0] >= 2  # server + job process(es) were running
    assert processes_in(tmp_path / "servers") == []


def test_a_collector_that_fails_to_start_fails_the_point_cleanly(farm: LocalFioServers, tmp_path: Path) -> None:
    from stormatrix.core.errors import CollectorError

    class Broken:
        stopped = 0

        def start(self) -> None:
            raise CollectorError("perf could not attach")

        def stop(self) -> None:
            Broken.stopped += 1

    # [run] on_error = "skip" (the default): journaled, and the suite goes on to the next point
    raw = suite_raw(farm, queue_depths=[1, 2])
    raw["run"]["retries"] = 0
    suite = suite_from_dict(raw, "loop.toml")
    outcome = run_suite(suite, tmp_path / "run", AddressGuests(suite.settings(), suite.guests, collector=Broken()))
    assert [k for k, _ in outcome.failed] == [p.key for p in suite.points()]
    errors = [r for r in Journal(tmp_path / "run").records() if r["type"] == "cell-error"]
    assert errors[0]["stage"] == "collect" and "perf could not attach" in errors[0]["error"]["message"]
    assert Broken.stopped == 0  # stop() is not called for a window that never opened
    # [run] on_error = "stop", retries = 1 (the default): one more attempt, then the run ends
    raw = suite_raw(farm, queue_depths=[1, 2])
    raw["run"]["on_error"] = "stop"
    with pytest.raises(CollectorError):
        other = suite_from_dict(raw, "loop.toml")
        run_suite(other, tmp_path / "run2", AddressGuests(other.settings(), other.guests, collector=Broken()))
    errors = [r for r in Journal(tmp_path / "run2").records() if r["type"] == "cell-error"]
    assert [(e["key"], e["attempt"]) for e in errors] == [(suite.points()[0].key, 1), (suite.points()[0].key, 2)]
