"""nodeFit: would another node accept this pod? Evicting a pod that cannot land anywhere only
turns a running pod into a pending one.

The check is kube-scheduler's filters (`tas.fit`, shared with the embedded scheduler model, so
the descheduler and the scheduler agree about a placement) plus the one upstream cannot do:
the pod's TASPolicy `dontschedule` rules must pass on the node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tas.cluster.model import Node, Pod
from tas.fit import rejection
from tas.policy import TASPolicy
from tas.rules import filter_nodes
from tas.types import MetricColumns, NodeName


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
