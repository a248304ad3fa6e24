"""Builders for the descheduler's tests: nodes, pods, configs and a cycle over an in-memory
cluster, each stating only what a test cares about (`make_pod(name, node=..., apply=...)`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from descheduler.assemble import assemble_descheduler
from descheduler.config import DeschedulerConfig, parse_config
from descheduler.cycle import CycleReport, Descheduler, Mode
from descheduler.framework import PodUsageSource, Result
from descheduler.self_metrics import DeschedulerMetrics
from tas.cluster.model import Node, Pod, PodCondition
from tas.metrics.static import StaticMetricView
from tas.policies.model import TASPolicy
from tas.types import PolicyKey
from tests import builders
from tests.instrumented_cluster import InstrumentedCluster

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


#: Time that moves only when told to (or when a schedule sleeps).
FakeClock = builders.ManualClock

#: The descheduler's suite: pods run on node-a, owned by a ReplicaSet, an hour old.
make_node = functools.partial(builders.make_node, memory=32e9)
make_pod = functools.partial(
    builders.make_pod,
    node="node-a",
    owner="rs",
    phase="Running",
    created=START - timedelta(hours=1),
)


def replace(**changes: Any) -> Callable[[Any], Any]:
    """A mutator for `apply=`: `make_pod("p", apply=replace(priority=5))`."""
    return lambda obj: dataclasses.replace(obj, **changes)


def started_in(seconds: float) -> Callable[[Pod], Pod]:
    """A mutator for `apply=`: a pod that turned Ready `seconds` after it was scheduled, an
    hour ago."""
    scheduled = START - timedelta(hours=1)
    ready = scheduled + timedelta(seconds=seconds)
    return replace(
        conditions=(
            PodCondition("PodScheduled", "True", last_transition_time=scheduled),
            PodCondition("Ready", "True", last_transition_time=ready),
        )
    )


def load_aware(**extra: Any) -> dict[str, dict[str, Any]]:
    """LoadAware's args as the lab runs it (AsymmetricLow deviation on cpu_combined), with
    `extra`, for `policy_config("LoadAware", args=...)`."""
    return {
        "LoadAware": {
            "deviationThresholds": "AsymmetricLow",
            "resources": ["cpu_combined"],
            **extra,
        }
    }


def policy_config(
    *plugins: str,
    args: Mapping[str, Mapping[str, Any]] | None = None,
    evictor: Mapping[str, Any] | None = None,
    **top: Any,
) -> DeschedulerConfig:
    """A one-profile config enabling `plugins` (deschedule or balance, wherever they belong)."""
    balance = {
        "RemoveDuplicates",
        "LoadAware",
        "LowNodeUtilization",
        "SoftTainter",
        "MakeRoomForPending",
    }
    plugin_config = [{"name": "DefaultEvictor", "args": dict(evictor or {})}]
    plugin_config += [{"name": name, "args": dict(a)} for name, a in (args or {}).items()]
    document = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "evictionCooldownSeconds": 0,
        **top,
        "profiles": [
            {
                "name": "test",
                "pluginConfig": plugin_config,
                "plugins": {
                    "deschedule": {"enabled": [p for p in plugins if p not in balance]},
                    "balance": {"enabled": [p for p in plugins if p in balance]},
                },
            }
        ],
    }
    return parse_config(document)


def make_descheduler(
    cluster: InstrumentedCluster,
    config: DeschedulerConfig,
    *,
    metrics: Mapping[str, Mapping[str, float]] | StaticMetricView | None = None,
    policies: Mapping[PolicyKey, TASPolicy] | None = None,
    mode: Mode = Mode.AUTOMATIC,
    clock: FakeClock | None = None,
    registry: CollectorRegistry | None = None,
    pod_usage: PodUsageSource | None = None,
) -> Descheduler:
    view = metrics if isinstance(metrics, StaticMetricView) else StaticMetricView(metrics or {})
    found = dict(policies or {})
    return assemble_descheduler(
        config=config,
        cluster=cluster,
        metric_view=view,
        policies=lambda: found,
        mode=mode,
        clock=clock or FakeClock(),
        metrics=DeschedulerMetrics(registry=registry or CollectorRegistry()),
        pod_usage=pod_usage,
    )


def cluster_with(*nodes: Node, pods: tuple[Pod, ...] = ()) -> InstrumentedCluster:
    cluster = InstrumentedCluster(clock=FakeClock(START))
    for node in nodes:
        cluster.add_node(node)
    for pod in pods:
        cluster.add_pod(pod)
    return cluster


def evicted(report: CycleReport) -> list[str]:
    """The pods a cycle evicted (or, in a dry run, would have), by name."""
    return sorted(d.name for d in report.decisions if d.result in (Result.EVICTED, Result.DRY_RUN))
