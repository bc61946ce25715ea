#!/usr/bin/env python3
"""Scale check of the fio-server executor: N ``fio --server`` processes on 127.0.0.1 as one suite point.

The seeds drive 32 VMs from one controller. Here 32 loopback servers (no VMs), each with its own
working directory and a small target file, run one point together through ONE fio client process.
Printed:

- per-client presence: every guest's result must be in fio's ``client_stats``;
- aggregate vs sum: our sum over the clients, fio's own ``All clients``, io_bytes and IOPS;
- start skew between clients: from each client's IOPS log (``log_unix_epoch=1``; fio 3.33 has no
  ``job_start`` in its JSON, that came in 3.36). fio resets the log epoch when ``ramp_time`` ends,
  so ``first sample - log_avg_msec`` is the moment that client's measurement window opened, in
  its wall clock (one clock here; real guests need NTP-synchronised clocks for this to hold);
- the controller's cost: user/system CPU seconds of the fio client process (``wait4`` rusage of
  that child alone), its peak RSS, and wall time.

Exit status 0 when every client is present, the aggregate equals the sum and the skew is <= 1 s.

    .venv/bin/python benchmarks/bench_fioserver_scale.py            # 32 servers
    .venv/bin/python benchmarks/bench_fioserver_scale.py --servers 8 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stormatrix.executors.fioserver.executor import run_point
from stormatrix.executors.fioserver.inputs import FioJob
from stormatrix.executors.fioserver.probe import probe_servers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from standins.fioservers import LocalFioServers  # noqa: E402 - the loopback servers live with the tests


def measure(servers: int, root: Path, *, ramp_s: float, measure_s: float, rate_iops: int | None,
            size: int) -> dict[str, Any]:
    t0 = time.monotonic()
    with LocalFioServers(servers, root / "servers") as farm:
        started_s = time.monotonic() - t0
        t1 = time.monotonic()
        probes = probe_servers(farm.guests, root / "probe")
        probe_s = time.monotonic() - t1
        job = FioJob(name="randread-4k-qd1", rw="randread", bs=4096, iodepth=1, ramp_s=ramp_s,
                     measure_s=measure_s, filename="target.dat", size=size, rate_iops=rate_iops)
        r = run_point(farm.guests, job, root / "point")
        names = [g.name for g in farm.guests]
    present = [c["name"] for c in r.clients]
    agg, fio_all = r.aggregate["total"], (r.fio_all_clients or {}).get("total")
    summed_bytes = sum(c["fio"]["total"]["io_bytes"] for c in r.clients)
    summed_iops = sum(c["fio"]["total"]["iops"] for c in r.clients)
    return {
        "servers": servers, "servers_started_s": started_s,
        "probe": {"answered": sum(p.ok for p in probes), "seconds": probe_s},
        "clients_present": len(present), "clients_missing": [n for n in names if n not in present],
        "aggregate": {"io_bytes": agg["io_bytes"], "iops": agg["iops"],
                      "sum_io_bytes": summed_bytes, "sum_iops": summed_iops,
                      "fio_all_clients_io_bytes": fio_all["io_bytes"] if fio_all else None,
                      "fio_all_clients_iops": fio_all["iops"] if fio_all else None,
                      "match": r.aggregate_check["match"]},
        "skew": {k: r.skew[k] for k in ("start_skew_s", "end_skew_s", "overlap_s", "clients_dated", "source")},
        "controller": {k: r.controller.get(k) for k in ("user_s", "system_s", "cpu_s", "max_rss_kib",
                                                         "elapsed_s", "returncode")},
        "point": {"ramp_s": ramp_s, "measure_s": measure_s, "rate_iops_per_client": rate_iops, "size": size},
    }


def verdict(m: dict[str, Any], max_skew_s: float) -> list[str]:
    problems = []
    if m["clients_missing"]:
        problems.append(f"missing clients: {', '.join(m['clients_missing'])}")
    a = m["aggregate"]
    if a["io_bytes"] != a["sum_io_bytes"] or a["match"] is not True:
        problems.append("aggregate != sum of clients (or != fio's All clients)")
    skew = m["skew"]["start_skew_s"]
    if skew is None or skew > max_skew_s:
        problems.append(f"start skew {skew} s > {max_skew_s} s")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", type=int, default=32)
    p.add_argument("--ramp", type=float, default=1.0, help="seconds of warm-up (default 1)")
    p.add_argument("--measure", type=float, default=3.0, help="seconds measured (default 3)")
    p.add_argument("--rate-iops", type=int, default=200,
                   help="IOPS per client, so 32 clients do not just fight for 2 cores (0 = unthrottled)")
    p.add_argument("--size-mib", type=int, default=4, help="target file per server (MiB)")
    p.add_argument("--max-skew", type=float, default=1.0)
    p.add_argument("--json", action="store_true", help="print the measurements as JSON")
    p.add_argument("--keep", help="keep the working directory here instead of a temporary one")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="smx-scale-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        m = measure(args.servers, root, ramp_s=args.ramp, measure_s=args.measure,
                    rate_iops=args.rate_iops or None, size=args.size_mib << 20)
    problems = verdict(m, args.max_skew)
    if args.json:
        print(json.dumps({**m, "problems": problems}, indent=2))
    else:
        a, s, c = m["aggregate"], m["skew"], m["controller"]
        print(f"servers:            {m['servers']} fio --server on 127.0.0.1 (started in {m['servers_started_s']:.1f} s)")
        print(f"probe:              {m['probe']['answered']}/{m['servers']} answered in {m['probe']['seconds']:.1f} s")
        print(f"clients present:    {m['clients_present']}/{m['servers']}"
              + (f"  MISSING: {', '.join(m['clients_missing'])}" if m["clients_missing"] else ""))
        print(f"aggregate io_bytes: {a['io_bytes']}  sum of clients {a['sum_io_bytes']}  "
              f"fio All clients {a['fio_all_clients_io_bytes']}")
        print(f"aggregate IOPS:     {a['iops']:.1f}  sum of clients {a['sum_iops']:.1f}  "
              f"fio All clients {a['fio_all_clients_iops']:.1f}  match={a['match']}")
        print(f"start skew:         {s['start_skew_s']:.3f} s  (end skew {s['end_skew_s']:.3f} s, "
              f"all-client overlap {s['overlap_s']:.2f} s of {m['point']['measure_s']:g} s; "
              f"{s['clients_dated']} clients dated from their IOPS logs)")
        print(f"controller fio:     user {c['user_s']:.2f} s + system {c['system_s']:.2f} s = {c['cpu_s']:.2f} s CPU, "
              f"peak RSS {c['max_rss_kib'] / 1024:.0f} MiB, wall {c['elapsed_s']:.1f} s, exit {c['returncode']}")
        print("result:             " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
