"""RemovePodsViolatingTopologySpreadConstraint rows (topologyspreadconstraint_test.go:
TestTopologySpreadConstraint). Pods are numbered pod-0, pod-1, ... across the groups, in the
namespace ns1, owned by a ReplicaSet unless a group says otherwise, as upstream's
`createTestPods` builds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import RS_OWNER, node, pod, required_affinity, taint

FOO_BAR = {"foo": "bar"}
HASH = "pod-template-hash"


def constraint(
    max_skew: int = 1, key: str = "zone", when: str = "DoNotSchedule", **more: Any
) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": FOO_BAR},
        **more,
    }


@dataclass
class Group:
    count: int
    node: str
    labels: dict[str, str] = field(default_factory=lambda: dict(FOO_BAR))
    constraints: list[dict[str, Any]] = field(default_factory=list)
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, str]] = field(default_factory=list)
    owned: bool = True
    deleting: bool = False


def spread(*groups: Group) -> list[Json]:
    pods = []
    for group in groups:
        for _ in range(group.count):
            pods.append(
                pod(
                    f"pod-{len(pods)}",
                    100,
                    0,
                    group.node,
                    namespace="ns1",
                    owners=RS_OWNER if group.owned else [],
                    labels=group.labels,
                    spread=group.constraints,
                    node_selector=group.node_selector,
                    affinity=group.affinity,
                    tolerations=group.tolerations,
                    deleting=group.deleting,
                )
            )
    return pods


def zone(
    name: str, value: str, cpu: int = 2000, memory: int = 3000, pods: int = 10, **more: Any
) -> Json:
    labels = {"zone": value, **more.pop("labels", {})}
    return node(name, cpu, memory, pods, labels=labels, **more)


def ab() -> list[Json]:
    return [zone("n1", "zoneA"), zone("n2", "zoneB")]


def case(name: str, nodes: list[Json], pods: list[Json], evicted: int, **more: Any) -> Case:
    node_fit = more.pop("node_fit", False)
    return Case(
        name=name,
        plugin="RemovePodsViolatingTopologySpreadConstraint",
        nodes=nodes,
        pods=pods,
        evictor={"nodeFit": node_fit},
        evicted=evicted,
        **more,
    )


def linux_windows(extra: int = 0) -> list[Json]:
    names = ["linNodeA", "linNodeB", "linNodeC", "winNodeA", "winNodeB", "winNodeC", "winNodeD"]
    return [
        node(
            f"n{i + 1}",
            2000,
            3000,
            10,
            labels={"node": name, "os": name[:3].replace("lin", "linux").replace("win", "windows")},
        )
        for i, name in enumerate(names[: 6 + extra])
    ]


WINDOWS = {"os": "windows"}
TAINT_TEST = taint("taint-test", "test")
TOLERATE_TEST = [
    {"key": "taint-test", "value": "test", "operator": "Equal", "effect": "NoSchedule"}
]
ONLY_A = {"zone": "zoneA"}

CASES: list[Case] = [
    case(
        "2 domains, sizes [2,1], maxSkew=1, move 0 pods",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1"), Group(1, "n2")),
        0,
    ),
    case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(2, "n1"), Group(1, "n2")),
        1,
    ),
    case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)",
        ab(),
        spread(
            Group(1, "n1", constraints=[constraint(when="ScheduleAnyway")]),
            Group(2, "n1"),
            Group(1, "n2"),
        ),
        1,
        args={"constraints": ["DoNotSchedule", "ScheduleAnyway"]},
    ),
    case(
        "2 domains, sizes [3,1], maxSkew=1, no pods eligible, move 0 pods",
        ab(),
        spread(
            Group(1, "n1", constraints=[constraint()], owned=False),
            Group(2, "n1", owned=False),
            Group(1, "n2", owned=False),
        ),
        0,
    ),
    case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2], exclude kube-system "
        "namespace",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(2, "n1"), Group(1, "n2")),
        1,
        args={"namespaces": {"exclude": ["kube-system"]}},
        node_fit=True,
    ),
    case(
        "2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(4, "n1"), Group(2, "n2")),
        1,
    ),
    case(
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(3, "n1")),
        2,
    ),
    case(
        "2 domains, sizes [4,0], maxSkew=1, only move 1 pod: pods with nodeSelector or affinity "
        "stay",
        ab(),
        spread(
            Group(1, "n1", constraints=[constraint()], node_selector=ONLY_A),
            Group(1, "n1", constraints=[constraint()], node_selector=ONLY_A),
            Group(1, "n1", constraints=[constraint()], affinity=required_affinity("foo", ["bar"])),
            Group(1, "n1", constraints=[constraint()]),
        ),
        1,
        node_fit=True,
    ),
    case(
        "6 domains, sizes [0,0,0,3,3,2], maxSkew=1, No pod is evicted since topology is balanced",
        linux_windows(),
        spread(
            Group(3, "n4", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(3, "n5", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(2, "n6", constraints=[constraint(key="node")], node_selector=WINDOWS),
        ),
        0,
    ),
    case(
        "7 domains, sizes [0,0,0,3,3,2], maxSkew=1, two pods are evicted and moved to new node "
        "added",
        linux_windows(1),
        spread(
            Group(3, "n4", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(3, "n5", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(2, "n6", constraints=[constraint(key="node")], node_selector=WINDOWS),
        ),
        2,
    ),
    case(
        "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 1 pod is evicted from node 4",
        linux_windows(),
        spread(
            Group(4, "n4", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(3, "n5", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(1, "n6", constraints=[constraint(key="node")], node_selector=WINDOWS),
        ),
        1,
    ),
    case(
        "6 domains, sizes [0,0,0,4,3,1], 0 evicted: pods of winNodeA fit only there, nodeFit on",
        linux_windows(),
        spread(
            Group(
                4, "n4", constraints=[constraint(key="node")], node_selector={"node": "winNodeA"}
            ),
            Group(3, "n5", constraints=[constraint(key="node")], node_selector=WINDOWS),
            Group(1, "n6", constraints=[constraint(key="node")], node_selector=WINDOWS),
        ),
        0,
        node_fit=True,
    ),
    case(
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods since selector matches multiple nodes",
        [
            zone("n1", "zoneA", labels={"region": "boston"}),
            zone("n2", "zoneB", labels={"region": "boston"}),
        ],
        spread(
            Group(1, "n1", constraints=[constraint()], node_selector={"region": "boston"}),
            Group(3, "n1", node_selector={"region": "boston"}),
        ),
        2,
    ),
    case(
        "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC")],
        spread(Group(1, "n2", constraints=[constraint()]), Group(100, "n3")),
        66,
    ),
    case(
        "4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC"), zone("n4", "zoneD")],
        spread(Group(1, "n2", constraints=[constraint()]), Group(3, "n3"), Group(5, "n4")),
        3,
    ),
    case(
        "2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]",
        ab(),
        spread(Group(1, "n1", constraints=[constraint(2)]), Group(1, "n1"), Group(6, "n2")),
        1,
    ),
    case(
        "2 domains size [2 6], maxSkew=2, can't move any because of node taints",
        [zone("n1", "zoneA", taints=[taint("hardware", "gpu")]), zone("n2", "zoneB")],
        spread(Group(1, "n1", constraints=[constraint(2)]), Group(1, "n1"), Group(6, "n2")),
        0,
        node_fit=True,
    ),
    case(
        "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU",
        [zone("n1", "zoneA", cpu=200), zone("n2", "zoneB")],
        spread(Group(1, "n1", constraints=[constraint(2)]), Group(1, "n1"), Group(6, "n2")),
        0,
        node_fit=True,
    ),
    case(
        "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC")],
        spread(
            Group(8, "n1", constraints=[constraint()]), Group(7, "n2", constraints=[constraint()])
        ),
        5,
        evicted_pods=["pod-5", "pod-6", "pod-7", "pod-8", "pod-9"],
    ),
    case(
        "3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC")],
        spread(*(Group(5, f"n{i}", constraints=[constraint()]) for i in (1, 2, 3))),
        0,
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the node with taint",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=[TAINT_TEST])],
        spread(
            Group(1, "n1", constraints=[constraint()], tolerations=TOLERATE_TEST),
            Group(1, "n1", node_selector=ONLY_A),
        ),
        1,
        evicted_pods=["pod-0"],
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the tainted "
        "node",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=[TAINT_TEST])],
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1", node_selector=ONLY_A)),
        0,
    ),
    case(
        "2 domains, sizes [2,0], move 0 pods: pod does not tolerate the tainted node, nodeFit on",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=[TAINT_TEST])],
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1", node_selector=ONLY_A)),
        0,
        node_fit=True,
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with PreferNoSchedule Taint",
        [
            zone("n1", "zoneA"),
            zone("n2", "zoneB", taints=[taint("taint-test", "test", "PreferNoSchedule")]),
        ],
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1", node_selector=ONLY_A)),
        1,
        evicted_pods=["pod-0"],
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pod for node with unmatched label filtering",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1")),
        0,
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["baz"]}]
            }
        },
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1")),
        1,
        evicted_pods=["pod-1"],
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]
            }
        },
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering "
        "(NotIn op)",
        ab(),
        spread(Group(1, "n1", constraints=[constraint()]), Group(1, "n1")),
        1,
        evicted_pods=["pod-1"],
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]
            }
        },
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pods given matchLabelKeys on same replicaset",
        ab(),
        spread(
            Group(1, "n1", {**FOO_BAR, HASH: "foo"}, [constraint(matchLabelKeys=[HASH])]),
            Group(1, "n1", {**FOO_BAR, HASH: "foo"}, [constraint(matchLabelKeys=[HASH])]),
        ),
        1,
        evicted_pods=["pod-1"],
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]
            }
        },
    ),
    case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods given matchLabelKeys on two different "
        "replicasets",
        ab(),
        spread(
            Group(1, "n1", {**FOO_BAR, HASH: "foo"}, [constraint(matchLabelKeys=[HASH])]),
            Group(1, "n1", {**FOO_BAR, HASH: "bar"}, [constraint(matchLabelKeys=[HASH])]),
        ),
        0,
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]
            }
        },
    ),
    case(
        "2 domains, sizes [4,2], maxSkew=1, 2 pods in termination; nothing should be moved",
        ab(),
        spread(
            Group(2, "n1", constraints=[constraint()]),
            Group(2, "n1", constraints=[constraint()], deleting=True),
            Group(2, "n2", constraints=[constraint()]),
        ),
        0,
        args={
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]
            }
        },
    ),
    case(
        "3 domains, sizes [2,3,4], nodeFit on, not enough cpu on zoneA; nothing should be moved",
        [
            zone("n1", "zoneA", 250, 2000, 9),
            zone("n2", "zoneB", 1000, 2000, 9),
            zone("n3", "zoneC", 1000, 2000, 9),
        ],
        spread(
            *(Group(c, f"n{i}", constraints=[constraint()]) for i, c in ((1, 2), (2, 3), (3, 4)))
        ),
        0,
        node_fit=True,
    ),
    case(
        "3 domains, sizes [2,3,4], topologyBalanceNodeFit false, not enough cpu on zoneA; 1 moved",
        [
            zone("n1", "zoneA", 250, 2000, 9),
            zone("n2", "zoneB", 1000, 2000, 9),
            zone("n3", "zoneC", 1000, 2000, 9),
        ],
        spread(
            *(Group(c, f"n{i}", constraints=[constraint()]) for i, c in ((1, 2), (2, 3), (3, 4)))
        ),
        1,
        args={"topologyBalanceNodeFit": False},
        node_fit=True,
    ),
    case(
        "3 domains, sizes [[1,0], [1,1], [2,1]], nodeFit on, not enough cpu on zoneA; nothing "
        "moved",
        [
            zone("A1", "zoneA", 150, 2000, 9),
            zone("B1", "zoneB", 1000, 2000, 9),
            zone("C1", "zoneC", 1000, 2000, 9),
            zone("A2", "zoneA", 50, 2000, 9),
            zone("B2", "zoneB", 1000, 2000, 9),
            zone("C2", "zoneC", 1000, 2000, 9),
        ],
        spread(
            *(
                Group(c, where, constraints=[constraint()])
                for where, c in (("A1", 1), ("B1", 1), ("B2", 1), ("C1", 2), ("C2", 1))
            )
        ),
        0,
        node_fit=True,
    ),
    case(
        "2 domains, sizes [[1,4], [2,1]], maxSkew=1, NodeFit is enabled; should move 1",
        [zone(name, f"zone{name[0]}", 1000, 2000, 9) for name in ("A1", "A2", "B1", "B2")],
        spread(
            *(
                Group(c, where, constraints=[constraint()])
                for where, c in (("A1", 1), ("A2", 4), ("B1", 2), ("B2", 1))
            )
        ),
        1,
        evicted_pods=["pod-4"],
        node_fit=True,
    ),
]
