"""What every platform's ``[fleet]`` shares: the worker limits, the name prefix, and the refusals of a plan.

Each platform's ``[fleet]`` (its keys, its spec, its fleet) lives in the backend's own package
(:mod:`stormatrix.backends.proxmox.fleetspec`, :mod:`stormatrix.backends.vmware.fleetspec`), reached through
:data:`stormatrix.registry.FLEET_SUITES`; what they refuse they refuse in the same words, from here.
"""

from __future__ import annotations

import re
from typing import Any, Collection

from ..core.errors import MatrixError

MAX_WORKERS = 256
NAME_PREFIX_RE = re.compile(r"^[a-z][a-z0-9-]{0,40}$")


def fleet_backend(raw: dict[str, Any], path: str, known: Collection[str], default: str) -> str:
    """``[fleet] backend``: the platform that deploys the workers, one of ``known`` (``default`` when not given);
    the rest of ``[fleet]`` is that platform's to read."""
    table = raw.get("fleet")
    if table is None:
        raise MatrixError(path, "[fleet]", "is missing", "add a [fleet] section (see `stormatrix fleet --help`)")
    if not isinstance(table, dict):
        raise MatrixError(path, "[fleet]", f"must be a table, got {type(table).__name__}",
                          "write it as a [fleet] section of key = value lines")
    backend = table.get("backend", default)
    check_fleet_backend(path, backend, known)
    return str(backend)


def check_fleet_backend(path: str, backend: Any, known: Collection[str]) -> None:
    """A MatrixError (exit 2) unless ``backend`` is one of the platforms that can deploy a suite's workers."""
    if not isinstance(backend, str) or backend not in known:
        raise MatrixError(path, "[fleet] backend", f"{backend!r} cannot deploy a suite's workers (known: "
                          f"{', '.join(sorted(known))})", "set [fleet] backend to one of them")


def refuse_problems(path: str, problems: list[tuple[str, str]]) -> None:
    """A fleet plan's problems (key, problem and fix), every one, as one MatrixError before anything is
    created (each platform's fleet finds its own; the refusal is the same)."""
    if problems:
        keys = list(dict.fromkeys(k for k, _ in problems))
        raise MatrixError(path, f"[fleet] {keys[0]}", f"{len(problems)} problem(s) before anything is created: "
                          + "; ".join(p for _, p in problems),
                          "fix each named problem, then run the same command again (nothing was created)")


def refuse_fio_versions(path: str, template: str | int, want: str | None, problems: list[str]) -> None:
    """The workers' fio answers (one problem per worker, naming it) as one MatrixError before the first point:
    client and server speak one protocol version (docs/fio-server.md). The same refusal on every platform."""
    if problems:
        raise MatrixError(path, "[fleet] template",
                          f"the workers' fio is not the controller's ({want or 'unknown'}): " + "; ".join(problems),
                          f"rebuild template {template} with the user-data of `stormatrix fleet template` (it installs "
                          "the controller's fio version and its server unit), or run stormatrix with the workers' fio "
                          "(--fio PATH); nothing was measured")
