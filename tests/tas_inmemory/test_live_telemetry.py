"""The workload model on the real clock, written as textfiles (`tas_inmemory.live_telemetry`), and
the demo world it runs in (`tas_inmemory.demo`).

Covered:
- a step sums running pods' usage per node into utilization, Erlang C pressure and memory,
  writes them for the real textfile source to read, and counts a stress pod's cores;
- the demo world: five nodes, node-b at health 1, the demo app linked to demo-policy, a node
  agent per node; scaling, load and health controls, with their limits and errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from tas.adapters.metrics import open_metric_view
from tas.metrics.textformat import parse_text
from tas.types import MetricName, NodeName
from tas_inmemory.demo import (
    LOAD_NAMESPACE,
    MAX_LOAD_PODS_PER_NODE,
    NODES,
    DemoError,
    DemoWorld,
    build_demo_cluster,
    profile_of,
    write_start_metrics,
)
from tas_inmemory.live_telemetry import LiveTelemetry
from tas_inmemory.workload import cpu_pressure


def series(path: Path) -> dict[str, float]:
    return {s.name: s.value for s in parse_text(path.read_text())}


def test_a_step_writes_what_the_pods_use_for_the_textfile_source_to_read(tmp_path: Path) -> None:
    cluster = build_demo_cluster()
    node = NodeName("node-a")
    for pod in cluster.list_pods():
        if pod.node_name is None:
            cluster.bind_pod(pod.namespace, pod.name, node)
    write_start_metrics(tmp_path)
    telemetry = LiveTelemetry(cluster, tmp_path, profile_of=profile_of, started=0.0)
    step = telemetry.step(10.0)
    load = step.nodes[node]
    used = [step.pod_cpu[(p.namespace, p.name)] for p in cluster.list_pods(node=node)]
    assert load.cpu_demand == pytest.approx(sum(used))
    assert load.cpu_utilization == pytest.approx(min(load.cpu_demand, 4.0) / 4.0)
    assert load.cpu_pressure == pytest.approx(cpu_pressure(load.cpu_demand, 4.0), abs=1e-3)
    view = open_metric_view(f"textfile:{tmp_path}")
    view.set_wanted([MetricName("cpu_utilization"), MetricName("health_metric")])
    view.refresh_once()
    columns = view.columns()
    measured = columns[MetricName("cpu_utilization")][node]
    assert measured == pytest.approx(load.cpu_utilization, abs=1e-4)
    health = {n: (1.0 if n == "node-b" else 0.0) for n in NODES}
    assert columns[MetricName("health_metric")] == health


def load_of(telemetry: LiveTelemetry, node: str, t: float) -> float:
    return telemetry.step(t).nodes[NodeName(node)].cpu_demand


def test_a_stress_pod_adds_its_cores_to_its_node(tmp_path: Path) -> None:
    cluster = build_demo_cluster()
    telemetry = LiveTelemetry(cluster, tmp_path, profile_of=profile_of, started=0.0)
    world = DemoWorld(cluster, tmp_path)
    quiet = load_of(telemetry, "node-d", 5.0)
    pod = world.add_load("node-d", 2.5)
    assert pod.namespace == LOAD_NAMESPACE
    assert pod.requests == {}  # invisible to the scheduler's request arithmetic
    assert load_of(telemetry, "node-d", 5.0) == pytest.approx(quiet + 2.5)
    assert world.clear_load("node-d") == [pod.name]
    assert load_of(telemetry, "node-d", 5.0) == pytest.approx(quiet)


def test_the_demo_world_starts_as_the_demo_says() -> None:
    cluster = build_demo_cluster()
    assert [n.name for n in cluster.list_nodes()] == list(NODES) == [f"node-{c}" for c in "abcde"]
    pods = cluster.list_pods()
    demo = [p for p in pods if p.labels.get("telemetry-policy") == "demo-policy"]
    assert len(demo) == 4
    assert all(p.node_name is None for p in demo)
    agents = [p for p in pods if p.labels.get("app") == "node-agent"]
    assert sorted(p.node_name or "" for p in agents) == list(NODES)
    assert all(profile_of(p) is not None for p in pods)


def test_scaling_a_workload_adds_and_removes_its_pods(tmp_path: Path) -> None:
    world = DemoWorld(build_demo_cluster(), tmp_path)

    def web() -> int:
        return sum(1 for p in world.cluster.list_pods() if p.labels.get("app") == "web")

    assert world.scale("web", 8) == 5
    assert web() == 8
    assert world.scale("web", 0) == 8
    assert web() == 0


@pytest.mark.parametrize(
    ("call", "status"),
    [
        pytest.param(lambda w: w.scale("nope", 1), 404, id="unknown workload"),
        pytest.param(lambda w: w.scale("node-agent", 1), 409, id="a DaemonSet"),
        pytest.param(lambda w: w.scale("web", 41), 422, id="too many replicas"),
        pytest.param(lambda w: w.add_load("node-x", 1.0), 404, id="unknown node"),
        pytest.param(lambda w: w.add_load("node-a", 0.0), 422, id="no cores"),
        pytest.param(lambda w: w.set_health("node-a", math.inf), 422, id="infinite health"),
        pytest.param(lambda w: w.set_health("node-x", 1.0), 404, id="health of unknown node"),
    ],
)
def test_a_control_the_demo_cannot_carry_out_says_why(
    tmp_path: Path, call: Callable[[DemoWorld], object], status: int
) -> None:
    world = DemoWorld(build_demo_cluster(), tmp_path)
    with pytest.raises(DemoError) as caught:
        call(world)
    assert caught.value.status == status


def test_a_node_takes_only_so_many_stress_pods(tmp_path: Path) -> None:
    world = DemoWorld(build_demo_cluster(), tmp_path)
    for _ in range(MAX_LOAD_PODS_PER_NODE):
        world.add_load("node-a", 0.1)
    with pytest.raises(DemoError, match="clear its load first"):
        world.add_load("node-a", 0.1)


def test_set_health_writes_the_value_the_policy_reads(tmp_path: Path) -> None:
    world = DemoWorld(build_demo_cluster(), tmp_path)
    world.set_health("node-c", 2)
    assert series(tmp_path / "node-c.prom") == {"node_health_metric": 2.0}
