"""The hindsight placement (issue 46): an achievable reference with no moves, beside the limit.

Covered:
- pods are indivisible: where the fluid limit spreads demand over two nodes, whole pods
  overload one of them, and the hindsight loses that;
- a pod goes only where its constraints allow (node selector, taints): demand pinned to a
  node it overloads is lost even while another node is idle, and a pod no node tolerates
  never runs;
- a pod whose node leaves is recreated at once and placed again, losing only its start-up; one
  whose node fails is recreated when the taint manager deletes it (a StatefulSet's never is),
  as the world does for every contender; the fluid limit stays below it there too;
- the fluid limit is never above it, on work lost nor on stall + work lost, on several seeds
  of named scenarios and of scenarios drawn from the default family;
- it is deterministic per seed, and runs as a reference job beside the limit;
- `something_to_gain`: the scenarios the hindsight share of the gain is given over (requests'
  mean at least 1 unit above the hindsight's).
"""

from __future__ import annotations

from typing import Any

import pytest

from tas_simulator.contenders import CONTENDERS
from tas_simulator.family import FAMILIES, draw_scenario, load_family
from tas_simulator.hindsight import hindsight_placement
from tas_simulator.jobs import HINDSIGHT, LIMIT, REFERENCES, Job, run_job
from tas_simulator.limit import fluid_limit
from tas_simulator.scenario import Scenario, load_scenario, read_scenario
from tas_simulator.seeds import something_to_gain
from tests.tas_simulator.worlds import fluid_pair

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
    return fluid_pair(workloads=workloads, name="hindsight", **changes)


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


def _one_per_node(kind: str = "ReplicaSet") -> dict[str, Any]:
    """Two pods of 3 cores that request 3 cores each: one per 4-core node, none beside another."""
    workload = _workload("big", 2, 3.0, kind=kind)
    workload["requests"] = {"cpu": "3", "memory": "64Mi"}
    return workload


def _node(name: str) -> dict[str, Any]:
    return {"name": name, "cpu": 4, "memory": "16Gi"}


def test_a_pod_whose_node_leaves_is_placed_again_losing_only_its_start_up() -> None:
    # Node b leaves at 5m as node c joins. Its pod is recreated at once (as every contender's
    # is) and runs on c after its 30 s start-up: 3 cores x 30 s. Without re-placing it, its
    # demand was lost for the rest of the run, or (better) it waited for c from the start.
    events = [{"at": "5m", "add-nodes": _node("c")}, {"at": "5m", "remove-nodes": {"nodes": ["b"]}}]
    scenario = _scenario([_one_per_node()], events=events)
    assert _lost(hindsight_placement(scenario, seed=3)) == pytest.approx(3.0 * 30)
    _assert_limit_not_above(scenario, 3)


@pytest.mark.parametrize(
    ("kind", "lost_seconds"),
    [
        # b fails at 3m; its pod is deleted 50 s + 300 s later and runs on c (joined at 8m)
        # 30 s after that: lost from 3m to 9m20s.
        pytest.param("ReplicaSet", 380.0, id="recreated-when-the-taint-manager-deletes-it"),
        # A StatefulSet's pod stays on the failed node: better to wait for c from the start
        # (lost from the warm-up's end to 8m30s).
        pytest.param("StatefulSet", 450.0, id="a-statefulset-pod-never-is"),
    ],
)
def test_a_pod_whose_node_fails_is_placed_again_when_kubernetes_recreates_it(
    kind: str, lost_seconds: float
) -> None:
    fail = {"nodes": ["b"], "value": 2, "effect": {"fail-after": "1m"}}
    events = [{"at": "2m", "set-health": fail}, {"at": "8m", "add-nodes": _node("c")}]
    scenario = _scenario([_one_per_node(kind)], events=events, duration="20m")
    assert _lost(hindsight_placement(scenario, seed=3)) == pytest.approx(3.0 * lost_seconds)
    _assert_limit_not_above(scenario, 3)


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
        pytest.param(10.0, 2.0, True, id="clear"),
        # Requests' spread over the seeds does not matter: a filter on it dropped scenarios
        # where a contender beat requests on every seed.
        pytest.param(10.0, 5.0, True, id="noisy-requests-still-counts"),
        pytest.param(2.5, 2.0, False, id="tiny"),
        pytest.param(3.0, 2.0, True, id="one-unit"),
    ],
)
def test_something_to_gain_is_a_gain_of_at_least_one_unit(
    baseline: float, reference: float, expected: bool
) -> None:
    assert something_to_gain(baseline, reference) is expected
