"""Nodes that run no workload are known before their first sample
(`descheduler.plugins.load_aware.idle`).

A saturated fleet joined by empty nodes is rebalanced onto them before their exporters are
scraped, as soon as the old nodes are confirmed hot; a node without samples that runs any
workload pod stays unknown; an estimate only ever makes a destination, never a source.
"""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.classify import ThresholdSpec
from descheduler.framework import Result
from descheduler.node_classes import Category
from descheduler.plugins.load_aware.idle import classify_with_idle, idle_columns
from descheduler.signals import Signal
from descheduler.state import CycleState, pod_key
from tas.cluster.model import Pod
from tas.pressure import pressure
from tas.types import MetricName, NodeName
from tas_herd.placements import add_estimates
from tests.descheduler.builders import (
    START,
    cluster_with,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)

GiB = 2**30


def daemon(name: str, node: str, *, cpu: float = 0.1, memory: float = 0.0) -> Pod:
    return make_pod(
        name, node=node, owner="node-exporter", owner_kind="DaemonSet", cpu=cpu, memory=memory
    )


def state_of(*pods: Pod, metrics: dict[str, dict[str, float]] | None = None) -> CycleState:
    nodes = {NodeName(n): make_node(n, memory=32 * GiB) for n in ("node-old", "node-new")}
    columns = {
        MetricName(m): {NodeName(n): v for n, v in column.items()}
        for m, column in (metrics or {}).items()
    }
    return CycleState(nodes=nodes, pods=pods, pdbs=(), policies={}, metrics=columns, now=START)


#: node-old's samples: every metric an idle node is estimated on has a column.
SAMPLED = {
    "cpu_utilization": {"node-old": 0.9},
    "cpu_pressure": {"node-old": 0.5},
    "memory_utilization": {"node-old": 0.4},
}


def test_a_node_running_only_daemonset_pods_is_estimated_from_what_they_use() -> None:
    exporter = daemon("exporter", "node-new", cpu=0.4, memory=2 * GiB)
    proxy = daemon("proxy", "node-new", cpu=2.0)
    state = state_of(exporter, proxy, metrics=SAMPLED)
    # The proxy's usage is measured (a share 0..100 of the node), the exporter's is not yet:
    # its requests stand in for it.
    estimates = idle_columns(state, {pod_key(proxy): {"cpu_utilization": 5.0}})
    assert estimates == {
        MetricName(Signal.CPU_UTILIZATION): {"node-new": pytest.approx((0.4 + 0.4) / 8)},
        MetricName(Signal.MEMORY_UTILIZATION): {"node-new": pytest.approx(2 / 32)},
        MetricName(Signal.CPU_PRESSURE): {"node-new": pytest.approx(pressure(0.8, 8))},
    }


def test_a_static_pod_comes_with_the_node_as_a_daemonset_pod_does() -> None:
    # kubespray runs an API proxy as a static pod on every worker: its mirror pod is bound to
    # the node, not to a workload, so a joined worker running it is still idle.
    proxy = make_pod(
        "nginx-proxy-node-new",
        node="node-new",
        owner="node-new",
        owner_kind="Node",
        cpu=0.025,
        apply=replace(annotations={"kubernetes.io/config.mirror": "abc"}),
    )
    estimates = idle_columns(state_of(proxy, metrics=SAMPLED), {})
    assert estimates[MetricName(Signal.CPU_UTILIZATION)] == {"node-new": pytest.approx(0.025 / 8)}


def test_a_node_without_samples_that_runs_a_workload_pod_stays_unknown() -> None:
    pods = (daemon("exporter", "node-new"), make_pod("web", node="node-new", cpu=1.0))
    assert idle_columns(state_of(*pods, metrics=SAMPLED), {}) == {}


def test_no_value_is_invented_for_a_metric_no_node_reports() -> None:
    # No node has PSI (an outage, or a kernel without it): the idle node gets none either.
    state = state_of(metrics={"cpu_utilization": {"node-old": 0.9}})
    assert idle_columns(state, {}) == {MetricName(Signal.CPU_UTILIZATION): {"node-new": 0.0}}


def test_a_value_the_node_has_is_never_replaced_by_an_estimate() -> None:
    state = state_of(metrics={"cpu_utilization": {"node-new": 0.3}})
    merged = add_estimates(state.metrics, idle_columns(state, {}))
    assert merged[MetricName(Signal.CPU_UTILIZATION)][NodeName("node-new")] == 0.3


def test_an_estimate_never_makes_a_node_overutilized() -> None:
    # An idle fleet (2%) and a joined node whose daemons request 3 of its 8 cores: above the
    # average plus 10, but a guess never makes a node a source or a soft-taint target.
    metrics = {
        MetricName("cpu_utilization"): {
            NodeName("node-a"): 0.02,
            NodeName("node-b"): 0.02,
            NodeName("node-new"): 3 / 8,
        }
    }
    spec = ThresholdSpec(
        thresholds={"cpu_utilization": 0.0},
        target_thresholds={"cpu_utilization": 10.0},
        use_deviation_thresholds=True,
    )
    nodes = [NodeName(n) for n in ("node-a", "node-b", "node-new")]
    measured = classify_with_idle(metrics, [Signal.CPU_UTILIZATION], nodes, spec, estimated=())
    assert measured.overutilized == ("node-new",)
    guessed = classify_with_idle(
        metrics, [Signal.CPU_UTILIZATION], nodes, spec, estimated=[NodeName("node-new")]
    )
    assert guessed.overutilized == ()
    assert guessed.unknown == ("node-new",)
    assert guessed.thresholds.average is not None
    assert guessed.thresholds.average["cpu_utilization"] == pytest.approx(2.0)


def test_leaving_an_estimated_node_out_does_not_make_another_overutilized() -> None:
    # Left out, the busiest estimate lowers the average, and the next would cross the high
    # threshold (8% + 10): it is left out too.
    metrics = {
        MetricName("cpu_utilization"): {
            NodeName("node-a"): 0.02,
            NodeName("node-b"): 0.02,
            NodeName("new-1"): 0.6,
            NodeName("new-2"): 0.2,
        }
    }
    spec = ThresholdSpec(
        thresholds={"cpu_utilization": 0.0},
        target_thresholds={"cpu_utilization": 10.0},
        use_deviation_thresholds=True,
    )
    nodes = [NodeName(n) for n in ("node-a", "node-b", "new-1", "new-2")]
    estimated = [NodeName("new-1"), NodeName("new-2")]
    c = classify_with_idle(metrics, [Signal.CPU_UTILIZATION], nodes, spec, estimated)
    assert c.overutilized == ()
    assert c.unknown == ("new-1", "new-2")


# ---------------------------------------------------------------------- LoadAware in a cycle


def joined_fleet(*on_new_node: Pod) -> tuple[Any, Any]:
    """node-a and node-b saturated by eight 1-core pods each; node-new joined, no sample yet.
    Two cycles: what each classified, and the second's evictions."""
    pods = tuple(
        make_pod(f"{node}-{i}", node=node, owner=f"rs-{node}", cpu=1.0)
        for node in ("node-a", "node-b")
        for i in range(8)
    )
    cluster = cluster_with(
        make_node("node-a"), make_node("node-b"), make_node("node-new"), pods=pods + on_new_node
    )
    metrics = {
        "cpu_utilization": {"node-a": 1.0, "node-b": 1.0},
        "cpu_pressure": {"node-a": 0.95, "node-b": 0.95},
    }
    args = {"LoadAware": {"deviationThresholds": "AsymmetricLow", "resources": ["cpu_combined"]}}
    config = policy_config("LoadAware", args=args, maxNoOfPodsToEvictPerNode=5)
    descheduler = make_descheduler(cluster, config, metrics=metrics)
    first = descheduler.run_cycle()
    second = descheduler.run_cycle()
    return first.classifications["test"], second.by_result(Result.EVICTED)


def test_a_saturated_fleet_joined_by_an_empty_node_is_rebalanced_before_its_first_sample() -> None:
    classified, evicted = joined_fleet(daemon("exporter", "node-new"))
    assert classified.categories["node-new"] is Category.UNDERUTILIZED
    assert set(classified.overutilized) == {"node-a", "node-b"}
    assert evicted
    assert all("on node-new" in d.reason for d in evicted)


def test_a_joined_node_that_already_runs_workload_waits_for_its_sample() -> None:
    # Nothing is known about the workload pod's load: the node stays unknown, and with it out
    # of the average the two saturated nodes sit at the mean.
    classified, evicted = joined_fleet(make_pod("early", node="node-new", cpu=1.0))
    assert classified.unknown == ("node-new",)
    assert classified.nothing_to_do == "All nodes are underutilized, nothing to do here"
    assert evicted == []
