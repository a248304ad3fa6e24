"""RemovePodsHavingTooManyRestarts rows (toomanyrestarts_test.go:
TestRemovePodsHavingTooManyRestarts). Pod i restarted 25*i times: 5*i in its init container,
10*i in each of its two containers; pods 6, 7 and 8 are a DaemonSet pod, a pod with local
storage and a mirror pod."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import (
    DS_OWNER,
    LOCAL_STORAGE,
    MIRROR,
    POD_OWNER,
    node,
    pod,
    taint,
)

Change = Callable[[Json], None]


def restarted(name: str, base: int, change: Change | None, **kinds: Any) -> Json:
    found = pod(name, 100, 0, "node1", **{"owners": POD_OWNER, **kinds})
    found["status"]["initContainerStatuses"] = [{"name": "i", "restartCount": 5 * base}]
    found["status"]["containerStatuses"] = [
        {"name": "c", "restartCount": 10 * base},
        {"name": "c1", "restartCount": 10 * base},
    ]
    if change is not None:
        change(found)
    return found


def pods(change: Change | None = None) -> list[Json]:
    special: dict[int, dict[str, Any]] = {
        6: {"owners": DS_OWNER},
        7: {"volumes": LOCAL_STORAGE},
        8: {"owners": [], "annotations": MIRROR},
    }
    return [
        *(restarted(f"pod-{i}", i, change, **special.get(i, {})) for i in range(10)),
        pod("CPU-consumer-1", 150, 100, "node4", owners=POD_OWNER),
        pod("CPU-consumer-2", 150, 100, "node5", owners=POD_OWNER),
    ]


def crash_looping(found: Json) -> None:
    found["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}


def phase(name: str) -> Change:
    def change(found: Json) -> None:
        found["status"]["phase"] = name

    return change


def init_crash_looping(found: Json) -> None:
    found["status"]["initContainerStatuses"] = [
        {"name": "i", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]


def n(name: str, **changes: Any) -> Json:
    return node(name, 2000, 3000, 10, **changes)


def case(
    name: str,
    threshold: int,
    evicted: int,
    *,
    init: bool = False,
    states: list[str] | None = None,
    change: Change | None = None,
    nodes: list[Json] | None = None,
    per_node: int | None = None,
    per_namespace: int | None = None,
    node_fit: bool = False,
) -> Case:
    args: dict[str, Any] = {"podRestartThreshold": threshold, "includingInitContainers": init}
    if states:
        args["states"] = states
    policy: dict[str, Any] = {}
    if per_node is not None:
        policy["maxNoOfPodsToEvictPerNode"] = per_node
    if per_namespace is not None:
        policy["maxNoOfPodsToEvictPerNamespace"] = per_namespace
    return Case(
        name=name,
        plugin="RemovePodsHavingTooManyRestarts",
        nodes=nodes or [n("node1")],
        pods=pods(change),
        args=args,
        evictor={"nodeFit": node_fit},
        policy=policy,
        evicted=evicted,
        spare_node=nodes is None,
    )


CASES: list[Case] = [
    case("All pods have total restarts under threshold, no pod evictions", 10000, 0, init=True),
    case("Some pods have total restarts bigger than threshold", 1, 6, init=True),
    case(
        "Nine pods have total restarts equals threshold (with init containers), 6 evictions",
        25,
        6,
        init=True,
    ),
    case("Nine pods have total restarts equals threshold (no init containers), 5 evictions", 25, 5),
    case(
        "All pods have total restarts equals threshold (with init containers), 6 evictions",
        20,
        6,
        init=True,
    ),
    case("Nine pods have total restarts equals threshold (no init containers), 6 evictions", 20, 6),
    case(
        "Five pods above 5*25+1 (with init containers), but only 1 pod eviction",
        5 * 25 + 1,
        1,
        init=True,
    ),
    case("Five pods above 5*20+1 (no init containers), but only 1 pod eviction", 5 * 20 + 1, 1),
    case("maxPodsToEvictPerNode=3, 3 pod evictions", 1, 3, init=True, per_node=3),
    case("maxNoOfPodsToEvictPerNamespace=3, 3 pod evictions", 1, 3, init=True, per_namespace=3),
    case(
        "maxPodsToEvictPerNode=3 but the only other node is tainted, 0 pod evictions",
        1,
        0,
        init=True,
        nodes=[n("node1"), n("node2", taints=[taint("hardware", "gpu")])],
        per_node=3,
        node_fit=True,
    ),
    case(
        "maxPodsToEvictPerNode=3 but the only other node is not schedulable, 0 pod evictions",
        1,
        0,
        init=True,
        nodes=[n("node1"), n("node3", unschedulable=True)],
        per_node=3,
        node_fit=True,
    ),
    case(
        "maxPodsToEvictPerNode=3 but the only other node does not have enough CPU, 0 evictions",
        1,
        0,
        init=True,
        nodes=[n("node1"), node("node4", 200, 3000, 10)],
        per_node=3,
        node_fit=True,
    ),
    case(
        "maxPodsToEvictPerNode=3 and the only other node has enough CPU, 3 pod evictions",
        1,
        3,
        init=True,
        nodes=[n("node1"), n("node5")],
        per_node=3,
        node_fit=True,
    ),
    case(
        "pods are in CrashLoopBackOff with states=CrashLoopBackOff, 3 pod evictions",
        1,
        3,
        states=["CrashLoopBackOff"],
        change=crash_looping,
        nodes=[n("node1"), n("node5")],
        per_node=3,
        node_fit=True,
    ),
    case(
        "pods without CrashLoopBackOff with states=CrashLoopBackOff, 0 pod evictions",
        1,
        0,
        states=["CrashLoopBackOff"],
        nodes=[n("node1"), n("node5")],
        per_node=3,
        node_fit=True,
    ),
    case(
        "pods running with state=Running, 3 pod evictions",
        1,
        3,
        states=["Running"],
        change=phase("Running"),
        per_node=3,
    ),
    case(
        "pods pending with state=Running, 0 pod evictions",
        1,
        0,
        states=["Running"],
        change=phase("Pending"),
        per_node=3,
    ),
    case(
        "init containers in CrashLoopBackOff, states=CrashLoopBackOff, with init containers: 3",
        1,
        3,
        init=True,
        states=["CrashLoopBackOff"],
        change=init_crash_looping,
        per_node=3,
    ),
    case(
        "init containers in CrashLoopBackOff, states=CrashLoopBackOff, without init containers: 0",
        1,
        0,
        states=["CrashLoopBackOff"],
        change=init_crash_looping,
        per_node=3,
    ),
]
