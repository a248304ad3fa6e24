"""HighNodeUtilization rows (highnodeutilization_test.go: TestHighNodeUtilization, with
nodeFit on as upstream builds it, and TestHighNodeUtilizationWithTaints)."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import (
    DS_OWNER,
    LOCAL_STORAGE,
    MIRROR,
    POD_OWNER,
    RS_OWNER,
    SYSTEM_CRITICAL,
    node,
    pod,
    taint,
)

EXTENDED = "example.com/foo"
CPU_PODS_20 = {"cpu": 20, "pods": 20}
CPU_PODS_30 = {"cpu": 30, "pods": 30}


def n(name: str, cpu: int = 4000, memory: int = 3000, pods: int = 10, **changes: Any) -> Json:
    return node(name, cpu, memory, pods, **changes)


def rs(name: str, node_name: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Json:
    return pod(name, cpu, memory, node_name, **{"owners": RS_OWNER, **changes})


def ext(name: str, node_name: str, cpu: int, count: int = 1) -> Json:
    return rs(name, node_name, cpu, extended={EXTENDED: count})


def case(
    name: str,
    thresholds: dict[str, float],
    nodes: list[Json],
    pods: list[Json],
    evicted: int,
    evicted_pods: list[str] | None = None,
    **args: Any,
) -> Case:
    return Case(
        name=name,
        plugin="HighNodeUtilization",
        nodes=nodes,
        pods=pods,
        args={"thresholds": thresholds, **args},
        evictor={"nodeFit": True},
        evicted=evicted,
        evicted_pods=evicted_pods,
    )


CASES: list[Case] = [
    case(
        "no node below threshold usage",
        CPU_PODS_20,
        [n("n1"), n("n2"), n("n3")],
        [rs(f"p{i}", f"n{(i - 1) // 3 + 1}") for i in range(1, 10)],
        0,
    ),
    case(
        "no evictable pods",
        {"cpu": 40, "pods": 40},
        [n("n1", pods=9), n("n2"), n("n3")],
        [
            pod("p1", 400, 0, "n1", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations=MIRROR),
            pod(
                "p2",
                400,
                0,
                "n1",
                owners=POD_OWNER,
                namespace="kube-system",
                priority=SYSTEM_CRITICAL,
            ),
            pod("p3", 400, 0, "n2", owners=DS_OWNER),
            pod("p4", 400, 0, "n2", owners=DS_OWNER),
            *(rs(f"p{i}", "n3") for i in range(5, 9)),
        ],
        0,
    ),
    case(
        "no node to schedule evicted pods",
        CPU_PODS_20,
        [n("n1"), n("n2"), n("n3", unschedulable=True)],
        [rs("p1", "n1"), rs("p2", "n2"), rs("p3", "n3"), rs("p4", "n3"), rs("p5", "n3")],
        0,
    ),
    case(
        "without priorities",
        CPU_PODS_30,
        [n("n1"), n("n2"), n("n3", unschedulable=True)],
        [
            rs("p1", "n1"),
            pod(
                "p2",
                400,
                0,
                "n1",
                owners=POD_OWNER,
                namespace="kube-system",
                priority=SYSTEM_CRITICAL,
            ),
            *(rs(f"p{i}", "n2") for i in range(3, 7)),
            rs("p7", "n3"),
        ],
        2,
        ["p1", "p7"],
    ),
    case(
        "without priorities stop when resource capacity is depleted",
        CPU_PODS_30,
        [n("n1", 2000), n("n2", 2000), n("n3", 2000, unschedulable=True)],
        [rs("p1", "n1"), *(rs(f"p{i}", "n2") for i in range(2, 6)), rs("p6", "n3")],
        1,
    ),
    case(
        "with priorities",
        {"cpu": 30},
        [n("n1"), n("n2", 2000), n("n3", 2000, unschedulable=True)],
        [
            rs("p1", "n1", priority=0),
            rs("p2", "n1", priority=10000),
            *(rs(f"p{i}", "n2") for i in range(5, 9)),
            pod("p9", 400, 0, "n3", owners=DS_OWNER),
        ],
        1,
        ["p1"],
    ),
    case(
        "without priorities evicting best-effort pods only",
        {"cpu": 30},
        [n("n1", 3000), n("n2", 3000, pods=5), n("n3", 3000, unschedulable=True)],
        [
            rs("p1", "n1", 0, best_effort=True),
            rs("p2", "n1"),
            *(rs(f"p{i}", "n2") for i in range(3, 7)),
        ],
        1,
        ["p1"],
    ),
    case(
        "with extended resource",
        {"cpu": 20, EXTENDED: 40},
        [
            n("n1", extended={EXTENDED: 8}),
            n("n2", extended={EXTENDED: 8}),
            n("n3", unschedulable=True),
        ],
        [
            ext("p1", "n1", 100),
            ext("p2", "n1", 100),
            *(ext(f"p{i}", "n2", 500) for i in range(3, 7)),
        ],
        2,
        ["p1", "p2"],
    ),
    case(
        "with extended resource in some of nodes",
        {"cpu": 40, EXTENDED: 40},
        [n("n1", extended={EXTENDED: 8}), n("n2"), n("n3", unschedulable=True)],
        [
            ext("p1", "n1", 100),
            ext("p2", "n1", 100),
            *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
        ],
        0,
    ),
    case(
        "Other node match pod node selector",
        CPU_PODS_30,
        [n("n1", pods=9, labels={"datacenter": "west"}), n("n2")],
        [
            rs("p1", "n1"),
            rs("p2", "n1"),
            rs("p3", "n1"),
            pod("p4", 400, 0, "n1", owners=DS_OWNER),
            rs("p5", "n2", node_selector={"datacenter": "west"}),
        ],
        1,
    ),
    case(
        "Other node does not match pod node selector",
        CPU_PODS_30,
        [n("n1", pods=9), n("n2")],
        [
            rs("p1", "n1"),
            rs("p2", "n1"),
            rs("p3", "n1"),
            pod("p4", 400, 0, "n1", owners=DS_OWNER),
            rs("p5", "n2", node_selector={"datacenter": "west"}),
        ],
        0,
    ),
    case(
        "Other node does not have enough Memory",
        CPU_PODS_30,
        [n("n1", memory=200, pods=9), n("n2")],
        [
            rs("p1", "n1", memory=50),
            rs("p2", "n1", memory=50),
            rs("p3", "n1", memory=50),
            pod("p4", 400, 50, "n1", owners=DS_OWNER),
            rs("p5", "n2", memory=100),
        ],
        0,
    ),
    case(
        "with extended resource threshold and no extended resource pods",
        {EXTENDED: 40},
        [n(f"n{i}", extended={EXTENDED: 10}) for i in (1, 2, 3)],
        [
            ext("p1", "n1", 100, 3),
            ext("p2", "n1", 100, 3),
            *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
        ],
        0,
        evictionModes=["OnlyThresholdingResources"],
    ),
]

# --- TestHighNodeUtilizationWithTaints: thresholds on cpu 40; nodeFit off; the test's evictor
# allows as many evictions per node as it expects.
KEY_VALUE = taint("key", "value")


def taint_case(name: str, nodes: list[Json], pods: list[Json], evicted: int) -> Case:
    return Case(
        name=name,
        plugin="HighNodeUtilization",
        nodes=nodes,
        pods=pods,
        args={"thresholds": {"cpu": 40}},
        policy={"maxNoOfPodsToEvictPerNode": evicted},
        evicted=evicted,
    )


def small(name: str, **changes: Any) -> Json:
    return node(name, 1000, 3000, 10, **changes)


CASES += [
    taint_case(
        "No taints",
        [small("n1"), small("n2"), small("n3")],
        [*(rs(f"pod_{i}_n1", "n1", 200) for i in (1, 2, 3)), rs("pod_4_n2", "n2", 200)],
        1,
    ),
    taint_case(
        "No pod tolerates node taint",
        [small("n1"), small("n3", taints=[KEY_VALUE])],
        [rs("pod_1_n1", "n1", 200), rs("pod_2_n3", "n3", 200)],
        0,
    ),
    taint_case(
        "Pod which tolerates node taint",
        [small("n1"), small("n3", taints=[KEY_VALUE])],
        [
            rs("pod_1_n1", "n1", 100),
            rs("tolerate_pod", "n1", 200, tolerations=[{"key": "key", "value": "value"}]),
            rs("pod_9_n3", "n3", 500),
        ],
        1,
    ),
]
