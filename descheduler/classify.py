"""Load-aware node classification, as data: `classify(usages, spec) -> Classification`.

Pure and I/O-free, like the upstream descheduler's `classifier.Classify`, so the formulas are
tested exactly:

- static thresholds: a node is underutilized when every signal <= its threshold, overutilized
  when any signal > its target threshold (underutilized wins when both hold);
- deviation thresholds: with `avg` the mean usage over the classified nodes,
  low = clamp(avg - thresholds, 0, 100) and high = clamp(avg + targetThresholds, 0, 100);
- nothing is to be done unless there are underutilized and overutilized nodes, not every node
  is underutilized, and more than `numberOfNodes` nodes are underutilized;
- capacity to move = the sum over underutilized nodes of (high - usage), per signal;
- hysteresis (`hold_overutilized`, across cycles): a node seen overutilized keeps that class
  for `hold_seconds` after it was last seen so, unless its usage falls to the low threshold
  (the second threshold) or it loses its fresh usage. The soft taint follows the class, so it
  does not flap when a node hovers around the high threshold (or the average moves it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.node_classes import Category, Classification, Thresholds, Usage
from tas.types import NodeName


@dataclass(frozen=True, slots=True)
class ThresholdSpec:
    """Upstream LowNodeUtilizationArgs' thresholds, which the arguments of the plugins modelled
    on it extend (LowNodeUtilization's, Volcano's LoadAware's; ours keys them by signal and
    gives them here: `load_aware.classification.spec_of`)."""

    thresholds: Mapping[str, float] = field(default_factory=dict)
    target_thresholds: Mapping[str, float] = field(default_factory=dict)
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0


def _clamp(value: float) -> float:
    return min(100.0, max(0.0, value))


def thresholds_for(usages: Mapping[NodeName, Usage], spec: ThresholdSpec) -> Thresholds:
    if not spec.use_deviation_thresholds:
        return Thresholds(low=dict(spec.thresholds), high=dict(spec.target_thresholds))
    count = len(usages)
    average = {
        signal: (sum(u[signal] for u in usages.values()) / count if count else 0.0)
        for signal in spec.thresholds
    }
    return Thresholds(
        low={s: _clamp(average[s] - spec.thresholds[s]) for s in spec.thresholds},
        high={s: _clamp(average[s] + spec.target_thresholds[s]) for s in spec.target_thresholds},
        average=average,
    )


def total(usage: Usage) -> float:
    return sum(usage.values())


def classify(usages: Mapping[NodeName, Usage], spec: ThresholdSpec) -> Classification:
    """Classify every node that has a usage value for every signal of the spec."""
    signals = list(spec.thresholds)
    known = {n: u for n, u in usages.items() if all(s in u for s in signals)}
    unknown = tuple(sorted(n for n in usages if n not in known))
    bounds = thresholds_for(known, spec)
    categories: dict[NodeName, Category] = {}
    for node, usage in known.items():
        if all(usage[s] <= bounds.low[s] for s in signals):
            categories[node] = Category.UNDERUTILIZED
        elif any(usage[s] > bounds.high[s] for s in signals):
            categories[node] = Category.OVERUTILIZED
        else:
            categories[node] = Category.APPROPRIATE
    under = tuple(
        sorted(
            (n for n, c in categories.items() if c is Category.UNDERUTILIZED),
            key=lambda n: (total(known[n]), n),
        )
    )
    over = tuple(
        sorted(
            (n for n, c in categories.items() if c is Category.OVERUTILIZED),
            key=lambda n: (-total(known[n]), n),
        )
    )
    capacity = {s: sum(max(0.0, bounds.high[s] - known[n][s]) for n in under) for s in signals}
    return Classification(
        thresholds=bounds,
        usages=known,
        categories=categories,
        underutilized=under,
        overutilized=over,
        capacity_to_move=capacity,
        nothing_to_do=_nothing_to_do(len(known), len(under), len(over), spec.number_of_nodes),
        unknown=unknown,
    )


def _nothing_to_do(nodes: int, under: int, over: int, number_of_nodes: int) -> str | None:
    if under == 0:
        return "No node is underutilized, nothing to do here"
    if under <= number_of_nodes:
        return (
            "Number of nodes underutilized is less or equal than NumberOfNodes, nothing to do here"
        )
    if under == nodes:
        return "All nodes are underutilized, nothing to do here"
    if over == 0:
        return "All nodes are under target utilization, nothing to do here"
    return None


def still_over(usage: Usage, high: Mapping[str, float], signals: Sequence[str]) -> bool:
    return any(usage[s] > high[s] for s in signals)


#: When each node was last seen overutilized (the memory `hold_overutilized` keeps).
LastOver = Mapping[NodeName, datetime]


def hold_overutilized(
    c: Classification, last_over: LastOver, now: datetime
) -> tuple[Classification, dict[NodeName, datetime]]:
    """The classification with hysteresis on the overutilized class, and the new memory.

    A node over its high threshold now is overutilized (and remembered at `now`). A node that
    was overutilized less than `c.hold_seconds` ago stays overutilized, unless every signal is
    at or below its low threshold now (it crossed the second threshold) or it has no fresh
    usage (a class needs fresh evidence).
    """
    memory = dict.fromkeys(c.overutilized, now)
    if c.hold_seconds <= 0:
        return c, memory
    held: list[NodeName] = []
    for node, seen in last_over.items():
        usage = c.usages.get(node)
        if node in memory or usage is None:
            continue
        if (now - seen).total_seconds() >= c.hold_seconds:
            continue
        if all(usage[s] <= c.thresholds.low[s] for s in c.thresholds.low):
            continue
        held.append(node)
        memory[node] = seen
    if not held:
        return c, memory
    categories = dict(c.categories)
    categories.update(dict.fromkeys(held, Category.OVERUTILIZED))
    over = tuple(sorted((*c.overutilized, *held), key=lambda n: (-total(c.usages[n]), n)))
    under = tuple(n for n in c.underutilized if n not in held)
    settled = dataclasses.replace(
        c, categories=categories, overutilized=over, underutilized=under, held=tuple(sorted(held))
    )
    return settled, memory
