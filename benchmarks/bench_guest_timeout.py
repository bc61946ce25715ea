#!/usr/bin/env python3
"""How long ``stormatrix guest check --timeout T`` really takes when the guest does not answer.

``--timeout`` is a deadline for the whole command (connecting, each request's HTTP timeout, retries and
their pauses, the checks). This runs the real command line in a subprocess against two guests that never
answer, for a few values of T, and prints the wall time and the overshoot past T (process start-up and
Python imports included):

- ``closed``: nothing listens on the port (connection refused at once; retried until the deadline);
- ``silent``: the WS-Man stand-in (tests/standins/wsman.py) reads every request and never answers.

    .venv/bin/python benchmarks/bench_guest_timeout.py                 # T = 1, 3, 5
    .venv/bin/python benchmarks/bench_guest_timeout.py --timeouts 3 10 --json

The tests check the relation instead (tests/harness/test_reliability_deadline.py: no request is handed more time
than is left, and on a fake clock the command ends by the deadline); this gives the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_check(port: int, timeout: float) -> tuple[float, int, str]:
    argv = [sys.executable, "-m", "stormatrix", "guest", "check", "--host", "127.0.0.1", "--port", str(port),
            "--username", "u", "--password-env", "SMX_BENCH_PW", "--disk-serial", "S1", "--timeout", f"{timeout:g}"]
    env = {**os.environ, "SMX_BENCH_PW": "bench-password"}
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout + 120)
    return time.perf_counter() - t0, proc.returncode, proc.stderr.strip().splitlines()[-1][:160] if proc.stderr else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeouts", type=float, nargs="+", default=[1.0, 3.0, 5.0], help="values of --timeout")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    from tests.standins.wsman import WSManStandIn

    rows = []
    with WSManStandIn(lambda line, run: None) as server:
        server.silent = True
        for guest, port in (("closed", closed_port()), ("silent", server.port)):
            for t in args.timeouts:
                wall, code, last = time_check(port, t)
                rows.append({"guest": guest, "timeout_s": t, "wall_s": round(wall, 3),
                             "overshoot_s": round(wall - t, 3), "exit": code, "message": last})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'guest':<8} {'--timeout':>9} {'wall s':>8} {'over s':>8} {'exit':>5}")
    for r in rows:
        print(f"{r['guest']:<8} {r['timeout_s']:>9g} {r['wall_s']:>8.2f} {r['overshoot_s']:>8.2f} {r['exit']:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
