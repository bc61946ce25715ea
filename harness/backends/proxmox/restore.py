"""Putting a Proxmox VM back as it was: at the end of a run, after an error, on Ctrl-C, and from
``stormatrix restore RUN_DIR`` with the original configuration the journal kept.

The original record (:meth:`ProxmoxBackend.original_config`) holds the VM's whole config as the API
returned it, its digest and power state, the test disk's key and volume. A journal can be damaged or
hand-edited, so :func:`check_original` says which key is missing before anything is written.
"""

from __future__ import annotations

import logging
from typing import Any

from ...core.errors import BackendError, InputError
from .api import PveClient
from .change import config_diff, plan_restore
from .drives import DRIVE_KEY_RE, UNUSED_KEY_RE

log = logging.getLogger("stormatrix.backend.proxmox")

#: what restore needs from the journaled record, and what each is
ORIGINAL_KEYS = {
    "kind": "the backend that wrote it (\"proxmox\")",
    "node": "the node's name",
    "vmid": "the VM's id",
    "test_disk": "the test disk's original key (e.g. scsi1)",
    "volid": "the test disk's volume",
    "status": "the VM's power state before the run",
    "config": "the VM's original configuration",
    "digest": "the original configuration's digest",
}


def check_original(original: Any) -> dict[str, Any]:
    """``original`` if it has every key restore needs, with the right types; else an InputError that
    names the missing keys (a journal from another version, or edited by hand)."""
    if not isinstance(original, dict):
        raise InputError(f"the journaled original configuration is {type(original).__name__}, not a record. Fix: "
                         "restore the VM by hand from the Proxmox task log, or from a backup of the run's journal")
    if original.get("kind") != "proxmox":
        raise InputError("the journaled original configuration is not a Proxmox one")
    missing = [k for k in ORIGINAL_KEYS if k not in original or original[k] in (None, "")]
    problems = [f"original_config.{k} is missing ({ORIGINAL_KEYS[k]})" for k in missing]
    if "config" not in missing and not isinstance(original["config"], dict):
        problems.append("original_config.config is not a table of the VM's keys")
    elif "config" not in missing and "test_disk" not in missing and original["test_disk"] not in original["config"]:
        problems.append(f"original_config.config has no {original['test_disk']} (the test disk)")
    if "vmid" not in missing:
        try:
            int(original["vmid"])
        except (TypeError, ValueError):
            problems.append("original_config.vmid is not a number")
    hs = original.get("host_settings")
    if hs is not None:
        state = hs.get("state") if isinstance(hs, dict) else None
        if not isinstance(state, dict) or not all(isinstance(state.get(k), dict)
                                                  for k in ("irqs", "irqbalance", "workqueues", "steering")):
            problems.append("original_config.host_settings.state is not the node's settings as "
                            "linux-host/hostsettings.py read them (irqs, irqbalance, workqueues, steering)")
        elif not isinstance(hs.get("cpus"), str) or not hs.get("cpus"):
            problems.append("original_config.host_settings.cpus is missing (the CPU set)")
    if problems:
        raise InputError("the journal's record of the VM's original configuration is incomplete: "
                         + "; ".join(problems) + ". Nothing was changed. Fix: use the journal the run wrote "
                         "(journal.ndjson, unedited), or put the VM back by hand from the values above")
    return original


def restore_vm(c: PveClient, original: dict[str, Any]) -> dict[str, Any]:
    """Put the VM back as ``original`` records it; return the final config. Idempotent.

    Every write carries the digest just read; the disk goes back to its original key with its
    original text, ``scsihw`` and ``boot`` to their original values; pending changes to those keys are
    reverted; the VM ends in its original power state.
    """
    key = original["test_disk"]
    orig_cfg = original["config"]
    status = c.status().get("status")
    # the CPU-set scope ([host] scope = "cpus") wrote the VM's affinity too
    affinity = "host_settings" in original
    ours = {key, "scsihw", "boot"} | {k for k in c.config() if DRIVE_KEY_RE.match(k)}
    if affinity:
        ours.add("affinity")
    pending = [p for p in c.pending() if "pending" in p or "delete" in p]
    plan = plan_restore(c.config(), orig_cfg, key)
    affinity_off = affinity and c.config().get("affinity") != orig_cfg.get("affinity")
    if status == "running" and (not plan.empty or pending or affinity_off):
        upid = c.power("stop")
        c.wait_task(upid, what="stop before restoring")
        status = "stopped"
    if pending:
        cfg = c.config()
        revert = [p["key"] for p in c.pending() if ("pending" in p or "delete" in p) and p["key"] in ours]
        if revert:
            c.update_config({"revert": ",".join(revert)}, cfg["digest"])
    for _ in range(4):
        cfg = c.config()
        plan = plan_restore(cfg, orig_cfg, key)
        if plan.empty:
            break
        write = plan.writes[0]
        log.info("VM %s: restoring: set %s delete %s", c.vmid, write.set, ",".join(write.delete) or "-")
        c.update_config(write.params(), cfg["digest"])
    else:
        raise BackendError(f"VM {c.vmid}: restoring did not converge after 4 writes")
    if affinity:
        cfg = c.config()
        if cfg.get("affinity") != orig_cfg.get("affinity"):
            params = {"affinity": orig_cfg["affinity"]} if orig_cfg.get("affinity") is not None else \
                {"delete": "affinity"}
            log.info("VM %s: restoring: affinity %s", c.vmid, orig_cfg.get("affinity", "<unset>"))
            c.update_config(params, cfg["digest"])
    if original.get("status") == "running" and status != "running":
        c.wait_task(c.power("start"), what="start after restoring")
    elif original.get("status") != "running" and c.status().get("status") == "running":
        c.wait_task(c.power("stop"), what="stop after restoring")
    final = c.config()
    diff = config_diff(final, orig_cfg)
    mine = {k: v for k, v in diff.items() if k in ("scsihw", "boot") or DRIVE_KEY_RE.match(k)
            or (affinity and k == "affinity")
            or (UNUSED_KEY_RE.match(k) and original["volid"] in (v[0] or "", v[1] or ""))}
    if mine:
        raise BackendError(f"VM {c.vmid}: after restoring, these keys still differ from the original: "
                           + ", ".join(f"{k}: {a!r} (original {b!r})" for k, (a, b) in mine.items()))
    if diff:
        log.warning("VM %s: keys stormatrix does not touch changed during the run: %s", c.vmid, ", ".join(diff))
    elif final["digest"] != original["digest"]:
        log.warning("VM %s: config equal to the original but its digest differs", c.vmid)
    return final
