"""Is A really different from B? Welch's t-test at 95 % over the repeats, and the words for the answer.

A finding that one configuration is better than another must rest on a difference larger than the
repeat-to-repeat noise. The test is Welch's two-sample t-test (unequal variances), two-sided,
at alpha = 0.05: the same test ``compare`` uses per point. Three outcomes, each with its numbers:

- ``significant``: p < 0.05; the finding may say "better" / "more" / "fewer";
- ``within noise``: p >= 0.05; the finding says the difference is within noise and gives means, CIs and p;
- ``indicative``: either side has a single repeat, so there is no variance and no test; the finding is
  marked indicative wherever it appears.

Two sides with two or more repeats each and no variance at all (every repeat identical on both sides)
have an undefined t statistic: equal means are within noise (p = 1), different means are separated in
every repeat (p = 0).

A verdict has a *direction* as well as a significance: :class:`Verdict` is the one object a sentence's
words ("lower", "higher", "tied within noise") and its Evidence column are both read from, so that the two
cannot disagree (issue 21: "better than" was written whenever p < 0.05, whichever way the difference
pointed). A finding with one significant half and one within noise is ``partly significant``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _sp

ALPHA = 0.05
SIGNIFICANT = "significant"
WITHIN_NOISE = "within noise"
INDICATIVE = "indicative"
PARTLY = "partly significant"
LOWER, HIGHER, TIED, UNTESTED = "lower", "higher", "tied", "untested"
TEST_NAME = "Welch's t-test (two-sided, unequal variances) at 95 % (p < 0.05)"


@dataclass(frozen=True)
class Test:
    """The outcome of comparing two sets of repeats of one metric."""

    mean_a: float
    mean_b: float
    n_a: int
    n_b: int
    half_a: float   # 95 % CI half-width of A's mean (NaN for one repeat)
    half_b: float
    p: float        # NaN when not tested (indicative)
    verdict: str    # SIGNIFICANT | WITHIN_NOISE | INDICATIVE

    @property
    def significant(self) -> bool:
        return self.verdict == SIGNIFICANT

    def numbers(self, name_a: str, name_b: str, what: str, fmt: str = "{:.4g}") -> str:
        """"A 30.1 ± 0.8 vs B 31.2 ± 1.1 CPU-ms/MiB (95 % CI), p = 0.42": the evidence in one phrase."""
        def side(name: str, mean: float, half: float, n: int) -> str:
            ci = f" ± {fmt.format(half)}" if math.isfinite(half) else ""
            return f"{name} {fmt.format(mean)}{ci} (n={n})"
        tail = f", {welch_p(self.p)}" if math.isfinite(self.p) else ", single repeat: not tested"
        a = side(name_a, self.mean_a, self.half_a, self.n_a)
        b = side(name_b, self.mean_b, self.half_b, self.n_b)
        return f"{a} vs {b} {what} (mean ± 95 % CI){tail}"


@dataclass(frozen=True)
class Verdict:
    """A comparison of A against B on a quantity where lower is better, as one object: ``direction`` (A is
    ``lower``, ``higher``, ``tied`` within noise, or ``untested``) from the sign of the difference *and* the
    test; ``status`` (significant, within noise, indicative) for the Evidence column; ``test`` the test's
    words with its number ("Welch p = 0.021", "lower in 97.3 % of 2,000 resamples"); ``number`` that number
    (p, or the share of resamples in which A is lower)."""

    direction: str
    status: str
    test: str
    number: float

    @classmethod
    def of_test(cls, t: "Test") -> "Verdict":
        """From Welch's test: the direction of the means where p < alpha, tied otherwise."""
        if t.verdict == INDICATIVE:
            return cls(UNTESTED, INDICATIVE, "single repeat: not tested", float("nan"))
        if t.verdict == SIGNIFICANT and t.mean_a != t.mean_b:
            return cls(LOWER if t.mean_a < t.mean_b else HIGHER, SIGNIFICANT, welch_p(t.p), t.p)
        return cls(TIED, WITHIN_NOISE, welch_p(t.p), t.p)

    @classmethod
    def of_share(cls, share: float, resamples: int, *, tested: bool, level: float = 1 - ALPHA) -> "Verdict":
        """From the share of resamples in which A's value is lower than B's: lower where it is at least
        ``level``, higher where at most 1 - ``level``, tied within noise between."""
        test = f"lower in {share:.1%} of {resamples:,} resamples"
        if not tested:
            return cls(UNTESTED, INDICATIVE, "single repeat: not tested", float("nan"))
        if share >= level:
            return cls(LOWER, SIGNIFICANT, test, share)
        if share <= 1 - level:
            return cls(HIGHER, SIGNIFICANT, test, share)
        return cls(TIED, WITHIN_NOISE, test, share)

    def words(self, lower: str, higher: str, tied: str, untested: str | None = None) -> str:
        """The phrase for this direction: the caller names all of them, so none is chosen by the status alone."""
        return {LOWER: lower, HIGHER: higher, TIED: tied}.get(self.direction, untested or tied)


def welch_p(p: float) -> str:
    """"Welch p = 0.042" or "Welch p < 0.0001"."""
    text = format_p(p)
    return f"Welch p {text}" if text.startswith("<") else f"Welch p = {text}"


def format_p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def t_975(df: int) -> float:
    """Student t quantile for a two-sided 95 % interval.

    Closed forms for 1 and 2 degrees of freedom (2 and 3 repeats, the usual case): scipy's numerical
    inverse is off by ~2e-11 relative for df = 1, enough to miss a 1e-9 check on a large CI.
    """
    if df == 1:
        return math.tan(math.pi * 0.475)            # Cauchy quantile
    if df == 2:
        return 0.95 / math.sqrt(2 * 0.975 * 0.025)  # (2p - 1) / sqrt(2 p (1 - p))
    return float(_sp.t.ppf(0.975, df))


def half_width(values: Sequence[float] | np.ndarray) -> float:
    """95 % CI half-width of the mean of ``values`` (Student t); NaN for fewer than two."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float("nan")
    return t_975(len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v))


def welch(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Test:
    """Welch's t-test of the repeats of A against those of B (see the module docstring for the verdicts)."""
    va = np.asarray([x for x in a if x is not None and math.isfinite(float(x))], dtype=float)
    vb = np.asarray([x for x in b if x is not None and math.isfinite(float(x))], dtype=float)
    if len(va) == 0 or len(vb) == 0:
        raise ValueError("welch() needs at least one value on each side")
    ma, mb = float(va.mean()), float(vb.mean())
    ha, hb = half_width(va), half_width(vb)
    if len(va) < 2 or len(vb) < 2:
        return Test(ma, mb, len(va), len(vb), ha, hb, float("nan"), INDICATIVE)
    sa, sb = float(va.var(ddof=1)), float(vb.var(ddof=1))
    if sa == 0 and sb == 0:
        p = 1.0 if ma == mb else 0.0
    else:
        # from the summary statistics: ttest_ind on raw values warns (as an error under -W error) when the
        # repeats of one side are nearly identical, which well-repeated cells are
        p = float(_sp.ttest_ind_from_stats(ma, math.sqrt(sa), len(va), mb, math.sqrt(sb), len(vb),
                                           equal_var=False).pvalue)
    return Test(ma, mb, len(va), len(vb), ha, hb, p, SIGNIFICANT if p < alpha else WITHIN_NOISE)


def combine(*verdicts: str) -> str:
    """The weakest of several verdicts: indicative < within noise < significant."""
    order = (INDICATIVE, WITHIN_NOISE, SIGNIFICANT)
    return min(verdicts, key=order.index) if verdicts else SIGNIFICANT
