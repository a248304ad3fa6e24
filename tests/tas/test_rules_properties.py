"""Properties of the rule engine that hold for any policy, metric values and node list.

Covered:
- scores are integers in 0..10, exactly one per candidate, in both modes;
- a node that violates under allOf also violates under anyOf (same rules);
- filter output is a subset of the input, in input order, and every removed node has a reason;
- nodes without any metric value are never removed and never violate;
- proportional scores respect the metric order (a better value never scores lower);
- columns narrowed for a set of rules (`narrow_columns`) give every one of those rules exactly
  the violations the full columns give, over any node list or none, and `violation_map` equals
  `violations`, hits included.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tas.policies.model import Operator, StrategyName
from tas.rules import (
    ScoreMode,
    filter_nodes,
    narrow_columns,
    score_nodes,
    violation_map,
    violations,
)
from tas.types import MetricColumns, MetricName, NodeName
from tests.builders import make_policy, rule

METRICS = ["m0", "m1", "m2"]
TAS_OPERATORS = ["Equals", "LessThan", "GreaterThan"]
ALL_OPERATORS = [o.value for o in Operator]

node_names = st.lists(
    st.sampled_from([f"node-{i}" for i in range(30)]), min_size=0, max_size=30, unique=True
)
values = st.one_of(st.integers(-5, 5).map(float), st.floats(-10, 10, allow_nan=False))
rules = st.lists(
    st.builds(rule, st.sampled_from(METRICS), st.sampled_from(ALL_OPERATORS), st.integers(-5, 5)),
    min_size=1,
    max_size=4,
)


@st.composite
def metric_views(draw: st.DrawFn) -> MetricColumns:
    nodes = [f"node-{i}" for i in range(30)]
    view: dict[MetricName, dict[NodeName, float]] = {}
    for metric in METRICS:
        present = draw(st.lists(st.sampled_from(nodes), unique=True, max_size=30))
        view[MetricName(metric)] = {NodeName(n): draw(values) for n in present}
    return view


@given(
    operator=st.sampled_from(TAS_OPERATORS),
    mode=st.sampled_from(list(ScoreMode)),
    view=metric_views(),
    candidates=node_names,
)
def test_scores_are_in_range_and_one_per_candidate(
    operator: str, mode: ScoreMode, view: MetricColumns, candidates: list[str]
) -> None:
    policy = make_policy(scheduleonmetric=[rule("m0", operator)])
    scores = score_nodes(policy, view, [NodeName(c) for c in candidates], mode=mode)
    assert list(scores) == candidates
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in scores.values())


@given(rule_list=rules, view=metric_views(), candidates=node_names)
def test_all_of_violation_implies_any_of_violation(
    rule_list: list[dict[str, Any]], view: MetricColumns, candidates: list[str]
) -> None:
    nodes = [NodeName(c) for c in candidates]
    any_of = make_policy(dontschedule=("anyOf", rule_list)).strategies[StrategyName.DONTSCHEDULE]
    all_of = make_policy(dontschedule=("allOf", rule_list)).strategies[StrategyName.DONTSCHEDULE]
    assert set(violations(all_of, view, nodes)) <= set(violations(any_of, view, nodes))


@given(
    rule_list=rules,
    view=metric_views(),
    candidates=node_names,
    logical=st.sampled_from(["anyOf", "allOf"]),
)
def test_filter_output_is_an_ordered_subset_and_every_removed_node_has_a_reason(
    rule_list: list[dict[str, Any]], view: MetricColumns, candidates: list[str], logical: str
) -> None:
    policy = make_policy("p", dontschedule=(logical, rule_list))
    nodes = [NodeName(c) for c in candidates]
    decision = filter_nodes(policy, view, nodes)
    assert list(decision.passed) == [n for n in nodes if n not in decision.failed]
    assert set(decision.failed) <= set(nodes)
    assert all(
        reason.startswith("p: ") and "value" in reason for reason in decision.failed.values()
    )
    for node in decision.failed:
        assert any(node in column for column in view.values())


@given(view=metric_views(), candidates=node_names, higher=st.booleans())
def test_a_better_value_never_scores_lower(
    view: MetricColumns, candidates: list[str], higher: bool
) -> None:
    policy = make_policy(scheduleonmetric=[rule("m0", "GreaterThan" if higher else "LessThan")])
    scores = score_nodes(policy, view, [NodeName(c) for c in candidates])
    column = view[MetricName("m0")]
    valued = [n for n in scores if n in column]
    for a in valued:
        for b in valued:
            better = column[a] > column[b] if higher else column[a] < column[b]
            if better:
                assert scores[a] >= scores[b]


@given(
    rule_lists=st.lists(rules, min_size=1, max_size=4),
    view=metric_views(),
    candidates=st.one_of(st.none(), node_names),
    logical=st.sampled_from(["anyOf", "allOf"]),
)
def test_narrowed_columns_give_the_narrowing_rules_the_same_violations(
    rule_lists: list[list[dict[str, Any]]],
    view: MetricColumns,
    candidates: list[str] | None,
    logical: str,
) -> None:
    nodes = None if candidates is None else [NodeName(c) for c in candidates]
    strategies = [
        make_policy(dontschedule=(logical, rule_list)).strategies[StrategyName.DONTSCHEDULE]
        for rule_list in rule_lists
    ]
    narrowed = narrow_columns(view, [r for s in strategies for r in s.rules], nodes)
    for strategy in strategies:
        expected = violations(strategy, view, nodes)
        assert violations(strategy, narrowed) == expected
        found = violation_map(strategy, narrowed)
        assert found == expected
        assert len(found) == len(expected)
        assert all(found[node] == hits for node, hits in expected.items())
