"""RemovePodsViolatingInterPodAntiAffinity: evict a pod whose required anti-affinity is broken
by another pod in the same topology domain. Once one pod of a clashing pair is evicted the
other no longer clashes, so only one of them goes."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from descheduler.state import CycleState, pod_key
from tas.cluster.model import Pod

NAME = PluginName("RemovePodsViolatingInterPodAntiAffinity")


@dataclass(frozen=True, slots=True)
class InterPodAntiAffinityArgs:
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> InterPodAntiAffinityArgs:
    return InterPodAntiAffinityArgs(namespaces=r.namespaces())


def clash(pod: Pod, state: CycleState) -> Pod | None:
    """Another pod that breaks one of `pod`'s required anti-affinity terms, if any."""
    if pod.node_name is None:
        return None
    node = state.nodes[pod.node_name]
    for term in pod.required_pod_anti_affinity:
        domain = node.labels.get(term.topology_key)
        if domain is None:
            continue
        namespaces = term.namespaces or (pod.namespace,)
        for other in state.running_in_scope():
            if pod_key(other) == pod_key(pod) or other.namespace not in namespaces:
                continue
            other_node = state.nodes.get(other.node_name) if other.node_name else None
            if other_node is None or other_node.labels.get(term.topology_key) != domain:
                continue
            if term.label_selector.matches(other.labels):
                return other
    return None


def run(args: InterPodAntiAffinityArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    for pod in sort_candidates(state.running_in_scope()):
        if not pod.required_pod_anti_affinity:
            continue
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        other = clash(pod, state)
        if other is None:
            continue
        evictor.evict(
            pod,
            strategy=NAME,
            reason=f"anti-affinity broken by {other.namespace}/{other.name} on {other.node_name}",
        )
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=InterPodAntiAffinityArgs,
    parse_args=parse_args,
    run=run,
)
