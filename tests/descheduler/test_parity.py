"""What changed for upstream parity, as whole cycles on the in-memory cluster.

Covered: the per-owner cooldown guards the telemetry plugins only: a classic plugin evicts every
pod of one owner it finds, as upstream does, unless the profile says `ownerCooldown:
AllPlugins`; TASViolations empties a violating node in one cycle (an evacuation is one
decision), does not evacuate the same workload again within the cooldown, and is not delayed by
a rebalancing move's cooldown; with the Labels source TASViolations trusts a pod's
`violate=<policy>` only with its node's `<policy>=violating` (a forged pod label moves
nothing), and acts on the pod's own link; Events: a Normal one per eviction in Automatic mode
(reason: the plugin), none in Predictive mode, Warning `EvictionFailed` ones for refusals and
limits with
`evictionFailureEventNotification`, and a Warning `DeschedulingHalted` on each violating node
when the circuit breaker trips (once, not every cycle it stays open); RemoveDuplicates groups
by owner and images; LowNodeUtilization reports its classification and drives the soft
tainter; a priority threshold by class name is read through the cluster.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from descheduler.cycle import Mode
from descheduler.profiles import OwnerCooldown
from tas.cluster.model import LabelSelector, PodDisruptionBudget, Taint, TaintEffect
from tas.metrics.static import StaticMetricView
from tas.types import MetricName, Namespace
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL
from tas_inmemory.cluster import InMemoryCluster
from tests.builders import make_policy, rule
from tests.descheduler.builders import (
    FakeClock,
    cluster_with,
    evicted,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)

RESTARTS = {"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 5}}


def restarting(name: str, owner: str = "rs", node: str = "node-a") -> Any:
    return make_pod(name, node=node, owner=owner, apply=replace(container_restarts=9))


def three_nodes() -> list[Any]:
    return [make_node(n) for n in ("node-a", "node-b", "node-c")]


def test_a_classic_plugin_evicts_every_pod_of_one_owner_as_upstream_does() -> None:
    cluster = cluster_with(*three_nodes(), pods=tuple(restarting(f"web-{i}") for i in range(4)))
    config = policy_config(
        "RemovePodsHavingTooManyRestarts", args=RESTARTS, evictionCooldownSeconds=300
    )
    report = make_descheduler(cluster, config).run_cycle()
    assert evicted(report) == ["web-0", "web-1", "web-2", "web-3"]


def test_a_profile_may_opt_the_classic_plugins_into_the_owner_cooldown() -> None:
    cluster = cluster_with(*three_nodes(), pods=tuple(restarting(f"web-{i}") for i in range(4)))
    document_config = policy_config(
        "RemovePodsHavingTooManyRestarts", args=RESTARTS, evictionCooldownSeconds=300
    )
    # The builder's profile, with ownerCooldown: AllPlugins.
    profile = document_config.profiles[0]
    config = dataclasses.replace(
        document_config,
        profiles=(dataclasses.replace(profile, owner_cooldown=OwnerCooldown.ALL_PLUGINS),),
    )
    descheduler = make_descheduler(cluster, config)
    assert len(evicted(descheduler.run_cycle())) == 1  # one pod per owner per cycle
    assert evicted(descheduler.run_cycle()) == []  # and the owner cools down


def test_tas_violations_empties_a_violating_node_in_one_cycle_then_the_owner_cools_down() -> None:
    policy = make_policy("p", deschedule=[rule("health", "Equals", 2)])
    pods = tuple(
        make_pod(f"web-{i}", node="node-a", owner="rs", labels={POLICY_LABEL: "p"})
        for i in range(3)
    )
    cluster = cluster_with(*three_nodes(), pods=pods)
    view = StaticMetricView({"health": {"node-a": 2, "node-b": 0, "node-c": 0}})
    clock = FakeClock()
    descheduler = make_descheduler(
        cluster,
        policy_config("TASViolations", evictionCooldownSeconds=300),
        metrics=view,
        policies={policy.key: policy},
        clock=clock,
    )
    # An evacuation is one decision: every pod of the owner leaves the bad node at once.
    assert sorted(evicted(descheduler.run_cycle())) == ["web-0", "web-1", "web-2"]

    # A minute later node-b goes bad too: the same workload is not bounced again so soon.
    clock.advance(60)
    cluster.add_pod(make_pod("web-3", node="node-b", owner="rs", labels={POLICY_LABEL: "p"}))
    view.set_column(MetricName("health"), {"node-a": 0, "node-b": 2, "node-c": 0})
    assert evicted(descheduler.run_cycle()) == []
    clock.advance(300)
    assert evicted(descheduler.run_cycle()) == ["web-3"]


def test_a_rebalancing_move_does_not_delay_leaving_an_unhealthy_node() -> None:
    policy = make_policy("p", deschedule=[rule("health", "Equals", 2)])
    cluster = cluster_with(
        *three_nodes(),
        pods=(make_pod("web-0", node="node-a", owner="rs", labels={POLICY_LABEL: "p"}),),
    )
    config = policy_config("TASViolations", evictionCooldownSeconds=300)
    clock = FakeClock()
    descheduler = make_descheduler(
        cluster,
        config,
        metrics={"health": {"node-a": 2, "node-b": 0, "node-c": 0}},
        policies={policy.key: policy},
        clock=clock,
    )
    # As if LoadAware had just moved another pod of the same workload.
    descheduler.cooldown.record(("default", "ReplicaSet", "rs"), clock.now())
    clock.advance(10)
    assert evicted(descheduler.run_cycle()) == ["web-0"]


def test_tas_violations_trusts_a_pod_s_violate_label_only_with_its_node_s_label() -> None:
    policy = make_policy("p", deschedule=[rule("health", "Equals", 2)])
    linked = {POLICY_LABEL: "p"}
    pods = (
        # A forged `violate=p` on node-a: node-a carries no `p=violating`, nothing moves.
        make_pod("forged", node="node-a", owner="a", labels={POD_VIOLATION_LABEL: "p"}),
        make_pod("bystander", node="node-a", owner="b", labels=linked),
        # On node-b, which the controller labelled: its linked pod goes.
        make_pod("linked", node="node-b", owner="c", labels=linked),
    )
    nodes = [
        dataclasses.replace(n, labels={**n.labels, "p": "violating"}) if n.name == "node-b" else n
        for n in three_nodes()
    ]
    cluster = cluster_with(*nodes, pods=pods)
    config = policy_config("TASViolations", args={"TASViolations": {"violationSource": "Labels"}})
    report = make_descheduler(cluster, config, policies={policy.key: policy}).run_cycle()
    assert evicted(report) == ["linked"]
    assert "node label p=violating" in report.decisions[0].reason


def test_every_eviction_is_announced_with_an_event_on_the_pod_in_automatic_mode() -> None:
    cluster = cluster_with(*three_nodes(), pods=(restarting("web-0"),))
    make_descheduler(
        cluster, policy_config("RemovePodsHavingTooManyRestarts", args=RESTARTS)
    ).run_cycle()
    (event,) = cluster.events
    assert (event.involved.kind, event.involved.name) == ("Pod", "web-0")
    assert event.reason == "RemovePodsHavingTooManyRestarts"
    assert event.type == "Normal"
    assert event.message.startswith("pod eviction from node-a node by ")


def test_predictive_mode_emits_no_eviction_event() -> None:
    cluster = cluster_with(*three_nodes(), pods=(restarting("web-0"),))
    config = policy_config("RemovePodsHavingTooManyRestarts", args=RESTARTS)
    make_descheduler(cluster, config, mode=Mode.PREDICTIVE).run_cycle()
    assert cluster.events == ()


def test_failed_evictions_are_announced_when_upstreams_option_asks() -> None:
    pods = (
        make_pod(
            "guarded",
            node="node-a",
            owner="a",
            labels={"app": "db"},
            apply=replace(container_restarts=9),
        ),
        restarting("over-limit", owner="b", node="node-b"),
        restarting("also-over", owner="c", node="node-b"),
    )
    cluster = cluster_with(*three_nodes(), pods=pods)
    cluster.add_pdb(
        PodDisruptionBudget(Namespace("default"), "db", LabelSelector({"app": "db"}), 0)
    )
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args=RESTARTS,
        evictionFailureEventNotification=True,
        maxNoOfPodsToEvictPerNode=1,
    )
    make_descheduler(cluster, config).run_cycle()
    warnings = {(e.involved.name, e.reason) for e in cluster.events if e.type == "Warning"}
    assert ("guarded", "EvictionFailed") in warnings
    assert ("also-over", "EvictionFailed") in warnings or (
        "over-limit",
        "EvictionFailed",
    ) in warnings
    failed = [e for e in cluster.events if e.reason == "EvictionFailed"]
    assert any("maxNoOfPodsToEvictPerNode 1 reached on node-b" in e.message for e in failed)


def test_a_circuit_breaker_trip_is_announced_on_each_violating_node_once() -> None:
    policy = make_policy("p", deschedule=[rule("health", "Equals", 2)])
    cluster = cluster_with(*three_nodes())
    health = {"health": {"node-a": 2, "node-b": 2, "node-c": 0}}
    descheduler = make_descheduler(
        cluster, policy_config("TASViolations"), metrics=health, policies={policy.key: policy}
    )
    descheduler.run_cycle()
    descheduler.run_cycle()
    halted = [(e.involved.kind, e.involved.name) for e in cluster.events]
    assert halted == [("Node", "node-a"), ("Node", "node-b")]
    assert all(e.reason == "DeschedulingHalted" and e.type == "Warning" for e in cluster.events)


def test_remove_duplicates_groups_by_owner_and_images() -> None:
    def replica(name: str, image: str) -> Any:
        return make_pod(name, owner="rs", apply=replace(container_images=(image,)))

    pods = (replica("web-1", "web:1"), replica("web-2", "web:1"), replica("sidecar", "proxy:2"))
    cluster = cluster_with(*three_nodes(), pods=pods)
    report = make_descheduler(cluster, policy_config("RemoveDuplicates")).run_cycle()
    assert evicted(report) == ["web-2"]


def test_low_node_utilization_on_requests_feeds_the_soft_tainter() -> None:
    pods = tuple(make_pod(f"p{i}", cpu=1.0, owner=f"o{i}") for i in range(6))
    cluster = cluster_with(*three_nodes(), pods=pods)
    args = {
        "LowNodeUtilization": {
            "thresholds": {"cpu": 20, "pods": 20},
            "targetThresholds": {"cpu": 50, "pods": 50},
        }
    }
    config = policy_config("LowNodeUtilization", "SoftTainter", args=args)
    report = make_descheduler(cluster, config).run_cycle()
    # node-a requests 6 of 8 cores (75%): pods move until it is at 50% or below.
    assert [d.node for d in report.by_result("evicted")] == ["node-a", "node-a"]
    taint = Taint("telemetry.aware.scheduling/overutilized", TaintEffect.PREFER_NO_SCHEDULE, "true")
    assert taint in cluster.get_node("node-a").taints  # type: ignore[arg-type]


def test_a_priority_threshold_by_class_name_is_read_through_the_cluster() -> None:
    pods = (
        make_pod("gold", owner="a", apply=replace(container_restarts=9, priority=5000)),
        make_pod("bronze", owner="b", apply=replace(container_restarts=9, priority=10)),
    )
    cluster = cluster_with(*three_nodes(), pods=pods)
    cluster.set_extras(priority_classes={"gold-class": 5000})
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args=RESTARTS,
        evictor={"priorityThreshold": {"name": "gold-class"}},
    )
    report = make_descheduler(cluster, config).run_cycle()
    assert evicted(report) == ["bronze"]


def test_the_in_memory_cluster_answers_the_extra_reads() -> None:
    cluster = InMemoryCluster()
    assert cluster.get_priority_class_value("nothing") is None
    assert cluster.list_namespaces() == ()
    assert cluster.list_node_metrics() == {}
