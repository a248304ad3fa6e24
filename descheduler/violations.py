"""Which nodes violate which TASPolicy's `deschedule` rules: what the TASViolations plugin acts
on and what the circuit breaker watches.

Violations come from fresh metrics evaluated with `tas.rules` (a missing or stale value never
violates), from the labels the policy controller writes (the node label `<policy>=violating`,
or the pod label `violate=<policy>` on a pod of the policy's namespace running on the node), or
from both agreeing.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from descheduler.state import CycleState
from tas.policies.model import StrategyName, TASPolicy
from tas.rules import deschedule_violations, violation_reason
from tas.types import NodeName
from tas.vocabulary import POD_VIOLATION_LABEL, VIOLATING


class ViolationSource(enum.StrEnum):
    """Where TASViolations learns that a node violates a policy's deschedule rules."""

    METRICS = "Metrics"  # the rules, evaluated here on fresh metric values
    LABELS = "Labels"  # the controller's labels: node `<policy>=violating`, pod `violate=<policy>`
    BOTH = "Both"  # both must agree: the label, confirmed by fresh metrics


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
    for pod in state.running_in_scope():
        if (
            pod.node_name is not None
            and pod.node_name not in labelled
            and pod.namespace == policy.namespace
            and pod.labels.get(POD_VIOLATION_LABEL) == policy.name
        ):
            labelled[pod.node_name] = (
                f"{policy.name}: pod {pod.name} labelled {POD_VIOLATION_LABEL}={policy.name}"
            )
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
