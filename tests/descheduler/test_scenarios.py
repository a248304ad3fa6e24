"""Whole-loop scenarios on the in-memory cluster, as a user would watch them.

Covered: the TAS health-metric demo (node C violating: the demo pods are evicted in Automatic
mode and recreated by their owners; listed with their reason but kept in Predictive mode; the
`telemetry/scheduling` request never blocks nodeFit); the PSI seed's scenario (equal requests,
skewed pressure: over a few cycles pods move from the hot node toward cold ones and the spread
of pressure drops; several pods per node per cycle when their requests estimate each move, one
when nothing does); per-pod usage choosing the pod that relieves the node most; soft taints set
on the hot node, left alone while it stays hot, removed when it recovers, never written in
Predictive mode, and all removed when the feature is switched off; the Prometheus metrics a
dashboard draws.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from descheduler.cycle import Mode
from descheduler.state import CycleState
from tas.cluster.model import Taint, TaintEffect
from tas.fit import rejection
from tas.metrics.static import StaticMetricView
from tas.types import MetricName, NodeName
from tas.vocabulary import POLICY_LABEL, TELEMETRY_RESOURCE
from tas_inmemory.cluster import WriteKind
from tests.builders import make_policy, rule
from tests.descheduler.builders import (
    START,
    FakeClock,
    cluster_with,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)
from tests.instrumented_cluster import InstrumentedCluster

SOFT_TAINT = Taint(
    "telemetry.aware.scheduling/overutilized", TaintEffect.PREFER_NO_SCHEDULE, "true"
)


# ------------------------------------------------------------------- the health demo


DEMO_POLICY = make_policy(
    "demo-policy",
    namespace="health-metric-demo",
    deschedule=[rule("health_metric", "Equals", 2)],
    dontschedule=[rule("health_metric", "Equals", 1), rule("health_metric", "Equals", 2)],
    scheduleonmetric=[rule("health_metric", "LessThan", 0)],
)


def demo_cluster() -> InstrumentedCluster:
    def demo(name: str) -> Any:
        return make_pod(
            name,
            node="node-c",
            namespace="health-metric-demo",
            owner=f"{name}-rs",
            labels={"app": "demo", POLICY_LABEL: "demo-policy"},
            apply=replace(requests={TELEMETRY_RESOURCE: 1}),
        )

    return cluster_with(
        make_node("node-a"),
        make_node("node-b"),
        make_node("node-c"),
        pods=(demo("demo-app-1"), demo("demo-app-2"), make_pod("bystander", node="node-c")),
    )


HEALTH = {"health_metric": {"node-a": 0, "node-b": 0, "node-c": 2}}


def test_health_demo_automatic_evicts_the_demo_pods_from_the_violating_node() -> None:
    cluster = demo_cluster()
    report = make_descheduler(
        cluster,
        policy_config("TASViolations", evictionCooldownSeconds=300),
        metrics=HEALTH,
        policies={DEMO_POLICY.key: DEMO_POLICY},
        mode=Mode.AUTOMATIC,
    ).run_cycle()
    assert sorted(d.name for d in report.by_result("evicted")) == ["demo-app-1", "demo-app-2"]
    assert {r.name for r in cluster.evictions} == {"demo-app-1", "demo-app-2"}
    remaining = {p.name: p.node_name for p in cluster.list_pods()}
    assert remaining["bystander"] == "node-c"
    # Their owners made replacements, pending for the scheduler (and the extender) to place.
    replacements = [p for p in cluster.list_pods() if p.name.startswith("demo-app-")]
    assert len(replacements) == 2
    assert all(p.node_name is None for p in replacements)


def test_health_demo_predictive_lists_the_pods_with_their_reason_but_keeps_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = demo_cluster()
    descheduler = make_descheduler(
        cluster,
        policy_config("TASViolations"),
        metrics=HEALTH,
        policies={DEMO_POLICY.key: DEMO_POLICY},
        mode=Mode.PREDICTIVE,
    )
    with caplog.at_level(logging.INFO):
        report = descheduler.run_cycle()
    assert sorted(d.name for d in report.by_result("dry-run")) == ["demo-app-1", "demo-app-2"]
    assert cluster.write_counts()[WriteKind.EVICTIONS] == 0
    assert len(cluster.list_pods()) == 3
    assert "Evicted pod in dry run mode" in caplog.text
    assert "demo-policy: health_metric Equals 2 (value 2)" in caplog.text
    # Predictive mode keeps reporting: nothing changed, so the next cycle says the same.
    assert len(descheduler.run_cycle().by_result("dry-run")) == 2


# ------------------------------------------------------------- PSI: equal requests, skewed load


PRESSURE_PER_POD = 0.08
WORKERS = [f"worker-{i}" for i in range(1, 5)]


def pressure(cluster: InstrumentedCluster) -> dict[str, float]:
    """The test's model of the world: a node's CPU pressure grows with the pods it runs."""
    count = dict.fromkeys(WORKERS, 0)
    for pod in cluster.list_pods():
        if pod.node_name is not None:
            count[pod.node_name] += 1
    return {n: PRESSURE_PER_POD * c for n, c in count.items()}


def schedule_pending(cluster: InstrumentedCluster) -> None:
    """A tiny scheduler: each pending pod goes to the least-pressured node that fits it."""
    for pod in cluster.list_pods():
        if pod.node_name is not None:
            continue
        now = pressure(cluster)
        fits = [
            n
            for n in cluster.list_nodes()
            if rejection(pod, n, pods_on_node=cluster.list_pods(node=n.name)) is None
        ]
        target = min(fits, key=lambda n: (now[n.name], n.name))
        cluster.bind_pod(pod.namespace, pod.name, target.name)


def psi_cluster(cpu: float = 0.5) -> InstrumentedCluster:
    placement = ["worker-1"] * 6 + ["worker-2"] * 2 + ["worker-3"] * 2 + ["worker-4"] * 2
    pods = tuple(
        make_pod(f"app-{i}", node=node, owner="app", cpu=cpu) for i, node in enumerate(placement)
    )
    return cluster_with(*(make_node(n) for n in WORKERS), pods=pods)


# Acting at the first cycle a node is hot (the default waits for a second one to confirm it:
# tests/descheduler/test_move_pays.py), so each cycle of these stories moves what it finds.
# Their hot node reads PSI 0.48, just under the crest a node must have reached to be
# rebalanced by default (`atRiskCrestPressure` 0.5, tested there too): these stories are about
# which pods move and what is published, so they lower it.
LOAD_AWARE = {
    "LoadAware": {
        "deviationThresholds": "AsymmetricLow",
        "resources": ["cpu_pressure"],
        "confirmCycles": 1,
        "atRiskCrestPressure": 0.4,
    }
}


def run_psi_cycles(cluster: InstrumentedCluster, cycles: int = 5) -> list[list[str]]:
    view = StaticMetricView({"cpu_pressure": pressure(cluster)})
    descheduler = make_descheduler(
        cluster, policy_config("LoadAware", args=LOAD_AWARE), metrics=view
    )
    per_cycle: list[list[str]] = []
    for _ in range(cycles):
        report = descheduler.run_cycle()
        per_cycle.append([d.node or "" for d in report.by_result("evicted")])
        schedule_pending(cluster)
        view.set_column(MetricName("cpu_pressure"), pressure(cluster))
    return per_cycle


def test_skewed_pressure_with_equal_requests_moves_pods_from_the_hot_node_to_cold_ones() -> None:
    cluster = psi_cluster()
    spread_before = max(pressure(cluster).values()) - min(pressure(cluster).values())
    stdev_before = statistics.pstdev(pressure(cluster).values())
    per_cycle = run_psi_cycles(cluster)
    # Requests estimate each move (0.5 of 8 cores), and each move must pay: PSI 0.48 on 8
    # cores is a load of 6.5 cores; two pods take it to 5.5, PSI 0.248, under the at-risk
    # pressure (0.25), so the rest is unevenness, not stall, and the third pod stays.
    assert per_cycle[0] == ["worker-1"] * 2
    after = pressure(cluster)
    assert after["worker-1"] < 6 * PRESSURE_PER_POD
    assert max(after.values()) - min(after.values()) < spread_before
    assert statistics.pstdev(after.values()) < stdev_before
    # Settled: the last cycles found nothing to move.
    assert per_cycle[-1] == []


def test_without_per_pod_usage_or_requests_no_cpu_move_is_made_on_a_guess() -> None:
    cluster = psi_cluster(cpu=0.0)
    # Nothing says what a pod uses, so nothing predicts what moving it would relieve.
    assert run_psi_cycles(cluster) == [[]] * 5


def test_on_a_signal_the_stall_model_does_not_speak_for_one_unestimated_pod_moves_per_cycle() -> (
    None
):
    cluster = psi_cluster(cpu=0.0)
    args = {"LoadAware": {"deviationThresholds": "AsymmetricLow", "resources": ["io_pressure"]}}
    view = StaticMetricView({"io_pressure": pressure(cluster)})
    descheduler = make_descheduler(cluster, policy_config("LoadAware", args=args), metrics=view)
    per_cycle: list[list[str]] = []
    for _ in range(5):
        per_cycle.append([d.node or "" for d in descheduler.run_cycle().by_result("evicted")])
        schedule_pending(cluster)
        view.set_column(MetricName("io_pressure"), pressure(cluster))
    # Nothing estimates a move: one pod leaves the hot node, and the next cycle measures again.
    assert per_cycle[:2] == [["worker-1"], ["worker-1"]]
    assert all(len(evictions) <= 1 for evictions in per_cycle)
    assert per_cycle[-1] == []


def test_classification_is_logged_in_the_upstream_words(caplog: pytest.LogCaptureFixture) -> None:
    cluster = psi_cluster()
    descheduler = make_descheduler(
        cluster,
        policy_config("LoadAware", args=LOAD_AWARE),
        metrics={"cpu_pressure": pressure(cluster)},
        mode=Mode.PREDICTIVE,
    )
    with caplog.at_level(logging.INFO):
        descheduler.run_cycle()
    text = caplog.text
    assert (
        '"Node has been classified" category="overutilized" node="worker-1" '
        'usage={"cpu_pressure":"48"} usagePercentage={"cpu_pressure":48}'
    ) in text
    assert '"Number of underutilized nodes" totalNumber=3' in text
    assert '"Number of overutilized nodes" totalNumber=1' in text
    # high = avg 24 + 10 = 34; capacity = 3 x (34 - 16)
    assert '"Total capacity to be moved" cpu_pressure=54' in text
    assert '"Pods on node" node="worker-1" allPods=6 nonRemovablePods=0 removablePods=6' in text


def test_known_per_pod_usage_evicts_the_pod_that_relieves_the_node_most() -> None:
    cluster = psi_cluster()
    measured = {f"app-{i}": 2.0 for i in range(6)} | {"app-3": 14.0}

    def pod_usage(state: CycleState) -> Mapping[Any, Mapping[str, float]]:
        return {
            (p.namespace, p.name): {"cpu_pressure": measured.get(p.name, 8.0)} for p in state.pods
        }

    report = make_descheduler(
        cluster,
        policy_config("LoadAware", args=LOAD_AWARE),
        # The other nodes idle: room for the heaviest pod without making one of them hot.
        metrics={"cpu_pressure": {"worker-1": 0.48} | dict.fromkeys(WORKERS[1:], 0.02)},
        pod_usage=pod_usage,
    ).run_cycle()
    # The heaviest pod (1.12 cores) takes the node's load from 6.5 to 5.4 cores, PSI 0.48 ->
    # 0.23: no longer at risk of stalling, so it alone goes (to a node at PSI 0.02 -> 0.09).
    assert [d.name for d in report.by_result("evicted")] == ["app-3"]


def test_load_aware_publishes_usage_classification_and_thresholds() -> None:
    cluster = psi_cluster()
    registry = CollectorRegistry()
    make_descheduler(
        cluster,
        policy_config("LoadAware", args=LOAD_AWARE),
        metrics={"cpu_pressure": pressure(cluster)},
        mode=Mode.PREDICTIVE,
        registry=registry,
    ).run_cycle()

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("tas_descheduler_node_usage", node="worker-1", resource="cpu_pressure") == 48
    assert value("tas_descheduler_node_classification", node="worker-1") == 1
    assert value("tas_descheduler_node_classification", node="worker-2") == -1
    assert value("tas_descheduler_threshold", resource="cpu_pressure", bound="low") == 24
    assert value("tas_descheduler_threshold", resource="cpu_pressure", bound="high") == 34
    assert (
        value(
            "tas_descheduler_evictions_total",
            strategy="LoadAware",
            node="worker-1",
            namespace="default",
            result="dry-run",
        )
        == 2  # the third would not pay: the node is no longer at risk of stalling
    )


# -------------------------------------------------------------------------- soft taints


TAINTER = {
    "LoadAware": {
        "thresholds": {"cpu_utilization": 20},
        "targetThresholds": {"cpu_utilization": 70},
    }
}


def taints(cluster: InstrumentedCluster) -> dict[str, tuple[Taint, ...]]:
    return {n.name: n.taints for n in cluster.list_nodes()}


def test_soft_taints_follow_the_hot_node_and_go_when_it_recovers() -> None:
    other = Taint("dedicated", TaintEffect.NO_SCHEDULE, "gpu")
    cluster = cluster_with(
        make_node("node-a", apply=replace(taints=(other,))),
        make_node("node-b"),
        make_node("node-c"),
    )
    clock = FakeClock(START)
    view = StaticMetricView({"cpu_utilization": {"node-a": 0.9, "node-b": 0.1, "node-c": 0.5}})
    config = policy_config("LoadAware", "SoftTainter", args=TAINTER)
    descheduler = make_descheduler(cluster, config, metrics=view, clock=clock)
    report = descheduler.run_cycle()
    assert report.taints.added == [NodeName("node-a")]
    assert taints(cluster) == {"node-a": (other, SOFT_TAINT), "node-b": (), "node-c": ()}
    # Still hot: nothing is written again.
    cluster.reset_write_counts()
    descheduler.run_cycle()
    assert cluster.write_counts()[WriteKind.NODE_TAINTS] == 0
    # Recovered to its low threshold (20): the class goes at once; the soft taint stays for the
    # hold time (120 s by default) since the node was last overutilized, then goes alone.
    view.set_column(MetricName("cpu_utilization"), {"node-a": 0.2, "node-b": 0.1, "node-c": 0.5})
    clock.advance(60)
    report = descheduler.run_cycle()
    assert report.classifications["test"].categories[NodeName("node-a")] != "overutilized"
    assert report.taints.removed == []
    clock.advance(60)
    assert descheduler.run_cycle().taints.removed == [NodeName("node-a")]
    assert taints(cluster)["node-a"] == (other,)


def test_a_soft_taint_on_a_swinging_load_is_held_until_the_node_stays_cool() -> None:
    """A load that crosses the thresholds every cycle flips no new pod's preference with it:
    the taint stays until the node has not been overutilized for the hold time."""
    clock = FakeClock(START)
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"))
    view = StaticMetricView({"cpu_utilization": {"node-a": 0.9, "node-b": 0.1, "node-c": 0.5}})
    args = {"LoadAware": {**TAINTER["LoadAware"], "holdSeconds": 90}}
    descheduler = make_descheduler(
        cluster, policy_config("LoadAware", "SoftTainter", args=args), metrics=view, clock=clock
    )
    changes = []
    for cycle in range(12):  # every 30 s, hot and idle by turns
        hot = cycle % 2 == 0
        view.set_column(
            MetricName("cpu_utilization"),
            {"node-a": 0.9 if hot else 0.1, "node-b": 0.1, "node-c": 0.5},
        )
        report = descheduler.run_cycle()
        changes += [("+", cycle) for _ in report.taints.added]
        changes += [("-", cycle) for _ in report.taints.removed]
        clock.advance(30)
    # Set once; never removed while it keeps coming back within the hold.
    assert changes == [("+", 0)]
    # Idle for good: removed once the hold since the last hot reading (cycle 10) has passed.
    view.set_column(MetricName("cpu_utilization"), {"node-a": 0.1, "node-b": 0.1, "node-c": 0.5})
    removed_at = None
    for cycle in range(12, 20):
        if descheduler.run_cycle().taints.removed:
            removed_at = cycle
            break
        clock.advance(30)
    assert removed_at == 13  # 90 s after cycle 10's hot reading


def test_a_node_keeps_its_soft_taint_for_the_hold_time_unless_it_falls_to_the_low_threshold() -> (
    None
):
    clock = FakeClock(START)
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"))
    view = StaticMetricView({"cpu_utilization": {"node-a": 0.9, "node-b": 0.1, "node-c": 0.5}})
    args = {"LoadAware": {**TAINTER["LoadAware"], "holdSeconds": 60}}
    descheduler = make_descheduler(
        cluster, policy_config("LoadAware", "SoftTainter", args=args), metrics=view, clock=clock
    )
    assert descheduler.run_cycle().taints.added == [NodeName("node-a")]
    # Below high (70) but above low (20): held for the hold time, taint and class alike.
    view.set_column(MetricName("cpu_utilization"), {"node-a": 0.6, "node-b": 0.1, "node-c": 0.5})
    for _ in range(5):
        clock.advance(10)
        report = descheduler.run_cycle()
        assert report.taints.removed == []
        assert report.classifications["test"].categories[NodeName("node-a")] == "overutilized"
    assert taints(cluster)["node-a"] == (SOFT_TAINT,)
    # Hot again within the hold: the hold starts over from the last time it was over.
    view.set_column(MetricName("cpu_utilization"), {"node-a": 0.9, "node-b": 0.1, "node-c": 0.5})
    clock.advance(10)
    descheduler.run_cycle()
    view.set_column(MetricName("cpu_utilization"), {"node-a": 0.6, "node-b": 0.1, "node-c": 0.5})
    clock.advance(50)
    assert descheduler.run_cycle().taints.removed == []
    # The hold is over: the class follows the usage again, and the taint goes.
    clock.advance(10)
    assert descheduler.run_cycle().taints.removed == [NodeName("node-a")]


def test_predictive_mode_never_writes_taints() -> None:
    cluster = cluster_with(make_node("node-a"), make_node("node-b"))
    metrics = {"cpu_utilization": {"node-a": 0.9, "node-b": 0.1}}
    config = policy_config("LoadAware", "SoftTainter", args=TAINTER)
    report = make_descheduler(cluster, config, metrics=metrics, mode=Mode.PREDICTIVE).run_cycle()
    assert report.taints.added == [NodeName("node-a")]  # reported ...
    assert cluster.write_counts()[WriteKind.NODE_TAINTS] == 0  # ... not written
    assert taints(cluster)["node-a"] == ()


def test_switching_the_soft_tainter_off_removes_every_soft_taint() -> None:
    cluster = cluster_with(
        make_node("node-a", apply=replace(taints=(SOFT_TAINT,))),
        make_node("node-b", apply=replace(taints=(SOFT_TAINT,))),
        make_node("node-c"),
    )
    config = policy_config("LoadAware", args=TAINTER)
    metrics = {"cpu_utilization": {"node-a": 0.9, "node-b": 0.1, "node-c": 0.5}}
    report = make_descheduler(cluster, config, metrics=metrics).run_cycle()
    assert sorted(report.taints.removed) == ["node-a", "node-b"]
    assert all(t == () for t in taints(cluster).values())


def test_a_node_that_loses_its_metrics_loses_its_soft_taint() -> None:
    cluster = cluster_with(
        make_node("node-a", apply=replace(taints=(SOFT_TAINT,))),
        make_node("node-b"),
        make_node("node-c"),
    )
    config = policy_config("LoadAware", "SoftTainter", args=TAINTER)
    metrics = {"cpu_utilization": {"node-b": 0.1, "node-c": 0.5}}
    make_descheduler(cluster, config, metrics=metrics).run_cycle()
    assert taints(cluster)["node-a"] == ()
