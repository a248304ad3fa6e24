"""LoadAware: LowNodeUtilization on real telemetry (CPU utilization, PSI), not on requests.

Nodes are classified from fresh metrics (`descheduler.classify`); pods are evicted from
overutilized nodes, most used first, if they fit an underutilized node, until the node falls to
the high threshold or the capacity of the underutilized nodes is spent. Where per-pod usage is
known (container PSI or CPU), the pod that relieves the node most goes first; where it is not,
at most one pod per node per cycle goes, since nobody can say what moving it will change.
The log lines use the upstream descheduler's words, so its users can read them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

from descheduler.classify import Category, Classification, ThresholdSpec, classify, still_over
from descheduler.config import LoadAwareArgs
from descheduler.evictor import Evictor, sort_candidates
from descheduler.signals import node_usages
from descheduler.state import CycleState, PodKey, pod_key
from tas.cluster.model import Pod

log = logging.getLogger(__name__)

STRATEGY = "LoadAware"

#: Per-pod usage, as a share of its node (signal -> 0..100), where it is measured.
PodUsage = Mapping[PodKey, Mapping[str, float]]
PodUsageSource = Callable[[CycleState], PodUsage]


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def _usage_fields(usage: Mapping[str, float]) -> str:
    text = json.dumps({k: _fmt(v) for k, v in usage.items()}, separators=(",", ":"))
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


def classify_nodes(args: LoadAwareArgs, state: CycleState) -> Classification:
    ready = [node.name for node in state.ready_nodes]
    usages = node_usages(state.metrics, args.signals, ready)
    result = classify(usages, spec_of(args))
    log_classification(result)
    return result


def log_classification(c: Classification) -> None:
    for node in sorted(c.categories):
        category = c.categories[node]
        usage = _usage_fields(c.usages[node])
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


def run(
    args: LoadAwareArgs, evictor: Evictor, *, pod_usage: PodUsage | None = None
) -> Classification:
    state = evictor.state
    c = classify_nodes(args, state)
    if c.nothing_to_do is not None:
        log.info('"%s"', c.nothing_to_do)
        return c
    signals = list(c.thresholds.high)
    capacity = dict(c.capacity_to_move)
    log.info(
        '"Total capacity to be moved" %s',
        " ".join(f"{s}={_fmt(v)}" for s, v in capacity.items()),
    )
    measured = pod_usage or {}
    for node in c.overutilized:
        if evictor.stopped:
            log.warning("LoadAware stops: %s", evictor.stopped)
            return c
        usage = dict(c.usages[node])
        pods = state.pods_on(node)
        removable = [p for p in pods if evictor.evictable(p, namespaces=args.namespaces)]
        log.info(
            '"Pods on node" node="%s" allPods=%d nonRemovablePods=%d removablePods=%d',
            node,
            len(pods),
            len(pods) - len(removable),
            len(removable),
        )
        if not removable:
            continue
        log.info(
            "\"Evicting pods based on priority, if they have same priority, they'll be evicted "
            'based on QoS tiers"'
        )
        per_pod = all(pod_key(p) in measured for p in removable)
        candidates = _order(removable, measured, signals) if per_pod else sort_candidates(removable)
        evicted_here = 0
        for pod in candidates:
            if not still_over(usage, c.thresholds.high, signals):
                break
            if any(capacity[s] <= 0 for s in signals):
                log.info('"No more capacity to move pods to underutilized nodes"')
                return c
            if not per_pod and evicted_here >= 1:
                break
            relief = (
                measured[pod_key(pod)]
                if per_pod
                else {s: usage[s] / max(1, len(pods)) for s in signals}
            )
            reason = _reason(node, usage, c, signals)
            if evictor.evict(pod, strategy=STRATEGY, reason=reason, among=c.underutilized):
                evicted_here += 1
                for s in signals:
                    moved = relief.get(s, 0.0)
                    usage[s] -= moved
                    capacity[s] -= moved
            if evictor.stopped:
                return c
    return c


def _order(pods: list[Pod], measured: PodUsage, signals: list[str]) -> list[Pod]:
    """Lower priority first, and among equals the pod that relieves the node most."""
    ranked = sort_candidates(pods)
    position = {pod_key(p): i for i, p in enumerate(ranked)}
    return sorted(
        ranked,
        key=lambda p: (
            p.priority,
            -sum(measured[pod_key(p)].get(s, 0.0) for s in signals),
            position[pod_key(p)],
        ),
    )


def _reason(node: str, usage: Mapping[str, float], c: Classification, signals: list[str]) -> str:
    parts = [
        f"{s} {_fmt(usage[s])} > high {_fmt(c.thresholds.high[s])}"
        for s in signals
        if usage[s] > c.thresholds.high[s]
    ]
    return f"node {node} is overutilized: " + ", ".join(parts)
