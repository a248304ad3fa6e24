"""RemovePodsViolatingInterPodAntiAffinity: evict a pod whose required anti-affinity is broken
by another pod in the same topology domain (the same node always counts as one). As upstream:
node by node, lower priority first; a pod evicted no longer clashes with the rest, and only the
pods of the plugin's namespaces and label selector are looked at, on either side."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName, sort_candidates
from tas.cluster.model import Node, Pod
from tas.types import NodeName

NAME = PluginName("RemovePodsViolatingInterPodAntiAffinity")


@dataclass(frozen=True, slots=True)
class InterPodAntiAffinityArgs:
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> InterPodAntiAffinityArgs:
    return InterPodAntiAffinityArgs(pods=r.pod_selection())


def _same_domain(a: Node, b: Node, key: str) -> bool:
    if a.name == b.name:
        return True
    value = a.labels.get(key)
    return value is not None and b.labels.get(key) == value


def clash(
    pod: Pod, by_namespace: Mapping[str, Sequence[Pod]], nodes: Mapping[NodeName, Node]
) -> Pod | None:
    """Another pod that breaks one of `pod`'s required anti-affinity terms, if any."""
    here = nodes.get(pod.node_name) if pod.node_name else None
    if here is None:
        return None
    for term in pod.required_pod_anti_affinity:
        namespaces = term.namespaces or (pod.namespace,)
        for namespace in namespaces:
            for other in by_namespace.get(namespace, ()):
                if other.name == pod.name or not term.label_selector.matches(other.labels):
                    continue
                there = nodes.get(other.node_name) if other.node_name else None
                if there is not None and _same_domain(here, there, term.topology_key):
                    return other
    return None


def run(args: InterPodAntiAffinityArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = context.state
    nodes = {n.name: n for n in state.ready_nodes}
    pods = [p for p in state.ready_node_pods() if context.selected(p, args.pods)]
    by_namespace: dict[str, list[Pod]] = {}
    for pod in pods:
        by_namespace.setdefault(pod.namespace, []).append(pod)

    def candidates(node: Node) -> Iterator[tuple[Pod, str]]:
        for pod in sort_candidates(p for p in pods if p.node_name == node.name):
            other = clash(pod, by_namespace, nodes)
            if other is None or not evictor.filter(pod) or not evictor.pre_eviction_filter(pod):
                continue
            yield (
                pod,
                f"anti-affinity broken by {other.namespace}/{other.name} on {other.node_name}",
            )

    def evicted(pod: Pod) -> None:
        # A pod evicted no longer clashes with the rest.
        by_namespace[pod.namespace].remove(pod)

    context.evict_node_by_node(
        strategy=NAME,
        candidates=((node.name, candidates(node)) for node in state.ready_nodes),
        evicted=evicted,
    )


PLUGIN = Plugin.serving(
    ExtensionPoint.DESCHEDULE, NAME, args=(InterPodAntiAffinityArgs, parse_args), run=run
)
