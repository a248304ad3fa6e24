"""RemovePodsViolatingNodeAffinity rows (node_affinity_test.go:
TestRemovePodsViolatingNodeAffinity), for both affinity types."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import POD_OWNER, node, pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
KEY, VALUE = "kubernetes.io/desiredNode", "yes"
WITH, WITHOUT, UNSCHEDULABLE = "nodeWithLabels", "nodeWithoutLabels", "unschedulableNodeWithLabels"


def with_labels() -> Json:
    return node(WITH, 2000, 3000, 10, labels={KEY: VALUE})


def without_labels() -> Json:
    return node(WITHOUT, 2000, 3000, 10)


def unschedulable() -> Json:
    return node(UNSCHEDULABLE, 2000, 3000, 10, labels={KEY: VALUE}, unschedulable=True)


def affinity(kind: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": KEY, "operator": "In", "values": [VALUE]}]}
    if kind == REQUIRED:
        return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}}
    return {"nodeAffinity": {PREFERRED: [{"weight": 10, "preference": term}]}}


def pods_on(node_name: str, kind: str, *, deleting: bool = False) -> list[Json]:
    return [
        pod(
            "podWithNodeAffinity",
            100,
            0,
            node_name,
            owners=POD_OWNER,
            affinity=affinity(kind) if kind in (REQUIRED, PREFERRED) else None,
            deleting=deleting,
        ),
        pod("pod1", 100, 0, node_name, owners=POD_OWNER, deleting=deleting),
        pod("pod2", 100, 0, node_name, owners=POD_OWNER, deleting=deleting),
    ]


def case(
    name: str,
    kind: str,
    evicted: int,
    *,
    on: str = WITHOUT,
    nodes: list[Json] | None = None,
    deleting: bool = False,
    node_fit: bool = False,
    **policy: int,
) -> Case:
    return Case(
        name=f"{name} [{kind[:8]}]",
        plugin="RemovePodsViolatingNodeAffinity",
        nodes=nodes if nodes is not None else [without_labels(), with_labels()],
        pods=pods_on(on, kind, deleting=deleting),
        args={"nodeAffinityType": [kind]},
        evictor={"nodeFit": node_fit},
        policy=policy,
        evicted=evicted,
        spare_node=nodes is not None and len(nodes) == 1,
    )


EVICT = "Pod on a node without matching labels, another schedulable node available"
CASES: list[Case] = [
    Case(
        name="Invalid Affinity type, should not evict any pods",
        plugin="RemovePodsViolatingNodeAffinity",
        nodes=[without_labels(), with_labels()],
        pods=pods_on(WITHOUT, "requiredDuringSchedulingRequiredDuringExecution"),
        args={"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]},
        evicted=0,
        exit_code=2,
        why="upstream logs the unknown type at each cycle and evicts nothing; here the policy "
        "is refused when it is read (exit 2), so nothing is evicted either",
    ),
]
for kind in (REQUIRED, PREFERRED):
    CASES += [
        case(
            "Pod is correctly scheduled on node, no eviction expected",
            kind,
            0,
            on=WITH,
            nodes=[with_labels()],
        ),
        case(f"{EVICT}, should be evicted", kind, 1),
        case(f"{EVICT}, maxPodsToEvictPerNode 1, evicted", kind, 1, maxNoOfPodsToEvictPerNode=1),
        case(
            f"{EVICT}, maxPodsToEvictPerNode 0, not evicted", kind, 0, maxNoOfPodsToEvictPerNode=0
        ),
        case(
            f"{EVICT}, maxPodsToEvictPerNode 1, pod terminating",
            kind,
            0,
            deleting=True,
            maxNoOfPodsToEvictPerNode=1,
        ),
        case(
            f"{EVICT}, maxNoOfPodsToEvictPerNamespace 1, evicted",
            kind,
            1,
            maxNoOfPodsToEvictPerNamespace=1,
        ),
        case(
            f"{EVICT}, maxNoOfPodsToEvictPerNamespace 0, not evicted",
            kind,
            0,
            maxNoOfPodsToEvictPerNamespace=0,
        ),
        case(
            f"{EVICT}, maxNoOfPodsToEvictPerNamespace 1, pod terminating",
            kind,
            0,
            deleting=True,
            maxNoOfPodsToEvictPerNamespace=1,
        ),
        case(
            "Pod on a node without matching labels, no node where it fits",
            kind,
            0,
            nodes=[without_labels(), unschedulable()],
            node_fit=True,
        ),
        case(
            "Pod's node not in scope, unschedulable node where it could fit",
            kind,
            0,
            nodes=[with_labels(), unschedulable()],
            node_fit=True,
            maxNoOfPodsToEvictPerNode=1,
        ),
    ]
CASES.append(
    case(
        f"{EVICT}, maxNoOfPodsToEvictTotal 0, not evicted",
        REQUIRED,
        0,
        maxNoOfPodsToEvictPerNamespace=1,
        maxNoOfPodsToEvictTotal=0,
    )
)
