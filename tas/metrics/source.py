"""What a metrics source hands the refreshing view: timed values and per-target failures; and
what a per-pod usage feed hands its readers (`PodUsageFeed`).

A source answers for the metric names the view wants. An answered metric replaces its whole
column (so a node that vanished from the answer vanishes from the view); a metric that is not
answered keeps its previous values until they go stale. Failures are named by target (a metric
name, a node, a file) so the view can log each one once per state change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from tas.types import MetricName, NodeName, PodKey


class Sample(NamedTuple):
    """A value and the Unix time (seconds) it was measured: the sample time, not the fetch time."""

    value: float
    timestamp: float


#: One metric's answer: node -> sample.
SampleColumn = Mapping[NodeName, Sample]


@dataclass(frozen=True)
class Fetched:
    """The outcome of one fetch of every wanted metric."""

    columns: Mapping[MetricName, SampleColumn] = field(default_factory=dict)
    #: Failing target -> error message. A metric absent from `columns` keeps its old values.
    errors: Mapping[str, str] = field(default_factory=dict)
    #: Targets that were fetched successfully (a failing target that appears here recovered).
    ok: frozenset[str] = frozenset()


class MetricSource(Protocol):
    """One place metric values come from. `fetch` does blocking I/O; only the view calls it."""

    #: The source kind, as in the `--metrics` flag: a label of the exported error counter.
    kind: str

    def fetch(self, names: frozenset[MetricName]) -> Fetched: ...

    def close(self) -> None: ...


class PodUsageFeed(Protocol):
    """Each pod's usage as container metrics report it: `cpu` in cores, `memory` in bytes
    (`tas.adapters.metrics.pod_usage.PrometheusPodUsage`, `tas.metrics.resource_metrics.
    ResourceMetricsPodUsage`, the simulator's model, the live world's); `fetch` raises
    `MetricFetchError` when it cannot be read."""

    def fetch(self) -> Mapping[PodKey, Mapping[str, float]]: ...


@runtime_checkable
class ExplainedPodUsage(Protocol):
    """A `PodUsageFeed` that can say why a pod has no value (which query, and what it
    answered), for the debug line of whoever found it missing."""

    def why_missing(self, pod: PodKey) -> str: ...
