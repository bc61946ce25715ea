"""The collector's CPU-set mode (issue 33) against a fake /proc tree.

The tree is written by this test from a data description (two moments of a two-CPU host: per-CPU times,
uptime, interrupts, softirqs, a few tasks), in proc(5)'s formats; the expected figures are worked out here
from the same description, never by the collector's functions. perf is off (a fake tree has no CPUs to
count), so the set's CPU time is /proc's and its context switches are null with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stormatrix.host import collector, perfrun, procfs
from stormatrix.host.collector import WindowCollector
from stormatrix.host.cpuset import CpuSetCollector, with_process
from stormatrix.host.procfs import CollectorProblem

HZ = procfs.CLK_TCK
COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")

# two moments of a host with CPUs 0 and 1; the set is CPU 1 (the VM's), CPU 0 runs the rest
START: dict[str, Any] = {
    "uptime": 1000.00,
    "cpu": {0: dict(user=5000, nice=10, system=2000, idle=90000, iowait=300, irq=0, softirq=40, steal=5),
            1: dict(user=7000, nice=0, system=3000, idle=88000, iowait=100, irq=0, softirq=60, steal=7)},
    "interrupts": {"24": ("IO-APIC 5-edge ACPI:Ged", [1, 0]),
                   "40": ("PCI-MSIX-0000:00:05.0 1-edge nvme0q1", [500, 9000]),
                   "LOC": ("Local timer interrupts", [10000, 12000])},
    "softirqs": {"TIMER": [100, 200], "NET_RX": [50, 800], "BLOCK": [20, 3000], "SCHED": [70, 90]},
    # pid -> (comm, {tid: (comm, processor, utime, stime, runtime_ns)})
    "tasks": {1: ("systemd", {1: ("systemd", 0, 10, 10, 200_000_000)}),
              4242: ("qemu-system-x86", {4242: ("qemu-system-x86", 1, 500, 100, 6_000_000_000),
                                         4243: ("CPU 0/TCG", 1, 9000, 50, 90_000_000_000)}),
              777: ("intruder", {777: ("intruder", 1, 5, 5, 100_000_000),
                                 778: ("intruder-w", 0, 1, 1, 20_000_000)}),
              30: ("ksoftirqd/1", {30: ("ksoftirqd/1", 1, 0, 3, 30_000_000)})},
}
# 10 s later: CPU 1 busy 9.6 of 10 s, the intruder ran 0.5 s on it, an nvme interrupt went to CPU 0 too
END: dict[str, Any] = {
    "uptime": 1010.00,
    "cpu": {0: dict(user=5300, nice=10, system=2100, idle=90580, iowait=310, irq=0, softirq=45, steal=5),
            1: dict(user=7800, nice=0, system=3100, idle=88030, iowait=110, irq=0, softirq=120, steal=7)},
    "interrupts": {"24": ("IO-APIC 5-edge ACPI:Ged", [1, 0]),
                   "40": ("PCI-MSIX-0000:00:05.0 1-edge nvme0q1", [530, 9400]),
                   "LOC": ("Local timer interrupts", [12500, 14500])},
    "softirqs": {"TIMER": [350, 450], "NET_RX": [60, 900], "BLOCK": [25, 3600], "SCHED": [80, 95]},
    "tasks": {1: ("systemd", {1: ("systemd", 0, 11, 10, 210_000_000)}),
              4242: ("qemu-system-x86", {4242: ("qemu-system-x86", 1, 560, 120, 6_800_000_000),
                                         4243: ("CPU 0/TCG", 1, 9800, 60, 98_100_000_000)}),
              777: ("intruder", {777: ("intruder", 1, 30, 30, 600_000_000),
                                 778: ("intruder-w", 0, 20, 1, 220_000_000)}),
              30: ("ksoftirqd/1", {30: ("ksoftirqd/1", 1, 0, 6, 60_000_000)})},
}


def stat_line(pid: int, comm: str, processor: int, utime: int, stime: int) -> str:
    """A /proc/PID/stat line (proc(5)): 52 fields, utime 14, stime 15, processor 39."""
    fields = ["S", "1", str(pid), str(pid), "0", "-1", "4194560"] + ["0"] * 4 + [str(utime), str(stime)]
    fields += ["0"] * (39 - 3 - len(fields)) + [str(processor)] + ["0"] * 13
    assert fields[36] == str(processor) and len(fields) == 50
    return f"{pid} ({comm}) " + " ".join(fields) + "\n"


def write_tree(root: Path, moment: dict[str, Any]) -> None:
    proc = root / "proc"
    proc.mkdir(parents=True, exist_ok=True)
    lines = []
    for cpu, cols in sorted(moment["cpu"].items()):
        lines.append(f"cpu{cpu} " + " ".join(str(cols.get(c, 0)) for c in COLUMNS))
    total = [sum(moment["cpu"][c].get(k, 0) for c in moment["cpu"]) for k in COLUMNS]
    (proc / "stat").write_text("cpu  " + " ".join(map(str, total)) + "\n" + "\n".join(lines) + "\nctxt 123456\n")
    (proc / "uptime").write_text(f"{moment['uptime']:.2f} 1234.56\n")
    cpus = sorted(moment["cpu"])
    head = " " * 11 + "".join(f"CPU{c:<8}" for c in cpus) + "\n"
    body = "".join(f"{label:>4}: " + " ".join(f"{n:10d}" for n in counts) + f"   {desc}\n"
                   for label, (desc, counts) in moment["interrupts"].items())
    (proc / "interrupts").write_text(head + body + " ERR:          0\n MIS:          0\n")
    (proc / "softirqs").write_text(head + "".join(f"{k:>12}: " + " ".join(f"{n:10d}" for n in v) + "\n"
                                                  for k, v in moment["softirqs"].items()))
    for pid, (comm, threads) in moment["tasks"].items():
        for tid, (tcomm, processor, ut, st, rt) in threads.items():
            task = proc / str(pid) / "task" / str(tid)
            task.mkdir(parents=True, exist_ok=True)
            (task / "stat").write_text(stat_line(tid, tcomm, processor, ut, st))
            (task / "schedstat").write_text(f"{rt} 0 0\n")
            (task / "status").write_text(f"Name:\t{tcomm}\nvoluntary_ctxt_switches:\t{ut}\n"
                                         f"nonvoluntary_ctxt_switches:\t{st}\n")
        leader = threads[pid]
        (proc / str(pid) / "stat").write_text(
            stat_line(pid, comm, leader[1], sum(t[2] for t in threads.values()), sum(t[3] for t in threads.values())))


def measure(tmp_path: Path, cpus: list[int], exclude: tuple[int, ...] = (4242,)) -> dict[str, Any]:
    write_tree(tmp_path, START)
    c = CpuSetCollector(cpus, use_perf=False, root=str(tmp_path), exclude=exclude, scan_interval=3600)
    c.start()
    assert c.wait_ready()
    write_tree(tmp_path, END)
    return c.stop()


def secs(ticks: float) -> float:
    return ticks / HZ


def test_the_set_s_time_is_its_busy_time_and_its_columns_are_the_work_ones(tmp_path: Path) -> None:
    host = measure(tmp_path, [1])
    a, b = START["cpu"][1], END["cpu"][1]
    d = {k: b[k] - a[k] for k in a}
    elapsed = END["uptime"] - START["uptime"]
    assert host["scope"] == "cpus" and host["cpus"] == "1" and host["cpu_metric"] == "cpu_time"
    assert host["cpu_total"] == pytest.approx(elapsed - secs(d["idle"] + d["iowait"]))
    assert host["cpu_user"] == pytest.approx(secs(d["user"] + d["nice"]))
    assert host["cpu_system"] == pytest.approx(secs(d["system"] + d["irq"] + d["softirq"]))
    assert host["cpu_time_s"]["work_ticks"] == pytest.approx(
        secs(sum(d[k] for k in ("user", "nice", "system", "irq", "softirq", "steal"))))
    assert host["cpu_stat"]["idle"] == pytest.approx(secs(d["idle"]))  # idle is journaled, never counted
    assert "idle" in host["cpu_total_source"] and "uptime" in host["cpu_total_source"]
    # no perf: the set's switches are unknown, and the record says why (never 0)
    assert host["ctx_switches"] is None and "per-CPU" in host["null_reasons"]["ctx_switches"]


def test_without_uptime_the_time_is_the_work_columns(tmp_path: Path) -> None:
    write_tree(tmp_path, START)
    (tmp_path / "proc" / "uptime").unlink()
    c = CpuSetCollector([1], use_perf=False, root=str(tmp_path), scan_interval=3600)
    c.start()
    assert c.wait_ready()
    write_tree(tmp_path, END)
    (tmp_path / "proc" / "uptime").unlink()
    host = c.stop()
    assert host["cpu_total"] == pytest.approx(host["cpu_time_s"]["work_ticks"])
    assert "user + nice + system + irq + softirq + steal" in host["cpu_total_source"]


def test_the_leak_counts_the_interrupts_and_softirqs_outside_the_set_by_kind(tmp_path: Path) -> None:
    leak = measure(tmp_path, [1])["leak"]
    assert leak["outside_cpus"] == "0"
    nvme0, nvme1 = START["interrupts"]["40"][1], END["interrupts"]["40"][1]
    assert leak["interrupts"]["40"] == {"name": "PCI-MSIX-0000:00:05.0 1-edge nvme0q1",
                                        "outside": nvme1[0] - nvme0[0], "on_set": nvme1[1] - nvme0[1]}
    assert "24" not in leak["interrupts"]  # unchanged lines are left out
    assert leak["io_interrupts"] == {"outside": nvme1[0] - nvme0[0], "on_set": nvme1[1] - nvme0[1]}  # not LOC
    s0, s1 = START["softirqs"], END["softirqs"]
    assert leak["softirqs"]["BLOCK"] == {"outside": s1["BLOCK"][0] - s0["BLOCK"][0],
                                         "on_set": s1["BLOCK"][1] - s0["BLOCK"][1]}
    io = [k for k in ("BLOCK", "NET_RX")]
    assert leak["io_softirqs"] == {"outside": sum(s1[k][0] - s0[k][0] for k in io),
                                   "on_set": sum(s1[k][1] - s0[k][1] for k in io)}


def test_on_set_names_the_other_tasks_that_ran_on_the_set_not_qemu(tmp_path: Path) -> None:
    on_set = {r["pid"]: r for r in measure(tmp_path, [1])["on_set"]}
    assert 4242 not in on_set  # QEMU's own figures are the process block
    assert 1 not in on_set  # ran, but on CPU 0
    t0, t1 = START["tasks"][777][1][777][4], END["tasks"][777][1][777][4]
    # the intruder's thread on CPU 1 counts; its thread on CPU 0 does not
    assert on_set[777]["comm"] == "intruder" and on_set[777]["cpu_s"] == pytest.approx((t1 - t0) / 1e9)
    assert on_set[777]["threads"] == 1
    k0, k1 = START["tasks"][30][1][30][4], END["tasks"][30][1][30][4]
    assert on_set[30]["cpu_s"] == pytest.approx((k1 - k0) / 1e9)


def test_the_set_holds_the_process_figures_beside_its_own(tmp_path: Path) -> None:
    write_tree(tmp_path, START)
    cs = CpuSetCollector([1], use_perf=False, root=str(tmp_path), exclude=(4242,), scan_interval=3600)
    wc = WindowCollector(4242, {4243: "vcpu"}, use_perf=False, root=str(tmp_path), interval=3600)
    cs.start()
    wc.start()
    assert cs.wait_ready()
    write_tree(tmp_path, END)
    host = with_process(cs.stop(), wc.stop())
    proc = host["process"]
    assert proc["scope"] == "qemu-process" and proc["pid"] == 4242
    threads = END["tasks"][4242][1]
    ticks = sum(t[2] + t[3] for t in threads.values()) - sum(t[2] + t[3] for t in START["tasks"][4242][1].values())
    assert proc["cpu_total"] == pytest.approx(secs(ticks))
    assert host["by_role"]["vcpu"]["threads"] == 1  # QEMU's threads, whatever the scope
    assert host["cpu_total"] >= proc["cpu_total"]


@pytest.mark.parametrize("cpus, problem", [([5], "CPU 5 of the set 5 is not a CPU of this host"),
                                            ([], "(none)")])
def test_a_cpu_the_host_lacks_is_refused_naming_it(tmp_path: Path, cpus: list[int], problem: str) -> None:
    write_tree(tmp_path, START)
    with pytest.raises(CollectorProblem, match=problem.replace("(", r"\(").replace(")", r"\)")):
        CpuSetCollector(cpus, use_perf=False, root=str(tmp_path)).start()


def test_a_bad_stat_line_is_a_problem_naming_the_file(tmp_path: Path) -> None:
    write_tree(tmp_path, START)
    (tmp_path / "proc" / "stat").write_text("cpu0 1 2 3\n")
    with pytest.raises(CollectorProblem, match="proc/stat: cpu0 has 3 columns"):
        CpuSetCollector([0], use_perf=False, root=str(tmp_path)).start()


def test_the_script_measures_a_set_and_a_process_from_the_command_line(tmp_path: Path) -> None:
    write_tree(tmp_path, START)
    script = Path(collector.__file__)
    proc = subprocess.Popen([sys.executable, str(script), "--cpus", "1", "--pid", "4242", "--root", str(tmp_path),
                             "--no-perf"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "started"
    write_tree(tmp_path, END)
    out, _ = proc.communicate("\n", timeout=60)
    host = json.loads(out)
    assert host["scope"] == "cpus" and host["process"]["pid"] == 4242 and host["leak"]["outside_cpus"] == "0"
    bad = subprocess.run([sys.executable, str(script), "--cpus", "1-x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--cpus" in bad.stderr


class LocalShell:
    """What :class:`RemoteProcessesCollector` needs of an ssh shell, running the command here instead (the
    ssh path itself is tests/harness/backends/proxmox/test_proxmox_vms_collector.py's)."""

    where = "this machine"

    def argv(self, command: list[str]) -> list[str]:
        return [sys.executable if command[0] == "python3" else command[0], *command[1:]]

    def ssh_failure(self, rc: int, text: str) -> bool:
        return False


def test_the_node_collector_measures_the_set_around_its_processes_in_one_session(tmp_path: Path) -> None:
    from stormatrix.collect import RemoteProcessesCollector
    from stormatrix.core.scope import HostScope

    tree = tmp_path / "node"
    write_tree(tree, START)
    remote = RemoteProcessesCollector(LocalShell(), lambda: [HostScope(4242, {4243: "vcpu"}, vm="vm01")],  # type: ignore[arg-type]
                                      remote_dir=str(Path(collector.__file__).parent), use_perf=False,
                                      cpus="1", root=str(tree))
    remote.start()
    write_tree(tree, END)
    host = remote.stop()
    assert host is not None and host["scope"] == "cpus" and host["cpus"] == "1" and host["vms"] == ["vm01"]
    assert host["process"]["pid"] == 4242 and host["process"]["scope"] == "qemu-process"
    assert 4242 not in {r["pid"] for r in host["on_set"]} and 777 in {r["pid"] for r in host["on_set"]}
    assert host["leak"]["io_interrupts"]["outside"] == END["interrupts"]["40"][1][0] - START["interrupts"]["40"][1][0]


def test_the_node_collector_refuses_a_set_the_node_lacks(tmp_path: Path) -> None:
    write_tree(tmp_path, START)
    multi = Path(collector.__file__).parent / "multicollector.py"
    line = json.dumps({"processes": [], "cpus": "7", "root": str(tmp_path), "use_perf": False})
    proc = subprocess.run([sys.executable, str(multi)], input=line + "\n", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "CPU 7 of the set 7 is not a CPU of this host" in json.loads(proc.stdout)["error"]


@pytest.mark.skipif(not perfrun.perf_available(), reason="needs a working perf stat (root, linux-perf)")
def test_perf_counting_a_cpu_set_dies_with_a_collector_killed_by_sigkill(tmp_path: Path) -> None:
    """``perf stat -a -C`` never ends by itself (unlike ``-p PID``): a SIGKILLed starter must not leave it
    counting (the kill -9 reliability test found such orphans, re-parented to init)."""
    import os
    import signal
    import time

    script = ("import sys, time\n"
              "from stormatrix.host import perfrun\n"
              "proc, out = perfrun.start_perf(['-a', '-C', '0'], ['context-switches'])\n"
              "print(proc.pid, flush=True)\n"
              "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    perf_pid = int(child.stdout.readline())
    assert Path(f"/proc/{perf_pid}").exists()  # counting, a child of the collector
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{perf_pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            break  # gone and reaped
        if state == "Z":
            break  # dead, waiting for init to reap it
        time.sleep(0.05)
    else:
        os.kill(perf_pid, signal.SIGKILL)
        pytest.fail(f"perf {perf_pid} outlived its SIGKILLed collector")
