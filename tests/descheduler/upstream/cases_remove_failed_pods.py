"""RemoveFailedPods rows (failedpods_test.go: TestRemoveFailedPods).

Upstream's test builds the plugin without its defaulting, so an unset `minPodLifetimeSeconds`
means no minimum there (the default is 3600); the rows say `minPodLifetimeSeconds: 0` for it.
"""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import RS_OWNER, ago, node, pod


def failed(
    name: str,
    node_name: str = "node1",
    *,
    reason: str = "",
    init: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    deleting: bool = False,
) -> Json:
    status: dict[str, Any] = {"phase": "Failed", "reason": reason}
    if init is not None:
        status["initContainerStatuses"] = [{"name": "i", "state": init}]
    if container is not None:
        status["containerStatuses"] = [{"name": "c", "state": container}]
    return pod(
        name, 1, 1, node_name, owners=RS_OWNER, status=status, created=ago(0), deleting=deleting
    )


def terminated(reason: str = "", exit_code: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        found["reason"] = reason
    return {"terminated": found}


def waiting(reason: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason}}


def args(
    init: bool = False,
    reasons: list[str] | None = None,
    exit_codes: list[int] | None = None,
    exclude: list[str] | None = None,
    min_age: int = 0,
) -> dict[str, Any]:
    found: dict[str, Any] = {"includingInitContainers": init, "minPodLifetimeSeconds": min_age}
    if reasons:
        found["reasons"] = reasons
    if exit_codes:
        found["exitCodes"] = exit_codes
    if exclude:
        found["excludeOwnerKinds"] = exclude
    return found


NODE1 = [node("node1", 2000, 3000, 10)]
CCE = "CreateContainerConfigError"


def case(
    name: str, pods: list[Json], evicted: int, nodes: list[Json] | None = None, **more: Any
) -> Case:
    return Case(
        name=name,
        plugin="RemoveFailedPods",
        nodes=nodes or NODE1,
        pods=pods,
        evicted=evicted,
        spare_node=nodes is None,
        **{"args": args(), **more},
    )


CASES: list[Case] = [
    case("0 failures, 0 evictions", [], 0),
    case(
        "1 container terminated with reason NodeAffinity, 1 eviction",
        [failed("p1", container=terminated("NodeAffinity"))],
        1,
    ),
    case(
        "1 container terminated with exitCode 1, 1 eviction",
        [failed("p1", container=terminated(exit_code=1))],
        1,
        args=args(exit_codes=[1]),
    ),
    case(
        "1 container terminated with exitCode 1, reason NodeAffinity, 1 eviction",
        [failed("p1", container=terminated("NodeAffinity", 1))],
        1,
        args=args(exit_codes=[1]),
    ),
    case(
        "1 container terminated with exitCode 1, expected exitCode 2, 0 eviction",
        [failed("p1", container=terminated(exit_code=1))],
        0,
        args=args(exit_codes=[2]),
    ),
    case(
        "2 containers terminated with exitCode 1 and 2 respectively, 2 evictions",
        [
            failed("p1", container=terminated(exit_code=1)),
            failed("p2", container=terminated(exit_code=2)),
        ],
        2,
        args=args(exit_codes=[1, 2, 3]),
    ),
    case(
        "2 containers terminated with exitCode 1 and 2, expected exitCode 1, 1 eviction",
        [
            failed("p1", container=terminated(exit_code=1)),
            failed("p2", container=terminated(exit_code=2)),
        ],
        1,
        args=args(exit_codes=[1]),
    ),
    case(
        "1 init container terminated with reason NodeAffinity, 1 eviction",
        [failed("p1", init=terminated("NodeAffinity"))],
        1,
        args=args(init=True),
    ),
    case(
        "1 init container terminated with exitCode 1, 1 eviction",
        [failed("p1", container=terminated(exit_code=1))],
        1,
        args=args(init=True, exit_codes=[1]),
    ),
    case(
        "1 init container terminated with exitCode 2, expected 1, 0 eviction",
        [failed("p1", container=terminated(exit_code=2))],
        0,
        args=args(init=True, exit_codes=[1]),
    ),
    case(
        "1 init container waiting with reason CreateContainerConfigError, 1 eviction",
        [failed("p1", init=waiting(CCE))],
        1,
        args=args(init=True),
    ),
    case(
        "2 init containers terminated with reason CreateContainerConfigError, 2 nodes, 2 evictions",
        [failed("p1", init=terminated(CCE)), failed("p2", "node2", init=terminated(CCE))],
        2,
        nodes=[node("node1", 2000, 3000, 10), node("node2", 2000, 3000, 10)],
        args=args(init=True),
    ),
    case(
        "include reason=CreateContainerConfigError, container terminated with it, 1 eviction",
        [failed("p1", container=terminated(CCE))],
        1,
        args=args(reasons=[CCE]),
    ),
    case(
        "include reason=CreateContainerConfigError+NodeAffinity, 1 eviction",
        [failed("p1", container=terminated(CCE))],
        1,
        args=args(reasons=[CCE, "NodeAffinity"]),
    ),
    case(
        "include reason=CreateContainerConfigError, container terminated with NodeAffinity, 0 "
        "eviction",
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        args=args(reasons=[CCE]),
    ),
    case(
        "include init container=false, init container waiting with the reason, 0 eviction",
        [failed("p1", init=waiting(CCE))],
        0,
        args=args(reasons=[CCE]),
    ),
    case(
        "lifetime 1 hour, 1 container terminated with reason NodeAffinity, 0 eviction",
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        args=args(min_age=3600),
    ),
    case(
        "nodeFit=true, 1 unschedulable node, 0 eviction",
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        nodes=[node("node1", 2000, 3000, 10), node("node2", 2000, 2000, 10, unschedulable=True)],
        evictor={"nodeFit": True},
    ),
    case(
        "nodeFit=true, only available node does not have enough resources, 0 eviction",
        [failed("p1", container=terminated(CCE))],
        0,
        nodes=[node("node1", 1, 1, 10), node("node2", 0, 0, 10)],
        args=args(reasons=[CCE]),
        evictor={"nodeFit": True},
    ),
    case(
        "excluded owner kind=ReplicaSet, 0 eviction",
        [failed("p1", init=terminated("NodeAffinity"))],
        0,
        args=args(init=True, exclude=["ReplicaSet"]),
    ),
    case(
        "excluded owner kind=DaemonSet, pod owned by a ReplicaSet, 1 eviction",
        [failed("p1", init=terminated("NodeAffinity"))],
        1,
        args=args(init=True, exclude=["DaemonSet"]),
    ),
    case(
        "excluded owner kind=DaemonSet, 1 pod in termination; nothing should be moved",
        [failed("p1", init=terminated("NodeAffinity"), deleting=True)],
        0,
        args=args(init=True, exclude=["DaemonSet"]),
    ),
    case(
        "pod failed with reason Shutdown, nodeFit and no other node: 0 evictions",
        [failed("p1", reason="Shutdown")],
        0,
        evictor={"nodeFit": True},
    ),
    case(
        "include reason=Shutdown, 2 pods failed with reason Shutdown, 2 evictions",
        [failed("p1", reason="Shutdown"), failed("p2", reason="Shutdown")],
        2,
        args=args(reasons=["Shutdown"]),
    ),
]
