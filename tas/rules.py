"""The rule engine: what a policy says about nodes, given metric values. Pure, no I/O.

Every function takes a validated policy or strategy, a metric view (`MetricColumns`: metric
name -> node -> value, holding only fresh values) and node names, and returns a decision as
data. A node without a value for a rule's metric never makes that rule true: missing and stale
metrics fail open for scheduling and never cause a violation.

Evaluation works column by column: one pass over a metric's values per rule, so the cost is
linear in nodes x rules, with no per-node policy lookups. Many rules over the same metrics (a
controller cycle) first cut each column down once to the nodes near their thresholds
(`narrow_columns`), which also sorts what is left so that each rule bisects it: then the cost
is nodes x metrics plus what the rules find.
"""

from __future__ import annotations

import math
import operator as op
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    Set,
)
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import chain

from tas.policies.model import (
    LogicalOperator,
    Operator,
    Rule,
    Strategy,
    StrategyName,
    TASPolicy,
    format_number,
    higher_is_better,
)
from tas.types import MetricColumn, MetricColumns, MetricName, NodeName, PolicyName
from tas.vocabulary import LABELING_PREFIX

_COMPARE: dict[Operator, Callable[[float, float], bool]] = {
    Operator.EQUALS: op.eq,
    Operator.LESS_THAN: op.lt,
    Operator.GREATER_THAN: op.gt,
    Operator.GREATER_OR_EQUAL: op.ge,
    Operator.LESS_OR_EQUAL: op.le,
    Operator.NOT_EQUALS: op.ne,
}


class ScoreMode(StrEnum):
    """How scheduleonmetric turns metric values into 0..10 scores."""

    PROPORTIONAL = "proportional"
    RANK = "rank"


MAX_SCORE = 10


def rule_is_true(rule: Rule, value: float) -> bool:
    return _COMPARE[rule.operator](value, rule.target)


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A rule that is true on a node, with the value that made it true."""

    rule: Rule
    value: float

    def describe(self) -> str:
        return f"{self.rule.describe()} (value {format_number(self.value)})"


def _column(metrics: MetricColumns, rule: Rule) -> MetricColumn:
    return metrics.get(rule.metricname, {})


def _scan(
    operator: Operator, target: float, items: Iterable[tuple[NodeName, float]]
) -> dict[NodeName, float]:
    # One comprehension per operator: this is the innermost loop of every reconcile
    # (nodes x rules), and an inline comparison is several times faster than a call.
    if operator is Operator.GREATER_THAN:
        return {n: v for n, v in items if v > target}
    if operator is Operator.LESS_THAN:
        return {n: v for n, v in items if v < target}
    if operator is Operator.EQUALS:
        return {n: v for n, v in items if v == target}
    if operator is Operator.GREATER_OR_EQUAL:
        return {n: v for n, v in items if v >= target}
    if operator is Operator.LESS_OR_EQUAL:
        return {n: v for n, v in items if v <= target}
    return {n: v for n, v in items if v != target}


def _true_nodes(
    rule: Rule, column: MetricColumn, nodes: Collection[NodeName] | None
) -> dict[NodeName, float]:
    """Nodes (among `nodes`, or all nodes with values) on which the rule is true.

    Columns hold only finite values (the metric view's contract), so no NaN checks here.
    """
    if nodes is None:
        if type(column) is _SortedColumn:
            return column.true_nodes(rule.operator, rule.target)
        return _scan(rule.operator, rule.target, column.items())
    if len(nodes) >= len(column):
        wanted = nodes if isinstance(nodes, set | frozenset) else set(nodes)
        hits = _scan(rule.operator, rule.target, column.items())
        return {n: v for n, v in hits.items() if n in wanted}
    get = column.get
    # A list comprehension, not chained generators: this runs per extender request.
    present = [(n, v) for n in nodes if (v := get(n)) is not None]
    return _scan(rule.operator, rule.target, present)


_VALUE_OF = op.itemgetter(1)
_UPPER = frozenset({Operator.GREATER_THAN, Operator.GREATER_OR_EQUAL, Operator.EQUALS})
_LOWER = frozenset({Operator.LESS_THAN, Operator.LESS_OR_EQUAL})


def narrow_columns(
    metrics: MetricColumns, rules: Iterable[Rule], nodes: Collection[NodeName] | None = None
) -> dict[MetricName, MetricColumn]:
    """Each metric's column cut down, in one pass, to the nodes where one of `rules` may be true.

    Every rule in `rules` is true on exactly the same nodes, with the same values, over the
    narrowed columns as over `metrics` restricted to `nodes`: a node is dropped only when its
    value lies below every lower bound (`>`, `>=`, `==` targets) and above every upper bound
    (`<`, `<=` targets) of its metric's rules. Evaluating many rules on one metric (a
    controller cycle: every policy's rules) then costs one pass over the column plus passes over
    the few nodes near a threshold, rather than a full pass per rule. The narrowed columns serve
    rule evaluation only: they no longer say which nodes have values.
    """
    by_metric: dict[MetricName, list[Rule]] = {}
    for rule in rules:
        by_metric.setdefault(rule.metricname, []).append(rule)
    wanted = nodes if nodes is None or isinstance(nodes, Set) else frozenset(nodes)
    narrowed: dict[MetricName, MetricColumn] = {}
    for metric, metric_rules in by_metric.items():
        column = metrics.get(metric)
        if not column:
            continue
        if any(r.operator is Operator.NOT_EQUALS or math.isnan(r.target) for r in metric_rules):
            # `!=` is true almost everywhere, and a NaN target would poison min/max: keep all.
            low, high = -math.inf, math.inf
        else:
            low = min((r.target for r in metric_rules if r.operator in _UPPER), default=math.inf)
            high = max((r.target for r in metric_rules if r.operator in _LOWER), default=-math.inf)
        narrowed[metric] = _narrow(column, low, high, wanted)
    return narrowed


def _narrow(
    column: MetricColumn, low: float, high: float, nodes: Set[NodeName] | None
) -> MetricColumn:
    """The entries of `column` (among `nodes`) with value >= low or value <= high."""
    if nodes is not None and len(nodes) < len(column):
        get = column.get
        column = {n: v for n in nodes if (v := get(n)) is not None}
        nodes = None
    if low == -math.inf or high == math.inf:
        if nodes is None or column.keys() <= nodes:
            return column
        return {n: v for n, v in column.items() if n in nodes}
    # One comprehension per shape, as in `_scan`: this is the one full pass over the column.
    items = column.items()
    if high == -math.inf:
        kept = {n: v for n, v in items if v >= low}
    elif low == math.inf:
        kept = {n: v for n, v in items if v <= high}
    else:
        kept = {n: v for n, v in items if v >= low or v <= high}
    # Values first, node set second: the few nodes kept are all that need a set lookup.
    return _SortedColumn(
        kept.items() if nodes is None else [e for e in kept.items() if e[0] in nodes]
    )


class _SortedColumn(dict[NodeName, float]):
    """A narrowed column that also holds its nodes in value order.

    Each of the many rules reading the metric then finds the nodes it is true on by bisecting
    the values and slicing, in C, rather than by comparing every value again. Only narrowed
    columns are sorted: they are small, and hold no NaN (which fails every bound), so the
    order is total.
    """

    __slots__ = ("_nodes", "_values")

    def __init__(self, entries: Iterable[tuple[NodeName, float]]) -> None:
        ordered = sorted(entries, key=_VALUE_OF)
        super().__init__(ordered)
        self._nodes = [node for node, _ in ordered]
        self._values = [value for _, value in ordered]

    def true_nodes(self, operator: Operator, target: float) -> dict[NodeName, float]:
        """Nodes whose value makes `value <operator> target` true (as `_scan`)."""
        nodes, values = self._nodes, self._values
        if operator is Operator.GREATER_THAN:
            start, end = bisect_right(values, target), len(values)
        elif operator is Operator.GREATER_OR_EQUAL:
            start, end = bisect_left(values, target), len(values)
        elif operator is Operator.LESS_THAN:
            start, end = 0, bisect_left(values, target)
        elif operator is Operator.LESS_OR_EQUAL:
            start, end = 0, bisect_right(values, target)
        elif operator is Operator.EQUALS:
            start, end = bisect_left(values, target), bisect_right(values, target)
        else:
            return _scan(operator, target, self.items())
        return dict(zip(nodes[start:end], values[start:end], strict=True))


def _per_rule(
    strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName] | None
) -> list[tuple[Rule, dict[NodeName, float]]]:
    return [(rule, _true_nodes(rule, _column(metrics, rule), nodes)) for rule in strategy.rules]


def violations(
    strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> dict[NodeName, tuple[RuleHit, ...]]:
    """Nodes that violate a dontschedule or deschedule strategy, with the rules that are true.

    anyOf: at least one rule true. allOf: every rule true (a missing metric makes its rule
    false, so allOf cannot be met then). `nodes=None` evaluates every node with values.
    """
    per_rule = _per_rule(strategy, metrics, nodes)
    if strategy.logical_operator is LogicalOperator.ALL_OF:
        common = set(per_rule[0][1]).intersection(*(hits for _, hits in per_rule[1:]))
        return {
            node: tuple(RuleHit(rule, hits[node]) for rule, hits in per_rule) for node in common
        }
    found: dict[NodeName, list[RuleHit]] = {}
    for rule, hits in per_rule:
        for node, value in hits.items():
            found.setdefault(node, []).append(RuleHit(rule, value))
    return {node: tuple(found_hits) for node, found_hits in found.items()}


class ViolationMap(Mapping[NodeName, tuple[RuleHit, ...]]):
    """`violations` as a mapping whose rule hits are built for the nodes they are asked for.

    Equal to what `violations` returns. Finding the violating nodes costs one dict entry per
    node; the `RuleHit`s (an object per rule true on a node) are built on access. A controller
    cycle needs the violating nodes of every policy but the hits of only the few nodes it
    writes an Event for, and objects built and kept per hit make the garbage collector's full
    passes, which walk every object, run more often as the cluster grows.
    """

    __slots__ = ("_nodes", "_per_rule")

    def __init__(
        self, per_rule: Sequence[tuple[Rule, Mapping[NodeName, float]]], nodes: Iterable[NodeName]
    ) -> None:
        self._per_rule = per_rule
        self._nodes: dict[NodeName, None] = dict.fromkeys(nodes)

    def __getitem__(self, node: NodeName) -> tuple[RuleHit, ...]:
        if node not in self._nodes:
            raise KeyError(node)
        return tuple(RuleHit(rule, hits[node]) for rule, hits in self._per_rule if node in hits)

    def __iter__(self) -> Iterator[NodeName]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._nodes

    def keys(self) -> KeysView[NodeName]:
        return self._nodes.keys()

    def __repr__(self) -> str:
        return f"ViolationMap({dict(self.items())!r})"


def violation_map(
    strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> ViolationMap:
    """`violations` with rule hits built on access (see `ViolationMap`)."""
    per_rule = _per_rule(strategy, metrics, nodes)
    if strategy.logical_operator is LogicalOperator.ALL_OF:
        common = set(per_rule[0][1]).intersection(*(hits for _, hits in per_rule[1:]))
        return ViolationMap(per_rule, common)
    # Nodes in the order `violations` finds them: the first rule's, then each next rule's new.
    return ViolationMap(per_rule, chain.from_iterable(hits for _, hits in per_rule))


def violation_reason(policy_name: str, hits: Iterable[RuleHit]) -> str:
    """The reason a node fails a policy, e.g. `demo-policy: health_metric Equals 1 (value 1)`."""
    return f"{policy_name}: " + ", ".join(hit.describe() for hit in hits)


@dataclass(frozen=True)
class FilterDecision:
    """The extender's filter answer for one pod: nodes kept, nodes removed with a reason."""

    passed: tuple[NodeName, ...]
    failed: Mapping[NodeName, str]
    hits: Mapping[NodeName, tuple[RuleHit, ...]] = field(default_factory=dict)


def filter_nodes(
    policy: TASPolicy, metrics: MetricColumns, candidates: Iterable[NodeName]
) -> FilterDecision:
    """Remove candidates that violate the policy's dontschedule strategy; keep their order."""
    ordered = list(candidates)
    strategy = policy.strategy(StrategyName.DONTSCHEDULE)
    if strategy is None:
        return FilterDecision(passed=tuple(ordered), failed={})
    found = violations(strategy, metrics, set(ordered))
    if not found:
        return FilterDecision(passed=tuple(ordered), failed={})
    passed = tuple(node for node in ordered if node not in found)
    failed = {node: violation_reason(policy.name, found[node]) for node in ordered if node in found}
    return FilterDecision(passed=passed, failed=failed, hits=found)


def score_values(
    values: Mapping[NodeName, float],
    candidates: Iterable[NodeName],
    *,
    higher_is_better: bool | None,
    mode: ScoreMode = ScoreMode.PROPORTIONAL,
    newcomers: Collection[NodeName] = (),
) -> dict[NodeName, int]:
    """Scores 0..10 for every candidate, in candidate order.

    `higher_is_better=None` means no ordering preference: every node with a value scores 10.
    proportional: 10 * (v - worst) / (best - worst), rounded half up; 10 for all when equal.
    rank: TAS's `10 - rank` over distinct values (equal values share a rank), clamped at 0.

    A node without a value scores 0, as in TAS, unless it is one of `newcomers` (herd
    control's nodes that run nothing but recent placements: most often one that just joined,
    before its first scrape): it scores the median of the valued candidates' scores, the lower
    middle, so it is taken as typical rather than as the worst (docs/recent-placements.md).
    """
    scores = _scores_of_valued(values, candidates, higher_is_better=higher_is_better, mode=mode)
    if newcomers:
        valued = [score for node, score in scores.items() if node in values]
        unvalued = [node for node in scores if node not in values and node in newcomers]
        if valued and unvalued:
            typical = statistics.median_low(valued)
            scores.update(dict.fromkeys(unvalued, typical))
    return scores


def _scores_of_valued(
    values: Mapping[NodeName, float],
    candidates: Iterable[NodeName],
    *,
    higher_is_better: bool | None,
    mode: ScoreMode,
) -> dict[NodeName, int]:
    """`score_values` for the nodes with a value; 0 for the others."""
    ordered = list(candidates)
    get = values.get
    known = {node: value for node in ordered if (value := get(node)) is not None}
    scores = dict.fromkeys(ordered, 0)
    if not known:
        return scores
    if higher_is_better is None:
        scores.update(dict.fromkeys(known, MAX_SCORE))
        return scores
    if mode is ScoreMode.RANK:
        distinct = sorted(set(known.values()), reverse=higher_is_better)
        # Competition ranking: a node's rank is the number of nodes strictly better than it,
        # so untied nodes keep exactly the score TAS gives them.
        better_than: dict[float, int] = {}
        count = 0
        tally: dict[float, int] = {}
        for value in known.values():
            tally[value] = tally.get(value, 0) + 1
        for value in distinct:
            better_than[value] = count
            count += tally[value]
        for node, value in known.items():
            scores[node] = max(0, MAX_SCORE - better_than[value])
        return scores
    best = max(known.values()) if higher_is_better else min(known.values())
    worst = min(known.values()) if higher_is_better else max(known.values())
    if best == worst:
        scores.update(dict.fromkeys(known, MAX_SCORE))
        return scores
    span = best - worst
    floor = math.floor
    if not math.isfinite(MAX_SCORE * span):
        # Finite values so far apart that the arithmetic overflows (e.g. -1e308 and 1e308):
        # compare halves, which cannot overflow.
        half_span = best / 2 - worst / 2
        for node, value in known.items():
            ratio = (value / 2 - worst / 2) / half_span
            scores[node] = min(MAX_SCORE, max(0, floor(MAX_SCORE * ratio + 0.5)))
        return scores
    # (value - worst) / span lies in [0, 1], so the rounded score is already within 0..10.
    # Inline rather than per-node calls: this runs over every candidate of every request.
    scores.update(
        {node: floor(MAX_SCORE * (value - worst) / span + 0.5) for node, value in known.items()}
    )
    return scores


def score_nodes(
    policy: TASPolicy,
    metrics: MetricColumns,
    candidates: Iterable[NodeName],
    *,
    mode: ScoreMode = ScoreMode.PROPORTIONAL,
    newcomers: Collection[NodeName] = (),
) -> dict[NodeName, int]:
    """scheduleonmetric: one score per candidate. Only the first rule counts, target ignored.

    A policy without the strategy scores every candidate equally (0). `newcomers`: as
    `score_values`.
    """
    ordered = list(candidates)
    strategy = policy.strategy(StrategyName.SCHEDULEONMETRIC)
    if strategy is None:
        return dict.fromkeys(ordered, 0)
    rule = strategy.rules[0]
    column = _column(metrics, rule)
    get = column.get
    isfinite = math.isfinite
    values = {n: v for n in ordered if (v := get(n)) is not None and isfinite(v)}
    return score_values(
        values,
        ordered,
        higher_is_better=higher_is_better(rule.operator),
        mode=mode,
        newcomers=newcomers,
    )


def deschedule_violations(
    policy: TASPolicy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> dict[NodeName, tuple[RuleHit, ...]]:
    """Nodes violating the policy's deschedule strategy (none when it has no such strategy)."""
    strategy = policy.strategy(StrategyName.DESCHEDULE)
    if strategy is None:
        return {}
    return violations(strategy, metrics, nodes)


def labeling_key(policy_name: PolicyName | str, key: str) -> str:
    """The node label key a labeling rule writes: `telemetry.aware.scheduling.<policy>/<key>`."""
    return f"{LABELING_PREFIX}{policy_name}/{key}"


def labeling_labels(
    policy: TASPolicy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> dict[NodeName, dict[str, str]]:
    """The labels the labeling strategy wants on each node (nodes wanting none are absent).

    When true rules write one key: GreaterThan (and GreaterOrEqual) keep the largest value,
    LessThan (and LessOrEqual) the smallest, Equals and ties the earliest rule.
    """
    return labels_by_node(labeling_by_key(policy, metrics, nodes))


def labels_by_node(
    by_key: Mapping[str, Mapping[NodeName, str]],
) -> dict[NodeName, dict[str, str]]:
    """Labels by label key (key -> node -> value) as each node's labels (node -> key -> value)."""
    per_node: dict[NodeName, dict[str, str]] = {}
    for key, values in by_key.items():
        for node, value in values.items():
            labels = per_node.get(node)
            if labels is None:
                per_node[node] = {key: value}
            else:
                labels[key] = value
    return per_node


def labeling_by_key(
    policy: TASPolicy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> dict[str, dict[NodeName, str]]:
    """`labeling_labels` by label key: node label key -> node -> value (see there).

    One dict per label key rather than one per node: a controller cycle merges every policy's
    labels, and per-node containers kept per policy would feed the garbage collector.
    """
    strategy = policy.strategy(StrategyName.LABELING)
    if strategy is None:
        return {}
    per_rule = _per_rule(strategy, metrics, nodes)
    if strategy.logical_operator is LogicalOperator.ALL_OF:
        common = set(per_rule[0][1]).intersection(*(hits for _, hits in per_rule[1:]))
        per_rule = [
            (rule, {n: v for n, v in hits.items() if n in common}) for rule, hits in per_rule
        ]
    # Per label key (as the rule writes it): the chosen value and the value that chose it.
    chosen: dict[str, tuple[dict[NodeName, str], dict[NodeName, float]]] = {}
    for rule, hits in per_rule:
        if not hits:
            continue
        preference = higher_is_better(rule.operator)
        for label in rule.labels:
            entry = chosen.get(label.key)
            if entry is None:
                chosen[label.key] = (dict.fromkeys(hits, label.value), dict(hits))
                continue
            values, deciding = entry
            text = label.value
            for node, value in hits.items():
                current = deciding.get(node)
                if current is None or (
                    preference is not None and (value > current if preference else value < current)
                ):
                    values[node], deciding[node] = text, value
    return {labeling_key(policy.name, key): values for key, (values, _) in chosen.items()}
