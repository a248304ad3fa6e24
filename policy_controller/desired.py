"""What the policies want the cluster to look like, from one node view and one metric view.

Pure: takes validated policies, metric columns (fresh values only, see `tas.metrics.view`) and
node names, and returns decisions as data. Every policy is evaluated once per cycle with
`tas.rules`, column-wise: each metric's column is scanned once for all the rules that read it
(`narrow_columns`), every rule then scans only the nodes near its metric's thresholds, and the
per-node merge walks only the nodes a policy names. A cycle costs nodes x metrics plus the
nodes near a threshold x rules plus the number of labels produced.

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

import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import islice

from tas.breaker import DEFAULT_MAX_SHARE, BreakerVerdict
from tas.policies.model import Rule, Strategy, StrategyName, TASPolicy
from tas.rules import RuleHit, labeling_by_key, labels_by_node, narrow_columns, violation_map
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
    #: Labels the labeling strategy wants, by label key: key -> node -> value (`tas.rules.
    #: labeling_by_key`; nodes wanting none are absent).
    labels: Mapping[str, Mapping[NodeName, str]]
    #: Why the deschedule verdict is held (`tas.breaker`): too many nodes violate at once, so
    #: only nodes already labelled stay violating. None when the breaker is closed.
    held: str | None = None

    @property
    def has_deschedule(self) -> bool:
        return StrategyName.DESCHEDULE in self.policy.strategies


_ENFORCED = (StrategyName.DESCHEDULE, StrategyName.DONTSCHEDULE, StrategyName.LABELING)


def _enforced_rules(policies: Iterable[TASPolicy]) -> list[Rule]:
    """The rules of the strategies the controller evaluates (scheduleonmetric is not one)."""
    return [
        rule
        for policy in policies
        for name in _ENFORCED
        if (strategy := policy.strategy(name)) is not None
        for rule in strategy.rules
    ]


class _CycleColumns:
    """What every policy of a cycle reads, prepared once for all of them.

    `narrowed` holds each metric's column cut down to the nodes where some policy's rule may be
    true (`tas.rules.narrow_columns`), so a metric is scanned once per cycle, not once per rule.
    The breaker needs the nodes that have values, which the narrowed columns no longer say: it
    reads the full columns, only as far as it takes to show that it stays closed.
    """

    def __init__(
        self, metrics: MetricColumns, nodes: Collection[NodeName], rules: Iterable[Rule]
    ) -> None:
        self.metrics = metrics
        self.nodes: Set[NodeName] = nodes if isinstance(nodes, set | frozenset) else set(nodes)
        self.narrowed = narrow_columns(metrics, rules, self.nodes)

    def with_values(self, strategy: Strategy) -> int:
        """How many of the nodes have a value for any of the strategy's metrics."""
        seen: set[NodeName] = set()
        for rule in strategy.rules:
            seen.update(self.metrics.get(rule.metricname, {}))
        return len(seen & self.nodes)

    def breaker_may_open(self, strategy: Strategy, violating: int, max_share: float) -> bool:
        """False when the breaker surely stays closed, shown without counting every node.

        Any nodes with a value for one of the strategy's metrics are a lower bound on the nodes
        with values: once `violating <= max_share * bound`, the breaker cannot open. Counting
        just enough of one column for that costs in proportion to the violations, not to the
        cluster; a whole count is left to `with_values`, for a strategy that may really open.
        """
        if not max_share > 0:
            return True
        enough = math.ceil(violating / max_share)
        contains = self.nodes.__contains__
        for rule in strategy.rules:
            column = self.metrics.get(rule.metricname, {})
            bound = sum(map(contains, islice(column, min(enough, len(column)))))
            if violating <= max_share * bound:
                return False
        return True


def _evaluate(
    policy: TASPolicy, shared: _CycleColumns, labelled: Collection[NodeName], max_share: float
) -> PolicyEvaluation:
    """The strategies the controller enforces or reports, over the cycle's nodes.

    `labelled` are the nodes carrying `<policy>=violating` now: when the breaker is open they
    are the only ones that may stay violating.
    """
    deschedule = policy.strategy(StrategyName.DESCHEDULE)
    dontschedule = policy.strategy(StrategyName.DONTSCHEDULE)
    # The narrowed columns hold only the cycle's nodes: no node filter needed (None).
    columns = shared.narrowed
    found: NodeHits = violation_map(deschedule, columns) if deschedule else {}
    held = None
    if (
        deschedule is not None
        and found
        and shared.breaker_may_open(deschedule, len(found), max_share)
    ):
        verdict = BreakerVerdict(frozenset(found), shared.with_values(deschedule), max_share)
        if verdict.open:
            held = verdict.describe()
            found = {node: found[node] for node in found if node in labelled}
    return PolicyEvaluation(
        policy=policy,
        deschedule=found,
        dontschedule=violation_map(dontschedule, columns) if dontschedule else {},
        labels=labeling_by_key(policy, columns),
        held=held,
    )


class WantedLabels(Mapping[NodeName, Mapping[str, str]]):
    """The owned labels wanted per node, kept by label key: key -> node -> value.

    Policies produce labels a key at a time, and a steady cycle only needs to know which nodes'
    wanted labels changed since the last cycle (`changed_since`: one comparison per key, in C),
    not every node's labels. So a node's labels are gathered when asked for, and all nodes'
    at once when so many are asked for that one pass over every key is cheaper: a cycle pays
    per node only for the nodes it diffs.
    """

    __slots__ = ("_by_key", "_entry_count", "_lookups", "_per_node")

    def __init__(self, by_key: Mapping[str, Mapping[NodeName, str]]) -> None:
        self._by_key = by_key
        self._per_node: dict[NodeName, dict[str, str]] | None = None
        self._lookups = 0
        self._entry_count = -1

    @classmethod
    def of_nodes(cls, per_node: Mapping[NodeName, Mapping[str, str]]) -> WantedLabels:
        by_key: dict[str, dict[NodeName, str]] = {}
        for node, labels in per_node.items():
            for key, value in labels.items():
                by_key.setdefault(key, {})[node] = value
        return cls(by_key)

    @property
    def by_key(self) -> Mapping[str, Mapping[NodeName, str]]:
        return self._by_key

    def transpose(self) -> Mapping[NodeName, Mapping[str, str]]:
        """Every node's labels, built once."""
        if self._per_node is None:
            self._per_node = labels_by_node(self._by_key)
        return self._per_node

    def changed_since(self, previous: WantedLabels) -> set[NodeName]:
        """Nodes whose wanted labels differ from `previous`'s."""
        changed: set[NodeName] = set()
        empty: Mapping[NodeName, str] = {}
        for key in self._by_key.keys() | previous.by_key.keys():
            now, before = self._by_key.get(key, empty), previous.by_key.get(key, empty)
            if now != before:
                changed.update(n for n in now.keys() | before.keys() if now.get(n) != before.get(n))
        return changed

    def __getitem__(self, node: NodeName) -> Mapping[str, str]:
        if self._per_node is not None:
            return self._per_node[node]
        # A lookup costs one probe per key; transposing, one step per (key, node) entry.
        self._lookups += 1
        if self._lookups * len(self._by_key) > self._entries():
            return self.transpose()[node]
        labels = {k: v for k, values in self._by_key.items() if (v := values.get(node)) is not None}
        if not labels:
            raise KeyError(node)
        return labels

    def _entries(self) -> int:
        if self._entry_count < 0:
            self._entry_count = sum(map(len, self._by_key.values()))
        return self._entry_count

    def __iter__(self) -> Iterator[NodeName]:
        return iter(self.transpose())

    def __len__(self) -> int:
        return len(self.transpose())

    def __repr__(self) -> str:
        return f"WantedLabels({dict(self.transpose())!r})"


@dataclass(frozen=True)
class DesiredState:
    """Every policy's evaluation and the owned labels each node should carry."""

    evaluations: Mapping[PolicyKey, PolicyEvaluation]
    #: Owned node labels wanted per node (nodes wanting none are absent).
    node_labels: WantedLabels
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
    """Evaluate every policy over `nodes` and merge the labels they want, by label key.

    `labelled` maps a bare label key (policy name) to the nodes labelled violating now.
    """
    shared = _CycleColumns(metrics, nodes, _enforced_rules(policies.values()))
    now_labelled = labelled or {}
    evaluations = {
        key: _evaluate(
            policies[key],
            shared,
            now_labelled.get(policies[key].name, ()),
            max_violating_share,
        )
        for key in sorted(policies)
    }
    by_key: dict[str, dict[NodeName, str]] = {}
    for evaluation in evaluations.values():
        name = evaluation.policy.name
        if evaluation.deschedule:
            marks = by_key.get(name)
            if marks is None:
                by_key[name] = dict.fromkeys(evaluation.deschedule, VIOLATING)
            else:
                marks.update(dict.fromkeys(evaluation.deschedule, VIOLATING))
        for label_key, values in evaluation.labels.items():
            merged = by_key.get(label_key)
            # New dicts, never the evaluation's own; an earlier policy keeps a key it set.
            by_key[label_key] = dict(values) if merged is None else {**values, **merged}
    deschedule_keys = frozenset(e.policy.name for e in evaluations.values() if e.has_deschedule)
    return DesiredState(
        evaluations=evaluations, node_labels=WantedLabels(by_key), deschedule_keys=deschedule_keys
    )
