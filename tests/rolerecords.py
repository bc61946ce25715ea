"""Journal cell records with the per-thread split (host.by_role) of a local QEMU cell, as the collector writes
them: a vCPU, a main loop, an "other" helper and, with aio=threads, the pool's workers with ``worker_vol``
voluntary switches. Shared by the tests of the Roles sheet and of benchmarks/bench_verdicts.py's counting."""

from __future__ import annotations

import json
from pathlib import Path


def role(vol: int, invol: int, run: float, user: float, system: float, threads: int = 1) -> dict:
    return {"threads": threads, "user_s": user, "system_s": system, "runtime_s": run, "ctx_voluntary": vol,
            "ctx_involuntary": invol}


def record(controller: str, aio: str, repeat: int, worker_vol: int, main_vol: int, ios: int = 1000) -> dict:
    by_role = {"vcpu": role(5000 + 37 * repeat, 400, 3.0 + 0.1 * repeat, 2.9, 0.2),
               "main-loop": role(main_vol, 20, 0.3, 0.2, 0.1),
               "other": role(3, 0, 0.001, 0.0, 0.0)}
    if aio == "threads":
        by_role["aio-worker"] = role(worker_vol, 11, 0.15, 0.05, 0.1, threads=8)
    vol = sum(r["ctx_voluntary"] for r in by_role.values())
    invol = sum(r["ctx_involuntary"] for r in by_role.values())
    return {
        "schema": "stormatrix/record-1", "type": "cell", "run_id": "r1",
        "key": f"{controller}/aio={aio}/iothread=0/cache=none/rr/rep{repeat}",
        "cell": {"disk": {"controller": controller, "aio": aio, "iothread": False, "cache": "none"},
                 "workload": {"name": "rr", "rw": "randread", "bs": 65536, "iodepth": 8, "numjobs": 1,
                              "rate_mib_s": 32.0}, "repeat": repeat},
        "backend": "qemu", "engine": "fio",
        "times": {"started": "2026-12-02T04:00:00+00:00", "measure_s": 6.0, "window_s": 6.0},
        "fio": {"version": "fio-3.33", "jobs": 1, "error": 0,
                "read": {"io_bytes": ios * 65536, "bw_bytes": ios * 65536 / 6, "iops": ios / 6, "total_ios": ios,
                         "runtime_ms": 6000},
                "total": {"io_bytes": ios * 65536, "bw_bytes": ios * 65536 / 6, "iops": ios / 6, "total_ios": ios,
                          "runtime_ms": 6000}},
        "host": {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 3.6, "cpu_user": 3.2, "cpu_system": 0.4,
                 "ctx_switches": vol + invol, "ctx_voluntary": vol, "ctx_involuntary": invol,
                 "source": "perf+proc", "scope": "qemu-process", "pid": 1, "window_s": 6.0, "by_role": by_role},
    }


def journal(tmp_path: Path, records: list[dict]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run
