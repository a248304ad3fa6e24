"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer matches their required node
affinity (`requiredDuringSchedulingIgnoredDuringExecution`), or, with
`preferredDuringSchedulingIgnoredDuringExecution`, pods for which another node scores a higher
preferred-affinity weight than theirs; in both cases only when some node would take the pod.

This is how TAS users deschedule with the upstream descheduler: the policy controller labels a
node `<policy>=violating`, and the pods' affinity says `NotIn [violating]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Node, Pod
from tas.fit import matches_node_selection

NAME = PluginName("RemovePodsViolatingNodeAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    node_affinity_type: tuple[str, ...] = (REQUIRED,)
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> NodeAffinityArgs:
    kinds = r.strings_of("nodeAffinityType", (REQUIRED, PREFERRED))
    if not kinds:
        r.problem(r.at("nodeAffinityType"), f"is required: {REQUIRED} and/or {PREFERRED}")
    return NodeAffinityArgs(node_affinity_type=kinds or (REQUIRED,), pods=r.pod_selection())


def preferred_weight(pod: Pod, node: Node) -> int:
    """The sum of the weights of the pod's preferred terms the node matches."""
    return sum(t.weight for t in pod.preferred_node_affinity if t.preference.matches(node))


def _violates(kind: str, pod: Pod, node: Node, context: PluginContext) -> str | None:
    if kind == REQUIRED:
        if not pod.required_node_affinity or matches_node_selection(pod, node):
            return None
        return f"node {node.name} no longer matches the pod's required node affinity"
    if not pod.preferred_node_affinity:
        return None
    here = preferred_weight(pod, node)
    best = max((preferred_weight(pod, n) for n in context.state.ready_nodes), default=0)
    if best <= here:
        return None
    return f"another node scores preferred node affinity {best}, {node.name} only {here}"


def run(args: NodeAffinityArgs, context: PluginContext) -> None:
    nodes = context.state.ready_nodes
    candidates = (
        (node.name, _candidates(args, kind, node, context))
        for kind in args.node_affinity_type
        for node in nodes
    )
    context.evict_node_by_node(strategy=NAME, candidates=candidates)


def _candidates(
    args: NodeAffinityArgs, kind: str, node: Node, context: PluginContext
) -> Iterator[tuple[Pod, str]]:
    for pod in context.state.pods_on_ready_node(node.name):
        if not context.selected(pod, args.pods) or not context.evictor.filter(pod):
            continue
        reason = _violates(kind, pod, node, context)
        if reason is None:
            continue
        # Upstream checks this even with nodeFit off: the pod must fit some node.
        if not context.fitting_nodes(pod, include_current=True):
            continue
        if context.evictor.pre_eviction_filter(pod):
            yield pod, reason


PLUGIN = Plugin.serving(
    ExtensionPoint.DESCHEDULE, NAME, args=(NodeAffinityArgs, parse_args), run=run
)
