"""The circuit breaker every component applies (`tas.breaker`): when most of the fleet violates
a strategy at once, the metric is taken for broken.

Covered: the share is over nodes that have values for the strategy's metrics (nodes without
values neither count nor dilute); more than the share opens it, exactly the share does not;
small fleets (fewer than MIN_NODES nodes with values) never open it; a share of 1 never opens;
the extender, the policy controller and the descheduler reach the same verdict on the same
values (two of two nodes violating opens none of them; three of four opens all three).
"""

from __future__ import annotations

import pytest

from descheduler.cycle import Mode
from extender.decide import decide_filter
from extender.decisions import Outcome
from extender.wire import PodInfo
from policy_controller.desired import compute_desired
from tas.breaker import MIN_NODES, judge_strategy
from tas.policies.model import Strategy, StrategyName
from tas.policies.store import PolicyStore
from tas.types import Namespace, NodeName
from tas.vocabulary import POLICY_LABEL
from tests.builders import make_policy, metrics, rule
from tests.descheduler.builders import (
    cluster_with,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
)


def health_strategy() -> Strategy:
    policy = make_policy("p", dontschedule=[rule("health_metric", "Equals", 2)])
    strategy = policy.strategy(StrategyName.DONTSCHEDULE)
    assert strategy is not None
    return strategy


@pytest.mark.parametrize(
    ("values", "max_share", "is_open"),
    [
        pytest.param({"a": 2, "b": 2, "c": 2, "d": 0}, 0.5, True, id="3 of 4 violate: open"),
        pytest.param({"a": 2, "b": 2, "c": 0, "d": 0}, 0.5, False, id="exactly half: closed"),
        pytest.param({"a": 2, "b": 0, "c": 0, "d": 0}, 0.5, False, id="one of 4: closed"),
        pytest.param({"a": 2, "b": 2}, 0.5, False, id="a fleet of 2 never opens it"),
        pytest.param({"a": 2, "b": 2, "c": 2}, 0.5, True, id="3 of 3: open"),
        pytest.param({"a": 2, "b": 2, "c": 2, "d": 2}, 1.0, False, id="share 1: never open"),
        pytest.param({"a": 2, "b": 2, "c": 2, "d": 0}, 0.8, False, id="75% under an 80% share"),
    ],
)
def test_the_breaker_opens_on_more_than_the_share_of_nodes_with_values(
    values: dict[str, float], max_share: float, is_open: bool
) -> None:
    verdict = judge_strategy(
        health_strategy(), metrics({"health_metric": values}), max_share=max_share
    )
    assert verdict.open is is_open
    assert verdict.with_values == len(values)


def test_nodes_without_values_do_not_dilute_the_share() -> None:
    columns = metrics({"health_metric": {"a": 2, "b": 2, "c": 2}, "other": {"d": 1, "e": 1}})
    verdict = judge_strategy(health_strategy(), columns)
    assert (verdict.open, verdict.with_values, len(verdict.violating)) == (True, 3, 3)
    assert "3 of 3 nodes with values (100%)" in verdict.describe()
    assert MIN_NODES == 3


@pytest.mark.parametrize(
    ("health", "is_open"),
    [
        pytest.param({"a": 2, "b": 2}, False, id="2 of 2 violate: too few nodes to judge"),
        pytest.param({"a": 2, "b": 2, "c": 2, "d": 0}, True, id="3 of 4 violate: open"),
        pytest.param({"a": 2, "b": 0, "c": 0}, False, id="1 of 3 violates: closed"),
    ],
)
def test_the_extender_the_controller_and_the_descheduler_reach_one_verdict(
    health: dict[str, float], is_open: bool
) -> None:
    policy = make_policy(
        "demo",
        dontschedule=[rule("health_metric", "Equals", 2)],
        deschedule=[rule("health_metric", "Equals", 2)],
    )
    columns = metrics({"health_metric": health})
    names = [NodeName(n) for n in health]
    violating = [n for n in names if health[n] == 2]

    store = PolicyStore()
    store.replace([policy])
    # The extender judges the fleet when dontschedule would remove every candidate.
    decision = decide_filter(
        pod=PodInfo(name="p", namespace=Namespace("default"), labels={POLICY_LABEL: "demo"}),
        candidates=violating,
        snapshot=store.snapshot(),
        metrics=columns,
        now=0.0,
    )
    extender_open = decision.outcome is Outcome.BREAKER_OPEN

    desired = compute_desired({policy.key: policy}, columns, names)
    controller_open = desired.evaluations[policy.key].held is not None

    pods = tuple(
        make_pod(f"pod-{n}", node=n, owner=f"rs-{n}", labels={POLICY_LABEL: "demo"})
        for n in violating
    )
    cluster = cluster_with(*(make_node(n) for n in names), pods=pods)
    config = policy_config("TASViolations", evictor={"nodeFit": False})
    report = make_descheduler(
        cluster,
        config,
        metrics={"health_metric": health},
        policies={policy.key: policy},
        mode=Mode.PREDICTIVE,
    ).run_cycle()
    descheduler_open = report.circuit_breaker is not None

    assert (extender_open, controller_open, descheduler_open) == (is_open, is_open, is_open)
    # While it is closed the descheduler acts on every violating node.
    moved = sorted(d.node or "" for d in report.decisions)
    assert moved == ([] if is_open else sorted(violating))
