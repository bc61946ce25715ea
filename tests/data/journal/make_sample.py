"""Writes the sample journals in this folder, following docs/journal.md field by field.

Hand-made (the runner is being built in parallel): the numbers are plausible, not measured. Kept so
anyone can see how the fixture was made; re-running it reproduces the files exactly.

    python tests/data/journal/make_sample.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
SCHEMA = "stormatrix/record-1"
RAW = json.dumps(json.loads((HERE.parent / "fio" / "fio3_randread_bs4k_qd1.json").read_text()),
                 separators=(",", ":"))

# (controller, bus, scsihw, iothread) x aio -> (CPU-ms per MiB, ctx per MiB) for repeat 1 and 2
CELLS = {
    ("virtio-blk", "virtio", None, False): {"native": [(30.1, 39.8), (30.5, 41.0)],
                                             "io_uring": [(31.0, 44.2), (31.4, 45.0)],
                                             "threads": [(36.2, 81.0), (37.0, 84.6)]},
    ("virtio-scsi-single", "scsi", "virtio-scsi-single", True): {"native": [(31.2, 40.1), (31.0, 39.5)],
                                                                  "io_uring": [(32.0, 46.3), (32.6, 47.1)],
                                                                  "threads": [(37.5, 90.2), (38.1, 88.0)]},
    ("pvscsi", "scsi", "pvscsi", False): {"native": [(33.0, 42.7), (33.8, 43.1)],
                                           "io_uring": [(36.9, 60.2), (40.5, 66.0)],
                                           "threads": [(41.0, 101.0), (42.2, 104.8)]},
    ("sata", "sata", None, False): {"native": [(35.5, 55.0), (36.1, 57.9)],
                                     "io_uring": [(37.2, 58.0), (37.0, 58.4)],
                                     "threads": [(44.0, 110.2), (46.8, 113.9)]},
}
WORKLOAD = {"name": "randread-64k", "rw": "randread", "bs": 65536, "iodepth": 8, "numjobs": 1,
            "rate_mib_s": 32.0, "rwmixread": None}


def run_record(run_id: str, started: str, metric_note: str) -> dict:
    return {"schema": SCHEMA, "type": "run", "run_id": run_id, "started": started,
            "matrix_path": "matrices/demo.toml",
            "matrix": {"controllers": ["virtio-blk", "virtio-scsi-single", "pvscsi", "sata"],
                       "aio": ["native", "io_uring", "threads"], "iothread": [False, True], "cache": ["none"],
                       "repeats": 2, "timing": {"ramp_s": 5, "measure_s": 10},
                       "workloads": [{"name": "randread-64k", "rw": "randread", "bs": "64k", "iodepth": 8,
                                      "rate_mib_s": 32}]},
            "backend": "qemu", "side": "Proxmox VE 8.2 (A)",
            "environment": {"host": "bench-01", "kernel": "6.1.0-27-amd64", "cpu_model": "AMD EPYC 7452",
                            "cpus": 2, "qemu": "7.2.22", "fio": "fio-3.33", "perf": "6.1",
                            "python": "3.11.2", "stormatrix": "0.1.0", "accel": "tcg", "note": metric_note},
            "original_config": None}


def cell_record(run_id: str, disk: tuple, aio: str, rep: int, cpu_ms: float, ctx: float, t: int,
                metric: str = "cpu_time", first: bool = False) -> dict:
    controller, bus, scsihw, iothread = disk
    key = f"{controller}/aio={aio}/iothread={int(iothread)}/cache=none/randread-64k/rep{rep}"
    mib = 320.0
    io_bytes = int(mib * 2**20)
    window = 10.02
    iops = io_bytes / 65536 / 10.0
    total = {"io_bytes": io_bytes, "bw_bytes": io_bytes / 10.0, "iops": iops, "total_ios": io_bytes // 65536,
             "runtime_ms": 10000, "lat_mean_ns": 250000.0 + ctx * 100, "lat_p99_ns": 900000.0}
    if metric == "cycles":
        cycles = {"user": round(cpu_ms * mib * 0.3e6), "kernel": round(cpu_ms * mib * 0.7e6)}
        cpu_total = float(cycles["user"] + cycles["kernel"])
        host = {"cpu_metric": "cycles", "cpu_unit": "cycles", "cpu_total": cpu_total,
                "cpu_user": None, "cpu_system": None, "cycles": cycles}
        per_mib_cpu, unit = cpu_total / mib, "cycles/MiB"
    else:
        cpu_s = cpu_ms * mib / 1000.0
        host = {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": cpu_s,
                "cpu_user": round(cpu_s * 0.72, 6), "cpu_system": round(cpu_s - round(cpu_s * 0.72, 6), 6),
                "cycles": None}
        per_mib_cpu, unit = cpu_ms, "CPU-ms/MiB"
    switches = round(ctx * mib)
    host.update({"ctx_switches": switches, "ctx_voluntary": round(switches * 0.9),
                 "ctx_involuntary": switches - round(switches * 0.9), "source": "perf+proc",
                 "scope": "qemu-process", "pid": 4000 + t, "window_s": window,
                 "threads": [{"tid": 4000 + t, "name": "qemu-system-x86", "role": "main-loop", "user_s": 0.1,
                              "system_s": 0.2, "ctx_voluntary": 100, "ctx_involuntary": 3}],
                 "by_role": {"vcpu": {"threads": 1, "user_s": 2.0, "system_s": 0.5, "ctx_voluntary": 10,
                                      "ctx_involuntary": 400}}})
    minute = f"{t // 60:02d}:{t % 60:02d}"
    return {"schema": SCHEMA, "type": "cell", "run_id": run_id, "key": key,
            "cell": {"disk": {"controller": controller, "aio": aio, "iothread": iothread, "cache": "none",
                              "bus": bus, "scsihw": scsihw},
                     "workload": dict(WORKLOAD), "repeat": rep, "key": key},
            "backend": "qemu", "side": None, "vm": "stormatrix-demo",
            "times": {"started": f"2026-11-22T03:{minute}+00:00", "ready": f"2026-11-22T03:{minute}+00:00",
                      "measure_start": f"2026-11-22T03:{minute}+00:00",
                      "measure_end": f"2026-11-22T03:{minute}+00:00", "finished": f"2026-11-22T03:{minute}+00:00",
                      "boot_s": 7.9, "ramp_s": 5.0, "measure_s": 10.0, "window_s": window},
            "fio": {"version": "fio-3.33", "jobs": 1, "error": 0, "usr_cpu": 1.2, "sys_cpu": 20.1, "ctx": 12345,
                    "read": dict(total), "total": dict(total)},
            "host": host,
            "per_mib": {"mib": mib, "cpu": per_mib_cpu, "cpu_unit": unit, "ctx": switches / mib},
            "rate": {"target_mib_s": 32.0, "achieved_mib_s": 32.0, "miss_pct": 0.0, "missed": False,
                     "tolerance_pct": 5.0},
            "crosscheck": {"fio_bytes": io_bytes, "qemu_bytes": io_bytes, "diff_pct": 0.0, "flag": False,
                           "tolerance_pct": 2.0},
            "guest": {"kernel": "6.1.0-27-amd64", "device": "/dev/sda", "fio": "fio-3.33"},
            "clients": None,
            "raw": {"fio_json": RAW if first else "(trimmed in this fixture to keep it small)"}}


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def main() -> None:
    run1, run2 = "20261122T0300-demo-ab12", "20261122T0400-demo-ab12"
    records = [run_record(run1, "2026-11-22T03:00:00+00:00", "first invocation")]
    t = 0
    items = [(d, aio, rep, v) for d, aios in CELLS.items() for aio, reps in aios.items()
             for rep, v in enumerate(reps, start=1)]
    for i, (disk, aio, rep, (cpu, ctx)) in enumerate(items):
        if i == 12:  # the run was interrupted here and resumed
            records.append({"schema": SCHEMA, "type": "cell-error", "run_id": run1,
                            "key": f"{disk[0]}/aio={aio}/iothread={int(disk[3])}/cache=none/randread-64k/rep{rep}",
                            "cell": {"disk": {"controller": disk[0], "aio": aio}}, "stage": "ready",
                            "attempt": 1, "error": {"type": "GuestNotReady", "message": "no fio server within 120 s"},
                            "time": "2026-11-22T03:40:00+00:00"})
            records.append(run_record(run2, "2026-11-22T04:00:00+00:00", "resumed"))
        t += 37
        records.append(cell_record(run1 if i < 12 else run2, disk, aio, rep, cpu, ctx, t, first=(i == 0)))
    records.append({"schema": SCHEMA, "type": "restored", "run_id": run2, "time": "2026-11-22T04:30:00+00:00",
                    "vm": "stormatrix-demo"})
    write(HERE / "sample_run" / "journal.ndjson", records)

    # cycles-metric journal: two cells, two repeats, plus one cell without a host collector (ESXi-like)
    run3 = "20261123T0100-cycles-cd34"
    rec = [run_record(run3, "2026-11-23T01:00:00+00:00", "hardware cycles available")]
    disk_b = ("virtio-blk", "virtio", None, False)
    disk_s = ("virtio-scsi-pci", "scsi", "virtio-scsi-pci", False)
    for disk, values in ((disk_b, [(10.0, 40.0), (12.0, 44.0)]), (disk_s, [(14.0, 30.0), (14.0, 30.0)])):
        for rep, (cpu, ctx) in enumerate(values, start=1):
            t += 37
            rec.append(cell_record(run3, disk, "native", rep, cpu, ctx, t, metric="cycles"))
    no_host = cell_record(run3, ("sata", "sata", None, False), "native", 1, 1.0, 1.0, t + 37)
    no_host["host"] = None
    no_host["per_mib"] = {"mib": 320.0, "cpu": None, "cpu_unit": None, "ctx": None}
    rec.append(no_host)
    write(HERE / "cycles_run" / "journal.ndjson", rec)


if __name__ == "__main__":
    main()
