"""Moves cost what they cost in a cluster (issue 46): start-ups drawn per start, and a live
migration's copy charging CPU on both nodes.

Covered:
- `startupDelay: {uniform: [least, most]}`: each start of each pod draws its own start-up in
  the range, the same for every contender (a hash of seed, slot and start), different from one
  start to the next; a plain duration stays one start-up for all; a range upside down or
  malformed is refused with its path;
- the world runs a pod only after its own drawn start-up, and a replacement draws anew; the
  cluster shows it as one does (Ready after PodScheduled by that start-up);
- the hindsight reference gives each pod the start-up of its first start in the world, and the
  limit the least one (still a bound);
- a live migration adds `sourceCores` to the source node and `targetCores` to the target while
  memory copies, and nothing once the copy is done;
- the large-slow family draws start-up ranges spanning at least 10-120 s over its draws, and
  the default family ranges from 10-20 s to 2 min (issue 54: moves are not cheap there either).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from descheduler.startup import started_in
from tas.types import Namespace, NodeName
from tas_simulator.family import FAMILIES, draw_scenario, load_family
from tas_simulator.scenario import SCENARIOS, LiveMigration, ScenarioError, read_scenario
from tas_simulator.world import startup_of
from tests.tas_simulator.worlds import SteppedWorld, health_pair

RANGE = {"uniform": ["10s", "2m"]}


def test_each_start_of_each_pod_draws_its_own_start_up_in_the_range() -> None:
    scenario = health_pair([], startupDelay=RANGE)
    assert (scenario.startup_delay, scenario.startup_delay_most) == (10.0, 120.0)
    draws = [startup_of(scenario, 7, slot, start) for slot in range(40) for start in (1, 2)]
    assert all(10.0 <= d <= 120.0 for d in draws)
    # Spread over the range, not bunched: the middle 80% of it is covered.
    assert min(draws) < 21.0
    assert max(draws) > 109.0
    # The same for every contender (a run on the same seed), different for the next start.
    assert startup_of(scenario, 7, 3, 1) == startup_of(scenario, 7, 3, 1)
    assert startup_of(scenario, 7, 3, 1) != startup_of(scenario, 7, 3, 2)
    assert startup_of(scenario, 7, 3, 1) != startup_of(scenario, 8, 3, 1)


def test_the_cluster_shows_each_pods_start_up_as_a_cluster_does() -> None:
    """What a descheduler reads of a start-up (`descheduler.startup`): Ready turns true once
    the pod's own drawn start-up has passed (to the step), not before."""
    scenario = health_pair([], startupDelay=RANGE, warmup="5s")
    loop = SteppedWorld(scenario, lambda pod: "b")
    loop.until(60)
    for slot in loop.slots_on("b"):
        name = loop.world.slot_pod[slot]
        assert name is not None
        pod = next(p for p in loop.world.cluster.list_pods() if p.name == name)
        drawn = startup_of(scenario, 1, slot, 1)
        seen = started_in(pod)
        if drawn > 60.0:
            assert seen is None, (name, drawn)  # still starting
        else:
            assert seen is not None
            assert drawn <= seen < drawn + scenario.step


def test_a_plain_start_up_is_the_same_for_every_start() -> None:
    scenario = health_pair([], startupDelay="25s")
    assert scenario.startup_delay_most is None
    assert {startup_of(scenario, 7, slot, start) for slot in range(10) for start in (1, 5)} == {
        25.0
    }


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"uniform": ["2m", "10s"]}, "startupDelay.uniform: the most (10s) is below the least"),
        ({"uniform": ["10s"]}, "startupDelay"),
        ({"between": ["10s", "2m"]}, "startupDelay"),
        ({"uniform": ["10s", "soon"]}, "startupDelay"),
    ],
)
def test_a_bad_start_up_range_is_refused_with_its_path(value: object, problem: str) -> None:
    with pytest.raises(ScenarioError) as error:
        health_pair([], startupDelay=value)
    assert any(p.startswith(problem) for p in error.value.problems), error.value.problems


def test_the_world_runs_each_pod_after_its_own_start_up_and_a_replacement_draws_anew() -> None:
    scenario = health_pair([], startupDelay=RANGE, warmup="5s")
    loop = SteppedWorld(scenario, lambda pod: "b")
    loop.until(0)
    slots = loop.slots_on("b")
    ready = {s: float(loop.world.slot_ready.data[s]) for s in slots}
    assert ready == {s: pytest.approx(startup_of(scenario, 1, s, 1)) for s in slots}
    assert len(set(ready.values())) == len(slots)
    loop.until(125)
    slot = slots[0]
    pod = loop.world.slot_pod[slot]
    assert pod is not None
    loop.world.cluster.evict_pod(Namespace("default"), pod, reason="test")
    loop.until(130)
    replaced_at = float(loop.world.slot_since.data[slot])
    assert float(loop.world.slot_ready.data[slot]) == pytest.approx(
        replaced_at + startup_of(scenario, 1, slot, 2)
    )


VM_SCENARIO: dict[str, Any] = {
    "name": "vm-copy",
    "duration": "10m",
    "step": "1s",
    "warmup": "10s",
    "startupDelay": "10s",
    "seed": 1,
    "liveMigration": {"bandwidth": "100Mi", "pause": "1s", "sourceCores": 1.5, "targetCores": 0.75},
    "nodes": [
        {"name": "a", "cpu": 8, "memory": "16Gi"},
        {"name": "b", "cpu": 8, "memory": "16Gi"},
    ],
    "workloads": [
        {
            "name": "vm",
            "replicas": 1,
            "migration": "live",
            "requests": {"cpu": "1", "memory": "1Gi"},
            "usage": {
                "cpu": {"profile": "steady", "value": 2},
                "memory": {"profile": "steady", "value": "1Gi"},
            },
        }
    ],
}


def test_a_live_migration_charges_cpu_on_both_nodes_while_memory_copies() -> None:
    """The VM (2 cores, 1 GiB at 100 MiB/s: a 10.24 s copy) is evicted from a at 30 s; its
    target pod binds to b at once (a cordoned) and starts its copy."""
    scenario = read_scenario(VM_SCENARIO, base=SCENARIOS)
    assert scenario.live_migration == LiveMigration(
        bandwidth=100 * 2**20, pause=1.0, source_cores=1.5, target_cores=0.75
    )
    loop = SteppedWorld(scenario, lambda pod: "a")

    def migrate(t: float) -> None:
        if t == 30.0:
            cluster = loop.world.cluster
            node = cluster.get_node(NodeName("a"))
            cluster.update_node(dataclasses.replace(node, unschedulable=True))
            pod = loop.world.slot_pod[0]
            assert pod is not None
            cluster.evict_pod(Namespace("default"), pod, reason="test")

    loop.until(60, before=migrate)
    a, b = 0, 1
    assert list(loop.states[29.0].demand[[a, b]]) == [2.0, 0.0]
    # Copying: the VM still runs on a, beside the copy's CPU; b receives.
    for t in (32.0, 39.0):
        assert list(loop.states[t].demand[[a, b]]) == pytest.approx([3.5, 0.75]), t
    # The copy ended (about 40.2 s), then the 1 s pause: the VM runs on b alone.
    assert list(loop.states[45.0].demand[[a, b]]) == pytest.approx([0.0, 2.0])


def test_both_families_draw_start_up_ranges() -> None:
    large, default = load_family("large-slow"), load_family("default")
    ranges = [read_scenario(draw_scenario(large, i), base=FAMILIES) for i in range(40)]
    assert all(s.startup_delay_most is not None for s in ranges)
    assert min(s.startup_delay for s in ranges) <= 10.0
    assert max(s.startup_delay_most or 0.0 for s in ranges) >= 120.0
    for i in range(40):
        least, most = draw_scenario(default, i)["startupDelay"]["uniform"]
        assert least in ("10s", "15s", "20s")
        assert most == "2m"


def test_the_hindsight_reference_starts_each_pod_as_its_first_start_in_the_world() -> None:
    from tas_simulator.hindsight import _Timeline

    scenario = health_pair([], startupDelay=RANGE, warmup="5s")
    timeline = _Timeline(scenario, seed=1)
    step = scenario.step
    for slot in range(timeline.usage.shape[0]):
        expected = np.ceil(startup_of(scenario, 1, slot, 1) / step - 1e-9)
        assert timeline.ready_after(slot, 1) == expected
        running = np.flatnonzero(timeline.usage[slot] > 0)
        # Created at 0 s: it first runs at its start-up, rounded up to the step.
        assert running[0] == expected
