"""Each node's recent peak of a metric: what a pod moved there will meet, not the trough the
cycle happened to read.

A node's CPU metrics are averages over a window (a rate over a minute), read once a cycle. On a
node whose load swings (bursty pods in phase, a ramp), the reading of one cycle may fall in a
trough, and a move judged on it sends a pod where the next crest has no room for it. A move is
judged over its payback horizon, so the destination is judged at the highest value the cycles
read over that horizon (`RecentPeaks.peak`), this cycle's included.

Memory stays small at thousands of nodes: per node and metric, only the readings that may
still be the peak of some window are kept (a monotonic queue: values fall as times rise), and
none older than `keep_seconds`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from datetime import datetime

from tas.types import MetricColumns, MetricName, NodeName


class RecentPeaks:
    """The highest reading of each node's metrics over a recent window."""

    def __init__(self, names: Collection[MetricName], *, keep_seconds: float):
        """Follow `names`, keeping readings `keep_seconds`: the longest window asked about."""
        self._names = frozenset(names)
        self._keep = keep_seconds
        self._readings: dict[MetricName, dict[NodeName, deque[tuple[datetime, float]]]] = {
            name: {} for name in self._names
        }

    @property
    def keep_seconds(self) -> float:
        """How long a reading is kept: the longest window a peak may be asked over."""
        return self._keep

    def record(self, now: datetime, columns: MetricColumns) -> None:
        """This cycle's readings of the metrics followed."""
        for name in self._names:
            per_node = self._readings[name]
            for node, value in columns.get(name, {}).items():
                readings = per_node.setdefault(node, deque())
                while readings and readings[-1][1] <= value:
                    readings.pop()  # never the peak of a window again: this one is higher
                readings.append((now, value))
            for node in list(per_node):
                readings = per_node[node]
                while readings and (now - readings[0][0]).total_seconds() > self._keep:
                    readings.popleft()
                if not readings:
                    del per_node[node]  # gone from the cluster, or no reading within the window

    def peak(self, name: MetricName, *, within: float, now: datetime) -> dict[NodeName, float]:
        """The highest reading of `name` per node over the last `within` seconds (at most
        `keep_seconds`); nodes without a reading in that window are absent."""
        peaks: dict[NodeName, float] = {}
        for node, readings in self._readings.get(name, {}).items():
            for at, value in readings:  # falling values: the first in the window is its peak
                if (now - at).total_seconds() <= within:
                    peaks[node] = value
                    break
        return peaks
