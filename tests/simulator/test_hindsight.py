"""The hindsight placement (issue 46): an achievable reference with no moves, beside the limit.

Covered:
- pods are indivisible: where the fluid limit spreads demand over two nodes, whole pods
  overload one of them, and the hindsight loses that;
- a pod goes only where its constraints allow (node selector, taints): demand pinned to a
  node it overloads is lost even while another node is idle, and a pod no node tolerates
  never runs;
- the fluid limit is never above it, on work lost nor on stall + work lost, on several seeds
  of named scenarios and of scenarios drawn from the default family;
- it is deterministic per seed, and runs as a reference job beside the limit;
- `something_to_gain`: the scenarios the hindsight share of the gain is given over.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.contenders import CONTENDERS
from simulator.family import FAMILIES, draw_scenario, load_family
from simulator.hindsight import hindsight_placement
from simulator.jobs import HINDSIGHT, LIMIT, REFERENCES, Job, run_job
from simulator.limit import fluid_limit
from simulator.scenario import Scenario, load_scenario, read_scenario
from simulator.seeds import something_to_gain
from simulator.stats import Interval
from tests.simulator.test_references import _scenario as _two_nodes

#: Floating-point slack on sums of thousands of steps.
SLACK = 1e-6
#: The minutes after the warm-up in `_scenario`, in seconds.
COUNTED = 540.0


def _workload(name: str, replicas: int, cores: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "usage": {
            "cpu": {"profile": "steady", "value": cores},
            "memory": {"profile": "steady", "value": "100Mi"},
        },
        **extra,
    }


def _scenario(workloads: list[dict[str, Any]], **changes: Any) -> Scenario:
    """The limit's tests' two 4-core nodes, 10-minute run on 10 s steps with a 1-minute
    warm-up, with these workloads."""
    return _two_nodes(workloads=workloads, name="hindsight", **changes)


def _lost(figures: dict[str, Any]) -> float:
    return float(figures["work_lost"]["core_seconds"])


def test_whole_pods_overload_a_node_where_divisible_demand_would_not() -> None:
    # 9 cores of demand in three 3-core pods on 2 x 4 cores: the limit loses 1 core, but two
    # whole pods share a node (6 on 4 cores), so at least 2 cores are lost.
    scenario = _scenario([_workload("thirds", 3, 3.0)])
    assert _lost(fluid_limit(scenario, seed=3)) == pytest.approx(1.0 * COUNTED)
    assert _lost(hindsight_placement(scenario, seed=3)) == pytest.approx(2.0 * COUNTED)


def test_a_pod_goes_only_where_its_node_selector_allows() -> None:
    # 6 cores pinned to node a (4 cores) while node b idles: 2 cores lost, as in the limit.
    scenario = _scenario([_workload("pinned", 3, 2.0, nodeSelector={"zone": "x"})])
    assert _lost(hindsight_placement(scenario, seed=3)) == pytest.approx(2.0 * COUNTED)


def test_a_pod_goes_only_where_its_requests_fit_as_kube_scheduler_counts_them() -> None:
    # Three pods requesting 3 cores each on 2 x 4 cores: kube-scheduler binds two and leaves
    # the third pending, whatever they use; the reference may not place it either.
    requesting = _workload("big", 3, 0.5)
    requesting["requests"] = {"cpu": "3", "memory": "64Mi"}
    figures = hindsight_placement(_scenario([requesting]), seed=3)
    assert _lost(figures) == pytest.approx(0.5 * COUNTED)
    # Requests that fit (1 core each): all three run, nothing lost.
    requesting["requests"] = {"cpu": "1", "memory": "64Mi"}
    assert _lost(hindsight_placement(_scenario([requesting]), seed=3)) == pytest.approx(0.0)


def test_a_degraded_node_serves_only_its_share_of_cores() -> None:
    # 6 cores of demand in three 2-core pods; node a serves a quarter of its 4 cores from the
    # start (a set-health effect): 5 cores served at best, 1 lost, by the limit and by this.
    degrade = {"nodes": ["a"], "value": 2, "effect": {"degrade": 0.25}}
    scenario = _scenario([_workload("pairs", 3, 2.0)], events=[{"at": "0s", "set-health": degrade}])
    assert _lost(fluid_limit(scenario, seed=3)) == pytest.approx(1.0 * COUNTED)
    assert _lost(hindsight_placement(scenario, seed=3)) == pytest.approx(1.0 * COUNTED)


def test_a_pod_no_node_tolerates_never_runs() -> None:
    tainted = [
        {"name": n, "cpu": 4, "memory": "16Gi", "taints": [{"key": "k", "effect": "NoSchedule"}]}
        for n in ("a", "b")
    ]
    scenario = _scenario([_workload("plain", 1, 1.0)], nodes=tainted)
    figures = hindsight_placement(scenario, seed=3)
    assert _lost(figures) == pytest.approx(1.0 * COUNTED)
    assert figures["work_lost"]["share"] == pytest.approx(1.0)
    assert figures["stall"] == 0.0


def _assert_limit_not_above(scenario: Scenario, seed: int) -> None:
    limit = fluid_limit(scenario, seed=seed)
    hindsight = hindsight_placement(scenario, seed=seed)
    where = f"{scenario.name} seed {seed}"
    assert _lost(limit) <= _lost(hindsight) + SLACK, where
    assert limit["stall"] + _lost(limit) <= hindsight["stall"] + _lost(hindsight) + SLACK, where


@pytest.mark.parametrize(
    "name", ["herd", "metric-outage", "psi-skewed", "psi-taint-release", "scale-out"]
)
def test_the_fluid_limit_is_never_above_it_in_named_scenarios(name: str) -> None:
    scenario = load_scenario(name)
    scenario = scenario.with_duration(min(scenario.duration, 1500.0))
    for seed in (1, 2):
        _assert_limit_not_above(scenario, seed)


def test_the_fluid_limit_is_never_above_it_in_drawn_scenarios() -> None:
    family = load_family("default")
    for index in range(6):
        scenario = read_scenario(draw_scenario(family, index), base=FAMILIES)
        for seed in (1, 2):
            _assert_limit_not_above(scenario, seed)


def test_it_is_deterministic_per_seed() -> None:
    scenario = read_scenario(draw_scenario(load_family("default"), 1), base=FAMILIES)
    assert hindsight_placement(scenario, seed=4) == hindsight_placement(scenario, seed=4)


def test_it_runs_as_a_reference_job_beside_the_limit() -> None:
    assert HINDSIGHT in REFERENCES
    assert LIMIT in REFERENCES
    assert HINDSIGHT not in CONTENDERS
    scenario = _scenario([_workload("thirds", 3, 3.0)])
    result = run_job(Job(scenario, HINDSIGHT, 3))
    assert result.figures == hindsight_placement(scenario, seed=3)


@pytest.mark.parametrize(
    ("baseline", "reference", "expected"),
    [
        pytest.param(Interval(10.0, 9.0, 11.0, 3), Interval(2.0, 1.0, 3.0, 3), True, id="clear"),
        pytest.param(Interval(10.0, 2.0, 18.0, 3), Interval(5.0, 4.0, 6.0, 3), False, id="noise"),
        pytest.param(Interval(2.5, 2.5, 2.5, 1), Interval(2.0, 2.0, 2.0, 1), False, id="tiny"),
        pytest.param(Interval(3.0, 3.0, 3.0, 1), Interval(1.0, 1.0, 1.0, 1), True, id="one-seed"),
    ],
)
def test_something_to_gain_is_a_gain_beyond_the_noise(
    baseline: Interval, reference: Interval, expected: bool
) -> None:
    assert something_to_gain(baseline, reference) is expected
