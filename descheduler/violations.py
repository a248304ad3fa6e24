"""Which nodes violate which TASPolicy's `deschedule` rules: what the TASViolations plugin acts
on and what the circuit breaker (`tas.breaker`) judges.

Violations come from fresh metrics evaluated with `tas.rules` once per cycle
(`CycleState.deschedule_evaluations`; a missing or stale value never violates), from the labels
the policy controller writes, or from both agreeing.

Labels are trusted only as the controller could have written them: the node label
`<policy>=violating` marks a node. A pod's `violate=<policy>` is written by the controller only
on pods of a node it labels violating at the same time, so alone it never marks a node: a pod
labelled by anyone else (its own template, a user with `patch pods`) cannot get its node's
other pods evicted. The shipped admission policy `tas-owned-labels` (deploy/cluster) refuses
both labels to everyone but the controller's ServiceAccount; this check holds where it is not
installed.

The breaker is `tas.breaker`'s, the extender's and the controller's: per policy, more than the
share of the Ready in-scope nodes with values violating at once, and at least `MIN_NODES` of
them, is a broken metric. With violations read from labels every Ready node counts (a node
without the label has a value too: not violating).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from descheduler.state import CycleState
from tas.breaker import BreakerVerdict
from tas.policies.model import TASPolicy
from tas.types import NodeName, PolicyKey
from tas.vocabulary import VIOLATING


class ViolationSource(enum.StrEnum):
    """Where TASViolations learns that a node violates a policy's deschedule rules."""

    METRICS = "Metrics"  # the rules, evaluated here on fresh metric values
    LABELS = "Labels"  # the controller's node label `<policy>=violating` (not pods' `violate`)
    BOTH = "Both"  # both must agree: the label, confirmed by fresh metrics


def violating_nodes(
    policy: TASPolicy, state: CycleState, source: ViolationSource
) -> dict[NodeName, str]:
    """In-scope nodes violating the policy's deschedule strategy, with the reason."""
    evaluation = state.deschedule_evaluations().get(policy.key)
    if evaluation is None:
        return {}
    by_metrics = evaluation.violating
    if source is ViolationSource.METRICS:
        return dict(by_metrics)
    labelled = {
        name: f"{policy.name}: node label {policy.name}={VIOLATING}"
        for name, node in state.nodes.items()
        if node.labels.get(policy.name) == VIOLATING
    }
    if source is ViolationSource.LABELS:
        return labelled
    return {node: reason for node, reason in by_metrics.items() if node in labelled}


@dataclass(frozen=True)
class BreakerJudgement:
    """The breaker's verdict on every policy's deschedule strategy for one cycle."""

    verdicts: Mapping[PolicyKey, BreakerVerdict]
    #: Every Ready in-scope node violating some policy, with why (for the logs and Events).
    violating: Mapping[NodeName, str]

    @property
    def reason(self) -> str | None:
        """Why every eviction is held back (None: the breaker is closed)."""
        tripped = [
            f"{key.namespace}/{key.name}: {v.describe()}"
            for key, v in self.verdicts.items()
            if v.open
        ]
        if not tripped:
            return None
        names = ", ".join(sorted(self.violating))
        return "; ".join(tripped) + f"; evicting nothing (violating: {names})"


def judge_breaker(
    state: CycleState, source: ViolationSource, *, max_share: float
) -> BreakerJudgement:
    """`tas.breaker`'s verdict per policy, over the Ready in-scope nodes, on this cycle's one
    evaluation of the rules."""
    ready = {node.name for node in state.ready_nodes}
    verdicts: dict[PolicyKey, BreakerVerdict] = {}
    reasons: dict[NodeName, list[str]] = {}
    for key, evaluation in state.deschedule_evaluations().items():
        policy = state.policies[key]
        found = {n: r for n, r in violating_nodes(policy, state, source).items() if n in ready}
        counted = ready if source is ViolationSource.LABELS else evaluation.with_values & ready
        verdicts[key] = BreakerVerdict(frozenset(found), len(counted), max_share)
        for node, reason in found.items():
            reasons.setdefault(node, []).append(f"{policy.namespace}/{reason}")
    violating = {node: "; ".join(found) for node, found in sorted(reasons.items())}
    return BreakerJudgement(verdicts, violating)
