"""The rule engine, as the spec's tables state it.

Covered:
- each operator true and false, including the extension operators and float targets;
- anyOf vs allOf with one and two rules and with a missing metric (the spec's matrix);
- filter reasons and order; a policy without dontschedule passes everything;
- proportional and rank scores: ties, more than 11 nodes (never negative), nodes without values,
  Equals (no preference), a policy without scheduleonmetric;
- deschedule violations for violating and recovered nodes;
- labeling: max / min / first wins, allOf, label keys under the policy's prefix.
"""

from __future__ import annotations

import pytest

from tas.rules import (
    ScoreMode,
    deschedule_violations,
    filter_nodes,
    labeling_labels,
    rule_is_true,
    score_nodes,
    violations,
)
from tas.types import NodeName
from tests.builders import make_policy, metrics, nodes, rule


@pytest.mark.parametrize(
    ("operator", "target", "value", "expected"),
    [
        pytest.param("Equals", 1, 1, True, id="equals-true"),
        pytest.param("Equals", 1, 2, False, id="equals-false"),
        pytest.param("LessThan", 5, 4, True, id="lessthan-true"),
        pytest.param("LessThan", 5, 5, False, id="lessthan-false-at-target"),
        pytest.param("GreaterThan", 5, 6, True, id="greaterthan-true"),
        pytest.param("GreaterThan", 5, 5, False, id="greaterthan-false-at-target"),
        pytest.param("GreaterOrEqual", 5, 5, True, id="greaterorequal-true-at-target"),
        pytest.param("LessOrEqual", 5, 6, False, id="lessorequal-false"),
        pytest.param("NotEquals", 5, 6, True, id="notequals-true"),
        pytest.param("GreaterThan", "0.5", 0.6, True, id="float-target-as-string"),
        pytest.param("LessThan", "500m", 0.4, True, id="quantity-target"),
    ],
)
def test_each_operator_compares_value_against_target(
    operator: str, target: object, value: float, expected: bool
) -> None:
    policy = make_policy(dontschedule=[rule("m", operator, target)])
    (only_rule,) = policy.strategies["dontschedule"].rules  # type: ignore[index]
    assert rule_is_true(only_rule, value) is expected


A_EQ_1 = rule("a", "Equals", 1)
B_EQ_1 = rule("b", "Equals", 1)


@pytest.mark.parametrize(
    ("logical", "rules", "values", "violates"),
    [
        pytest.param("anyOf", [A_EQ_1], {"a": 1}, True, id="anyOf-one-rule-true"),
        pytest.param("anyOf", [A_EQ_1], {"a": 0}, False, id="anyOf-one-rule-false"),
        pytest.param("anyOf", [A_EQ_1], {}, False, id="anyOf-one-rule-missing"),
        pytest.param("anyOf", [A_EQ_1, B_EQ_1], {"a": 1, "b": 0}, True, id="anyOf-one-of-two"),
        pytest.param("anyOf", [A_EQ_1, B_EQ_1], {"a": 0, "b": 0}, False, id="anyOf-none-of-two"),
        pytest.param("anyOf", [A_EQ_1, B_EQ_1], {"a": 1}, True, id="anyOf-true-and-missing"),
        pytest.param("allOf", [A_EQ_1], {"a": 1}, True, id="allOf-one-rule-true"),
        pytest.param("allOf", [A_EQ_1, B_EQ_1], {"a": 1, "b": 1}, True, id="allOf-both-true"),
        pytest.param("allOf", [A_EQ_1, B_EQ_1], {"a": 1, "b": 0}, False, id="allOf-one-false"),
        pytest.param("allOf", [A_EQ_1, B_EQ_1], {"a": 1}, False, id="allOf-true-and-missing"),
        pytest.param("", [A_EQ_1, B_EQ_1], {"b": 1}, True, id="empty-operator-means-anyOf"),
    ],
)
def test_violation_matrix_of_the_spec(
    logical: str, rules: list[dict[str, object]], values: dict[str, float], violates: bool
) -> None:
    policy = make_policy(dontschedule=(logical, rules))
    view = metrics({metric: {"n": value} for metric, value in values.items()})
    found = violations(policy.strategies["dontschedule"], view, nodes("n"))  # type: ignore[index]
    assert ("n" in found) is violates


def test_filter_removes_violating_nodes_with_a_reason_and_keeps_request_order() -> None:
    policy = make_policy(
        "demo-policy",
        dontschedule=[rule("health_metric", "Equals", 1), rule("health_metric", "Equals", 2)],
    )
    view = metrics({"health_metric": {"c": 0, "b": 2, "a": 1, "d": 0}})
    decision = filter_nodes(policy, view, nodes("d", "c", "b", "a", "e"))
    assert decision.passed == ("d", "c", "e")
    assert decision.failed == {
        "b": "demo-policy: health_metric Equals 2 (value 2)",
        "a": "demo-policy: health_metric Equals 1 (value 1)",
    }


def test_filter_without_dontschedule_passes_every_node() -> None:
    policy = make_policy(scheduleonmetric=[rule("m", "LessThan")])
    decision = filter_nodes(policy, metrics({"m": {"a": 1}}), nodes("a", "b"))
    assert decision.passed == ("a", "b")
    assert decision.failed == {}


def test_filter_never_returns_a_node_that_was_not_a_candidate() -> None:
    policy = make_policy(dontschedule=[rule("m", "Equals", 1)])
    decision = filter_nodes(policy, metrics({"m": {"a": 0, "x": 0, "y": 1}}), nodes("a", "y"))
    assert decision.passed == ("a",)
    assert set(decision.failed) == {"y"}


def scores(
    operator: str, values: dict[str, float], candidates: list[str], mode: ScoreMode
) -> dict[str, int]:
    policy = make_policy(scheduleonmetric=[rule("m", operator)])
    return score_nodes(policy, metrics({"m": values}), nodes(*candidates), mode=mode)


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        pytest.param(
            "LessThan", {"a": 0, "b": 1, "c": 0}, {"a": 10, "b": 0, "c": 10}, id="lessthan"
        ),
        pytest.param(
            "GreaterThan", {"a": 0, "b": 10, "c": 5}, {"a": 0, "b": 10, "c": 5}, id="greaterthan"
        ),
        pytest.param(
            "GreaterThan", {"a": 0, "b": 4, "c": 3}, {"a": 0, "b": 10, "c": 8}, id="rounded-half-up"
        ),
        pytest.param("LessThan", {"a": 7, "b": 7}, {"a": 10, "b": 10, "c": 0}, id="all-equal"),
        pytest.param(
            "Equals", {"a": 1, "b": 9}, {"a": 10, "b": 10, "c": 0}, id="equals-has-no-preference"
        ),
        pytest.param("GreaterThan", {"a": 5}, {"a": 10, "b": 0, "c": 0}, id="no-value-scores-zero"),
    ],
)
def test_proportional_scores(
    operator: str, values: dict[str, float], expected: dict[str, int]
) -> None:
    assert scores(operator, values, ["a", "b", "c"], ScoreMode.PROPORTIONAL) == expected


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        pytest.param(
            "GreaterThan", {"a": 3, "b": 2, "c": 1}, {"a": 10, "b": 9, "c": 8}, id="tas-order"
        ),
        pytest.param(
            "LessThan", {"a": 3, "b": 2, "c": 1}, {"a": 8, "b": 9, "c": 10}, id="lessthan"
        ),
        pytest.param(
            "GreaterThan", {"a": 3, "b": 3, "c": 1}, {"a": 10, "b": 10, "c": 8}, id="ties-equal"
        ),
        pytest.param(
            "Equals", {"a": 3, "b": 1}, {"a": 10, "b": 10, "c": 0}, id="equals-and-missing"
        ),
    ],
)
def test_rank_scores(operator: str, values: dict[str, float], expected: dict[str, int]) -> None:
    assert scores(operator, values, ["a", "b", "c"], ScoreMode.RANK) == expected


def test_rank_scores_never_go_negative_beyond_eleven_nodes() -> None:
    names = [f"n{i}" for i in range(15)]
    result = scores(
        "GreaterThan", {n: float(i) for i, n in enumerate(names)}, names, ScoreMode.RANK
    )
    assert result["n14"] == 10
    assert result["n4"] == 0
    assert min(result.values()) == 0


@pytest.mark.parametrize(
    ("mode", "operator", "values", "typical"),
    [
        pytest.param(ScoreMode.PROPORTIONAL, "GreaterThan", {"a": 0, "b": 10, "c": 4}, 4, id="p"),
        pytest.param(ScoreMode.RANK, "GreaterThan", {"a": 0, "b": 10, "c": 4}, 9, id="rank"),
        pytest.param(ScoreMode.PROPORTIONAL, "LessThan", {"a": 0, "b": 0, "c": 0}, 10, id="equal"),
        # Two valued nodes: the lower middle, never the better one.
        pytest.param(ScoreMode.PROPORTIONAL, "LessThan", {"a": 0, "b": 1}, 0, id="lower-middle"),
    ],
)
def test_a_newcomer_without_a_value_scores_as_a_typical_node(
    mode: ScoreMode, operator: str, values: dict[str, float], typical: int
) -> None:
    """A node that has not reported yet and runs nothing but recent placements (one that just
    joined, `newcomers`) scores the median of the valued nodes' scores, so the extender's
    weight does not outvote kube-scheduler's own preference for an empty node; a node without
    a value that runs older pods still scores 0 (nothing is known about them)."""
    policy = make_policy(scheduleonmetric=[rule("m", operator)])
    candidates = [*values, "joined", "silent"]
    found = score_nodes(
        policy,
        metrics({"m": values}),
        nodes(*candidates),
        mode=mode,
        newcomers=frozenset({NodeName("joined")}),
    )
    assert found["joined"] == typical
    assert found["silent"] == 0
    assert {n: found[n] for n in values} == scores(operator, values, list(values), mode)


def test_a_newcomer_scores_0_where_no_node_has_a_value() -> None:
    """An outage of the metric: nothing is typical, every node scores alike."""
    policy = make_policy(scheduleonmetric=[rule("m", "LessThan")])
    found = score_nodes(policy, metrics({}), nodes("a", "joined"), newcomers={NodeName("joined")})
    assert found == {"a": 0, "joined": 0}


def test_policy_without_scheduleonmetric_scores_every_candidate_equally() -> None:
    policy = make_policy(dontschedule=[rule("m", "Equals", 1)])
    result = score_nodes(policy, metrics({"m": {"a": 1}}), nodes("a", "b"))
    assert result == {"a": 0, "b": 0}


def test_only_the_first_scheduleonmetric_rule_counts() -> None:
    policy = make_policy(scheduleonmetric=[rule("m", "GreaterThan", 99), rule("z", "LessThan")])
    result = score_nodes(
        policy, metrics({"m": {"a": 1, "b": 2}, "z": {"a": 0, "b": 9}}), nodes("a", "b")
    )
    assert result == {"a": 0, "b": 10}


def test_deschedule_violation_appears_and_clears_with_the_metric() -> None:
    policy = make_policy("demo-policy", deschedule=[rule("health_metric", "Equals", 2)])
    violating = deschedule_violations(policy, metrics({"health_metric": {"a": 0, "c": 2}}))
    assert set(violating) == {"c"}
    recovered = deschedule_violations(policy, metrics({"health_metric": {"a": 0, "c": 0}}))
    assert recovered == {}


def test_deschedule_without_the_strategy_violates_nowhere() -> None:
    policy = make_policy(dontschedule=[rule("m", "Equals", 2)])
    assert deschedule_violations(policy, metrics({"m": {"a": 2}})) == {}


KEY = "telemetry.aware.scheduling.card-policy/"


@pytest.mark.parametrize(
    ("rules", "values", "expected"),
    [
        pytest.param(
            [
                rule("t0", "GreaterThan", 80, ["gpu-card0=hot"]),
                rule("t1", "GreaterThan", 80, ["gpu-card1=hot"]),
            ],
            {"t0": 90, "t1": 70},
            {KEY + "gpu-card0": "hot"},
            id="independent-keys",
        ),
        pytest.param(
            [
                rule("t0", "GreaterThan", 80, ["hot=card0"]),
                rule("t1", "GreaterThan", 80, ["hot=card1"]),
            ],
            {"t0": 85, "t1": 95},
            {KEY + "hot": "card1"},
            id="greaterthan-largest-value-wins",
        ),
        pytest.param(
            [
                rule("f0", "LessThan", 10, ["cold=card0"]),
                rule("f1", "LessThan", 10, ["cold=card1"]),
            ],
            {"f0": 3, "f1": 5},
            {KEY + "cold": "card0"},
            id="lessthan-smallest-value-wins",
        ),
        pytest.param(
            [rule("e0", "Equals", 1, ["state=zero"]), rule("e1", "Equals", 1, ["state=one"])],
            {"e0": 1, "e1": 1},
            {KEY + "state": "zero"},
            id="equals-first-rule-wins",
        ),
        pytest.param(
            [
                rule("t0", "GreaterThan", 80, ["hot=card0"]),
                rule("t1", "GreaterThan", 80, ["hot=card1"]),
            ],
            {"t0": 90, "t1": 90},
            {KEY + "hot": "card0"},
            id="tie-first-rule-wins",
        ),
    ],
)
def test_labeling_resolution(
    rules: list[dict[str, object]], values: dict[str, float], expected: dict[str, str]
) -> None:
    policy = make_policy("card-policy", labeling=rules)
    view = metrics({metric: {"n": value} for metric, value in values.items()})
    assert labeling_labels(policy, view).get("n", {}) == expected


def test_labeling_all_of_labels_only_nodes_where_every_rule_is_true() -> None:
    policy = make_policy(
        "card-policy",
        labeling=(
            "allOf",
            [rule("a", "GreaterThan", 1, ["x=1"]), rule("b", "GreaterThan", 1, ["y=1"])],
        ),
    )
    view = metrics({"a": {"both": 2, "one": 2}, "b": {"both": 2, "one": 0}})
    assert labeling_labels(policy, view) == {"both": {KEY + "x": "1", KEY + "y": "1"}}


def test_labeling_nodes_without_true_rules_want_no_labels() -> None:
    policy = make_policy("card-policy", labeling=[rule("t", "GreaterThan", 80, ["hot=yes"])])
    assert labeling_labels(policy, metrics({"t": {"n": 20}})) == {}
