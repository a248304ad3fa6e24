"""One request-share estimate (`tas.fit.request_share`) behind the descheduler's figures.

Covered: LoadAware's relief of a pod nothing measures and the per-pod usage's memory signals
(`descheduler.usage.pod_usage_from`) give one figure for the same pod; only the relief is
capped at the whole node. MakeRoomForPending sizes a pod by the same figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from descheduler.plugins import make_room
from descheduler.plugins.load_aware.moves import estimate_relief
from descheduler.signals import Signal
from descheduler.state import CycleState
from descheduler.usage import pod_usage_from
from tas.fit import request_share
from tas.types import PodKey
from tests.builders import GiB, make_node, make_pod

_NOW = datetime(2026, 1, 1, tzinfo=UTC)


class _Feed:
    """A `tas.metrics.source.PodUsageFeed` that answers what it was given."""

    def __init__(self, usage: Mapping[PodKey, Mapping[str, float]]) -> None:
        self.usage = usage

    def fetch(self) -> Mapping[PodKey, Mapping[str, float]]:
        return self.usage


def test_loadaware_relief_and_per_pod_usage_read_one_request_share() -> None:
    node = make_node("n", cpu=8.0, memory=12 * GiB)
    pod = make_pod("web", node="n", cpu=1.0, memory=5 * GiB)
    state = CycleState(
        nodes={node.name: node}, pods=[pod], pdbs=[], policies={}, metrics={}, now=_NOW
    )

    usage = pod_usage_from(_Feed({(pod.namespace, pod.name): {"cpu": 0.5}}))(state)
    relief = estimate_relief(pod, node, [Signal.MEMORY_UTILIZATION, Signal.CPU_UTILIZATION])

    assert relief is not None
    assert usage[(pod.namespace, pod.name)]["memory_utilization"] == relief["memory_utilization"]
    assert relief["memory_utilization"] == request_share(pod, node, "memory")
    assert relief["cpu_utilization"] == request_share(pod, node, "cpu") == 12.5


def test_only_the_relief_is_capped_at_the_whole_node() -> None:
    node = make_node("n", memory=4 * GiB)
    pod = make_pod("big", node="n", memory=6 * GiB)
    state = CycleState(
        nodes={node.name: node}, pods=[pod], pdbs=[], policies={}, metrics={}, now=_NOW
    )

    usage = pod_usage_from(_Feed({(pod.namespace, pod.name): {"cpu": 0.5}}))(state)
    relief = estimate_relief(pod, node, [Signal.MEMORY_UTILIZATION])

    assert relief == {"memory_utilization": 100.0}
    assert usage[(pod.namespace, pod.name)]["memory_utilization"] == 150.0


def test_make_room_sizes_a_pod_by_the_same_request_share() -> None:
    # MakeRoomForPending weighs pods by the larger of their cpu and memory shares: the one
    # estimate, so a pod it sizes at 40% relieves a node by 40% in LoadAware's eyes too.
    node = make_node("n", cpu=8.0, memory=12 * GiB)
    memory_bound = make_pod("cache", node="n", cpu=1.0, memory=6 * GiB)
    cpu_bound = make_pod("batch", node="n", cpu=4.0, memory=1 * GiB)
    assert make_room.share(memory_bound, node) == request_share(memory_bound, node, "memory")
    assert make_room.share(cpu_bound, node) == request_share(cpu_bound, node, "cpu") == 50.0
    relief = estimate_relief(memory_bound, node, [Signal.MEMORY_UTILIZATION])
    assert relief == {Signal.MEMORY_UTILIZATION: make_room.share(memory_bound, node)}
