"""Would a node accept a pod? kube-scheduler's filters that matter here, as one pure check.

Two callers need the same answer: the descheduler's nodeFit (evicting a pod that cannot land
anywhere only turns a running pod into a pending one) and the in-memory kube-scheduler model
(`make run`, the simulator). One definition keeps them from disagreeing about a placement.

The filters, in kube-scheduler's order: the node is Ready and schedulable; nodeSelector and
required node affinity hold; every NoSchedule/NoExecute taint is tolerated (PreferNoSchedule
only lowers a score); the pod's requests fit allocatable minus what the pods already there
request; the node's pod count stays within its `pods` allocatable. `telemetry/scheduling` is
ignored for fit: it is a marker resource the scheduler ignores (TAS issue 90), not a capacity.

Beside the check, how much of a node a pod takes: an amount of a resource (measured usage, or
the pod's requests) as a percentage of the node's allocatable (`node_share`, `request_share`).
It is the one estimate the descheduler's per-pod usage (`descheduler.usage`), LoadAware's relief
of a pod nothing measures, MakeRoomForPending's sizes of pods and of the room a pending pod
lacks, and the simulator's Volcano reading share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tas.cluster.model import Node, Pod, Taint, TaintEffect
from tas.vocabulary import TELEMETRY_RESOURCE

_TERMINAL = ("Succeeded", "Failed")
#: Capacity from allocatable that counts pods, not a resource a pod requests.
PODS_RESOURCE = "pods"


def holds_resources(pod: Pod) -> bool:
    """A bound pod that has not finished: its requests count against its node."""
    return pod.node_name is not None and pod.phase not in _TERMINAL


def untolerated_taint(pod: Pod, taints: Iterable[Taint]) -> Taint | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate, if any."""
    for taint in taints:
        if taint.effect is TaintEffect.PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in pod.tolerations):
            return taint
    return None


def matches_node_selection(pod: Pod, node: Node) -> bool:
    """nodeSelector and required node affinity (terms ORed) both hold on the node."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_node_affinity:
        return any(term.matches(node) for term in pod.required_node_affinity)
    return True


def requested(pods: Iterable[Pod], resource: str) -> float:
    """What the resource-holding pods among `pods` request of `resource`, summed."""
    return sum(p.requests.get(resource, 0.0) for p in pods if holds_resources(p))


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """What the resource-holding pods of one node hold: how many, and their requests summed.
    A caller asking about many pods sums each node once (`node_load`), not once per pod."""

    pods: int
    requested: Mapping[str, float]


def node_load(pods_on_node: Iterable[Pod]) -> NodeLoad:
    count = 0
    total: dict[str, float] = {}
    for pod in pods_on_node:
        if holds_resources(pod):
            count += 1
            for resource, value in pod.requests.items():
                total[resource] = total.get(resource, 0.0) + value
    return NodeLoad(count, total)


def rejection(
    pod: Pod, node: Node, *, pods_on_node: Sequence[Pod], load: NodeLoad | None = None
) -> str | None:
    """Why `node` would not accept `pod` (ignoring TAS rules), or None when it would.

    `pods_on_node` may include `pod` itself (a descheduler asks about a pod's current node
    too); it is never counted twice. `load`, when given, is `node_load(pods_on_node)`.
    """
    if not node.ready:
        return "node is not Ready"
    if node.unschedulable:
        return "node is unschedulable"
    if not matches_node_selection(pod, node):
        return "node selector or required node affinity does not match"
    taint = untolerated_taint(pod, node.taints)
    if taint is not None:
        return f"taint {taint.key}={taint.value}:{taint.effect} is not tolerated"
    if pod.node_name == node.name:
        # Its own node (rare: a descheduler asking whether it may stay): counted without it,
        # summed as the others are, so that no rounding tells the two answers apart.
        load = node_load(
            p for p in pods_on_node if (p.namespace, p.name) != (pod.namespace, pod.name)
        )
    elif load is None:
        load = node_load(pods_on_node)
    for resource, wanted in pod.requests.items():
        if resource == TELEMETRY_RESOURCE or wanted <= 0:
            continue
        available = node.allocatable.get(resource)
        if available is None:
            return f"node has no {resource}"
        used = load.requested.get(resource, 0.0)
        if used + wanted > available:
            return f"insufficient {resource} ({used:g} + {wanted:g} > {available:g})"
    max_pods = node.allocatable.get(PODS_RESOURCE)
    if max_pods is not None and load.pods + 1 > max_pods:
        return "too many pods"
    return None


def node_share(amount: float, node: Node, resource: str) -> float | None:
    """`amount` of `resource` (base units: cores, bytes) as a percentage of the node's
    allocatable of it (100: all of it). Not capped: a caller that reads it as a part of the
    node caps it. None when the node has none of the resource (or does not say)."""
    allocatable = node.allocatable.get(resource, 0.0)
    if allocatable <= 0:
        return None
    return 100.0 * amount / allocatable


def request_share(pod: Pod, node: Node, resource: str) -> float | None:
    """The pod's requests of `resource` as a percentage of the node's allocatable of it
    (`node_share`): the pod's load until something measures it. None when the node has none
    of the resource; 0 when the pod requests none."""
    return node_share(pod.requests.get(resource, 0.0), node, resource)
