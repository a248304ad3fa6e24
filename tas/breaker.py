"""When a metric says too much at once: the circuit breaker every component applies.

A real fault takes out a node or a few. A broken exporter, a bad recording rule or a unit change
makes most nodes look violating at the same moment, and acting on that would strand or evict
everything. So when more than `max_share` of the nodes that have values for a strategy's
metrics violate it, and at least `MIN_NODES` nodes have values, the components treat the metric
as broken and say so loudly:

- the extender keeps every candidate when dontschedule would remove them all (fail open:
  pods keep being placed, as they would without telemetry);
- the policy controller writes no new `<policy>=violating` label (labels already there stay,
  and nodes that recover lose theirs), so nothing acting on labels evicts en masse;
- the descheduler evicts nothing while a deschedule strategy's verdict is open (judged once per
  cycle over its in-scope Ready nodes, from the same evaluation TASViolations acts on).

Small clusters (fewer than `MIN_NODES` nodes with values) never trip it: two nodes out of two
can really be unhealthy, and there a share says little.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tas.policies.model import Strategy
from tas.rules import violations
from tas.types import MetricColumns, NodeName

#: The default largest share of nodes that may violate at once before the breaker opens; the
#: descheduler's `circuitBreaker.maxViolatingNodeShare` defaults to the same.
DEFAULT_MAX_SHARE = 0.5
MIN_NODES = 3


@dataclass(frozen=True, slots=True)
class BreakerVerdict:
    violating: frozenset[NodeName]
    with_values: int
    max_share: float

    @property
    def open(self) -> bool:
        return (
            self.with_values >= MIN_NODES
            and len(self.violating) > self.max_share * self.with_values
        )

    def describe(self) -> str:
        share = len(self.violating) / self.with_values if self.with_values else 0.0
        return (
            f"{len(self.violating)} of {self.with_values} nodes with values ({share:.0%}) "
            f"violate at once, more than the {self.max_share:.0%} allowed: treated as a broken "
            "metric, not broken nodes"
        )


def nodes_with_values(
    strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> frozenset[NodeName]:
    """The nodes (of `nodes`, or all) with a value for some metric of the strategy: whom the
    breaker's share is over."""
    found: set[NodeName] = set()
    for rule in strategy.rules:
        found.update(metrics.get(rule.metricname, {}))
    return frozenset(found if nodes is None else found.intersection(nodes))


def judge_strategy(
    strategy: Strategy,
    metrics: MetricColumns,
    *,
    nodes: Collection[NodeName] | None = None,
    max_share: float = DEFAULT_MAX_SHARE,
) -> BreakerVerdict:
    """The breaker's verdict on one strategy over every node (of `nodes`, or all) with values
    for its metrics."""
    with_values = nodes_with_values(strategy, metrics, nodes)
    found = violations(strategy, metrics, with_values)
    return BreakerVerdict(frozenset(found), len(with_values), max_share)
