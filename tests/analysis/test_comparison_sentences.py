"""Every comparison sentence says which way in words, and its number carries the sign of the change it names.

Measured before: "NBD had lower latency than iSCSI in 0 of 4 tests; the average latency change is -43.9%",
where NBD's latency was 43.9 % higher: a customer reads "change -43.9 %" as the opposite. Each case below
is checked with B faster and B slower, for IOPS, latency and bandwidth, against numbers worked out here
from the sides' own figures.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from stormatrix.analysis.score.compare import compare
from stormatrix.analysis.score.comparisonfindings import MINUS, comparison_findings, signed, which_way
from stormatrix.analysis.read.ingest import ingest
import paths

A_DIR = paths.DATA / "fio" / "compare" / "A"


def side_b(a: pd.DataFrame, speed: float) -> pd.DataFrame:
    """A's rows with ``speed`` times the IOPS and bandwidth and 1/``speed`` times the latency."""
    b = a.copy()
    for col in ("iops", "bw_mib_s"):
        b[col] = b[col] * speed
    b["lat_mean_us"] = b["lat_mean_us"] / speed
    return b


def number_after(text: str, words: str) -> float:
    """The signed number in "(<words> +12.3 %)"."""
    m = re.search(re.escape(words) + r" ([+\u2212]?\d+\.\d) %\)", text)
    assert m, f"no signed '{words}' in: {text}"
    return float(m.group(1).replace(MINUS, "-"))


@pytest.mark.parametrize("speed", [1.25, 0.7], ids=["B faster", "B slower"])
def test_words_and_signs_agree(speed: float) -> None:
    a = ingest([A_DIR]).frame
    b = side_b(a, speed)
    r = compare(a, b, label_a="iSCSI", label_b="NBD")
    f = {i: x.text for i, x in enumerate(comparison_findings(r))}
    pts = r.points
    gain = ((pts["iops_b"] / pts["iops_a"] - 1) * 100).mean()     # from the sides' own figures
    red = ((1 - pts["lat_us_b"] / pts["lat_us_a"]) * 100).mean()
    bw = (pts["bw_mib_s_b"].max() / pts["bw_mib_s_a"].max() - 1) * 100
    faster = speed > 1
    assert (gain > 0) == faster and (red > 0) == faster and (bw > 0) == faster

    iops = f[0]
    assert f"NBD's IOPS were {abs(gain):.1f} % {'higher' if faster else 'lower'} on average" in iops
    assert number_after(iops, "IOPS gain") == pytest.approx(gain, abs=0.05)

    lat = f[2]
    assert f"NBD's latency was {abs(red):.1f} % {'lower' if faster else 'higher'} on average" in lat
    assert number_after(lat, "latency reduction") == pytest.approx(red, abs=0.05)

    peak = f[3]
    assert f"NBD achieved {abs(bw):.1f} % {'higher' if faster else 'lower'} peak bandwidth" in peak
    assert number_after(peak, "bandwidth gain") == pytest.approx(bw, abs=0.05)

    top = f[1]
    best = ((pts["iops_b"] / pts["iops_a"] - 1) * 100).max()
    if faster:
        assert top.startswith(f"The largest IOPS gain in an individual test is +{best:.1f} %")
        assert f"{best:.1f} % higher" in top
    else:
        assert top.startswith("NBD had fewer IOPS than iSCSI in every test") and f"{-best:.1f} % lower" in top
        assert number_after(top, "IOPS gain") == pytest.approx(best, abs=0.05)

    for text in f.values():  # no sentence pairs a word of one direction with the sign of the other
        for m in re.finditer(r"(\d+\.\d) % (higher|lower)[^(]*\((IOPS gain|latency reduction|bandwidth gain) "
                             r"([+\u2212]?)\d", text):
            word, named, sign = m.group(2), m.group(3), m.group(4)
            good_is_up = named != "latency reduction"
            positive = sign == "+"
            assert (word == "higher") == (positive == good_is_up), text


def test_signed_and_which_way_in_words() -> None:
    assert signed(-43.94) == f"{MINUS}43.9 %" and signed(12.0) == "+12.0 %" and signed(-0.01) == "0.0 %"
    assert which_way(43.9, "higher", "lower") == "43.9 % higher"
    assert which_way(-43.9, "higher", "lower") == "43.9 % lower"
    assert which_way(0.04, "higher", "lower") == "the same"
