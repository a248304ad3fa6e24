"""Figures over several seeds: the mean, a 95% interval, and who is best only when it is clear.

One seed is one draw of the workload's randomness; the same scenario's figures vary 2-6x from
seed to seed. So a figure is reported as the mean over seeds with a 95% confidence interval of
that mean (Student's t, because a handful of seeds is the normal case), and a contender is
"best" on a figure only when its interval lies wholly below every other contender's: intervals
that overlap are a tie, and a tie is said as one.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
