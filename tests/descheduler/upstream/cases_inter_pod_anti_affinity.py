"""RemovePodsViolatingInterPodAntiAffinity rows (pod_antiaffinity_test.go: TestPodAntiAffinity)."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import POD_OWNER, SYSTEM_CRITICAL, anti_affinity, node, pod

MAIN = {"region": "main-region"}
FOO_BAR = {"foo": "bar"}


def n1() -> Json:
    return node("n1", 2000, 3000, 10, labels=MAIN)


def on_n1(name: str, **changes: Any) -> Json:
    return pod(name, 100, 0, "n1", **changes)


def avoiding(name: str, node_name: str = "n1") -> Json:
    return pod(name, 100, 0, node_name, owners=POD_OWNER, affinity=anti_affinity("foo", "bar"))


def p2() -> Json:
    return on_n1("p2", owners=POD_OWNER, labels=FOO_BAR)


def non_evictable() -> Json:
    return on_n1("non-evict", priority=SYSTEM_CRITICAL, labels=FOO_BAR)


def four() -> list[Json]:
    return [avoiding("p1"), p2(), avoiding("p3"), avoiding("p4")]


def case(
    name: str,
    pods: list[Json],
    evicted: int,
    nodes: list[Json] | None = None,
    *,
    node_fit: bool = False,
    **policy: int,
) -> Case:
    return Case(
        name=name,
        plugin="RemovePodsViolatingInterPodAntiAffinity",
        nodes=nodes or [n1()],
        pods=pods,
        evictor={"nodeFit": node_fit},
        policy=policy,
        evicted=evicted,
        spare_node=nodes is None,
    )


WEST = {"datacenter": "west"}
CASES: list[Case] = [
    case("Maximum pods to evict - 0", four(), 3),
    case("Maximum pods to evict - 3", four(), 3, maxNoOfPodsToEvictPerNode=3),
    case(
        "Maximum pods to evict (maxPodsToEvictPerNamespace=3) - 3",
        four(),
        3,
        maxNoOfPodsToEvictPerNamespace=3,
    ),
    case(
        "Maximum pods to evict (maxNoOfPodsToEvictTotal)",
        four(),
        1,
        maxNoOfPodsToEvictPerNamespace=3,
        maxNoOfPodsToEvictTotal=1,
    ),
    case(
        "Evict only 1 pod after sorting",
        [
            on_n1(
                "p5",
                owners=POD_OWNER,
                labels=FOO_BAR,
                affinity=anti_affinity("foo1", "bar1"),
                priority=100,
            ),
            on_n1(
                "p6",
                owners=POD_OWNER,
                labels=FOO_BAR,
                affinity=anti_affinity("foo1", "bar1"),
                priority=50,
            ),
            on_n1(
                "p7",
                owners=POD_OWNER,
                labels={"foo1": "bar1"},
                affinity=anti_affinity("foo", "bar"),
                priority=0,
            ),
        ],
        1,
    ),
    case(
        "Evicts pod that conflicts with critical pod (but does not evict critical pod)",
        [avoiding("p1"), non_evictable()],
        1,
        maxNoOfPodsToEvictPerNode=1,
    ),
    case(
        "Won't evict pods because node selectors don't match available nodes",
        [on_n1("p8", node_selector=WEST), non_evictable()],
        0,
        [n1(), node("n2", 2000, 3000, 10, labels={"datacenter": "east"})],
        node_fit=True,
        maxNoOfPodsToEvictPerNode=1,
    ),
    case(
        "Won't evict pods because only other node is not schedulable",
        [on_n1("p8", node_selector=WEST), non_evictable()],
        0,
        [n1(), node("n3", 2000, 3000, 10, unschedulable=True)],
        node_fit=True,
        maxNoOfPodsToEvictPerNode=1,
    ),
    case(
        "No pod to evicted since all pod terminating",
        [
            on_n1("p9", owners=POD_OWNER, affinity=anti_affinity("foo", "bar"), deleting=True),
            on_n1("p10", owners=POD_OWNER, affinity=anti_affinity("foo", "bar"), deleting=True),
        ],
        0,
    ),
    case(
        "Won't evict pods because only other node doesn't have enough resources",
        four(),
        0,
        [n1(), node("n4", 2, 2, 1)],
        node_fit=True,
        maxNoOfPodsToEvictPerNode=3,
    ),
    case(
        "Evict pod violating anti-affinity among different node (all pods have anti-affinity)",
        [avoiding("p1"), pod("p11", 100, 0, "n5", owners=POD_OWNER, labels=FOO_BAR)],
        1,
        [n1(), node("n5", 200, 3000, 10, labels=MAIN)],
    ),
]
