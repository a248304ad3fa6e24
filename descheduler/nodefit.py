"""nodeFit: would another node accept this pod? Evicting a pod that cannot land anywhere only
turns a running pod into a pending one.

The check is kube-scheduler's filters (`tas.fit`, shared with the embedded scheduler model, so
the descheduler and the scheduler agree about a placement), the upstream descheduler's
inter-pod anti-affinity check against the pods already on the node, and the one upstream cannot
do: the pod's TASPolicy `dontschedule` rules must pass on the node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tas.cluster.model import Node, Pod
from tas.fit import holds_resources, rejection
from tas.policies.model import TASPolicy
from tas.rules import filter_nodes
from tas.types import MetricColumns, NodeName


def anti_affinity_clash(pod: Pod, node: Node, pods_on_node: Iterable[Pod]) -> Pod | None:
    """A pod on `node` that one of `pod`'s required anti-affinity terms forbids, if any.

    As upstream's nodeFit: a term counts when the node carries its topology key at all.
    """
    for term in pod.required_pod_anti_affinity:
        if term.topology_key not in node.labels:
            continue
        namespaces = term.namespaces or (pod.namespace,)
        for other in pods_on_node:
            if other.name == pod.name or other.namespace not in namespaces:
                continue
            if holds_resources(other) and term.label_selector.matches(other.labels):
                return other
    return None


def fitting_nodes(
    pod: Pod,
    candidates: Iterable[Node],
    *,
    pods_by_node: Mapping[NodeName, Sequence[Pod]],
    policy: TASPolicy | None,
    metrics: MetricColumns,
    include_current: bool = False,
) -> tuple[NodeName, ...]:
    """Candidates (other than the pod's own node, unless `include_current`) that would accept
    the pod, in order."""
    fit = [
        node.name
        for node in candidates
        if (include_current or node.name != pod.node_name)
        and rejection(pod, node, pods_on_node=pods_by_node.get(node.name, ())) is None
        and anti_affinity_clash(pod, node, pods_by_node.get(node.name, ())) is None
    ]
    if policy is None or not fit:
        return tuple(fit)
    return filter_nodes(policy, metrics, fit).passed
