"""What the policies want the cluster to look like, from one node view and one metric view.

Pure: takes validated policies, metric columns (fresh values only, see `tas.metrics.view`) and
node names, and returns decisions as data. Every policy is evaluated once per cycle with
`tas.rules` (column-wise, one pass per rule), and the per-node merge walks only the nodes a
policy names, so a cycle costs nodes x rules plus the number of labels produced.

Node labels the controller places:
- `<policy>=violating` on nodes violating the policy's deschedule strategy (the bare policy
  name, exactly as TAS does);
- `telemetry.aware.scheduling.<policy>/<key>=<value>` from the labeling strategy.

Two policies with the same name in different namespaces write the same keys (TAS keys them by
name alone): a node violating either carries `<policy>=violating`, and for a labeling key both
want, the policy whose key sorts first wins, so the outcome never depends on dict order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tas.policy import StrategyName, TASPolicy
from tas.rules import VIOLATING, RuleHit, labeling_labels, violations
from tas.types import MetricColumns, NodeName, PolicyKey

NodeHits = Mapping[NodeName, tuple[RuleHit, ...]]


@dataclass(frozen=True, slots=True)
class PolicyEvaluation:
    """One policy's verdict on the current nodes."""

    policy: TASPolicy
    #: Nodes violating the deschedule strategy (empty without one).
    deschedule: NodeHits
    #: Nodes violating the dontschedule strategy (empty without one); used for status only.
    dontschedule: NodeHits
    #: Labels the labeling strategy wants per node (nodes wanting none are absent).
    labels: Mapping[NodeName, Mapping[str, str]]

    @property
    def has_deschedule(self) -> bool:
        return StrategyName.DESCHEDULE in self.policy.strategies


def evaluate_policy(
    policy: TASPolicy, metrics: MetricColumns, nodes: Collection[NodeName]
) -> PolicyEvaluation:
    """Evaluate the strategies the controller enforces or reports, over `nodes` only."""
    deschedule = policy.strategy(StrategyName.DESCHEDULE)
    dontschedule = policy.strategy(StrategyName.DONTSCHEDULE)
    return PolicyEvaluation(
        policy=policy,
        deschedule=violations(deschedule, metrics, nodes) if deschedule else {},
        dontschedule=violations(dontschedule, metrics, nodes) if dontschedule else {},
        labels=labeling_labels(policy, metrics, nodes),
    )


@dataclass(frozen=True)
class DesiredState:
    """Every policy's evaluation and the owned labels each node should carry."""

    evaluations: Mapping[PolicyKey, PolicyEvaluation]
    #: Owned node labels wanted per node (nodes wanting none are absent).
    node_labels: Mapping[NodeName, Mapping[str, str]]
    #: Bare label keys (policy names) of current policies that have a deschedule strategy.
    deschedule_keys: frozenset[str]


def compute_desired(
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
    nodes: Collection[NodeName],
) -> DesiredState:
    """Evaluate every policy over `nodes` and merge the labels they want per node."""
    node_set = nodes if isinstance(nodes, frozenset | set) else frozenset(nodes)
    evaluations = {
        key: evaluate_policy(policies[key], metrics, node_set) for key in sorted(policies)
    }
    node_labels: dict[NodeName, dict[str, str]] = {}
    for evaluation in evaluations.values():
        name = evaluation.policy.name
        for node in evaluation.deschedule:
            node_labels.setdefault(node, {})[name] = VIOLATING
        for node, labels in evaluation.labels.items():
            wanted = node_labels.setdefault(node, {})
            for label_key, value in labels.items():
                wanted.setdefault(label_key, value)
    deschedule_keys = frozenset(e.policy.name for e in evaluations.values() if e.has_deschedule)
    return DesiredState(
        evaluations=evaluations, node_labels=node_labels, deschedule_keys=deschedule_keys
    )
