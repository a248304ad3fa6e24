"""The desired state: which node labels the policies want, computed without any cluster.

Covered:
- deschedule: violating nodes get `<policy>=violating`; anyOf and allOf; a missing metric never
  violates; nodes outside the node view are never labelled;
- labeling: each true rule's labels under `telemetry.aware.scheduling.<policy>/`; when rules
  share a key, GreaterThan keeps the largest value, LessThan the smallest, Equals and ties the
  earliest rule; allOf labels a node only when every rule is true;
- merging several policies: labels of every policy on one node; same-named policies in two
  namespaces share the bare key, and the first policy key wins a shared labeling key;
- `deschedule_keys` names exactly the policies that have a deschedule strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from policy_controller.desired import compute_desired
from tas.policies.model import TASPolicy
from tas.types import NodeName
from tests.builders import make_policy, metrics, rule

NODES = frozenset(NodeName(n) for n in ("A", "B", "C"))
PREFIX = "telemetry.aware.scheduling.p/"


def desired_labels(
    policies: list[TASPolicy],
    values: Mapping[str, Mapping[str, float]],
    nodes: frozenset[NodeName] = NODES,
) -> dict[str, dict[str, str]]:
    state = compute_desired({p.key: p for p in policies}, metrics(values), nodes)
    return {node: dict(labels) for node, labels in state.node_labels.items()}


def test_a_node_violating_deschedule_is_labelled_with_the_bare_policy_name() -> None:
    policy = make_policy("demo-policy", deschedule=[rule("health_metric", "Equals", 2)])
    wanted = desired_labels([policy], {"health_metric": {"A": 0, "B": 1, "C": 2}})
    assert wanted == {"C": {"demo-policy": "violating"}}


def test_all_of_deschedule_needs_every_rule_and_a_missing_metric_never_violates() -> None:
    policy = make_policy(
        "p", deschedule=("allOf", [rule("cpu", "GreaterThan", 80), rule("mem", "GreaterThan", 80)])
    )
    values = {"cpu": {"A": 90, "B": 90, "C": 90}, "mem": {"A": 90, "B": 10}}
    assert desired_labels([policy], values) == {"A": {"p": "violating"}}


def test_nodes_outside_the_node_view_are_never_labelled() -> None:
    policy = make_policy("p", deschedule=[rule("cpu", "GreaterThan", 1)])
    wanted = desired_labels([policy], {"cpu": {"A": 5, "gone": 5}})
    assert wanted == {"A": {"p": "violating"}}


LABELING_CASES = [
    pytest.param(
        [rule("t0", "GreaterThan", 50, ["heat=warm"]), rule("t1", "GreaterThan", 50, ["heat=hot"])],
        {"t0": {"A": 60}, "t1": {"A": 90}},
        {"A": {"heat": "hot"}},
        id="greater-than-largest-value-wins",
    ),
    pytest.param(
        [rule("t0", "GreaterThan", 50, ["heat=warm"]), rule("t1", "GreaterThan", 50, ["heat=hot"])],
        {"t0": {"A": 95}, "t1": {"A": 90}},
        {"A": {"heat": "warm"}},
        id="greater-than-largest-value-wins-even-for-the-first-rule",
    ),
    pytest.param(
        [rule("f0", "LessThan", 10, ["free=low"]), rule("f1", "LessThan", 10, ["free=none"])],
        {"f0": {"A": 5}, "f1": {"A": 1}},
        {"A": {"free": "none"}},
        id="less-than-smallest-value-wins",
    ),
    pytest.param(
        [rule("s", "Equals", 1, ["state=one"]), rule("s2", "Equals", 1, ["state=uno"])],
        {"s": {"A": 1}, "s2": {"A": 1}},
        {"A": {"state": "one"}},
        id="equals-earliest-rule-wins",
    ),
    pytest.param(
        [rule("t0", "GreaterThan", 50, ["heat=warm"]), rule("t1", "GreaterThan", 50, ["heat=hot"])],
        {"t0": {"A": 70}, "t1": {"A": 70}},
        {"A": {"heat": "warm"}},
        id="tie-earliest-rule-wins",
    ),
    pytest.param(
        [
            rule("t0", "GreaterThan", 50, ["card0=hot"]),
            rule("t1", "GreaterThan", 50, ["card1=hot"]),
        ],
        {"t0": {"A": 70, "B": 10}, "t1": {"B": 70}},
        {"A": {"card0": "hot"}, "B": {"card1": "hot"}},
        id="different-keys-each-from-its-own-true-rule",
    ),
    pytest.param(
        ("allOf", [rule("t0", "GreaterThan", 50, ["a=1"]), rule("t1", "GreaterThan", 50, ["b=1"])]),
        {"t0": {"A": 70, "B": 70}, "t1": {"A": 70, "B": 10}},
        {"A": {"a": "1", "b": "1"}},
        id="all-of-labels-only-nodes-where-every-rule-is-true",
    ),
    pytest.param(
        [rule("t0", "GreaterThan", 50, ["a=1"])],
        {"t0": {"A": 50}},
        {},
        id="a-rule-that-is-not-true-writes-nothing",
    ),
]


@pytest.mark.parametrize(("rules", "values", "expected"), LABELING_CASES)
def test_labeling_labels_follow_the_winning_rule(
    rules: Any, values: dict[str, dict[str, float]], expected: dict[str, dict[str, str]]
) -> None:
    policy = make_policy("p", labeling=rules)
    wanted = desired_labels([policy], values)
    assert wanted == {
        node: {PREFIX + key: value for key, value in labels.items()}
        for node, labels in expected.items()
    }


def test_labels_of_several_policies_merge_on_one_node() -> None:
    demo = make_policy("demo", deschedule=[rule("health", "Equals", 2)])
    cards = make_policy("cards", labeling=[rule("temp", "GreaterThan", 80, ["card=hot"])])
    wanted = desired_labels([demo, cards], {"health": {"A": 2}, "temp": {"A": 90, "B": 90}})
    assert wanted == {
        "A": {"demo": "violating", "telemetry.aware.scheduling.cards/card": "hot"},
        "B": {"telemetry.aware.scheduling.cards/card": "hot"},
    }


def test_same_named_policies_in_two_namespaces_share_keys_and_the_first_key_wins() -> None:
    first = make_policy(
        "p",
        namespace="alpha",
        deschedule=[rule("x", "Equals", 1)],
        labeling=[rule("y", "GreaterThan", 0, ["tier=alpha"])],
    )
    second = make_policy(
        "p",
        namespace="beta",
        deschedule=[rule("x", "Equals", 2)],
        labeling=[rule("y", "GreaterThan", 0, ["tier=beta"])],
    )
    values = {"x": {"A": 1, "B": 2}, "y": {"A": 1}}
    for order in ([first, second], [second, first]):
        assert desired_labels(order, values) == {
            "A": {"p": "violating", PREFIX + "tier": "alpha"},
            "B": {"p": "violating"},
        }


def test_deschedule_keys_name_only_policies_with_a_deschedule_strategy() -> None:
    demo = make_policy("demo", deschedule=[rule("h", "Equals", 2)])
    filter_only = make_policy("filter", dontschedule=[rule("h", "Equals", 1)])
    state = compute_desired({p.key: p for p in (demo, filter_only)}, metrics({}), NODES)
    assert state.deschedule_keys == {"demo"}
