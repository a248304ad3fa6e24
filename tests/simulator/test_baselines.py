"""The baselines act when their documented thresholds are crossed (simulator.contenders,
simulator.baselines), through the real scenario loader and the real runner.

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

from typing import Any

import pytest

from descheduler.args import FieldReader
from descheduler.cycle import Descheduler
from descheduler.framework import Result
from simulator.baselines import parse_args as parse_volcano_args
from simulator.contenders import Contender, resolve
from simulator.runner import run_contender
from simulator.scenario import Scenario, load_scenario_text

HOT = {"worker-1", "worker-2"}

# Six 8-core, 32Gi nodes; four are tainted NoSchedule while twelve pods arrive, so all twelve
# land on worker-1 and worker-2 (six each). The taint goes at 1m; the first descheduling cycle
# comes at 2m. Per hot node: requests 6 x 1 core = 75% CPU (> 50), 6 x 3Gi = 56% memory
# (> 40), 6 of 110 pods; usage 6 x 1.2 cores = 90% CPU (> 80), 6 x 512Mi = 9% memory. The four
# others are empty: 0% of everything, under every low threshold of both baselines. Every
# baseline runs at the scenario's 2m here (its shipped cadence would come after the end).
SKEWED = """
name: baseline-thresholds
duration: 6m
step: 5s
seed: 1
warmup: 1m
startupDelay: 10s
syncPeriod: 10s
deschedulingInterval: 2m
metrics: {{scrapeInterval: 15s, window: 1m, delay: {delay}}}
nodes:
  - {{name: "worker-{{i}}", count: 6, cpu: 8, memory: 32Gi}}
contenders:
  requests-lnu: {{deschedulingInterval: 2m}}
  psi-profile: {{deschedulingInterval: 2m}}
  volcano-loadaware: {{deschedulingInterval: 2m}}
  tas: {{deschedulingInterval: 2m}}
workloads:
  - name: hot
    replicas: 12
    requests: {{cpu: "1", memory: 3Gi}}
    labels: {{app: hot}}
    usage:
      cpu: {{profile: steady, value: "1.2"}}
      memory: {{profile: steady, value: 512Mi}}
events:
  - at: 0s
    taint:
      nodes: [worker-3, worker-4, worker-5, worker-6]
      key: maintenance
      value: "true"
      effect: NoSchedule
  - at: 1m
    untaint: {{nodes: [worker-3, worker-4, worker-5, worker-6], key: maintenance}}
"""

# The same pods and usage spread over all six nodes from the start: 2 pods a node, 25% CPU
# requested, 30% CPU used; no node is over any target, so nothing is to be done.
EVEN = """
name: baseline-even
duration: 6m
step: 5s
seed: 1
warmup: 1m
startupDelay: 10s
syncPeriod: 10s
deschedulingInterval: 2m
metrics: {scrapeInterval: 15s, window: 1m, delay: 15s}
contenders:
  requests-lnu: {deschedulingInterval: 2m}
  psi-profile: {deschedulingInterval: 2m}
  volcano-loadaware: {deschedulingInterval: 2m}
  tas: {deschedulingInterval: 2m}
nodes:
  - {name: "worker-{i}", count: 6, cpu: 8, memory: 32Gi}
workloads:
  - name: hot
    replicas: 12
    requests: {cpu: "1", memory: 3Gi}
    labels: {app: hot}
    usage:
      cpu: {profile: steady, value: "1.2"}
      memory: {profile: steady, value: 512Mi}
"""


def _contender(name: str, scenario: Scenario) -> Contender:
    found = resolve(name, scenario.contenders.get(name))
    assert isinstance(found, Contender), found
    return found


@pytest.fixture
def evicted_from(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(node, strategy) of every eviction the real descheduler cycles make."""
    found: list[tuple[str, str]] = []
    original = Descheduler.run_cycle

    def spy(self: Descheduler, *args: Any, **kwargs: Any) -> Any:
        report = original(self, *args, **kwargs)
        found.extend(
            (str(d.node), d.strategy) for d in report.decisions if d.result == Result.EVICTED
        )
        return report

    monkeypatch.setattr(Descheduler, "run_cycle", spy)
    return found


def _evictions(scenario: Scenario, contender: str) -> int:
    result = run_contender(scenario, _contender(contender, scenario), seed=scenario.seed)
    return len(result.eviction_times)


def test_requests_lnu_evicts_from_nodes_over_its_targets(
    evicted_from: list[tuple[str, str]],
) -> None:
    scenario = load_scenario_text(SKEWED.format(delay="15s"))
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
    scenario = load_scenario_text(SKEWED.format(delay=delay))
    assert _evictions(scenario, "volcano-loadaware") > 0
    assert evicted_from
    assert {node for node, _ in evicted_from} <= HOT
    assert {strategy for _, strategy in evicted_from} == {"LoadAware"}


@pytest.mark.parametrize("scenario_text", [SKEWED.format(delay="15s"), EVEN])
def test_requests_never_evicts(evicted_from: list[tuple[str, str]], scenario_text: str) -> None:
    assert _evictions(load_scenario_text(scenario_text), "requests") == 0
    assert evicted_from == []


@pytest.mark.parametrize("contender", ["requests-lnu", "volcano-loadaware"])
def test_no_baseline_evicts_when_no_node_is_over_its_targets(
    evicted_from: list[tuple[str, str]], contender: str
) -> None:
    assert _evictions(load_scenario_text(EVEN), contender) == 0
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
