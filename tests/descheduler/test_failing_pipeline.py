"""A failing metric pipeline never causes an eviction: LoadAware while per-pod usage cannot be
read.

Covered: on a fleet LoadAware rebalances with per-pod usage, a cycle whose per-pod usage source
fails (`descheduler.usage.pod_usage_from` given a feed that raises `MetricFetchError`) evicts
nothing and says why, while the node is still classified (its soft taint and metrics follow
the held node values); the cycles after the source recovers move pods again. Before this rail,
the failed read looked like a source with no per-pod usage, the relief was guessed from
requests, and a drawn scenario's outage (large-slow-0134, fresh draw) set off 20 evictions in
one cycle and 17 more when the metrics came back.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from prometheus_client import CollectorRegistry

from descheduler.cycle import CycleReport, Descheduler
from descheduler.framework import Result
from descheduler.usage import pod_usage_from
from tas.metrics.errors import MetricFetchError
from tas.types import PodKey
from tests.descheduler.builders import (
    cluster_with,
    load_aware,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
)


class _Feed:
    """Per-pod CPU of 1 core for each pod, or a failure while `failing`."""

    def __init__(self, pods: list[PodKey]) -> None:
        self.pods = pods
        self.failing = False

    def fetch(self) -> Mapping[PodKey, Mapping[str, float]]:
        if self.failing:
            raise MetricFetchError("prometheus: connection refused")
        return {pod: {"cpu": 1.0} for pod in self.pods}


def _saturated(registry: CollectorRegistry | None = None) -> tuple[Descheduler, _Feed]:
    """node-a saturated by eight 1-core pods (measured), two idle nodes."""
    pods = tuple(make_pod(f"web-{i}", owner="web", cpu=1.0) for i in range(8))
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=pods)
    feed = _Feed([(p.namespace, p.name) for p in pods])
    metrics = {
        "cpu_utilization": {"node-a": 1.0, "node-b": 0.1, "node-c": 0.1},
        "cpu_pressure": {"node-a": 0.95, "node-b": 0.0, "node-c": 0.0},
    }
    config = policy_config("LoadAware", args=load_aware(), maxNoOfPodsToEvictPerNode=5)
    descheduler = make_descheduler(
        cluster, config, metrics=metrics, pod_usage=pod_usage_from(feed), registry=registry
    )
    return descheduler, feed


def _evicted(report: CycleReport) -> int:
    return len(report.by_result(Result.EVICTED))


def test_a_working_source_lets_the_saturated_node_be_relieved() -> None:
    # The yardstick for the test below: the same fleet, the source answering.
    descheduler, _ = _saturated()
    reports = [descheduler.run_cycle() for _ in range(2)]
    assert sum(_evicted(r) for r in reports) > 0


def test_a_failing_per_pod_usage_source_evicts_nothing_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    descheduler, feed = _saturated()
    feed.failing = True
    reports = [descheduler.run_cycle() for _ in range(3)]
    assert [_evicted(r) for r in reports] == [0, 0, 0]
    assert all(r.classifications["test"].overutilized == ("node-a",) for r in reports)
    said = (
        '"LoadAware evicts nothing this cycle" reason="per-pod usage could not be read: '
        'prometheus: connection refused"'
    )
    assert caplog.messages.count(said) == 3


def test_failed_reads_are_counted_for_an_alert() -> None:
    # The held cycles' only other trace is a log line; TASDeschedulerPodUsageUnread reads this.
    registry = CollectorRegistry()
    descheduler, feed = _saturated(registry)
    descheduler.run_cycle()
    feed.failing = True
    descheduler.run_cycle()
    descheduler.run_cycle()
    feed.failing = False
    descheduler.run_cycle()
    assert registry.get_sample_value("tas_descheduler_pod_usage_unread_total") == 2


def test_evictions_resume_once_the_source_answers_again() -> None:
    descheduler, feed = _saturated()
    feed.failing = True
    assert _evicted(descheduler.run_cycle()) == 0
    feed.failing = False
    reports = [descheduler.run_cycle() for _ in range(2)]
    assert sum(_evicted(r) for r in reports) > 0
