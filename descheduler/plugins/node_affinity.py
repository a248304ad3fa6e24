"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer matches their required
node affinity (requiredDuringSchedulingIgnoredDuringExecution), when another node does.

This is how TAS users deschedule with the upstream descheduler: the policy controller labels a
node `<policy>=violating`, and the pods' affinity says `NotIn [violating]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.fit import matches_node_selection

NAME = PluginName("RemovePodsViolatingNodeAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    node_affinity_type: tuple[str, ...] = (REQUIRED,)
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> NodeAffinityArgs:
    kinds = r.strings("nodeAffinityType") or NodeAffinityArgs().node_affinity_type
    for index, kind in enumerate(kinds):
        if kind != REQUIRED:
            r.problem(
                f"{r.at('nodeAffinityType')}[{index}]",
                f"unsupported {kind!r}; only {REQUIRED}",
            )
    return NodeAffinityArgs(node_affinity_type=kinds, namespaces=r.namespaces())


def run(args: NodeAffinityArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    for pod in sort_candidates(state.running_in_scope()):
        if not pod.required_node_affinity or pod.node_name is None:
            continue
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        node = state.nodes[pod.node_name]
        if matches_node_selection(pod, node):
            continue
        # Upstream checks this even with nodeFit off: the pod must have somewhere to go.
        if not evictor.fitting_nodes(pod):
            continue
        evictor.evict(
            pod,
            strategy=NAME,
            reason=f"node {node.name} no longer matches the pod's required node affinity",
        )
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=NodeAffinityArgs,
    parse_args=parse_args,
    run=run,
)
