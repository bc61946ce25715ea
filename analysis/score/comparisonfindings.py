"""The findings of an A-versus-B comparison (technote 000's FINDINGS: "Proxmox VE beat VMware ESXi in 56 of 57
tests"), generated from the comparison's numbers, each a :class:`.findings.Finding` with its headline number
and the inputs it was computed from, as the efficiency findings are (:mod:`.findings`).
"""

from __future__ import annotations

from ...core.model import format_size
from .compare import ComparisonResult
from .findings import Finding

MINUS = "\u2212"  # the minus sign, as a customer reads it in a sentence


def signed(pct: float) -> str:
    """A change in percent with its sign: "+12.3 %", "\u221243.9 %", "0.0 %"."""
    text = f"{pct:+.1f}"
    if text in ("+0.0", "-0.0"):
        return "0.0 %"
    return text.replace("-", MINUS) + " %"


def which_way(pct: float, up: str, down: str, same: str = "the same") -> str:
    """How much and which way, in words: "43.9 % higher", "12.0 % lower", "the same" (to 0.1 %)."""
    if f"{abs(pct):.1f}" == "0.0":
        return same
    return f"{abs(pct):.1f} % {up if pct > 0 else down}"


def comparison_findings(result: ComparisonResult) -> list[Finding]:
    """The FINDINGS of technote 000, from B's point of view (B against the baseline A).

    Every sentence that states a change says which way in words and gives the number with the sign of
    the change it names: "NBD's latency was 43.9 % higher on average (latency reduction \u221243.9 %)"."""
    s, a, b = result.summary, result.label_a, result.label_b
    n = s["points"]
    gain, red, top = s["mean_iops_gain_pct"], s["mean_lat_reduction_pct"], s["max_iops_gain_pct"]
    if top >= 0:
        largest = (f"The largest IOPS gain in an individual test is {signed(top)} ({s['max_iops_gain_point']}): "
                   f"{b}'s IOPS {which_way(top, 'higher', 'lower')} than {a}'s there.")
    else:
        largest = (f"{b} had fewer IOPS than {a} in every test; the closest is {s['max_iops_gain_point']}, where "
                   f"{b}'s IOPS were {which_way(top, 'higher', 'lower')} (IOPS gain {signed(top)}).")
    out = [
        Finding(f"{b} beat {a} in {s['iops_wins']} of {n} tests in IOPS; {b}'s IOPS were "
                f"{which_way(gain, 'higher', 'lower')} on average (IOPS gain {signed(gain)}).",
                gain, "%", {"points where B has more IOPS": s["iops_wins"], "points": n, "mean IOPS gain %": gain}),
        Finding(largest, top, "%", {f"IOPS gain % at {s['max_iops_gain_point']}": top}),
        Finding(f"{b} had lower latency than {a} in {s['latency_wins']} of {n} tests; {b}'s latency was "
                f"{which_way(red, 'lower', 'higher')} on average (latency reduction {signed(red)}).", red, "%",
                {"points where B has lower latency": s["latency_wins"], "points": n,
                 "mean latency reduction %": red}),
        Finding(f"{b} achieved {which_way(s['peak_bw_gain_pct'], 'higher', 'lower')} peak bandwidth than {a} "
                f"(bandwidth gain {signed(s['peak_bw_gain_pct'])}): "
                f"{s['peak_bw_b']:.1f} MiB/s for {b} ({s['peak_bw_b_point']}) versus {s['peak_bw_a']:.1f} MiB/s "
                f"for {a} ({s['peak_bw_a_point']}).", s["peak_bw_gain_pct"], "%",
                {f"{b} peak MiB/s": s["peak_bw_b"], f"{a} peak MiB/s": s["peak_bw_a"]}),
    ]
    for rw, g in result.by_qd.groupby("rw", sort=False):
        if len(g) > 1:
            top_qd = g.loc[g["iops_gain_pct"].idxmax()]
            qg, ql = float(top_qd["iops_gain_pct"]), float(top_qd["lat_reduction_pct"])
            what = "largest IOPS gain" if qg >= 0 else "smallest IOPS loss"
            out.append(Finding(f"Averaged across block sizes ({rw}), the {what} is at QD={int(top_qd['iodepth'])}: "
                               f"{b}'s IOPS {which_way(qg, 'higher', 'lower')} (IOPS gain {signed(qg)}); its latency "
                               f"there {which_way(ql, 'lower', 'higher')} (latency reduction {signed(ql)}).", qg, "%",
                               {f"{rw} QD{int(top_qd['iodepth'])} mean IOPS gain %": qg,
                                f"{rw} QD{int(top_qd['iodepth'])} mean latency reduction %": ql}))
    for rw, g in result.by_bs.groupby("rw", sort=False):
        if len(g) > 1:
            top_bs = g.loc[g["iops_gain_pct"].idxmax()]
            bs = format_size(int(top_bs["bs"]))
            bg = float(top_bs["iops_gain_pct"])
            what = "largest IOPS gain" if bg >= 0 else "smallest IOPS loss"
            out.append(Finding(f"Averaged across queue depths ({rw}), the {what} is at block size {bs}: "
                               f"{b}'s IOPS {which_way(bg, 'higher', 'lower')} (IOPS gain {signed(bg)}).", bg, "%",
                               {f"{rw} {bs} mean IOPS gain %": bg}))
    tested = s["tested_points"]
    if tested:
        out.append(Finding(f"{s['iops_not_significant']} of {tested} tested points show no statistically significant "
                           f"IOPS difference, and {s['latency_not_significant']} no significant latency difference "
                           f"(Welch t-test over repeats, p >= {result.alpha:g}).",
                           float(s["iops_not_significant"]), "points",
                           {"points tested": tested, "IOPS n.s.": s["iops_not_significant"],
                            "latency n.s.": s["latency_not_significant"]}))
    else:
        out.append(Finding(f"No point has repeats on both sides: none of the {n} differences is tested for "
                           "significance. Repeat each point at least twice to test them.", 0.0, "points tested",
                           {"points tested": 0}))
    return out
