"""The desired state computed the fast way equals the plain definition, and stays cheap.

`compute_desired` scans each metric once for every rule reading it (`tas.rules.narrow_columns`),
builds rule hits on access (`ViolationMap`), merges labeling by key, and shows the circuit
breaker closed by counting only part of a column. None of that may change a decision.

Covered:
- for any policies (deschedule, dontschedule, labeling; anyOf and allOf; every operator), metric
  values, node view, labelled nodes and breaker share, every evaluation (deschedule and
  dontschedule hits, held or not) and every node's wanted labels equal the plain definition:
  `tas.rules.violations` and `labeling_labels` over the full columns, the breaker judged over
  every node with values, labels merged in policy-key order;
- nodes a column names but the node view lacks neither violate nor count for the breaker;
- a cycle reads each metric's values once, however many policies' rules read the metric, and
  the breaker reads only as many values as it takes to show it is closed (issue 19: the cost of
  a cycle follows nodes x metrics, not nodes x rules).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_controller.desired import compute_desired
from tas.breaker import BreakerVerdict
from tas.policies.model import Operator, StrategyName, TASPolicy
from tas.rules import labeling_labels, violations
from tas.types import MetricColumns, MetricName, NodeName, PolicyKey
from tas.vocabulary import VIOLATING
from tests.builders import make_policy, rule

METRICS = ["m0", "m1", "m2"]
NODE_NAMES = [f"node-{i}" for i in range(12)]
OPERATORS = [o.value for o in Operator]
ORDERED = ["GreaterThan", "GreaterOrEqual", "LessThan", "LessOrEqual", "Equals"]

values = st.one_of(st.integers(-3, 3).map(float), st.floats(-4, 4, allow_nan=False))
targets = st.one_of(st.integers(-3, 3), st.floats(-4, 4, allow_nan=False))
rule_lists = st.lists(
    st.builds(rule, st.sampled_from(METRICS), st.sampled_from(OPERATORS), targets),
    min_size=1,
    max_size=3,
)


@st.composite
def labeling_rules(draw: st.DrawFn) -> list[dict[str, Any]]:
    # Rules sharing a label key must share an operator (validation): one operator per policy.
    operator = draw(st.sampled_from(ORDERED))
    count = draw(st.integers(1, 3))
    return [
        rule(
            draw(st.sampled_from(METRICS)),
            operator,
            draw(targets),
            labels=draw(
                st.lists(st.sampled_from(["a=1", "b=2", "a=3"]), min_size=1, max_size=2).map(
                    lambda ls: list({label.split("=")[0]: label for label in ls}.values())
                )
            ),
        )
        for _ in range(count)
    ]


@st.composite
def policies(draw: st.DrawFn) -> dict[PolicyKey, TASPolicy]:
    found: dict[PolicyKey, TASPolicy] = {}
    for index in range(draw(st.integers(1, 4))):
        strategies: dict[str, Any] = {}
        for name in ("deschedule", "dontschedule"):
            if draw(st.booleans()):
                strategies[name] = (draw(st.sampled_from(["anyOf", "allOf"])), draw(rule_lists))
        if draw(st.booleans()):
            strategies["labeling"] = (
                draw(st.sampled_from(["anyOf", "allOf"])),
                draw(labeling_rules()),
            )
        if not strategies:
            strategies["deschedule"] = draw(rule_lists)
        # Same names in two namespaces share keys: the merge order must decide, not dict order.
        policy = make_policy(f"p{index % 3}", namespace=f"ns{index % 2}", **strategies)
        found[policy.key] = policy
    return found


@st.composite
def metric_views(draw: st.DrawFn) -> MetricColumns:
    # Columns may name nodes outside the node view (node-10, node-11 are never in it).
    return {
        MetricName(metric): {
            NodeName(n): draw(values)
            for n in draw(st.lists(st.sampled_from(NODE_NAMES), unique=True, max_size=12))
        }
        for metric in METRICS
    }


def _reference(
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
    nodes: frozenset[NodeName],
    labelled: Mapping[str, frozenset[NodeName]],
    share: float,
) -> tuple[dict[PolicyKey, tuple[Any, ...]], dict[NodeName, dict[str, str]]]:
    """The plain definition: each policy evaluated on its own, over the full columns."""
    evaluations: dict[PolicyKey, tuple[Any, ...]] = {}
    wanted: dict[NodeName, dict[str, str]] = {}
    for key in sorted(policies):
        policy = policies[key]
        deschedule = policy.strategy(StrategyName.DESCHEDULE)
        dontschedule = policy.strategy(StrategyName.DONTSCHEDULE)
        found = violations(deschedule, metrics, nodes) if deschedule else {}
        held = None
        if deschedule is not None and found:
            with_values = {
                n for r in deschedule.rules for n in metrics.get(r.metricname, {}) if n in nodes
            }
            verdict = BreakerVerdict(frozenset(found), len(with_values), share)
            if verdict.open:
                held = verdict.describe()
                found = {n: h for n, h in found.items() if n in labelled.get(policy.name, ())}
        blocked = violations(dontschedule, metrics, nodes) if dontschedule else {}
        evaluations[key] = (found, blocked, held)
        for node in found:
            wanted.setdefault(node, {})[policy.name] = VIOLATING
        for node, labels in labeling_labels(policy, metrics, nodes).items():
            for label_key, value in labels.items():
                wanted.setdefault(node, {}).setdefault(label_key, value)
    return evaluations, wanted


@settings(max_examples=300, deadline=None)
@given(
    chosen=policies(),
    view=metric_views(),
    node_view=st.lists(st.sampled_from(NODE_NAMES[:10]), unique=True),
    labelled_nodes=st.lists(st.sampled_from(NODE_NAMES[:10]), unique=True),
    share=st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]),
)
def test_the_desired_state_equals_each_policy_evaluated_on_its_own(
    chosen: dict[PolicyKey, TASPolicy],
    view: MetricColumns,
    node_view: list[str],
    labelled_nodes: list[str],
    share: float,
) -> None:
    nodes = frozenset(NodeName(n) for n in node_view)
    marked = frozenset(map(NodeName, labelled_nodes))
    labelled: dict[str, frozenset[NodeName]] = {p.name: marked for p in chosen.values()}
    state = compute_desired(chosen, view, nodes, labelled=labelled, max_violating_share=share)
    evaluations, wanted = _reference(chosen, view, nodes, labelled, share)
    assert {k: dict(v) for k, v in state.node_labels.items()} == wanted
    assert list(state.evaluations) == sorted(chosen)
    for key, evaluation in state.evaluations.items():
        found, blocked, held = evaluations[key]
        assert dict(evaluation.deschedule.items()) == found
        assert dict(evaluation.dontschedule.items()) == blocked
        assert evaluation.held == held
        assert set(evaluation.deschedule) == set(found)
        assert all(node in evaluation.deschedule for node in found)


class CountingColumn(dict[NodeName, float]):
    """A real column that counts the values read by iterating it (items or keys)."""

    reads = 0

    def items(self) -> Iterator[tuple[NodeName, float]]:  # type: ignore[override]
        for item in super().items():
            self.reads += 1
            yield item

    def __iter__(self) -> Iterator[NodeName]:
        for node in super().__iter__():
            self.reads += 1
            yield node


def test_a_cycle_reads_each_metric_once_however_many_rules_read_it() -> None:
    names = [NodeName(f"node-{i:03d}") for i in range(200)]
    # 1% of the nodes above 99: each policy violates on a couple of nodes, far below the share.
    column = CountingColumn(
        {n: 99.5 if i % 100 == 0 else float(i % 90) for i, n in enumerate(names)}
    )
    chosen = [
        make_policy(
            f"p{i}",
            deschedule=[rule("load", "GreaterThan", 99 - i / 100)],
            labeling=[rule("load", "GreaterThan", 98 + i / 100, labels=["hot=yes"])],
        )
        for i in range(20)
    ]
    state = compute_desired({p.key: p for p in chosen}, {MetricName("load"): column}, set(names))
    assert all(set(e.deschedule) == {names[0], names[100]} for e in state.evaluations.values())
    assert all(e.held is None for e in state.evaluations.values())
    # One pass for 40 rules, and each breaker check a handful of values: not 40 passes.
    assert column.reads <= len(column) + 20 * 10
