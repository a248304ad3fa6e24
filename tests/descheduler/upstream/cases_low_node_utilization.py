"""LowNodeUtilization rows (lownodeutilization_test.go: TestLowNodeUtilization, each row on
requests and again "with metrics enabled" (the metrics server's NodeMetrics and PodMetrics),
TestLowNodeUtilizationWithTaints and TestLowNodeUtilizationWithPrometheusMetrics). Upstream
builds the DefaultEvictor with nodeFit on for all of them."""

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
    node_metrics,
    pod,
    pod_metrics,
    required_affinity,
    taint,
)

EXTENDED = "example.com/foo"
LOW, HIGH = 0, 10000
CPU_PODS = {"cpu": 30, "pods": 30}
CPU_PODS_TARGET = {"cpu": 50, "pods": 50}
WEST, EAST = {"datacenter": "west"}, {"datacenter": "east"}


def n(name: str, pods: int = 10, **changes: Any) -> Json:
    return node(name, 4000, 3000, pods, **changes)


def three(n1_pods: int = 9, **n3: Any) -> list[Json]:
    return [n("n1", n1_pods), n("n2"), n("n3", unschedulable=True, **n3)]


def rs(name: str, node_name: str = "n1", cpu: int = 400, memory: int = 0, **changes: Any) -> Json:
    return pod(name, cpu, memory, node_name, **{"owners": RS_OWNER, **changes})


def unsafe(cpu: int = 400, memory: int = 0, *, owned_critical: bool = True) -> list[Json]:
    """p6-p8: a DaemonSet pod, a mirror pod with local storage, a critical pod."""
    critical_owner = POD_OWNER if owned_critical else []
    return [
        pod("p6", cpu, memory, "n1", owners=DS_OWNER),
        pod("p7", cpu, memory, "n1", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations=MIRROR),
        pod(
            "p8",
            cpu,
            memory,
            "n1",
            owners=critical_owner,
            namespace="kube-system",
            priority=SYSTEM_CRITICAL,
        ),
    ]


def standard(**p9: Any) -> list[Json]:
    return [*(rs(f"p{i}") for i in range(1, 6)), *unsafe(), rs("p9", "n2", **p9)]


def metrics(nodes: dict[str, int], pods: dict[str, int], memory: int = 0) -> list[tuple[str, Json]]:
    return [
        *(("nodemetrics", node_metrics(name, cpu, memory)) for name, cpu in nodes.items()),
        *(("podmetrics", pod_metrics(name, cpu, memory)) for name, cpu in pods.items()),
    ]


P1_5 = dict.fromkeys(["p1", "p2", "p3", "p4", "p5"], 401)
STANDARD_NODE_METRICS = {"n1": 3201, "n2": 401, "n3": 11}


def both(
    name: str,
    nodes: list[Json],
    pods: list[Json],
    evicted: int,
    with_metrics: int,
    node_usage: dict[str, int],
    pod_usage: dict[str, int],
    *,
    low: dict[str, float] = CPU_PODS,
    high: dict[str, float] = CPU_PODS_TARGET,
    evicted_pods: list[str] | None = None,
    **more: Any,
) -> list[Case]:
    """The row on requests, and the row on the metrics server's usage."""
    args = {"thresholds": low, "targetThresholds": high, **more}
    common: dict[str, Any] = {
        "plugin": "LowNodeUtilization",
        "nodes": nodes,
        "pods": pods,
        "evictor": {"nodeFit": True},
        "objects": metrics(node_usage, pod_usage),
    }
    return [
        Case(name=name, args=args, evicted=evicted, evicted_pods=evicted_pods, **common),
        Case(
            name=f"{name} with metrics enabled",
            args={**args, "metricsUtilization": {"source": "KubernetesMetrics"}},
            evicted=with_metrics,
            **common,
        ),
    ]


def with_extended(name: str, node_name: str = "n1", count: int = 1, **changes: Any) -> Json:
    return pod(name, 0, 0, node_name, extended={EXTENDED: count}, **{"owners": RS_OWNER, **changes})


AFFINITY_WEST = required_affinity("datacenter", ["west"])

CASES: list[Case] = [
    *both(
        "no evictable pods",
        three(),
        [
            pod("p1", 400, 0, "n1", owners=DS_OWNER),
            pod("p2", 400, 0, "n1", owners=DS_OWNER),
            pod("p3", 400, 0, "n1", owners=DS_OWNER),
            pod("p4", 400, 0, "n1", owners=DS_OWNER),
            pod("p5", 400, 0, "n1", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations=MIRROR),
            pod("p6", 400, 0, "n1", namespace="kube-system", priority=SYSTEM_CRITICAL),
            rs("p9", "n2"),
        ],
        0,
        0,
        {"n1": 2401, "n2": 401, "n3": 10},
        P1_5,
    ),
    *both("without priorities", three(), standard(), 4, 4, STANDARD_NODE_METRICS, P1_5),
    *both(
        "without priorities, but excluding namespaces",
        three(),
        [
            *(
                pod(f"p{i}", 400, 0, "n1", owners=POD_OWNER, namespace="namespace1")
                for i in range(1, 6)
            ),
            *unsafe(owned_critical=False),
            rs("p9", "n2"),
        ],
        0,
        0,
        STANDARD_NODE_METRICS,
        P1_5,
        evictableNamespaces={"exclude": ["namespace1"]},
    ),
    *both(
        "without priorities stop when cpu capacity is depleted",
        three(),
        standard(),
        4,
        4,
        {"n1": 3201, "n2": 401, "n3": 0},
        P1_5,
    ),
    *both(
        "with priorities",
        three(),
        [
            *(rs(f"p{i}", priority=HIGH) for i in range(1, 5)),
            rs("p5", priority=LOW),
            pod("p6", 400, 0, "n1", owners=DS_OWNER, priority=HIGH),
            pod(
                "p7",
                400,
                0,
                "n1",
                owners=POD_OWNER,
                volumes=LOCAL_STORAGE,
                annotations=MIRROR,
                priority=LOW,
            ),
            pod(
                "p8",
                400,
                0,
                "n1",
                owners=POD_OWNER,
                namespace="kube-system",
                priority=SYSTEM_CRITICAL,
            ),
            rs("p9", "n2"),
        ],
        4,
        4,
        STANDARD_NODE_METRICS,
        P1_5,
    ),
    *both(
        "without priorities evicting best-effort pods only",
        three(),
        [
            rs("p1", best_effort=True),
            rs("p2", best_effort=True),
            rs("p3"),
            rs("p4", best_effort=True),
            rs("p5", best_effort=True),
            *unsafe(),
            rs("p9", "n2"),
        ],
        4,
        4,
        STANDARD_NODE_METRICS,
        P1_5,
        evicted_pods=["p1", "p2", "p4", "p5"],
    ),
    *both(
        "with extended resource",
        [
            n("n1", 9, extended={EXTENDED: 8}),
            n("n2", extended={EXTENDED: 8}),
            n("n3", unschedulable=True),
        ],
        [
            *(with_extended(f"p{i}") for i in range(1, 6)),
            with_extended("p6", owners=POD_OWNER),
            with_extended("p7", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations=MIRROR),
            with_extended(
                "p8", owners=POD_OWNER, namespace="kube-system", priority=SYSTEM_CRITICAL
            ),
            with_extended("p9", "n2"),
        ],
        3,
        0,
        STANDARD_NODE_METRICS,
        P1_5,
        low={"pods": 30, EXTENDED: 30},
        high={"pods": 50, EXTENDED: 50},
    ),
    *both(
        "with extended resource in some of nodes",
        [n("n1", 9, extended={EXTENDED: 8}), n("n2"), n("n3", unschedulable=True)],
        [with_extended("p1"), rs("p9", "n2", cpu=0)],
        0,
        0,
        STANDARD_NODE_METRICS,
        P1_5,
        low={"pods": 30, EXTENDED: 30},
        high={"pods": 50, EXTENDED: 50},
    ),
    *both(
        "with extended resource in some of nodes with deviation",
        [
            n("n1", extended={EXTENDED: 8}),
            n("n2", extended={EXTENDED: 8}),
            n("n3", unschedulable=True),
        ],
        [
            with_extended("p1"),
            with_extended("p2", "n2", 7),
            rs("p3", "n2", cpu=0),
            rs("p8", "n3", cpu=0),
            rs("p9", "n3", cpu=0),
        ],
        1,
        0,
        STANDARD_NODE_METRICS,
        P1_5,
        low={"pods": 5, EXTENDED: 10},
        high={"pods": 5, EXTENDED: 10},
        useDeviationThresholds=True,
    ),
    *both(
        "without priorities, but only other node is unschedulable",
        [n("n1", 9), n("n2", unschedulable=True)],
        [*(rs(f"p{i}") for i in range(1, 6)), *unsafe()],
        0,
        0,
        {"n1": 3201, "n2": 401},
        P1_5,
    ),
    *both(
        "without priorities, but only other node doesn't match pod node selector for p4 and p5",
        [n("n1", 9), n("n2", labels=EAST)],
        [
            rs("p1"),
            rs("p2"),
            rs("p3"),
            pod("p4", 400, 0, "n1", owners=POD_OWNER, node_selector=WEST),
            pod("p5", 400, 0, "n1", owners=POD_OWNER, node_selector=WEST),
            *unsafe(),
        ],
        3,
        3,
        {"n1": 3201, "n2": 401},
        dict.fromkeys(["p1", "p2", "p3"], 401),
    ),
    *both(
        "without priorities, but only other node doesn't match pod node affinity for p4 and p5",
        [n("n1", 9), n("n2", labels=EAST)],
        [
            rs("p1"),
            rs("p2"),
            rs("p3"),
            pod("p4", 400, 0, "n1", owners=POD_OWNER, affinity=AFFINITY_WEST),
            pod("p5", 400, 0, "n1", owners=POD_OWNER, affinity=AFFINITY_WEST),
            *unsafe(),
            rs("p9", "n2", cpu=0),
        ],
        3,
        3,
        {"n1": 3201, "n2": 401},
        dict.fromkeys(["p1", "p2", "p3"], 401),
    ),
    *both(
        "deviation thresholds",
        three(),
        standard(),
        2,
        2,
        STANDARD_NODE_METRICS,
        P1_5,
        low={"cpu": 5, "pods": 5},
        high={"cpu": 5, "pods": 5},
        useDeviationThresholds=True,
    ),
    *both(
        "deviation thresholds and overevicting memory",
        [n("n1"), n("n2"), n("n3", unschedulable=True)],
        [
            *(rs(f"p{i}", memory=375) for i in range(1, 6)),
            *unsafe(memory=375),
            rs("p9", "n2", memory=3000),
        ],
        0,
        0,
        {"n1": 4000, "n2": 4000, "n3": 4000},
        {f"p{i}": 400 for i in range(1, 10)},
        low={"cpu": 5, "pods": 5},
        high={"cpu": 5, "pods": 5},
        useDeviationThresholds=True,
    ),
    *both(
        "without priorities different evictions for requested and actual resources",
        [n("n1", 9), n("n2", labels=EAST)],
        [
            rs("p1"),
            rs("p2"),
            rs("p3"),
            pod("p4", 400, 0, "n1", owners=POD_OWNER, affinity=AFFINITY_WEST),
            pod("p5", 400, 0, "n1", owners=POD_OWNER, affinity=AFFINITY_WEST),
            *unsafe(),
            rs("p9", "n2", cpu=0),
        ],
        3,
        2,
        {"n1": 3201, "n2": 401},
        dict.fromkeys(["p1", "p2", "p3"], 801),
    ),
    *both(
        "without priorities with node eviction limit",
        three(),
        [*(rs(f"p{i}") for i in range(1, 6)), *unsafe(owned_critical=False), rs("p9", "n2")],
        2,
        2,
        STANDARD_NODE_METRICS,
        P1_5,
        evictionLimits={"node": 2},
    ),
]

# --- TestLowNodeUtilizationWithTaints: thresholds on pods only; the test's evictor allows
# as many evictions per node as it expects.
KEY_VALUE = taint("key", "value")


def taint_case(name: str, nodes: list[Json], tolerating: bool, evicted: int, **policy: int) -> Case:
    on_n1 = [rs(f"pod_{i}_n1", cpu=200) for i in range(1, 8)]
    last = (
        rs("tolerate_pod", cpu=200, tolerations=[{"key": "key", "value": "value"}])
        if tolerating
        else rs("pod_8_n1", cpu=200)
    )
    target = nodes[-1]["metadata"]["name"]
    return Case(
        name=name,
        plugin="LowNodeUtilization",
        nodes=nodes,
        pods=[*on_n1, last, rs(f"pod_9_{target}", target, cpu=200)],
        args={"thresholds": {"pods": 20}, "targetThresholds": {"pods": 70}},
        evictor={"nodeFit": True},
        policy={"maxNoOfPodsToEvictPerNode": evicted, **policy},
        evicted=evicted,
    )


N1 = node("n1", 2000, 3000, 10)
N3_TAINTED = node("n3", 1000, 3000, 10, taints=[KEY_VALUE])
CASES += [
    taint_case("No taints", [N1, node("n2", 1000, 3000, 10), node("n3", 1000, 3000, 10)], False, 1),
    taint_case("No pod tolerates node taint", [N1, N3_TAINTED], False, 0),
    taint_case("Pod which tolerates node taint", [N1, N3_TAINTED], True, 1),
    taint_case(
        "Pod which tolerates node taint, maxPodsToEvictTotal(0), should not be expelled",
        [N1, N3_TAINTED],
        True,
        0,
        maxNoOfPodsToEvictTotal=0,
    ),
]

# --- TestLowNodeUtilizationWithPrometheusMetrics: one value per node from a query.
CPU_RATE = {"n1": 0.5695757575757561, "n2": 0.4245454545454522, "n3": 0.20381818181818104}


def prometheus_case(
    name: str, values: dict[str, float], evicted: int, low: int, high: int, **more: Any
) -> Case:
    return Case(
        name=name,
        plugin="LowNodeUtilization",
        nodes=[n("n1", 9), n("n2"), n("n3")],
        pods=[
            *(rs(f"p{i}") for i in range(1, 6)),
            pod("p6", 400, 0, "n1", owners=DS_OWNER),
            pod("p7", 400, 0, "n1", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations=MIRROR),
            pod(
                "p8",
                400,
                0,
                "n1",
                owners=POD_OWNER,
                namespace="kube-system",
                priority=SYSTEM_CRITICAL,
            ),
            rs("p9", "n2"),
        ],
        args={
            "thresholds": {"MetricResource": low},
            "targetThresholds": {"MetricResource": high},
            "metricsUtilization": {
                "source": "Prometheus",
                "prometheus": {"query": "instance:node_cpu:rate:sum"},
            },
            **more,
        },
        evictor={"nodeFit": True},
        prometheus=values,
        evicted=evicted,
    )


CASES += [
    prometheus_case("with instance:node_cpu:rate:sum query", CPU_RATE, 1, 30, 50),
    prometheus_case(
        "with instance:node_cpu:rate:sum query with more evictions",
        CPU_RATE,
        3,
        30,
        50,
        evictionLimits={"node": 3},
    ),
    prometheus_case(
        "with instance:node_cpu:rate:sum query with deviation",
        CPU_RATE,
        2,
        5,
        5,
        evictionLimits={"node": 2},
        useDeviationThresholds=True,
    ),
    prometheus_case(
        "with instance:node_cpu:rate:sum query and deviation thresholds",
        {"n1": 1, "n2": 0.5, "n3": 0},
        1,
        10,
        10,
        useDeviationThresholds=True,
    ),
]
