"""The data-described fake vCenter (tests/pwsh/FakeVCenter) for pytest: a copy of its lab file per test, the
environment that makes pwsh find the fake PowerCLI module, and readers/editors of the lab (calls, VMs,
injected faults). Shared by the vmware backend's tests and the ESXi fleet's."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import paths

FAKE_DIR = paths.ROOT / "tests" / "pwsh" / "FakeVCenter"
PASSWORD = "s3cr3t-Pa55"
USER = "administrator@vsphere.local"
#: the account of the template's guest (lab.json: templates[].guest.accounts), for Invoke-VMScript
GUEST_USER, GUEST_PASSWORD = "root", "gu3st-Pa55"


class FakeVCenter:
    """The fake PowerCLI's lab for one test, plus the environment that makes pwsh find it."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = tmp / "vcenter-lab.json"
        shutil.copyfile(FAKE_DIR / "lab.json", self.path)
        monkeypatch.setenv("PSModulePath", str(FAKE_DIR))
        monkeypatch.setenv("STORMATRIX_FAKE_VCENTER_LAB", str(self.path))
        monkeypatch.setenv("STORMATRIX_VSPHERE_USER", USER)
        monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", PASSWORD)
        monkeypatch.setenv("STORMATRIX_GUEST_USER", GUEST_USER)
        monkeypatch.setenv("STORMATRIX_GUEST_PASSWORD", GUEST_PASSWORD)

    def read(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def write(self, lab: dict[str, Any]) -> None:
        self.path.write_text(json.dumps(lab, indent=1))

    def change(self, **top: Any) -> None:
        lab = self.read()
        lab.update(top)
        self.write(lab)

    def set_guest_fio(self, version: str | None, *vms: str) -> None:
        """What ``fio --version`` prints in the template's guest (and so in its later clones), or in the named VMs."""
        lab = self.read()
        for entry in [v for v in lab["vms"] if v["name"] in vms] if vms else lab["templates"]:
            entry["guest"]["fio"] = version
        self.write(lab)

    def declare_fio(self, version: str | None) -> None:
        """The template's Notes with the line ``stormatrix-fio: <version>`` (None: without any such line)."""
        lab = self.read()
        template = lab["templates"][0]
        lines = [line for line in template["notes"].splitlines() if not line.startswith("stormatrix-fio:")]
        template["notes"] = "\n".join(lines + ([f"stormatrix-fio: {version}"] if version else []))
        self.write(lab)

    def vm(self, name: str = "bench01") -> dict[str, Any]:
        return next(v for v in self.read()["vms"] if v["name"] == name)

    def edit_vm(self, name: str = "bench01", **values: Any) -> None:
        lab = self.read()
        next(v for v in lab["vms"] if v["name"] == name).update(values)
        self.write(lab)

    def fault(self, step: str, message: str) -> None:
        lab = self.read()
        lab["faults"][step] = message
        self.write(lab)

    def cmdlets(self) -> list[str]:
        return [c["cmdlet"] for c in self.read()["calls"]]

    def calls(self, cmdlet: str) -> list[dict[str, Any]]:
        return [c["parameters"] for c in self.read()["calls"] if c["cmdlet"] == cmdlet]

    def layout(self, name: str = "bench01") -> tuple[Any, ...]:
        v = self.vm(name)
        return (v["powerState"], sorted((c["key"], c["type"]) for c in v["controllers"]),
                sorted((d["name"], d["filename"], d["controllerKey"]) for d in v["disks"]))

    def devices(self) -> dict[str, tuple[str, str]]:
        esx = self.read()["hosts"][0]["esxcli"]
        sched = {r["Device"]: r["No of outstanding IOs with competing worlds"] for r in esx["storage.core.device.list"]}
        latency = {r["Device"]: r["Latency Sensitive Threshold"] for r in esx["storage.core.device.latencythreshold.list"]}
        return {d: (sched[d], latency[d]) for d in sched}

    def add_cpu_samples(self, around: datetime, vm_name: str = "bench01", host: str = "esx01.lab",
                        span_s: int = 120) -> None:
        """20-second realtime samples (timestamps on 20 s boundaries, UTC) covering ``around`` +- span."""
        base = around.replace(microsecond=0) - timedelta(seconds=span_s + around.second % 20)
        times = [base + timedelta(seconds=20 * i) for i in range(2 * span_s // 20 + 3)]

        def row(entity: str, metric: str, instance: str, unit: str, value: float) -> dict[str, Any]:
            return {"entity": entity, "metricId": metric, "instance": instance, "unit": unit, "intervalSecs": 20,
                    "samples": [{"timestamp": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "value": value} for t in times]}

        lab = self.read()
        lab["stats"] = [row(vm_name, "cpu.used.summation", "", "millisecond", 4000),
                        row(vm_name, "cpu.used.summation", "0", "millisecond", 2500),
                        row(vm_name, "cpu.used.summation", "1", "millisecond", 1500),
                        row(vm_name, "cpu.ready.summation", "", "millisecond", 200),
                        row(vm_name, "cpu.usagemhz.average", "", "megaHertz", 600),
                        row(host, "cpu.usagemhz.average", "", "megaHertz", 3000),
                        row(host, "cpu.usage.average", "", "percent", 6.25)]
        self.write(lab)
