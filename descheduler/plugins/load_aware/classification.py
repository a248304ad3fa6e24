"""How LoadAware classifies the nodes, and what it remembers of hot nodes across cycles.

The classification is `descheduler.classify`'s, on the cycle's metrics with idle nodes'
estimates (`load_aware.idle`), logged in the upstream descheduler's words so its users can read
it. Across cycles LoadAware remembers, per node, when it was last seen overutilized (the
hysteresis that keeps a hot node's class and soft taint, `descheduler.classify.hold_overutilized`)
and since when it has been overutilized at every cycle (what `confirmCycles` confirms a hot
node with: a burst that passes within a cycle is not worth a restart).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.classify import ThresholdSpec, hold_overutilized
from descheduler.node_classes import Category, Classification
from descheduler.plugins.load_aware.args import LoadAwareArgs
from descheduler.plugins.load_aware.idle import classify_with_idle
from descheduler.state import CycleState
from tas.types import MetricColumns, NodeName

log = logging.getLogger(__name__)


def fmt(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def _usage_fields(usage: Mapping[str, float]) -> str:
    text = json.dumps({k: fmt(v) for k, v in usage.items()}, separators=(",", ":"))
    percent = json.dumps(
        {k: int(v) if float(v).is_integer() else round(v, 2) for k, v in usage.items()},
        separators=(",", ":"),
    )
    return f"usage={text} usagePercentage={percent}"


def spec_of(args: LoadAwareArgs) -> ThresholdSpec:
    return ThresholdSpec(
        thresholds={s.value: v for s, v in args.thresholds.items()},
        target_thresholds={s.value: v for s, v in args.target_thresholds.items()},
        use_deviation_thresholds=args.use_deviation_thresholds,
        number_of_nodes=args.number_of_nodes,
    )


def classify_nodes(
    args: LoadAwareArgs,
    state: CycleState,
    metrics: MetricColumns,
    estimated: Collection[NodeName] = (),
) -> Classification:
    """The Ready nodes classified on `metrics` (the cycle's, with idle nodes' estimates)."""
    ready = [node.name for node in state.ready_nodes]
    result = classify_with_idle(metrics, args.signals, ready, spec_of(args), estimated)
    log_classification(result, estimated)
    return result


def log_classification(c: Classification, estimated: Collection[NodeName] = ()) -> None:
    for node in sorted(c.categories):
        category = c.categories[node]
        usage = _usage_fields(c.usages[node])
        if node in estimated:
            usage += " estimated=true"  # idle but for DaemonSet and static pods, no sample yet
        if category is Category.APPROPRIATE:
            log.info('"Node is appropriately utilized" node="%s" %s', node, usage)
        else:
            log.info('"Node has been classified" category="%s" node="%s" %s', category, node, usage)
    for node in c.unknown:
        log.info('"Node has no fresh usage, not classified" node="%s"', node)
    low = " ".join(f'{s}="{v:.2f}%"' for s, v in c.thresholds.low.items())
    high = " ".join(f'{s}="{v:.2f}%"' for s, v in c.thresholds.high.items())
    log.info('"Criteria for a node under utilization" %s', low)
    log.info('"Number of underutilized nodes" totalNumber=%d', len(c.underutilized))
    log.info('"Criteria for a node above target utilization" %s', high)
    log.info('"Number of overutilized nodes" totalNumber=%d', len(c.overutilized))


def overutilized_reason(
    node: str, usage: Mapping[str, float], c: Classification, signals: list[str]
) -> str:
    parts = [
        f"{s} {fmt(usage[s])} > high {fmt(c.thresholds.high[s])}"
        for s in signals
        if usage[s] > c.thresholds.high[s]
    ]
    return f"node {node} is overutilized: " + ", ".join(parts)


@dataclass
class HotNodes:
    """What LoadAware remembers of hot nodes from one cycle to the next."""

    #: When each node was last seen overutilized: the hysteresis's memory.
    last_over: dict[NodeName, datetime] = field(default_factory=dict)
    #: Since when each node has been overutilized (or held so) at every cycle, up to the
    #: previous one.
    over_since: dict[NodeName, datetime] = field(default_factory=dict)

    def confirmed(self, args: LoadAwareArgs, c: Classification) -> set[NodeName]:
        """The overutilized nodes that were so (or held so by the hysteresis) at the cycle
        before too (`confirmCycles` 2): a burst that passes within a cycle is not worth a
        restart."""
        if args.confirm_cycles <= 1:
            return set(c.overutilized)
        return {n for n in c.overutilized if n in self.over_since}

    def hold(self, c: Classification, now: datetime) -> Classification:
        """The classification with the hysteresis applied (`c.hold_seconds`); remembered.

        Held nodes continue a streak: a signal that flips between cycles (the combined CPU
        signal switching at the fleet's 80%) does not restart the confirmation."""
        held, self.last_over = hold_overutilized(c, self.last_over, now)
        since = self.over_since
        self.over_since = {n: since.get(n, now) for n in held.overutilized}
        return held
