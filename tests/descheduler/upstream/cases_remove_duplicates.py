"""RemoveDuplicates rows (removeduplicates_test.go: TestFindDuplicatePods and
TestRemoveDuplicatesUniformly)."""

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
    required_affinity,
    taint,
)

RS2 = [{"apiVersion": "v1", "kind": "ReplicaSet", "name": "replicaset-2", "uid": ""}]
TWO_RS = [{**RS_OWNER[0], "name": "replicaset-1"}, RS2[0]]


def n(name: str, **changes: Any) -> Json:
    return node(name, 2000, 3000, 10, **changes)


def rs(name: str, namespace: str = "default", node_name: str = "n1", **changes: Any) -> Json:
    return pod(name, 100, 0, node_name, namespace=namespace, owners=RS_OWNER, **changes)


def case(name: str, pods: list[Json], nodes: list[Json], evicted: int, **more: Any) -> Case:
    return Case(
        name=name, plugin="RemoveDuplicates", nodes=nodes, pods=pods, evicted=evicted, **more
    )


TWO = [n("n1"), n("n2")]
THREE = [n("n1"), n("n2"), n("n3")]
UNSAFE = [
    pod("p4", 100, 0, "n1", owners=DS_OWNER),
    pod("p5", 100, 0, "n1", owners=POD_OWNER, volumes=LOCAL_STORAGE),
    pod("p6", 100, 0, "n1", annotations=MIRROR),
    pod("p7", 100, 0, "n1", namespace="kube-system", priority=SYSTEM_CRITICAL),
]


def dev() -> list[Json]:
    return [rs("p1", "dev"), rs("p2", "dev"), rs("p3", "dev")]


def five_three_one(owners: list[dict[str, str]], names: str = "p") -> list[Json]:
    layout = ["n1"] * 5 + ["n2"] * 3 + ["n3"]
    return [pod(f"{names}{i + 1}", 100, 0, where, owners=owners) for i, where in enumerate(layout)]


def tolerating(key: str, value: str) -> dict[str, Any]:
    return {
        "owners": RS_OWNER,
        "tolerations": [{"key": key, "value": value, "operator": "Equal", "effect": "NoSchedule"}],
    }


def not_master(key: str) -> dict[str, Any]:
    affinity = required_affinity("node-role.kubernetes.io/control-plane", [], "DoesNotExist")
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    term["nodeSelectorTerms"][0]["matchExpressions"].append(
        {"key": key, "operator": "DoesNotExist"}
    )
    for expression in term["nodeSelectorTerms"][0]["matchExpressions"]:
        expression.pop("values", None)
    return {"owners": RS_OWNER, "affinity": affinity}


def workers(make: Any, keys: tuple[str, str] = ("k1", "k2")) -> list[Json]:
    layout = ["worker1"] * 5 + ["worker2"] * 3 + ["worker3"]
    return [pod(f"p{i + 1}", 100, 0, where, **make(keys[i % 2])) for i, where in enumerate(layout)]


def selector(value: str) -> dict[str, Any]:
    return {"owners": RS_OWNER, "node_selector": {"node-role.kubernetes.io/worker": value}}


WORKER = {"node-role.kubernetes.io/worker": "k2"}
MASTER_TAINT = taint("node-role.kubernetes.io/control-plane")

CASES: list[Case] = [
    case(
        "Three pods in the dev Namespace, bound to same ReplicaSet. 1 should be evicted",
        dev(),
        TWO,
        1,
    ),
    case(
        "Three pods in the dev Namespace, ReplicaSet kind is excluded. 0 should be evicted",
        dev(),
        TWO,
        0,
        args={"excludeOwnerKinds": ["ReplicaSet"]},
    ),
    case(
        "Three Pods in dev, three in test, ReplicaSets of the same name: 2 evicted",
        [*dev(), rs("p8", "test"), rs("p9", "test"), rs("p10", "test")],
        TWO,
        2,
    ),
    case(
        "DaemonSet, local storage, mirror and critical pods: none should be evicted",
        UNSAFE,
        TWO,
        0,
    ),
    case(
        "Test all Pods: 2 should be evicted",
        [*dev(), *UNSAFE, rs("p8", "test"), rs("p9", "test"), rs("p10", "test")],
        TWO,
        2,
    ),
    case(
        "Pods with the same owner but different images should not be evicted",
        [
            rs("p11", "different-images", images=["foo"]),
            rs("p12", "different-images", images=["bar"]),
        ],
        TWO,
        0,
    ),
    case(
        "Pods with multiple containers should not match themselves",
        [rs("p13", "different-images", images=["", "foo"])],
        TWO,
        0,
    ),
    case(
        "Pods with matching ownerrefs and not all matching images should not trigger an eviction",
        [
            rs("p11", "different-images", images=["foo"]),
            rs("p13", "different-images", images=["", "foo"]),
        ],
        TWO,
        0,
    ),
    case(
        "Only other node has a taint, nodeFit true: 0 evicted",
        dev(),
        [n("n1"), n("n3", taints=[taint("hardware", "gpu")])],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Only other node has an incorrect node label, nodeFit true: 0 evicted",
        [
            rs(name, "node-fit", node_selector={"datacenter": "west"})
            for name in ("p15", "NOT1", "NOT2")
        ],
        [n("n1"), n("n4", labels={"datacenter": "east"})],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Only other node is not schedulable, nodeFit true: 0 evicted",
        dev(),
        [n("n1"), n("n5", unschedulable=True)],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Only other node does not have enough CPU, nodeFit true: 0 evicted",
        [*dev(), pod("CPU-eater", 150, 150, "n6", namespace="test")],
        [n("n1"), node("n6", 200, 200, 10)],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "Only other node has enough CPU, nodeFit true: 1 evicted",
        [*dev(), pod("CPU-saver", 100, 150, "n6", namespace="test")],
        [n("n1"), node("n6", 200, 200, 10)],
        1,
        evictor={"nodeFit": True},
    ),
    # --- TestRemoveDuplicatesUniformly (upstream's DefaultEvictorArgs{}: nodeFit false)
    case("Evict pods uniformly: (5,3,1) -> (3,3,3)", five_three_one(RS_OWNER), THREE, 2),
    case("Evict pods uniformly with one node left out", five_three_one(RS_OWNER), TWO, 1),
    case(
        "Evict pods uniformly with two replica sets",
        five_three_one(TWO_RS, "p1"),
        THREE,
        2,
        why="upstream expects 4: it asks to evict each of the 2 pods once per owner, and its "
        "fake client counts every call; against the API the second call finds the pod gone "
        "(and this descheduler never asks twice), so the same 2 pods move",
    ),
    case(
        "Evict pods uniformly with two owner references",
        [
            *five_three_one(RS_OWNER, "p1"),
            *[
                pod(f"p2{i + 1}", 100, 0, where, owners=RS2)
                for i, where in enumerate(["n1"] + ["n2"] * 3 + ["n3"] * 5)
            ],
        ],
        THREE,
        4,
    ),
    case(
        "Evict pods with number of pods less than nodes",
        [rs("p1"), rs("p2")],
        THREE,
        1,
    ),
    case(
        "Different pods with the same ownerref are not duplicates",
        [
            rs(name, images=["", image])
            for name, image in [("p1", "foo"), ("p2", "bar"), ("p3", "baz"), ("p4", "foo")]
        ],
        THREE,
        1,
    ),
    case("Evict pods with a single pod with three nodes", [rs("p1")], THREE, 0),
    case(
        "Evict pods uniformly respecting taints",
        workers(lambda key: tolerating(key, "v1" if key == "k1" else "v2")),
        [
            n("worker1"),
            n("worker2"),
            n("worker3"),
            n("master1", taints=[MASTER_TAINT]),
            n("master2", taints=[MASTER_TAINT]),
            n("master3", taints=[MASTER_TAINT]),
        ],
        2,
    ),
    case(
        "Evict pods uniformly respecting required node affinity",
        workers(not_master),
        [
            n("worker1"),
            n("worker2"),
            n("worker3"),
            *(
                n(f"master{i}", labels={"node-role.kubernetes.io/control-plane": ""})
                for i in (1, 2, 3)
            ),
        ],
        2,
    ),
    case(
        "Evict pods uniformly respecting node selector",
        workers(selector),
        [
            n("worker1", labels=WORKER),
            n("worker2", labels=WORKER),
            n("worker3", labels=WORKER),
            n("master1"),
            n("master2"),
            n("master3"),
        ],
        2,
    ),
    case(
        "Evict pods uniformly respecting node selector with zero target nodes",
        workers(selector),
        [n(name) for name in ("worker1", "worker2", "worker3", "master1", "master2", "master3")],
        0,
    ),
]
