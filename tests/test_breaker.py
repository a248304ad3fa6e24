"""The circuit breaker every component applies (`tas.breaker`): when most of the fleet violates
a strategy at once, the metric is taken for broken.

Covered: the share is over nodes that have values for the strategy's metrics (nodes without
values neither count nor dilute); more than the share opens it, exactly the share does not;
small fleets (fewer than MIN_NODES nodes with values) never open it; a share of 1 never opens.
"""

from __future__ import annotations

import pytest

from tas.breaker import MIN_NODES, judge_strategy
from tas.policies.model import StrategyName
from tests.builders import make_policy, metrics, rule


def health_strategy():  # type: ignore[no-untyped-def]
    policy = make_policy("p", dontschedule=[rule("health_metric", "Equals", 2)])
    return policy.strategy(StrategyName.DONTSCHEDULE)


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
