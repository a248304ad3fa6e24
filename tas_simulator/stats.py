"""Figures over several seeds: the mean, a 95% interval, and who is best only when it is clear.

One seed is one draw of the workload's randomness; the same scenario's figures vary 2-6x from
seed to seed. So a figure is reported as the mean over seeds with a 95% confidence interval of
that mean (Student's t, because a handful of seeds is the normal case), and a contender is
"best" on a figure only when its interval lies wholly below every other contender's: intervals
that overlap are a tie, and a tie is said as one.

Two contenders on the same seeds met the same worlds, so they are compared paired
(`paired_interval`): the interval of the per-seed differences, "clearly" worse or better only
when it lies wholly on one side of 0 (`clearly_above_zero`). A family's figure is a statement
about its population of scenarios, given with a percentile-bootstrap interval over them
(`bootstrap`: a seeded generator, so the same values always give the same interval).

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

#: Two-sided 97.5% quantiles of Student's t by degrees of freedom (1..30). Past 30 the normal
#: quantile is within 4% and is used. Tabulated rather than computed: no SciPy for one table.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.960


def t_quantile(degrees: int) -> float:
    if degrees < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    return _T975[degrees - 1] if degrees <= len(_T975) else _Z975


@dataclass(frozen=True)
class Interval:
    """A mean and its 95% confidence interval. With one value the interval is that value:
    nothing is known about the spread, and `overlaps` treats it as a point."""

    mean: float
    low: float
    high: float
    n: int

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


def interval(values: Sequence[float]) -> Interval:
    """The mean of `values` and its 95% interval (Student's t with n-1 degrees of freedom)."""
    if not values:
        raise ValueError("an interval needs at least one value")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Interval(mean, mean, mean, 1)
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Interval(mean, mean - half, mean + half, len(values))


def clear_best(intervals: Mapping[str, Interval], *, lower_is_better: bool = True) -> str | None:
    """The one contender whose interval lies wholly on the better side of every other's, or
    None when the best intervals overlap (a tie). A lone contender is not "best" of anything."""
    if len(intervals) < 2:
        return None
    ordered = sorted(
        intervals.items(), key=lambda item: item[1].mean if lower_is_better else -item[1].mean
    )
    (leader, first), rest = ordered[0], ordered[1:]
    for _, other in rest:
        if lower_is_better and not first.high < other.low:
            return None
        if not lower_is_better and not first.low > other.high:
            return None
    return leader


def numeric_leaves(figures: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number in a nested figures mapping, by dotted path (`evictions.total`).
    Missing values (None) are left out: a median of no evacuations is not zero."""
    found: dict[str, float] = {}
    for key, value in figures.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found.update(numeric_leaves(value, f"{path}."))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int | float) and math.isfinite(value):
            found[path] = float(value)
    return found


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of `numeric_leaves`' paths: {"a.b": x} -> {"a": {"b": x}}."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, leaf = path.split(".")
        place = out
        for part in parents:
            place = place.setdefault(part, {})
        place[leaf] = value
    return out


def aggregate(runs: Sequence[Mapping[str, Any]]) -> dict[str, Interval]:
    """Per figure path, the interval over the runs that have a value for it."""
    values: dict[str, list[float]] = {}
    for figures in runs:
        for path, value in numeric_leaves(figures).items():
            values.setdefault(path, []).append(value)
    return {path: interval(found) for path, found in sorted(values.items())}


def paired_interval(one: Sequence[float], other: Sequence[float]) -> Interval:
    """The mean of the per-pair differences `one - other` and its 95% interval (Student's t
    over the differences). Pair i is one world both met (one seed): the difference removes
    that world's own variance, which unpaired intervals leave in. Raises ValueError when the
    two are not the same length or empty."""
    if len(one) != len(other):
        raise ValueError("paired values come in pairs: the two sequences differ in length")
    return interval([_difference(a, b) for a, b in zip(one, other, strict=True)])


#: Two figures this close, relative to their size, are one figure summed in another order
#: (a run's totals add many floats): their difference is rounding, not a difference.
_ROUNDING = 1e-9


def _difference(a: float, b: float) -> float:
    """`a - b`, or 0 where the two differ by float rounding only: five seeds that each differ
    by 1e-12 would otherwise make a "clear" difference of nothing, since every seed agrees."""
    if abs(a - b) <= _ROUNDING * max(abs(a), abs(b), 1.0):
        return 0.0
    return a - b


def clearly_above_zero(difference: Interval) -> bool:
    """A paired difference lies wholly above 0: at least two pairs, and the low end above 0.
    One pair says nothing about the spread, so nothing is clear on it."""
    return difference.n >= 2 and difference.low > 0


def clearly_below_zero(difference: Interval) -> bool:
    return difference.n >= 2 and difference.high < 0


#: Resamples of a bootstrap, and the seed of its generator: the same values give the same
#: interval on every machine and every run.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260401


class Statistic(enum.StrEnum):
    """What a bootstrap estimates over its values."""

    MEAN = "mean"
    MEDIAN = "median"
    #: exp(mean(log x)): the mean of ratios that treats 0.5x and 2x as equal and opposite.
    GEOMETRIC_MEAN = "geometric_mean"


def _reduce(values: npt.NDArray[Any], statistic: Statistic) -> npt.NDArray[Any]:
    """The statistic of each row."""
    import numpy as np

    if statistic is Statistic.MEAN:
        return np.asarray(values.mean(axis=-1), dtype=np.float64)
    if statistic is Statistic.MEDIAN:
        return np.asarray(np.median(values, axis=-1), dtype=np.float64)
    return np.asarray(np.exp(np.log(values).mean(axis=-1)), dtype=np.float64)


def bootstrap(
    values: Sequence[float],
    statistic: Statistic,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """The statistic of `values` (one per scenario) and its 95% percentile-bootstrap interval:
    `resamples` draws of as many values with replacement from a numpy Generator seeded with
    `seed`, the interval the 2.5th to 97.5th percentile of their statistic. Deterministic: the
    same values give the same interval. A geometric mean needs values above 0."""
    # numpy is the [sim] extra's: imported here, so `tas sweep-diff` (t intervals only) runs
    # without it.
    import numpy as np

    if not values:
        raise ValueError("a bootstrap needs at least one value")
    found = np.asarray(values, dtype=np.float64)
    if statistic is Statistic.GEOMETRIC_MEAN and bool((found <= 0).any()):
        raise ValueError("a geometric mean needs values above 0")
    estimate = float(_reduce(found, statistic))
    if len(found) == 1:
        return Interval(estimate, estimate, estimate, 1)
    rng = np.random.default_rng(seed)
    drawn = found[rng.integers(0, len(found), size=(resamples, len(found)))]
    spread = _reduce(drawn, statistic)
    low, high = np.percentile(spread, [2.5, 97.5])
    # Floating point can put a percentile of identical values a hair off the estimate.
    return Interval(estimate, min(float(low), estimate), max(float(high), estimate), len(found))


def bootstrap_lead(
    mine: Sequence[float],
    others: Sequence[Sequence[float]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """mean(mine) less the highest mean of `others` (each a value per scenario, the same
    scenarios in the same order), with its 95% percentile-bootstrap interval: the scenarios
    are resampled together, so a scenario every row finds hard counts once for all. Above 0:
    `mine` has the highest mean."""
    import numpy as np

    if not mine or not others or any(len(o) != len(mine) for o in others):
        raise ValueError("a lead needs values for the same scenarios in every row")
    table = np.asarray([mine, *others], dtype=np.float64)
    means = table.mean(axis=1)
    estimate = float(means[0] - means[1:].max())
    if table.shape[1] == 1:
        return Interval(estimate, estimate, estimate, 1)
    rng = np.random.default_rng(seed)
    drawn = table[:, rng.integers(0, table.shape[1], size=(resamples, table.shape[1]))]
    spread = drawn[0].mean(axis=1) - drawn[1:].mean(axis=2).max(axis=0)
    low, high = np.percentile(spread, [2.5, 97.5])
    return Interval(estimate, min(float(low), estimate), max(float(high), estimate), len(mine))
