"""What the policies want the cluster to look like, from one node view and one metric view.

Pure: takes validated policies, metric columns (fresh values only, see `tas.metrics.view`) and
node names, and returns decisions as data. Every policy is evaluated once per cycle with
`tas.rules` (column-wise, one pass per rule), and the per-node merge walks only the nodes a
policy names, so a cycle costs nodes x rules plus the number of labels produced.

Node labels the controller places:
- `<policy>=violating` on nodes violating the policy's deschedule strategy (the bare policy
  name, exactly as TAS does);
- `telemetry.aware.scheduling.<policy>/<key>=<value>` from the labeling strategy.

When more than half the nodes with values violate a deschedule strategy at once, the metric is
taken for broken (`tas.breaker`): no node newly becomes violating, nodes already labelled stay
so while they still violate, and the evaluation says it is held.

Two policies with the same name in different namespaces write the same keys (TAS keys them by
name alone): a node violating either carries `<policy>=violating`, and for a labeling key both
want, the policy whose key sorts first wins, so the outcome never depends on dict order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tas.breaker import DEFAULT_MAX_SHARE, BreakerVerdict
from tas.policies.model import Strategy, StrategyName, TASPolicy
from tas.rules import RuleHit, labeling_labels, violations
from tas.types import MetricColumns, NodeName, PolicyKey
from tas.vocabulary import VIOLATING

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
    #: Why the deschedule verdict is held (`tas.breaker`): too many nodes violate at once, so
    #: only nodes already labelled stay violating. None when the breaker is closed.
    held: str | None = None

    @property
    def has_deschedule(self) -> bool:
        return StrategyName.DESCHEDULE in self.policy.strategies


def evaluate_policy(
    policy: TASPolicy,
    metrics: MetricColumns,
    nodes: Collection[NodeName],
    *,
    labelled: Collection[NodeName] = (),
    max_violating_share: float = DEFAULT_MAX_SHARE,
) -> PolicyEvaluation:
    """Evaluate the strategies the controller enforces or reports, over `nodes` only.

    `labelled` are the nodes carrying `<policy>=violating` now: when the breaker is open they
    are the only ones that may stay violating.
    """
    deschedule = policy.strategy(StrategyName.DESCHEDULE)
    dontschedule = policy.strategy(StrategyName.DONTSCHEDULE)
    found = violations(deschedule, metrics, nodes) if deschedule else {}
    held = None
    if deschedule is not None and found:
        verdict = BreakerVerdict(
            frozenset(found), _with_values(deschedule, metrics, nodes), max_violating_share
        )
        if verdict.open:
            held = verdict.describe()
            found = {node: hits for node, hits in found.items() if node in labelled}
    return PolicyEvaluation(
        policy=policy,
        deschedule=found,
        dontschedule=violations(dontschedule, metrics, nodes) if dontschedule else {},
        labels=labeling_labels(policy, metrics, nodes),
        held=held,
    )


def _with_values(strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName]) -> int:
    seen: set[NodeName] = set()
    for rule in strategy.rules:
        seen.update(metrics.get(rule.metricname, {}))
    return len(seen & set(nodes))


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
    *,
    labelled: Mapping[str, Collection[NodeName]] | None = None,
    max_violating_share: float = DEFAULT_MAX_SHARE,
) -> DesiredState:
    """Evaluate every policy over `nodes` and merge the labels they want per node.

    `labelled` maps a bare label key (policy name) to the nodes labelled violating now.
    """
    node_set = nodes if isinstance(nodes, frozenset | set) else frozenset(nodes)
    now_labelled = labelled or {}
    evaluations = {
        key: evaluate_policy(
            policies[key],
            metrics,
            node_set,
            labelled=now_labelled.get(policies[key].name, ()),
            max_violating_share=max_violating_share,
        )
        for key in sorted(policies)
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
