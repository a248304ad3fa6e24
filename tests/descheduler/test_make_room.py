"""MakeRoomForPending: a pod pending for want of room that the fleet has in pieces gets a node
cleared for it (`descheduler.plugins.make_room`).

Covered, through a cycle on an in-memory cluster and kube-scheduler's model: the pending pod
runs after one cycle and one scheduling pass, the evicted pods' replacements land elsewhere;
the node where the least leaves is chosen; nothing moves for a pod that fits already, that is
young or gated, whose room would take larger, higher-priority or stranded pods, or on a node
its policy forbids; a pod helped is not helped again before `retrySeconds`; the arguments are
validated with every problem listed.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from descheduler.config import ConfigError, parse_config
from descheduler.cycle import Mode
from descheduler.plugins import make_room
from descheduler.state import CycleState
from tas.cluster.model import PodCondition, TaintEffect
from tas.policies.model import TASPolicy
from tas.vocabulary import RESERVED_TAINT_KEY
from tas_inmemory.scheduler import InMemoryScheduler
from tests.builders import make_policy, rule
from tests.descheduler.builders import (
    START,
    FakeClock,
    cluster_with,
    evicted,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)

GiB = 1024**3


def config(**args: Any) -> Any:
    return policy_config("MakeRoomForPending", args={"MakeRoomForPending": args})


def small(name: str, node: str, cpu: float = 1.0, **kw: Any) -> Any:
    return make_pod(name, node=node, owner=name, cpu=cpu, memory=1 * GiB, **kw)


def waiting(name: str = "big", cpu: float = 7.5, minutes: float = 10, **kw: Any) -> Any:
    """A pod created `minutes` ago and never bound."""
    return make_pod(
        name,
        node=None,
        phase="Pending",
        owner=name,
        cpu=cpu,
        memory=4 * GiB,
        created=START - timedelta(minutes=minutes),
        **kw,
    )


def fragmented(*extra: Any) -> Any:
    """Three 8-core nodes, 6, 7 and 7 cores free: a 7.5-core pod fits none of them, though the
    fleet has 20 cores free."""
    pods = (
        small("a-1", "node-a"),
        small("a-2", "node-a"),
        small("b-1", "node-b"),
        small("c-1", "node-c"),
        *extra,
    )
    return cluster_with(*(make_node(f"node-{c}") for c in "abc"), pods=pods)


def test_the_pending_pod_runs_after_one_cycle_and_the_evicted_pod_lands_elsewhere() -> None:
    cluster = fragmented(waiting())
    scheduler = InMemoryScheduler(cluster, extender=None)
    assert scheduler.schedule_pending()[0].node is None  # pending for want of room

    report = make_descheduler(cluster, config()).run_cycle()

    # node-b and node-c each need one 1-core pod gone; node-a would need two.
    assert evicted(report) == ["b-1"]
    (decision,) = report.decisions
    assert decision.reason == (
        "MakeRoomForPending: making room on node-b for pending pod default/big"
    )
    placed = {r.pod: r.node for r in scheduler.schedule_pending()}
    assert placed["default/big"] == "node-b"
    (replacement,) = [name for name in placed if name.startswith("default/b-1")]
    assert placed[replacement] in ("node-a", "node-c")


def test_a_predictive_cycle_evicts_nothing_and_says_what_it_would() -> None:
    cluster = fragmented(waiting())
    report = make_descheduler(cluster, config(), mode=Mode.PREDICTIVE).run_cycle()
    assert evicted(report) == ["b-1"]
    assert {p.name for p in cluster.list_pods() if p.node_name == "node-b"} == {"b-1"}


@pytest.mark.parametrize(
    ("pending", "why"),
    [
        (waiting(cpu=6.5), "fits on node-b as the cluster stands"),
        (waiting(minutes=2), "pending for less than minPendingSeconds"),
        (
            waiting(
                apply=replace(
                    conditions=(PodCondition("PodScheduled", "False", reason="SchedulingGated"),)
                )
            ),
            "waits for its scheduling gates, not for room",
        ),
        (waiting(apply=replace(priority=-1)), "every pod in its way has a higher priority"),
    ],
)
def test_nothing_moves_for_a_pod_that_does_not_wait_for_room(pending: Any, why: str) -> None:
    report = make_descheduler(fragmented(pending), config()).run_cycle()
    assert evicted(report) == [], why


def test_no_larger_pod_leaves_for_a_smaller_one() -> None:
    # Every node holds one 6-core pod: a 3-core pod fits nowhere, and only a 6-core pod could
    # make room for it, which would leave the fleet running less.
    pods = tuple(small(f"{c}-1", f"node-{c}", cpu=6.0) for c in "ab")
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=(*pods, waiting(cpu=3)))
    assert evicted(make_descheduler(cluster, config()).run_cycle()) == []


def test_no_pod_leaves_when_it_would_find_no_room_elsewhere() -> None:
    # Two nodes with half a core free each: a 1.5-core pod leaving node-a would make room for
    # the 2-core pod there, but has no room to go to on node-b.
    pods = (
        small("a-1", "node-a", cpu=6.0),
        small("a-2", "node-a", cpu=1.5),
        small("b-1", "node-b", cpu=6.0),
        small("b-2", "node-b", cpu=1.5),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=(*pods, waiting(cpu=2)))
    assert evicted(make_descheduler(cluster, config()).run_cycle()) == []


def eighths() -> Any:
    """node-a holds eight quarter-core pods, the only ones that may leave (the other nodes'
    pods have a higher priority): six would have to go for a 7.5-core pod."""
    quarters = tuple(small(f"a-{i}", "node-a", cpu=0.25) for i in range(8))
    others = tuple(small(f"{c}-1", f"node-{c}", apply=replace(priority=10)) for c in "bc")
    return cluster_with(
        *(make_node(f"node-{c}") for c in "abc"), pods=(*quarters, *others, waiting(cpu=7.5))
    )


def test_at_most_max_pods_per_pending_leave_for_one_pod() -> None:
    assert evicted(make_descheduler(eighths(), config(maxPodsPerPending=5)).run_cycle()) == []
    report = make_descheduler(eighths(), config(maxPodsPerPending=6)).run_cycle()
    assert len(evicted(report)) == 6


def reserved_nodes(cluster: Any) -> dict[str, str]:
    return {
        n.name: t.value
        for n in cluster.list_nodes()
        for t in n.taints
        if t.key == RESERVED_TAINT_KEY and t.effect is TaintEffect.NO_SCHEDULE
    }


def limited(cluster: Any, clock: Any, registry: CollectorRegistry) -> Any:
    """A descheduler that lets five pods leave a node in one cycle."""
    return make_descheduler(
        cluster,
        policy_config("MakeRoomForPending", maxNoOfPodsToEvictPerNode=5),
        clock=clock,
        registry=registry,
    )


def test_a_room_larger_than_the_per_node_limit_is_made_over_two_cycles_the_node_reserved() -> None:
    cluster = eighths()
    scheduler = InMemoryScheduler(cluster, extender=None)
    clock, registry = FakeClock(START), CollectorRegistry()
    descheduler = limited(cluster, clock, registry)

    assert len(evicted(descheduler.run_cycle())) == 5
    assert reserved_nodes(cluster) == {"node-a": "uid-default-big"}
    assert registry.get_sample_value("tas_descheduler_reserved_nodes") == 1.0
    placed = {r.pod: r.node for r in scheduler.schedule_pending()}
    assert placed["default/big"] is None  # the sixth pod is still there
    assert all(node != "node-a" for pod, node in placed.items() if pod != "default/big")

    clock.advance(60)
    assert len(evicted(descheduler.run_cycle())) == 1
    assert reserved_nodes(cluster) == {}
    assert registry.get_sample_value("tas_descheduler_reserved_nodes") == 0.0
    placed = {r.pod: r.node for r in scheduler.schedule_pending()}
    assert placed["default/big"] == "node-a"


def test_a_reservation_ends_when_its_pod_is_gone_and_when_the_descheduler_restarts() -> None:
    limited = policy_config("MakeRoomForPending", maxNoOfPodsToEvictPerNode=5)
    cluster = eighths()
    clock = FakeClock(START)
    make_descheduler(cluster, limited, clock=clock).run_cycle()
    assert reserved_nodes(cluster) == {"node-a": "uid-default-big"}
    # Another descheduler (a restart, or the standby taking the lease) knows of no clearing.
    make_descheduler(cluster, limited, clock=clock).run_cycle()
    assert reserved_nodes(cluster) == {}

    cluster = eighths()
    descheduler = make_descheduler(cluster, limited, clock=clock)
    descheduler.run_cycle()
    cluster.remove_pod("default", "big")
    clock.advance(60)
    descheduler.run_cycle()
    assert reserved_nodes(cluster) == {}


def test_a_reservation_ends_when_a_cycle_is_skipped_for_want_of_ready_nodes() -> None:
    """A fleet down to one Ready node: a reservation kept through the skipped cycles would keep
    every new pod off the node that is left."""
    cluster = eighths()
    clock, registry = FakeClock(START), CollectorRegistry()
    descheduler = limited(cluster, clock, registry)
    descheduler.run_cycle()
    assert reserved_nodes(cluster) == {"node-a": "uid-default-big"}
    for name in ("node-b", "node-c"):
        cluster.update_node(dataclasses.replace(cluster.get_node(name), ready=False))
    clock.advance(60)
    assert descheduler.run_cycle().skipped is not None
    assert reserved_nodes(cluster) == {}
    assert registry.get_sample_value("tas_descheduler_reserved_nodes") == 0.0


def test_a_room_no_rail_lets_begin_is_not_begun_and_a_predictive_cycle_writes_no_taint() -> None:
    spent = policy_config(
        "MakeRoomForPending", maxNoOfPodsToEvictPerNamespace=0, maxNoOfPodsToEvictPerNode=5
    )
    cluster = eighths()
    assert evicted(make_descheduler(cluster, spent).run_cycle()) == []
    assert reserved_nodes(cluster) == {}
    limited = policy_config("MakeRoomForPending", maxNoOfPodsToEvictPerNode=5)
    report = make_descheduler(cluster, limited, mode=Mode.PREDICTIVE).run_cycle()
    assert len(evicted(report)) == 5
    assert reserved_nodes(cluster) == {}


def test_the_pending_pods_policy_keeps_it_off_a_node_it_forbids() -> None:
    policy: TASPolicy = make_policy("big-policy", dontschedule=[rule("health_metric", "Equals", 1)])
    pending = waiting(labels={"telemetry-policy": "big-policy"})
    health = {"health_metric": {"node-a": 0, "node-b": 1, "node-c": 0}}
    report = make_descheduler(
        fragmented(pending), config(), metrics=health, policies={policy.key: policy}
    ).run_cycle()
    assert evicted(report) == ["c-1"]


def test_a_pod_helped_is_not_helped_again_before_retry_seconds() -> None:
    clock = FakeClock(START)
    cluster = fragmented(waiting())
    descheduler = make_descheduler(cluster, config(), mode=Mode.PREDICTIVE, clock=clock)
    assert evicted(descheduler.run_cycle()) == ["b-1"]
    clock.advance(300)
    assert evicted(descheduler.run_cycle()) == []  # still pending: something took the room?
    clock.advance(301)
    assert evicted(descheduler.run_cycle()) == ["b-1"]


def test_bad_arguments_are_each_reported() -> None:
    document = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {
                "name": "p",
                "pluginConfig": [
                    {
                        "name": "MakeRoomForPending",
                        "args": {
                            "minPendingSeconds": -1,
                            "maxPodsPerPending": 0,
                            "retrySeconds": "ten",
                        },
                    }
                ],
                "plugins": {"balance": {"enabled": ["MakeRoomForPending"]}},
            }
        ],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    message = str(caught.value)
    for field in ("minPendingSeconds", "maxPodsPerPending", "retrySeconds"):
        assert field in message


def test_a_long_queue_of_pods_no_room_can_be_made_for_is_gone_through_in_turn() -> None:
    # More pods than a cycle plans for, each larger than any node: the one pod that can be
    # helped, younger than all of them, has its turn in the next cycle.
    hopeless = tuple(
        waiting(f"huge-{i:02d}", cpu=9.0, minutes=10) for i in range(make_room.PLANNED_PODS + 1)
    )
    clock = FakeClock(START)
    descheduler = make_descheduler(fragmented(*hopeless, waiting(minutes=6)), config(), clock=clock)
    assert evicted(descheduler.run_cycle()) == []
    clock.advance(60)
    assert evicted(descheduler.run_cycle()) == ["b-1"]


def test_a_node_cleared_for_one_pod_is_not_counted_as_room_for_the_next() -> None:
    # Two pods of one shape waiting: once node-b is cleared for the first, the second must get
    # a node of its own in the same cycle (node-a: node-c takes b-1, booked there), not be
    # taken to fit on node-b.
    cluster = fragmented(waiting("big-1", minutes=11), waiting("big-2", minutes=10))
    report = make_descheduler(cluster, config()).run_cycle()
    assert evicted(report) == ["a-1", "a-2", "b-1"]
    placed = {r.pod: r.node for r in InMemoryScheduler(cluster, extender=None).schedule_pending()}
    assert (placed["default/big-1"], placed["default/big-2"]) == ("node-b", "node-a")
    assert all(node == "node-c" for pod, node in placed.items() if "big" not in pod)


class _MovedAt:
    """A move history in which every owner began moving at one time."""

    def __init__(self, when: Any) -> None:
        self.when = when

    def owner_moving_since(self, pod: Any) -> Any:
        return self.when

    def recently_evacuated(self, now: Any, within: float) -> Any:
        return ()


def test_a_replacement_of_a_moved_pod_is_left_to_settle_for_an_hour() -> None:
    # One replica's slot is moved by this plugin at most once an hour (the churn goal): a pod
    # created since its owner began moving does not leave for a pending pod within the hour.
    node = make_node("node-a")
    moved_at = START - timedelta(minutes=20)
    old = small("old", "node-a")
    fresh = small("fresh", "node-a", created=START - timedelta(minutes=10))
    state = CycleState(
        nodes={node.name: node}, pods=(old, fresh), pdbs=(), policies={}, metrics={}, now=START
    )
    ledger = make_room._Ledger(state, _MovedAt(moved_at))
    assert [p.name for p in ledger.movable(waiting(), node)] == ["old"]
    later = CycleState(
        nodes={node.name: node},
        pods=(old, fresh),
        pdbs=(),
        policies={},
        metrics={},
        now=START + timedelta(minutes=51),
    )
    ledger = make_room._Ledger(later, _MovedAt(moved_at))
    assert [p.name for p in ledger.movable(waiting(), node)] == ["old", "fresh"]
