"""Writes the esxtop batch captures in this folder (and malformed/), in the format of
``esxtop -b -d 5 -n 6 > capture.csv`` on an ESXi host named esx01.lab.

**Hand-built**: no ESXi host is reachable from the development machine. The layout follows the public
references cited in ``analysis/read/esxtop.py`` (PDH-CSV 4.0 header with ``(UTC)(0)``, every cell quoted,
``\\\\host\\object(instance)\\counter`` names, ``MM/DD/YYYY HH:MM:SS`` times, the Group Cpu counter list,
``Physical Cpu(_Total)``). The numbers are chosen so the expected results are easy to check by hand
(see tests/harness/backends/test_vmware_esxtop.py): bench01's %USED is 150, 180, 170, 160, 190, 150 (sum 1000, so 50.0
CPU-seconds at 5 s per row) and %USED = %RUN + %SYS - %OVRLP in every row. Re-running this script
reproduces the files exactly.

    python tests/data/esxtop/make_fixtures.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
HOST = "esx01.lab"
TIMES = ["11/22/2026 03:12:05", "11/22/2026 03:12:10", "11/22/2026 03:12:16",  # real gaps jitter around -d
         "11/22/2026 03:12:21", "11/22/2026 03:12:25", "11/22/2026 03:12:30"]
PCPUS = 8
GROUP_COUNTERS = ["Members", "% Used", "% Run", "% System", "% Wait", "% VmWait", "% Ready", "% Idle", "% Overlap",
                  "% CoStop", "% Max Limited", "% Swap Wait", "Switches/sec"]

BENCH01 = {  # per row; %USED = %RUN + %SYS - %OVRLP
    "Members": [8] * 6,
    "% Used": [150, 180, 170, 160, 190, 150],
    "% Run": [140, 170, 160, 150, 180, 140],
    "% System": [12, 14, 12, 12, 13, 12],
    "% Wait": [645, 615, 625, 635, 605, 645],
    "% VmWait": [5.5, 4.25, 4.75, 5, 3.5, 5.5],
    "% Ready": [1.2, 0.8, 1.0, 1.0, 0.6, 1.4],
    "% Idle": [58, 30, 40, 49, 20, 58],
    "% Overlap": [2, 4, 2, 2, 3, 2],
    "% CoStop": [0, 0.1, 0, 0, 0.1, 0],
    "% Max Limited": [0] * 6,
    "% Swap Wait": [0] * 6,
    "Switches/sec": [2100, 2500, 2300, 2200, 2600, 2100],
}
DB01 = {  # a VM whose name has spaces and parentheses; no values at all in the 4th iteration
    "Members": [6, 6, 6, None, 6, 6],
    "% Used": [40, 60, 50, None, 70, 30],
    "% Run": [38, 57, 48, None, 66, 29],
    "% System": [3, 4, 3, None, 5, 2],
    "% Wait": [555, 535, 545, None, 525, 565],
    "% VmWait": [1, 1.5, 1, None, 2, 0.5],
    "% Ready": [0.4, 0.6, 0.5, None, 0.7, 0.3],
    "% Idle": [158, 138, 148, None, 128, 168],
    "% Overlap": [1, 1, 1, None, 1, 1],
    "% CoStop": [0] * 3 + [None] + [0] * 2,
    "% Max Limited": [0] * 3 + [None] + [0] * 2,
    "% Swap Wait": [0] * 3 + [None] + [0] * 2,
    "Switches/sec": [900, 1100, 1000, None, 1200, 800],
}
SYSTEM = {"Members": [212] * 6, "% Used": [9, 11, 10, 10, 12, 9], "% Run": [9, 11, 10, 10, 12, 9],
          "% System": [0] * 6, "% Wait": [20900, 20890, 20895, 20895, 20885, 20900], "% Ready": [0.1] * 6}
UTIL_TOTAL = [30, 34, 32, 31, 35, 30]  # mean 32.0
PROC_TOTAL = [28, 32, 30, 29, 33, 28]  # mean 30.0
SPREAD = [4, -4, 2, -2, 1, -1, 3, -3]  # per PCPU around the total (mean 0)


def cell(v: object) -> str:
    if v is None:
        return '""'
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"'
    if isinstance(v, int):  # counts and sizes (Members, MBytes)
        return f'"{v}"'
    return f'"{v:.2f}"'  # rates and percentages


def capture(rows: int = 6, times: list[str] | None = None) -> str:
    times = times or TIMES
    header: list[str] = ["(PDH-CSV 4.0) (UTC)(0)"]
    cols: list[list[object]] = []

    def add(name: str, values: list[object]) -> None:
        header.append(f"\\\\{HOST}\\{name}")
        cols.append(values)

    add("Memory\\Memory Overcommit (1 Minute Avg)", [0.0] * 6)
    add("Memory\\Machine MBytes", [524288] * 6)
    add("Physical Cpu Load\\Cpu Load (1 Minute Avg)", [0.31, 0.32, 0.32, 0.32, 0.33, 0.32])
    for counter, totals in (("% Processor Time", PROC_TOTAL), ("% Util Time", UTIL_TOTAL)):
        for p in range(PCPUS):
            add(f"Physical Cpu({p})\\{counter}", [float(t + SPREAD[p]) for t in totals])
        add(f"Physical Cpu(_Total)\\{counter}", [float(t) for t in totals])
    for counter, values in SYSTEM.items():
        add(f"Group Cpu(1:system)\\{counter}", [v if counter == "Members" else float(v) for v in values])
    add("Group Cpu(2:idle)\\% Used", [0.0] * 6)
    for gid, name, data in (("51234", "bench01", BENCH01), ("60511", "db 01 (prod)", DB01)):
        for counter in GROUP_COUNTERS:
            add(f"Group Cpu({gid}:{name})\\{counter}",
                [v if v is None or counter == "Members" else float(v) for v in data[counter]])
    add("Group Memory(51234:bench01)\\Memctl?", ["Y"] * 6)  # a non-numeric counter: never read
    add("Group Memory(51234:bench01)\\Memory Size MBytes", [4096] * 6)
    add("Virtual Disk(bench01:scsi1:0)\\Commands/sec", [41250.4, None, 40990.0, 41120.8, 41003.2, 41410.6])
    add("Network Port(vSwitch0:33554436:51234:bench01)\\MBits Received/sec", [1.02, 0.98, 1.0, 1.01, 0.99, 1.0])
    lines = [",".join(cell(h) for h in header)]
    for r in range(rows):
        lines.append(",".join([cell(times[r])] + [cell(c[r]) for c in cols]))
    return "\n".join(lines) + "\n"


def main() -> None:
    good = capture()
    (HERE / "esx01_two_vms_d5.csv").write_text(good)
    one = capture(rows=1, times=["11/22/2026 03:12:07"])
    (HERE / "esx01_one_sample_d2.csv").write_text(one)
    bad = HERE / "malformed"
    bad.mkdir(exist_ok=True)
    lines = good.splitlines()
    # esxtop killed while writing its last row: the file ends mid-cell, without a newline
    (bad / "truncated_row.csv").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) * 2 // 5])
    # Get-Stat | Export-Csv: vSphere statistics, not esxtop batch output
    (bad / "wrong_header.csv").write_text(
        '"MetricId","Timestamp","Value","Unit","Instance","Entity"\n'
        '"cpu.used.summation","11/22/2026 3:12:20 AM","3400","millisecond","","bench01"\n'
        '"cpu.used.summation","11/22/2026 3:12:40 AM","3520","millisecond","","bench01"\n')
    # one %USED cell of bench01 damaged by hand editing (the 3rd sample row)
    header = lines[0].split('","')
    col = next(i for i, h in enumerate(header) if h == f"\\\\{HOST}\\Group Cpu(51234:bench01)\\% Used")
    row = lines[3].split('","')
    row[col] = "n/a"
    (bad / "non_numeric_cell.csv").write_text("\n".join(lines[:3] + ['","'.join(row)] + lines[4:]) + "\n")
    # two captures glued together: the second header is gone, its times start over
    (bad / "two_captures.csv").write_text("\n".join(lines + lines[1:3]) + "\n")


if __name__ == "__main__":
    main()
