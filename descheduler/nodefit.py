"""nodeFit: would another node accept this pod? Evicting a pod that cannot land anywhere only
turns a running pod into a pending one.

The check follows kube-scheduler's filters that matter for a descheduler (Ready, schedulable,
node selector, required node affinity, NoSchedule/NoExecute taints, resource requests against
allocatable minus the requests already there) and adds the one upstream cannot do: the pod's
TASPolicy `dontschedule` rules must pass on the node. `telemetry/scheduling` is ignored for fit:
it is a marker resource the scheduler ignores (TAS issue 90), not a capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tas.cluster.model import TELEMETRY_RESOURCE, Node, Pod, Taint, TaintEffect
from tas.policy import TASPolicy
from tas.rules import filter_nodes
from tas.types import MetricColumns, NodeName

_TERMINAL = ("Succeeded", "Failed")
#: Capacity from allocatable that counts pods, not a resource a pod requests.
PODS_RESOURCE = "pods"


def holds_resources(pod: Pod) -> bool:
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


def rejection(pod: Pod, node: Node, *, pods_on_node: Sequence[Pod]) -> str | None:
    """Why `node` would not accept `pod` (ignoring TAS rules), or None when it would."""
    if not node.ready:
        return "node is not Ready"
    if node.unschedulable:
        return "node is unschedulable"
    if not matches_node_selection(pod, node):
        return "node selector or required node affinity does not match"
    taint = untolerated_taint(pod, node.taints)
    if taint is not None:
        return f"taint {taint.key}={taint.value}:{taint.effect} is not tolerated"
    present = [
        p
        for p in pods_on_node
        if holds_resources(p) and (p.namespace, p.name) != (pod.namespace, pod.name)
    ]
    for resource, wanted in pod.requests.items():
        if resource == TELEMETRY_RESOURCE or wanted <= 0:
            continue
        available = node.allocatable.get(resource)
        if available is None:
            return f"node has no {resource}"
        used = sum(p.requests.get(resource, 0.0) for p in present)
        if used + wanted > available:
            return f"insufficient {resource} ({used:g} + {wanted:g} > {available:g})"
    max_pods = node.allocatable.get(PODS_RESOURCE)
    if max_pods is not None and len(present) + 1 > max_pods:
        return "too many pods"
    return None


def fitting_nodes(
    pod: Pod,
    candidates: Iterable[Node],
    *,
    pods_by_node: Mapping[NodeName, Sequence[Pod]],
    policy: TASPolicy | None,
    metrics: MetricColumns,
) -> tuple[NodeName, ...]:
    """Candidates (other than the pod's own node) that would accept the pod, in order."""
    fit = [
        node.name
        for node in candidates
        if node.name != pod.node_name
        and rejection(pod, node, pods_on_node=pods_by_node.get(node.name, ())) is None
    ]
    if policy is None or not fit:
        return tuple(fit)
    return filter_nodes(policy, metrics, fit).passed
