"""Probing: does every guest's fio server run a job? A real null-engine job through client mode."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...core.errors import DataFileError, GuestNotReady
from .client import FioClientRun, client_args, find_fio, run_fio_client
from .inputs import PROBE_JOB_NAME, FioGuest, FioJob, check_unique
from .parse import ClientOutput, lost_hosts_in_text, parse_client_output


PROBE_JOB = FioJob(name=PROBE_JOB_NAME, rw="read", bs=4096, iodepth=1, ramp_s=0, measure_s=0.1,
                   filename="stormatrix-probe", size=1 << 20, direct=False, ioengine="null")


@dataclass(frozen=True)
class ProbeResult:
    guest: FioGuest
    ok: bool
    detail: str


def _probe_once(guests: Sequence[FioGuest], fio: str, workdir: Path, timeout_s: float) -> FioClientRun:
    workdir = Path(workdir).resolve()  # fio runs in workdir: its job-file paths must not be relative
    workdir.mkdir(parents=True, exist_ok=True)
    text = PROBE_JOB.render()
    pairs: list[tuple[FioGuest, Path]] = []
    for g in guests:
        path = workdir / f"probe-{g.name}.fio"
        path.write_text(text, encoding="utf-8")
        pairs.append((g, path))
    return run_fio_client(client_args(fio, pairs), cwd=workdir, n_clients=len(guests), timeout_s=timeout_s)


def probe_servers(guests: Sequence[FioGuest], workdir: Path, *, fio: str = "fio",
                  timeout_s: float = 15.0) -> list[ProbeResult]:
    """A real fio handshake with every guest: a null-engine job (no disk I/O) through client mode.

    One fio process asks all guests at once (about 1.3 s for any number of them). If it cannot
    finish in ``timeout_s`` (a hung guest makes fio wait ~40 s), each guest is asked on its own, in
    parallel, so that the report names exactly the guests that did not answer.
    """
    check_unique(guests)
    fio = find_fio(fio)
    run = _probe_once(guests, fio, workdir, timeout_s)
    if run.timed_out:
        with ThreadPoolExecutor(max_workers=min(8, len(guests))) as pool:
            singles = list(pool.map(lambda g: (g, _probe_once([g], fio, workdir / f"single-{g.name}", timeout_s)),
                                    guests))
        results: list[ProbeResult] = []
        for g, r in singles:
            results.append(_probe_verdicts([g], r)[0])
        return results
    return _probe_verdicts(guests, run)


def _probe_verdicts(guests: Sequence[FioGuest], run: FioClientRun) -> list[ProbeResult]:
    evidence = lost_hosts_in_text(run.stdout + "\n" + run.stderr)
    try:
        parsed: ClientOutput | None = parse_client_output(run.stdout, guests, "<fio probe>")
    except DataFileError:
        parsed = None
    out = []
    for g in guests:
        if parsed is not None and g.name in parsed.per_guest:
            err = parsed.per_guest[g.name]["error"]
            out.append(ProbeResult(g, err == 0, "answered" if err == 0 else f"probe job failed with error {err}"))
            continue
        why = [line for host, port, line in evidence if host == g.host and port in (None, g.port)]
        if run.timed_out:
            why.append(f"no answer within {run.elapsed_s:.0f} s")
        if "bad server cmd version" in run.stdout + run.stderr:
            why.append("fio client/server protocol mismatch: the guest's fio must be the same version "
                       "as the controller's")
        if not why and run.stderr.strip():
            why.append("fio: " + run.stderr.strip().splitlines()[-1])
        out.append(ProbeResult(g, False, "; ".join(why) or "no result from this server"))
    return out


def require_servers(guests: Sequence[FioGuest], workdir: Path, *, fio: str = "fio",
                    timeout_s: float = 15.0, point: str | None = None) -> list[ProbeResult]:
    """:func:`probe_servers`, raising :class:`GuestNotReady` that names every guest that did not answer."""
    results = probe_servers(guests, workdir, fio=fio, timeout_s=timeout_s)
    bad = [r for r in results if not r.ok]
    if bad:
        names = ", ".join(f"{r.guest.describe()}: {r.detail}" for r in bad)
        raise GuestNotReady(f"fio server not answering on {len(bad)} of {len(results)} guests: {names}",
                            cell=point, guests=[r.guest.name for r in bad])
    return results
