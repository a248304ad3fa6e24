"""TASViolations: evict pods whose node violates their TASPolicy's `deschedule` rules.

This is TAS's own loop, closed here: the policy controller labels violating nodes; this
strategy evicts the pods that link the policy (label `telemetry-policy=<name>`, the policy in
the pod's namespace) from those nodes. Violations come from fresh metrics evaluated with
`tas.rules` (a missing or stale value never violates), from the node label
`<policy>=violating`, or from both agreeing.
"""

from __future__ import annotations

from collections.abc import Iterable

from descheduler.config import TASViolationsArgs, ViolationSource
from descheduler.evictor import Evictor, sort_candidates
from descheduler.state import CycleState
from tas.policy import StrategyName, TASPolicy
from tas.rules import VIOLATING, deschedule_violations, violation_reason
from tas.types import NodeName, PolicyKey

STRATEGY = "TASViolations"


def violating_nodes(
    policy: TASPolicy, state: CycleState, source: ViolationSource
) -> dict[NodeName, str]:
    """In-scope nodes violating the policy's deschedule strategy, with the reason."""
    if policy.strategy(StrategyName.DESCHEDULE) is None:
        return {}
    hits = deschedule_violations(policy, state.metrics, list(state.nodes))
    by_metrics = {node: violation_reason(policy.name, found) for node, found in hits.items()}
    if source is ViolationSource.METRICS:
        return by_metrics
    labelled = {
        name: f"{policy.name}: node label {policy.name}={VIOLATING}"
        for name, node in state.nodes.items()
        if node.labels.get(policy.name) == VIOLATING
    }
    if source is ViolationSource.LABELS:
        return labelled
    return {node: reason for node, reason in by_metrics.items() if node in labelled}


def all_violations(
    policies: Iterable[TASPolicy], state: CycleState, source: ViolationSource
) -> dict[NodeName, str]:
    """Every in-scope node violating some policy (what the circuit breaker watches)."""
    found: dict[NodeName, list[str]] = {}
    for policy in policies:
        for node, reason in violating_nodes(policy, state, source).items():
            found.setdefault(node, []).append(f"{policy.namespace}/{reason}")
    return {node: "; ".join(reasons) for node, reasons in found.items()}


def run(args: TASViolationsArgs, evictor: Evictor) -> None:
    state = evictor.state
    cache: dict[PolicyKey, dict[NodeName, str]] = {}
    for pod in sort_candidates(state.running_in_scope()):
        policy = state.policy_of(pod)
        if policy is None or pod.node_name is None:
            continue
        if not args.namespaces.allows(pod.namespace):
            continue
        if policy.key not in cache:
            cache[policy.key] = violating_nodes(policy, state, args.source)
        reason = cache[policy.key].get(pod.node_name)
        if reason is None:
            continue
        evictor.evict(
            pod, strategy=STRATEGY, reason=f"node {pod.node_name} violates policy {reason}"
        )
        if evictor.stopped:
            return
