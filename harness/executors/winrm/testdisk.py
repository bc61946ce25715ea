"""What the executor reads from ``Get-StormatrixGuestFacts`` about the test disk: is it there, and if not, why.

A test disk that Windows does not show is almost always a controller without a bound driver (a
virtio controller before the virtio-win drivers are installed shows with ConfigManagerErrorCode 28,
"drivers not installed"). That does not heal by restarting the VM, so :func:`check_test_disk`
raises :class:`TestDiskMissing`, which says so (``retryable = False``) and names each controller,
its PnP device and whether a driver is bound; it carries the facts (``details.guest_facts``), from which
the runner's driver gate learns the guest's drivers (:mod:`stormatrix.guestdrivers`, where every rule
on Windows storage drivers lives).
"""

from __future__ import annotations

from typing import Any

from ...core.errors import TestDiskMissing
from ...guestdrivers import CONTROLLER_DRIVERS, as_list

#: Windows device problem code 28 (CM_PROB_FAILED_INSTALL): "The drivers for this device are not installed."
PROBLEM_DRIVER_MISSING = "28"


def describe_controller(c: dict[str, Any]) -> str:
    """One controller as a user reads it: name, PnP device, driver bound or not (and why not)."""
    name = c.get("Name") or "unknown"
    bound = bool(c.get("DriverBound"))
    problem = str(c.get("ProblemCode") or "")
    if bound:
        driver = f"driver {c.get('Service') or '?'} bound"
    elif problem == PROBLEM_DRIVER_MISSING or problem == "CM_PROB_FAILED_INSTALL":
        driver = "NO driver bound (device problem 28: drivers not installed)"
    else:
        driver = f"NO driver bound (status {c.get('Status') or '?'}, problem {problem or '?'})"
    return f"{name} controller '{c.get('FriendlyName') or ''}' (PnP device {c.get('InstanceId') or '?'}): {driver}"


def check_test_disk(facts: dict[str, Any], serial: str, host: str) -> dict[str, Any]:
    """The facts plus what the runner reads (``disk``, ``signature``, ``test_disk``); raises
    :class:`TestDiskMissing` when no disk with ``serial`` is visible."""
    disks = [d for d in as_list(facts.get("Disks")) if isinstance(d, dict)]
    if not serial:
        return facts
    number = facts.get("TestDisk")
    match = [d for d in disks if d.get("Number") == number] if number is not None else []
    if not match:
        controllers = [c for c in as_list(facts.get("Controllers")) if isinstance(c, dict)]
        unbound = [c for c in controllers if not c.get("DriverBound")]
        listed = "; ".join(describe_controller(c) for c in unbound + [c for c in controllers if c not in unbound])
        seen = ", ".join(f"#{d.get('Number')} serial '{d.get('SerialNumber')}' ({d.get('BusType')})" for d in disks)
        if unbound:
            names = sorted({str(c.get("Name")) for c in unbound})
            needs = "; ".join(f"{n}: {CONTROLLER_DRIVERS.get(n, 'its vendor driver')}" for n in names)
            fix = (f"install the driver of the controller without one ({needs}), e.g. pnputil /add-driver "
                   "<virtio-win>\\vioscsi\\2k22\\amd64\\vioscsi.inf /install, then reboot the guest")
        else:
            fix = (f"give the test disk the serial '{serial}' on the hypervisor (Proxmox: serial=..., ESXi: "
                   "disk.EnableUUID = TRUE)")
        raise TestDiskMissing(  # with the facts: the runner reads the guest's installed drivers from them
            f"no disk with serial '{serial}' is visible in {host} (disks seen: {seen or 'none'}). Storage "
            f"controllers: {listed or 'none found'}. Fix: {fix}. Not retried: restarting the VM does not "
            "install a driver", guest_facts=facts)
    disk = match[0]
    style = str(disk.get("PartitionStyle") or "")
    return {**facts,
            "disk": f"disk {number} (serial {serial})",
            "signature": "none" if style == "RAW" else "partitions",
            "test_disk": {k: disk.get(k) for k in ("Number", "FriendlyName", "BusType", "Size", "PartitionStyle",
                                                   "IsOffline", "IsReadOnly", "OfflineReason")}}
