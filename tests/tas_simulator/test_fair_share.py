"""The load-balanced fair share of a burst (`tas_simulator.fair_share`), the yardstick of
`herd_ratio_by_load`.

Covered: on equal, equally loaded nodes it is the spec's count-based share; empty nodes that
joined a busy fleet take the burst up to the fleet's level and the rest is spread over all;
node size counts (a 32-core node takes four times an 8-core one's share); a fleet over its
cores still has a level; never below one pod; without pod use the count-based share stands in;
and, as a property, water-filling places exactly the burst and never fills a node above the
level.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas_simulator.fair_share import most_pods_when_balanced


def test_equal_equally_loaded_nodes_get_the_count_based_share() -> None:
    most = most_pods_when_balanced(loads=[3.0] * 10, cores=[8.0] * 10, pod_cpu=0.5, pods=30)
    assert most == pytest.approx(30 / 10)


def test_empty_nodes_that_joined_a_busy_fleet_take_most_of_the_burst() -> None:
    # scale-out's shape: 10 nodes of 8 cores running 5 cores each, 4 empty nodes, 30 pods of
    # 0.9 cores. Empty nodes fill to 5 cores (20 of the 27), the last 7 spread over all 14
    # nodes (112 cores): a level of 77 / 112 of each node's cores.
    loads = [5.0] * 10 + [0.0] * 4
    most = most_pods_when_balanced(loads=loads, cores=[8.0] * 14, pod_cpu=0.9, pods=30)
    assert most == pytest.approx(77 / 112 * 8 / 0.9)


def test_a_burst_too_small_to_reach_the_busy_nodes_stays_on_the_empty_ones() -> None:
    loads = [5.0] * 10 + [0.0] * 4
    most = most_pods_when_balanced(loads=loads, cores=[8.0] * 14, pod_cpu=0.5, pods=30)
    assert most == pytest.approx(30 / 4)


def test_a_node_four_times_larger_takes_four_times_the_share() -> None:
    most = most_pods_when_balanced(loads=[0.0, 0.0], cores=[8.0, 32.0], pod_cpu=1.0, pods=20)
    assert most == pytest.approx(16.0)


def test_a_fleet_over_its_cores_still_has_a_level() -> None:
    most = most_pods_when_balanced(loads=[10.0, 12.0], cores=[8.0, 8.0], pod_cpu=1.0, pods=6)
    assert most == pytest.approx(4.0)  # both reach 14 cores


@pytest.mark.parametrize(
    ("loads", "cores", "pod_cpu", "pods", "expected"),
    [
        pytest.param([0.0] * 100, [8.0] * 100, 0.5, 5, 1.0, id="fewer-pods-than-nodes"),
        pytest.param([1.0, 2.0], [8.0, 8.0], 0.0, 6, 3.0, id="pods-without-use-count"),
        pytest.param([], [], 1.0, 6, 1.0, id="no-node"),
        pytest.param([1.0], [0.0], 1.0, 6, 1.0, id="no-cores"),
    ],
)
def test_edges_give_a_share_of_at_least_one_pod(
    loads: list[float], cores: list[float], pod_cpu: float, pods: int, expected: float
) -> None:
    assert most_pods_when_balanced(
        loads=loads, cores=cores, pod_cpu=pod_cpu, pods=pods
    ) == pytest.approx(expected)


def _level_by_bisection(nodes: list[tuple[float, float]], added: float) -> float:
    """An independent oracle: the utilization at which the nodes' room holds `added`."""
    low, high = 0.0, (sum(load for load, _ in nodes) + added) / min(c for _, c in nodes) + 1
    for _ in range(200):
        level = (low + high) / 2
        room = sum(max(0.0, level * cores - load) for load, cores in nodes)
        low, high = (level, high) if room < added else (low, level)
    return (low + high) / 2


@given(
    st.lists(
        st.tuples(st.floats(0, 64), st.sampled_from([2.0, 4.0, 8.0, 16.0, 32.0])),
        min_size=1,
        max_size=30,
    ),
    st.floats(0.05, 4),
    st.integers(1, 300),
)
def test_water_filling_agrees_with_bisection_on_the_level(
    nodes: list[tuple[float, float]], pod_cpu: float, pods: int
) -> None:
    level = _level_by_bisection(nodes, pods * pod_cpu)
    room = max(level * cores - load for load, cores in nodes)
    most = most_pods_when_balanced(
        loads=[load for load, _ in nodes],
        cores=[cores for _, cores in nodes],
        pod_cpu=pod_cpu,
        pods=pods,
    )
    assert most == pytest.approx(max(1.0, room / pod_cpu), rel=1e-6, abs=1e-6)
