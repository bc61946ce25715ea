#!/usr/bin/env python3
"""What the fleet's bookkeeping costs: 64 API-only workers on the Proxmox stand-in, deployed, given one
storage's volumes, and torn down, against the same API calls made bare.

Both variants run side by side in one run, against one stand-in (HTTPS on 127.0.0.1, clone and destroy
tasks that take the stand-in's time, ``SleepLauncher`` VMs: no QEMU), in alternating order:

- ``fleet``: :class:`stormatrix.backends.proxmox.fleet.ProxmoxFleet`: plan (template, VMIDs, storage room),
  deploy (journal fsync before each clone, clone task, config read for its digest, tags/cores/memory),
  attach (journal, ``pvesm alloc``, config), detach + free (config, ``imgdel`` task), destroy
  (ownership check from each VM's config, status, destroy task), every step journaled;
- ``bare``: the same creating calls in the same order with the same task waits (clones and destroys
  ``PARALLEL_TASKS`` at a time, as the fleet runs them), and nothing else: no plan, no journal, no
  ownership or status reads.

Printed: each variant's seconds (deploy, storage, teardown, total), the API calls each made, and the
ratio fleet/bare of the totals. Exit status 0 when every worker was created and removed by both.

    .venv/bin/python benchmarks/bench_fleet_deploy.py                # 64 workers, 2 rounds
    .venv/bin/python benchmarks/bench_fleet_deploy.py --workers 16 --rounds 1 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from standins.pve import PveStandin  # noqa: E402 - the stand-in lives with the tests

from stormatrix.backends.proxmox.settings import make_transport  # noqa: E402
from stormatrix.backends.proxmox.fleet import PARALLEL_TASKS, ProxmoxFleet  # noqa: E402
from stormatrix.backends.proxmox.fleetspec import load_fleet_file  # noqa: E402

TOKEN, SECRET, ENV = "root@pam!bench", "0b5e7c1e-bench-bench-bench-000000000000", "SMX_BENCH_PVE_SECRET"
TEMPLATE, STORAGE, POLL = 9000, "bb-iscsi", 0.05


def _standin(root: Path) -> PveStandin:
    s = PveStandin(root, tokens={TOKEN: SECRET})
    vol = s.add_volume(TEMPLATE, f"base-{TEMPLATE}-disk-0.raw", size=2**20)
    s.add_vm(TEMPLATE, {"name": "debian12-fio", "memory": "1024", "agent": "1", "scsi0": f"{vol},size=1M",
                        "boot": "order=scsi0", "template": "1"})
    s.add_storage(STORAGE, type="lvm", vgname="bb", total=2**50)
    return s.start()


def _file(s: PveStandin, root: Path, workers: int, first: int) -> Path:
    path = root / f"fleet-{first}.toml"
    path.write_text(f'[fleet]\ntemplate = {TEMPLATE}\nworkers = {workers}\nvmids = "{first}-{first + workers - 1}"\n'
                    f'storages = ["{STORAGE}"]\ndisk_size = "1G"\nvcpus = 2\nmemory_mib = 1024\n'
                    f'[proxmox]\nhost = "127.0.0.1"\nport = {s.port}\nnode = "{s.node}"\ntoken_id = "bench"\n'
                    f'token_secret_env = "{ENV}"\nca_file = "{s.ca_file}"\ntimeout = 60\n')
    return path


def _wait(t: Any, node: str, upid: str) -> None:
    while True:
        st = t.request("GET", f"/nodes/{node}/tasks/{upid}/status")
        if st.get("status") == "stopped":
            if st.get("exitstatus") != "OK":
                raise RuntimeError(f"task {upid}: {st.get('exitstatus')}")
            return
        time.sleep(POLL)


def run_fleet(s: PveStandin, path: Path, run_dir: Path) -> dict[str, float]:
    _raw, spec, proxmox = load_fleet_file(path)
    times: dict[str, float] = {}
    with ProxmoxFleet(spec, make_transport(proxmox, str(path)), run_dir, poll=POLL) as fleet:
        t0 = time.monotonic()
        vmids = fleet.deploy()
        times["deploy"] = time.monotonic() - t0
        t1 = time.monotonic()
        fleet.attach(STORAGE, vmids)
        fleet.detach(STORAGE)
        times["storage"] = time.monotonic() - t1
        t2 = time.monotonic()
        left = fleet.destroy()
        times["teardown"] = time.monotonic() - t2
    if not left.empty:
        raise RuntimeError(f"fleet left {left}")
    return times


def run_bare(s: PveStandin, path: Path, workers: int, first: int) -> dict[str, float]:
    _raw, _spec, proxmox = load_fleet_file(path)
    t = make_transport(proxmox, str(path))
    node, vmids = s.node, list(range(first, first + workers))
    times: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        for at in range(0, len(vmids), PARALLEL_TASKS):  # as many tasks at once as the fleet runs
            chunk = vmids[at:at + PARALLEL_TASKS]
            upids = [t.request("POST", f"/nodes/{node}/qemu/{TEMPLATE}/clone",
                               {"newid": vmid, "name": f"bare-w{vmid}", "full": 0, "description": "bare"})
                     for vmid in chunk]
            for upid in upids:
                _wait(t, node, upid)
            for vmid in chunk:
                t.request("PUT", f"/nodes/{node}/qemu/{vmid}/config",
                          {"tags": "stormatrix", "cores": 2, "memory": 1024})
        times["deploy"] = time.monotonic() - t0
        t1 = time.monotonic()
        volids = {}
        for vmid in vmids:
            volids[vmid] = t.request("POST", f"/nodes/{node}/storage/{STORAGE}/content",
                                     {"vmid": vmid, "filename": f"vm-{vmid}-disk-smx1", "size": "1024M"})
            t.request("PUT", f"/nodes/{node}/qemu/{vmid}/config",
                      {"scsi1": f"{volids[vmid]},aio=io_uring,cache=none,iothread=1", "scsihw": "virtio-scsi-single"})
        for vmid in vmids:
            t.request("PUT", f"/nodes/{node}/qemu/{vmid}/config", {"delete": "scsi1"})
            _wait(t, node, t.request("DELETE", f"/nodes/{node}/storage/{STORAGE}/content/{volids[vmid]}"))
        times["storage"] = time.monotonic() - t1
        t2 = time.monotonic()
        for at in range(0, len(vmids), PARALLEL_TASKS):
            upids = [t.request("DELETE", f"/nodes/{node}/qemu/{vmid}", {"destroy-unreferenced-disks": 1, "purge": 1})
                     for vmid in vmids[at:at + PARALLEL_TASKS]]
            for upid in upids:
                _wait(t, node, upid)
        times["teardown"] = time.monotonic() - t2
    finally:
        t.close()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of (fleet, bare), alternating which goes first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ[ENV] = SECRET
    results: dict[str, list[dict[str, float]]] = {"fleet": [], "bare": []}
    calls: dict[str, int] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="smx-bench-fleet-") as tmp:
        root = Path(tmp)
        s = _standin(root / "pve")
        try:
            first = 1000
            for r in range(args.rounds):
                order = ("fleet", "bare") if r % 2 == 0 else ("bare", "fleet")
                for variant in order:
                    path = _file(s, root, args.workers, first)
                    before, vms_before = len(s.requests), set(s.vms)
                    if variant == "fleet":
                        times = run_fleet(s, path, root / f"run-{first}")
                    else:
                        times = run_bare(s, path, args.workers, first)
                    times["total"] = sum(times.values())
                    results[variant].append(times)
                    calls[variant] = len(s.requests) - before
                    ok = ok and set(s.vms) == vms_before and not any(str(v).startswith(f"{STORAGE}:")
                                                                     for v in s.volumes())
                    first += args.workers
        finally:
            s.close()
    mean = {v: {k: sum(t[k] for t in ts) / len(ts) for k in ts[0]} for v, ts in results.items()}
    ratio = mean["fleet"]["total"] / mean["bare"]["total"]
    summary = {"workers": args.workers, "rounds": args.rounds, "seconds": mean, "api_calls": calls,
               "ratio_fleet_over_bare": round(ratio, 3), "all_removed": ok}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for v in ("bare", "fleet"):
            m = mean[v]
            print(f"{v:5}: deploy {m['deploy']:6.1f} s  storage {m['storage']:6.1f} s  teardown {m['teardown']:6.1f} s"
                  f"  total {m['total']:6.1f} s  ({calls[v]} API calls per round)")
        print(f"ratio fleet/bare (total): {ratio:.2f}; every worker and volume removed: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
