"""The metric pipeline's lag and the pods' start-up, as observed, and a window that follows them.

A value's lag is its age when a component reads it: now less its own sample time (what a
Prometheus sample or a textfile's stamp says), so scrape interval, rule evaluation and the
component's own refresh all count. A pod's start-up is `Ready` less `PodScheduled` (their
`lastTransitionTime`s). Both are kept as the last `size` observations in fixed rings and read
as a high percentile (`quantile`, 0.9 by default): the delay most moves and placements see.

`follow_window` turns them into a window (herd control's: how long a placement is missing from
its node's samples; LoadAware's payback horizon: how long before a move's effect is measured),
clamped to the operator's limits: the shipped value is where it starts, and it follows the
observed delays only once `min_observations` of them have been seen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

DEFAULT_SIZE = 256
DEFAULT_QUANTILE = 0.9
DEFAULT_MIN_OBSERVATIONS = 8


class DelayRing:
    """The last `size` finite, non-negative delays (seconds), and a high percentile of them."""

    __slots__ = ("_count", "_cursor", "_values")

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, not {size!r}")
        self._values = [0.0] * size
        self._cursor = 0
        self._count = 0

    def add(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds >= 0):
            return  # a clock skewed backwards, or garbage: not a delay
        self._values[self._cursor] = seconds
        self._cursor = (self._cursor + 1) % len(self._values)
        self._count = min(self._count + 1, len(self._values))

    def extend(self, delays: Iterable[float]) -> None:
        for seconds in delays:
            self.add(seconds)

    def __len__(self) -> int:
        return self._count

    def quantile(self, q: float = DEFAULT_QUANTILE) -> float | None:
        """The nearest-rank `q` quantile of the delays kept; None when none is."""
        if not self._count:
            return None
        ordered = sorted(self._values[: self._count])
        rank = max(1, math.ceil(q * len(ordered)))
        return ordered[min(rank, len(ordered)) - 1]


def follow_window(
    *,
    shipped: float,
    lowest: float,
    highest: float,
    lag: DelayRing,
    startup: DelayRing,
    extra: float = 0.0,
    min_observations: int = DEFAULT_MIN_OBSERVATIONS,
    min_lag_observations: int | None = None,
    q: float = DEFAULT_QUANTILE,
) -> float:
    """The window: `shipped` until both delays have `min_observations` (the lag
    `min_lag_observations` where given: an observation that is already a percentile over
    every node's value needs fewer), then their `q` quantiles' sum plus `extra` (the metrics'
    own averaging window), within [lowest, highest]. `shipped` itself is clamped too: the
    limits are the operator's word."""
    low, high = min(lowest, highest), max(lowest, highest)
    wanted = shipped
    enough_lag = min_observations if min_lag_observations is None else min_lag_observations
    if len(lag) >= enough_lag and len(startup) >= min_observations:
        lag_q, startup_q = lag.quantile(q), startup.quantile(q)
        if lag_q is not None and startup_q is not None:
            wanted = lag_q + startup_q + extra
    return min(high, max(low, wanted))
