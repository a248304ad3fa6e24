"""The rule engine: what a policy says about nodes, given metric values. Pure, no I/O.

Every function takes a validated policy or strategy, a metric view (`MetricColumns`: metric
name -> node -> value, holding only fresh values) and node names, and returns a decision as
data. A node without a value for a rule's metric never makes that rule true: missing and stale
metrics fail open for scheduling and never cause a violation.

Evaluation works column by column: one pass over a metric's values per rule, so the cost is
linear in nodes x rules, with no per-node policy lookups.
"""

from __future__ import annotations

import math
import operator as op
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tas.policies.model import (
    LogicalOperator,
    Operator,
    Rule,
    Strategy,
    StrategyName,
    TASPolicy,
    format_number,
)
from tas.types import MetricColumn, MetricColumns, NodeName, PolicyName
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
        return _scan(rule.operator, rule.target, column.items())
    if len(nodes) >= len(column):
        wanted = nodes if isinstance(nodes, set | frozenset) else set(nodes)
        hits = _scan(rule.operator, rule.target, column.items())
        return {n: v for n, v in hits.items() if n in wanted}
    get = column.get
    # A list comprehension, not chained generators: this runs per extender request.
    present = [(n, v) for n in nodes if (v := get(n)) is not None]
    return _scan(rule.operator, rule.target, present)


def violations(
    strategy: Strategy, metrics: MetricColumns, nodes: Collection[NodeName] | None = None
) -> dict[NodeName, tuple[RuleHit, ...]]:
    """Nodes that violate a dontschedule or deschedule strategy, with the rules that are true.

    anyOf: at least one rule true. allOf: every rule true (a missing metric makes its rule
    false, so allOf cannot be met then). `nodes=None` evaluates every node with values.
    """
    per_rule = [(rule, _true_nodes(rule, _column(metrics, rule), nodes)) for rule in strategy.rules]
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


def _higher_is_better(operator: Operator) -> bool | None:
    if operator in (Operator.GREATER_THAN, Operator.GREATER_OR_EQUAL):
        return True
    if operator in (Operator.LESS_THAN, Operator.LESS_OR_EQUAL):
        return False
    return None


def score_values(
    values: Mapping[NodeName, float],
    candidates: Iterable[NodeName],
    *,
    higher_is_better: bool | None,
    mode: ScoreMode = ScoreMode.PROPORTIONAL,
) -> dict[NodeName, int]:
    """Scores 0..10 for every candidate, in candidate order; nodes without a value score 0.

    `higher_is_better=None` means no ordering preference: every node with a value scores 10.
    proportional: 10 * (v - worst) / (best - worst), rounded half up; 10 for all when equal.
    rank: TAS's `10 - rank` over distinct values (equal values share a rank), clamped at 0.
    """
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
) -> dict[NodeName, int]:
    """scheduleonmetric: one score per candidate. Only the first rule counts, target ignored.

    A policy without the strategy scores every candidate equally (0).
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
        values, ordered, higher_is_better=_higher_is_better(rule.operator), mode=mode
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
    strategy = policy.strategy(StrategyName.LABELING)
    if strategy is None:
        return {}
    per_rule = [(rule, _true_nodes(rule, _column(metrics, rule), nodes)) for rule in strategy.rules]
    if strategy.logical_operator is LogicalOperator.ALL_OF:
        common = set(per_rule[0][1]).intersection(*(hits for _, hits in per_rule[1:]))
        per_rule = [
            (rule, {n: v for n, v in hits.items() if n in common}) for rule, hits in per_rule
        ]
    chosen: dict[NodeName, dict[str, tuple[str, float, Operator]]] = {}
    for rule, hits in per_rule:
        preference = _higher_is_better(rule.operator)
        for node, value in hits.items():
            node_labels = chosen.setdefault(node, {})
            for label in rule.labels:
                current = node_labels.get(label.key)
                if current is None or (
                    preference is not None
                    and (value > current[1] if preference else value < current[1])
                ):
                    node_labels[label.key] = (label.value, value, rule.operator)
    return {
        node: {labeling_key(policy.name, key): item[0] for key, item in node_labels.items()}
        for node, node_labels in chosen.items()
    }
