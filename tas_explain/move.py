"""What a dry descheduler cycle says about one pod: evicted (and by which plugin, why), or kept,
with the reasons the cycle recorded.

The reasons are the cycle's own (`descheduler.cycle.CycleReport.blocked`): the rail that held
each attempt back (protection, the namespace selector, nodeFit, the circuit breaker, a limit,
the owner cooldown, the Eviction API) or the plugin's own reason (a move that does not pay, a
replacement left to settle). Nothing here judges the rails again. Said beside them: whether the
pod's policy has a deschedule rule its node violates (what would make TASViolations weigh it),
and how each load-aware profile classes its node.
"""

from __future__ import annotations

from collections.abc import Mapping

from descheduler.cycle import CycleReport
from descheduler.evictor import Blocked, Rail
from descheduler.framework import Result
from descheduler.state import evaluate_deschedule
from tas.cluster.model import Pod
from tas.policies.model import TASPolicy
from tas.types import MetricColumns, Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_explain.explanation import MoveVerdict

#: How each rail reads in an explanation.
_RAIL_WORDS: Mapping[Rail, str] = {
    Rail.EVICTED_ALREADY: "already evicted",
    Rail.PROTECTED: "protected",
    Rail.NAMESPACE: "out of the namespace selector",
    Rail.BREAKER: "held by the circuit breaker",
    Rail.LIMIT: "held by an eviction limit",
    Rail.COOLDOWN: "held by the owner cooldown",
    Rail.NODE_FIT: "held by nodeFit",
    Rail.API: "the Eviction API answered",
    Rail.PLUGIN: "kept",
}


def blocked_reason(blocked: Blocked) -> str:
    """One recorded attempt as a reason: the plugin, the rail, and why."""
    return f"{blocked.strategy}: {_RAIL_WORDS[blocked.rail]}: {blocked.why}"


def move_verdict(
    report: CycleReport,
    pod: Pod,
    *,
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
) -> MoveVerdict:
    """What a dry cycle's report says about `pod` (the cycle watched it: its filter rejections
    are recorded too, `descheduler.assemble.dry_run(watch=...)`)."""
    if report.skipped is not None:
        return MoveVerdict(False, f"the cycle would not run: {report.skipped}")
    mine = [d for d in report.decisions if (d.namespace, d.name) == (pod.namespace, pod.name)]
    for decision in mine:
        if decision.result == Result.DRY_RUN:
            return MoveVerdict(
                True,
                f"{decision.strategy} would evict it from {decision.node}",
                strategy=decision.strategy,
                reasons=(decision.reason,),
            )
    reasons: list[str] = []
    if report.circuit_breaker is not None:
        reasons.append(f"circuit breaker open, nothing is evicted: {report.circuit_breaker}")
    # Once each: a filter asked by several plugins records the same rejection each time.
    for blocked in report.blocked_of(pod.namespace, pod.name):
        reason = blocked_reason(blocked)
        if reason not in reasons:
            reasons.append(reason)
    node = pod.node_name
    if node is None:
        return MoveVerdict(False, "it is not running on a node", reasons=tuple(reasons))
    reasons.extend(_rule_reasons(pod, node, policies, metrics))
    for profile, classification in report.classifications.items():
        category = classification.categories.get(node)
        usage = classification.usages.get(node, {})
        shown = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(usage.items()))
        high = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(classification.thresholds.high.items()))
        state = category.value if category is not None else "not classified (no fresh usage)"
        reasons.append(
            f"profile {profile}: {node} is {state} for load-aware balancing"
            + (f" (usage {shown}; high threshold {high})" if shown else "")
        )
    others = [d for d in report.decisions if d.result == Result.DRY_RUN and d not in mine]
    if others:
        moved = ", ".join(f"{d.namespace}/{d.name} ({d.strategy})" for d in others[:5])
        reasons.append(f"this cycle would evict {len(others)} other pod(s): {moved}")
    return MoveVerdict(False, "no plugin would evict it in this cycle", reasons=tuple(reasons))


def _rule_reasons(
    pod: Pod,
    node: NodeName,
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
) -> list[str]:
    """Whether a TAS deschedule rule asks for the pod to leave its node."""
    label = pod.labels.get(POLICY_LABEL)
    if not label:
        return [f"no {POLICY_LABEL} label: no TAS deschedule rule applies to it"]
    key = PolicyKey(Namespace(pod.namespace), PolicyName(label))
    policy = policies.get(key)
    if policy is None:
        return [f"its policy {key} does not exist"]
    found = evaluate_deschedule({key: policy}, metrics, [node]).get(key)
    if found is None:
        return [f"{key} has no deschedule strategy"]
    why = found.violating.get(node)
    if why is None:
        return [f"{node} does not violate {key}'s deschedule rules"]
    return [f"{node} violates {why}"]
