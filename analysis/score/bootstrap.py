"""How sure is a score? A bootstrap through the whole min-max normalization and scoring.

A configuration's efficiency score is not a function of its own repeats alone: ``normalized = (v - min) /
(max - min)`` takes its min and max from *all* configurations' means, so a score moves when any
configuration's mean moves. Its uncertainty therefore comes from redrawing every configuration's means
together and computing every score again, exactly as :mod:`.efficiency` computes the plotted ones:

1. per resample, each configuration's (CPU/MiB, ctx/MiB) mean is drawn from the sampling distribution
   of its mean: ``mean + t(n - 1) x SE``, jointly for the two metrics (a multivariate Student t with the
   repeats' own covariance / n, so a configuration whose CPU and switches rise together keeps doing so);
2. the draws are min-max normalized within the group and scored (``sqrt(norm_cpu^2 + norm_ctx^2)``, or
   ``norm_cpu`` alone where the group is scored on CPU/MiB alone), with max == min giving 0 as there;
3. the score's interval is the 2.5th to 97.5th percentile of its ``RESAMPLES`` resampled scores, widened
   where needed to contain the plotted score (a skewed distribution can leave it just outside), and never
   below 0 (a score is a length);
4. "A ranks above B" is claimed where A's resampled score is lower than B's in at least 95 % of the
   resamples, "below" where in at most 5 %, "tied within noise" between (:class:`.stats.Verdict`).

Why a parametric draw and not resampling the repeats themselves: with the 2-3 repeats a run usually has,
resampling them with replacement can give only 3 or 10 distinct means, none outside the repeats' range,
so two configurations whose repeats overlap would still be "lower in 100 % of resamples". The t draw has
the spread the repeats' standard deviation implies for their mean (the same t as the 95 % CI of the
mean on the Scores sheet). A configuration with a single repeat has no spread: it is drawn at its value,
and any rank claim involving it is indicative (untested).

Fixed seed, one random stream per configuration (keyed by its group and name), so a workbook written
twice shows the same intervals and adding a configuration does not change the other configurations' draws.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .stats import Verdict

RESAMPLES = 2000
SEED = 20_2604  # any fixed number: the intervals must not change between two writes of the same data
LEVEL = 0.95


@dataclass
class GroupDraws:
    """The resampled scores of one normalization group: ``scores[r, j]`` is configuration ``configs[j]``'s
    score in resample ``r``; ``repeats[j]`` its number of repeats."""

    configs: list[str]
    scores: np.ndarray
    repeats: list[int]

    def share_lower(self, a: str, b: str) -> float:
        """The share of resamples in which ``a``'s score is lower than ``b``'s."""
        i, j = self.configs.index(a), self.configs.index(b)
        return float(np.mean(self.scores[:, i] < self.scores[:, j]))

    def verdict(self, a: str, b: str) -> Verdict:
        """A against B: lower (ranks above), higher (ranks below), tied within noise, or untested."""
        tested = min(self.repeats[self.configs.index(a)], self.repeats[self.configs.index(b)]) >= 2
        return Verdict.of_share(self.share_lower(a, b), len(self.scores), tested=tested, level=LEVEL)


@dataclass
class ScoreDraws:
    """Every group's draws, and per (group, config) the interval ``(low, high)`` around its plotted score."""

    groups: dict[str, GroupDraws] = field(default_factory=dict)
    intervals: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    def verdict(self, group: str, a: str, b: str) -> Verdict:
        return self.groups[group].verdict(a, b)


def _stream(group: str, config: str) -> np.random.Generator:
    key = zlib.crc32(f"{group}\0{config}".encode())
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(SEED, spawn_key=(key,))))


def draw_means(values: np.ndarray, rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """``resamples`` draws of the mean vector of ``values`` (n repeats x m metrics): mean + t(n - 1) x SE,
    multivariate with the repeats' covariance / n; the mean itself for a single repeat (no spread)."""
    n, m = values.shape
    mean = values.mean(axis=0)
    if n < 2:
        return np.broadcast_to(mean, (resamples, m)).copy()
    cov = np.atleast_2d(np.cov(values, rowvar=False, ddof=1)) / n
    w, v = np.linalg.eigh(cov)                      # cov may be singular (2 repeats, or a constant metric)
    root = v * np.sqrt(np.clip(w, 0.0, None))
    z = rng.standard_normal((resamples, m))
    df = n - 1
    scale = np.sqrt(rng.chisquare(df, resamples) / df)
    return mean + (z @ root.T) / scale[:, None]


def _min_max(draws: np.ndarray) -> np.ndarray:
    """Per resample (row), ``(v - min) / (max - min)`` over the configurations; 0 where max == min."""
    lo = draws.min(axis=1, keepdims=True)
    span = draws.max(axis=1, keepdims=True) - lo
    safe = np.where(span > 0, span, 1.0)
    return np.where(span > 0, (draws - lo) / safe, 0.0)


def score_draws(cells: pd.DataFrame, repeats: pd.DataFrame, *, both: dict[str, bool],
                resamples: int = RESAMPLES) -> ScoreDraws:
    """Resampled scores of every configuration of ``cells`` (one row per configuration: norm_group, config,
    score) from its repeats (``repeats``: norm_group, config, cpu_per_mib, ctx_per_mib); ``both[group]``:
    whether the group is scored on both metrics (else on CPU/MiB alone)."""
    out = ScoreDraws()
    for group, g in cells.groupby("norm_group", sort=False):
        group = str(group)
        configs = [str(c) for c in g["config"]]
        use_ctx = both[group]
        cols = ["cpu_per_mib", "ctx_per_mib"] if use_ctx else ["cpu_per_mib"]
        reps = repeats[repeats["norm_group"] == group]
        means = np.empty((resamples, len(configs), len(cols)))
        counts = []
        for j, config in enumerate(configs):
            vals = reps.loc[reps["config"] == config, cols].to_numpy(dtype=float)
            counts.append(len(vals))
            means[:, j, :] = draw_means(vals, _stream(group, config), resamples)
        squares = _min_max(means[:, :, 0]) ** 2
        if use_ctx:
            squares = squares + _min_max(means[:, :, 1]) ** 2
        scores = np.sqrt(squares)
        out.groups[group] = GroupDraws(configs, scores, counts)
        for j, (config, plotted) in enumerate(zip(configs, g["score"].astype(float))):
            lo, hi = np.percentile(scores[:, j], [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
            out.intervals[(group, config)] = (max(0.0, min(float(lo), plotted)), max(float(hi), plotted))
    return out
