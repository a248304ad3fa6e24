"""RemovePodsViolatingNodeTaints rows (node_taint_test.go: TestDeletePodsViolatingNodeTaints)."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import (
    DS_OWNER,
    LOCAL_STORAGE,
    MIRROR,
    POD_OWNER,
    SYSTEM_CRITICAL,
    node,
    pod,
    taint,
)

TEST_TAINT = taint("testTaint1", "test1")
TESTING_TAINT = taint("testingTaint1", "testing1")
PREFER_TEST_TAINT = taint("testTaint1", "test1", "PreferNoSchedule")


def n(name: str, *taints: dict[str, str], **changes: Any) -> Json:
    return node(name, 2000, 3000, 10, taints=list(taints), **changes)


def toleration(key: str, value: str, effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


TOLERATES_TEST = [toleration("testTaint1", "test1")]
TOLERATES_X = [toleration("testTaintX1", "testX1")]


def owned(name: str, node_name: str, **changes: Any) -> Json:
    return pod(name, 100, 0, node_name, **{"owners": POD_OWNER, **changes})


def critical(name: str, node_name: str) -> Json:
    return owned(name, node_name, namespace="kube-system", priority=SYSTEM_CRITICAL)


def case(
    name: str,
    pods: list[Json],
    nodes: list[Json],
    evicted: int,
    *,
    args: dict[str, Any] | None = None,
    evictor: dict[str, Any] | None = None,
    **policy: int,
) -> Case:
    return Case(
        name=name,
        plugin="RemovePodsViolatingNodeTaints",
        nodes=nodes,
        pods=pods,
        args=args or {},
        evictor={"nodeFit": False, **(evictor or {})},
        policy=policy,
        evicted=evicted,
        spare_node=len(nodes) == 1,
    )


def tolerated_and_not(*names: str) -> list[Json]:
    first, *rest = names
    return [owned(first, "n1", tolerations=TOLERATES_TEST), *(owned(x, "n1") for x in rest)]


def unsafe_on_n2(*extra: Json) -> list[Json]:
    return [
        critical("p7", "n2"),
        pod("p8", 100, 0, "n2", owners=DS_OWNER),
        owned("p9", "n2", volumes=LOCAL_STORAGE),
        owned("p10", "n2", annotations=MIRROR),
        *extra,
    ]


CASES: list[Case] = [
    case(
        "Pods not tolerating node taint should be evicted",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p2", "n1"),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
        ],
        [n("n1", TEST_TAINT)],
        1,
    ),
    case(
        "Pods with tolerations but not tolerating node taint should be evicted",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
            owned("p4", "n1", tolerations=TOLERATES_X),
        ],
        [n("n1", TEST_TAINT)],
        1,
    ),
    case(
        "Only <maxNoOfPodsToEvictTotal> number of Pods not tolerating node taint should be evicted",
        tolerated_and_not("p1", "p5", "p6"),
        [n("n1", TEST_TAINT)],
        1,
        maxNoOfPodsToEvictPerNode=2,
        maxNoOfPodsToEvictTotal=1,
    ),
    case(
        "Only <maxPodsToEvictPerNode> number of Pods not tolerating node taint should be evicted",
        tolerated_and_not("p1", "p5", "p6"),
        [n("n1", TEST_TAINT)],
        1,
        maxNoOfPodsToEvictPerNode=1,
    ),
    case(
        "Only <maxNoOfPodsToEvictPerNamespace> number of Pods not tolerating node taint should "
        "be evicted",
        tolerated_and_not("p1", "p5", "p6"),
        [n("n1", TEST_TAINT)],
        1,
        maxNoOfPodsToEvictPerNamespace=1,
    ),
    case(
        "Critical pods not tolerating node taint should not be evicted",
        unsafe_on_n2(),
        [n("n2", TESTING_TAINT)],
        0,
    ),
    case(
        "Critical pods except storage pods not tolerating node taint should not be evicted",
        unsafe_on_n2(),
        [n("n2", TESTING_TAINT)],
        1,
        evictor={"evictLocalStoragePods": True},
    ),
    case(
        "Critical and non critical pods, only non critical pods not tolerating node taint should "
        "be evicted",
        [
            critical("p7", "n2"),
            pod("p8", 100, 0, "n2", owners=DS_OWNER),
            owned("p10", "n2", annotations=MIRROR),
            owned("p11", "n2"),
        ],
        [n("n2", TESTING_TAINT)],
        1,
    ),
    case(
        "Critical and non critical pods, pods not tolerating node taint are evicted even if "
        "critical",
        [
            owned("p2", "n1"),
            critical("p7", "n2"),
            owned("p9", "n2", volumes=LOCAL_STORAGE),
            owned("p10", "n2", annotations=MIRROR),
        ],
        [n("n1", TEST_TAINT), n("n2", TESTING_TAINT)],
        2,
        evictor={"evictSystemCriticalPods": True},
    ),
    case(
        "Pod p2 doesn't tolerate taint on its node, but also doesn't tolerate taints on other "
        "nodes",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p2", "n1"),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
        ],
        [n("n1", TEST_TAINT), n("n2", TESTING_TAINT)],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Pod p12 doesn't tolerate taint on its node, but other nodes don't match its selector",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
            owned("p11", "n2", node_selector={"datacenter": "west"}),
        ],
        [n("n1", TEST_TAINT), n("n3", labels={"datacenter": "east"})],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Pod p2 doesn't tolerate taint on its node, but other nodes are unschedulable",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p2", "n1"),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
        ],
        [n("n1", TEST_TAINT), n("n4", unschedulable=True)],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Pods not tolerating PreferNoSchedule node taint should not be evicted when not enabled",
        [owned("p13", "n5", tolerations=[toleration("testTaint0", "test0", "PreferNoSchedule")])],
        [n("n5", PREFER_TEST_TAINT)],
        0,
    ),
    case(
        "Pods not tolerating PreferNoSchedule node taint should be evicted when enabled",
        [owned("p13", "n5", tolerations=[toleration("testTaint0", "test0", "PreferNoSchedule")])],
        [n("n5", PREFER_TEST_TAINT)],
        1,
        args={"includePreferNoSchedule": True},
    ),
    case(
        "Pods not tolerating excluded node taints (by key) should not be evicted",
        [owned("p2", "n1")],
        [n("n1", TEST_TAINT)],
        0,
        args={"excludedTaints": ["excludedTaint1", "testTaint1"]},
    ),
    case(
        "Pods not tolerating excluded node taints (by key and value) should not be evicted",
        [owned("p2", "n1")],
        [n("n1", TEST_TAINT)],
        0,
        args={"excludedTaints": ["testTaint1=test1"]},
    ),
    case(
        "The excluded taint matches the key of node1's taint, but does not match the value",
        [owned("p2", "n1")],
        [n("n1", TEST_TAINT)],
        1,
        args={"excludedTaints": ["testTaint1=test2"]},
    ),
    case(
        "Pods not tolerating node taint can't be evicted: the only available node lacks resources",
        [
            owned("p2", "n1"),
            critical("p7", "n2"),
            owned("p9", "n2", volumes=LOCAL_STORAGE),
            owned("p10", "n2", annotations=MIRROR),
        ],
        [n("n1", TEST_TAINT), node("n6", 1, 1, 1, taints=[PREFER_TEST_TAINT])],
        0,
        evictor={"nodeFit": True, "evictSystemCriticalPods": True},
    ),
    case(
        "Pods tolerating included taints should not get evicted even with other taints present",
        [owned("p1", "n7", tolerations=TOLERATES_TEST)],
        [n("n7", TEST_TAINT, TESTING_TAINT)],
        0,
        args={"includedTaints": ["testTaint1=test1"]},
    ),
    case(
        "Pods not tolerating not included taints should not get evicted",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p2", "n1"),
            owned("p4", "n1", tolerations=TOLERATES_X),
        ],
        [n("n1", TEST_TAINT)],
        0,
        args={"includedTaints": ["testTaint2=test2"]},
    ),
    case(
        "Pods tolerating includedTaint should not get evicted; others should",
        [
            owned("p1", "n1", tolerations=TOLERATES_TEST),
            owned("p2", "n1"),
            owned("p3", "n1", tolerations=TOLERATES_TEST),
        ],
        [n("n1", TEST_TAINT)],
        1,
        args={"includedTaints": ["testTaint1=test1"]},
    ),
    case(
        "Pods not tolerating all taints are evicted when includedTaints is empty",
        [
            owned("p14", "n7", tolerations=TOLERATES_TEST),
            owned(
                "p15", "n7", tolerations=[*TOLERATES_TEST, toleration("testingTaint1", "testing1")]
            ),
        ],
        [n("n7", TEST_TAINT, TESTING_TAINT)],
        1,
    ),
]
