"""The baselines act when their documented thresholds are crossed (tas_simulator.contenders,
tas_simulator.baselines), through the real scenario loader and the real runner.

Covered:
- `requests-lnu` (upstream LowNodeUtilization on requests, the OpenShift docs' thresholds cpu
  10 -> 50, memory 20 -> 40, pods 30 -> 60, numberOfNodes 3): with four nodes empty (under
  every low threshold) and two whose requests are over 50% CPU and 40% memory, it evicts from
  those two, and `requests` (no descheduler) evicts nothing;
- `volcano-loadaware` (Volcano LoadAware on real utilization, cpu 30 / memory 30 ->
  cpu 80 / memory 85, nodeFit on): with four idle nodes and two whose measured CPU is about
  90%, it evicts from those two, also when the metrics pipeline lags by more than a sync
  period (the shipped scenarios' delay and scrape interval), and `requests` evicts nothing;
- the same scenario with the load spread evenly (no node over its target) makes neither evict.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from descheduler.args import FieldReader
from tas_simulator.baselines import parse_args as parse_volcano_args
from tas_simulator.runner import run_contender
from tas_simulator.scenario import Scenario
from tests.tas_simulator import worlds

HOT = {"worker-1", "worker-2"}

#: Every baseline here runs at 2m (its shipped cadence would come after the end).
CONTENDERS = ["requests-lnu", "psi-profile", "volcano-loadaware", "tas"]


def skewed(delay: str = "15s") -> Scenario:
    """The hot pair (tests/tas_simulator/worlds.py): requests 75% CPU and 56% memory (over every
    baseline's high targets) and 90% CPU used on worker-1 and worker-2, the four others empty
    (under every low threshold); the first descheduling cycle comes at 2m."""
    return worlds.scenario(
        worlds.hot_pair(
            name="baseline-thresholds", duration="6m", contenders=CONTENDERS, delay=delay
        )
    )


def even() -> Scenario:
    """The same pods and usage spread over all six nodes from the start: 2 pods a node, 25% CPU
    requested, 30% CPU used; no node is over any target, so nothing is to be done."""
    return worlds.scenario(
        worlds.hot_pair(name="baseline-even", duration="6m", contenders=CONTENDERS, spread=True)
    )


@pytest.fixture
def evicted_from(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(node, strategy) of every eviction the real descheduler cycles make."""
    return worlds.spy_evictions(monkeypatch, lambda d: (str(d.node), d.strategy))


def _evictions(scenario: Scenario, contender: str) -> int:
    result = run_contender(scenario, worlds.contender(contender, scenario), seed=scenario.seed)
    return len(result.eviction_times)


def test_requests_lnu_evicts_from_nodes_over_its_targets(
    evicted_from: list[tuple[str, str]],
) -> None:
    scenario = skewed()
    assert _evictions(scenario, "requests-lnu") > 0
    assert evicted_from
    assert {node for node, _ in evicted_from} <= HOT
    assert {strategy for _, strategy in evicted_from} == {"LowNodeUtilization"}


@pytest.mark.parametrize("delay", ["0s", "15s", "30s"])
def test_volcano_evicts_from_nodes_over_its_utilization_targets(
    evicted_from: list[tuple[str, str]], delay: str
) -> None:
    # A delay of at least a sync period (10s) is what every shipped scenario but two uses; the
    # values must still reach the plugin (they are the latest answer of its query).
    scenario = skewed(delay)
    assert _evictions(scenario, "volcano-loadaware") > 0
    assert evicted_from
    assert {node for node, _ in evicted_from} <= HOT
    assert {strategy for _, strategy in evicted_from} == {"LoadAware"}


@pytest.mark.parametrize(
    "world", [pytest.param(skewed, id="skewed"), pytest.param(even, id="even")]
)
def test_requests_never_evicts(
    evicted_from: list[tuple[str, str]], world: Callable[[], Scenario]
) -> None:
    assert _evictions(world(), "requests") == 0
    assert evicted_from == []


@pytest.mark.parametrize("contender", ["requests-lnu", "volcano-loadaware"])
def test_no_baseline_evicts_when_no_node_is_over_its_targets(
    evicted_from: list[tuple[str, str]], contender: str
) -> None:
    assert _evictions(even(), contender) == 0
    assert evicted_from == []


def test_volcano_takes_targets_above_100_as_volcano_does_and_refuses_negatives_and_unknowns() -> (
    None
):
    problems: list[str] = []
    args = parse_volcano_args(
        FieldReader(
            {
                "thresholds": {"cpu": 10},
                "targetThresholds": {"cpu": 120, "memory": -1, "gpu": 50},
            },
            "args",
            problems,
        )
    )
    assert args.thresholds == {"cpu": 10.0}
    assert args.target_thresholds == {"cpu": 120.0}
    assert problems == [
        "args.targetThresholds.memory: must be a percentage of 0 or more, got -1",
        "args.targetThresholds.gpu: unknown resource 'gpu'; known: cpu, memory, pods",
    ]
