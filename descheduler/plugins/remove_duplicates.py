"""RemoveDuplicates: spread the duplicates of a workload. Pods are duplicates when they share
their owners (namespace, kind, name) and their container images, as upstream groups them; a
node holding more of a group than the even share over the nodes the pods could run on
(ceil(pods / feasible nodes)) gives up the excess. Owners of `excludeOwnerKinds` are left
alone; nothing moves when fewer than two nodes are feasible."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Node, Pod
from tas.fit import matches_node_selection, untolerated_taint
from tas.types import NodeName

NAME = PluginName("RemoveDuplicates")

#: namespace, owner kind, owner name, the pod's sorted images joined
OwnerImages = tuple[str, str, str, str]


@dataclass(frozen=True, slots=True)
class RemoveDuplicatesArgs:
    exclude_owner_kinds: tuple[str, ...] = ()
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> RemoveDuplicatesArgs:
    return RemoveDuplicatesArgs(
        exclude_owner_kinds=r.strings("excludeOwnerKinds"), namespaces=r.namespaces()
    )


def _keys(pod: Pod) -> tuple[str, ...]:
    """Every owner/image pair of the pod: equal keys mean duplicate pods."""
    return tuple(
        sorted(
            f"{pod.namespace}/{owner.kind}/{owner.name}/{image}"
            for owner in pod.owners
            for image in pod.container_images
        )
    )


def _placement(pod: Pod) -> tuple[object, ...]:
    return (
        frozenset(pod.tolerations),
        pod.required_node_affinity,
        tuple(sorted(pod.node_selector.items())),
    )


def feasible_nodes(pods: list[Pod], nodes: list[Node]) -> set[NodeName]:
    """Nodes that some of the pods could run on, counting only placements shared by more than
    one node (upstream's `getTargetNodes`)."""
    seen: set[tuple[object, ...]] = set()
    found: set[NodeName] = set()
    for pod in pods:
        placement = _placement(pod)
        if placement in seen:
            continue
        seen.add(placement)
        matching = {
            n.name
            for n in nodes
            if untolerated_taint(pod, n.taints) is None and matches_node_selection(pod, n)
        }
        if len(matching) > 1:
            found |= matching
    return found


def run(args: RemoveDuplicatesArgs, context: PluginContext) -> None:
    state = context.state
    nodes = state.ready_nodes
    occurrences: dict[OwnerImages, int] = {}
    duplicates: dict[OwnerImages, dict[NodeName, list[Pod]]] = {}
    for node in nodes:
        first_seen: set[tuple[str, ...]] = set()
        for pod in state.pods_on_ready_node(node.name):
            if not args.namespaces.allows(pod.namespace) or not context.evictor.filter(pod):
                continue
            if not context.evictor.pre_eviction_filter(pod):
                continue
            if not pod.owners or any(o.kind in args.exclude_owner_kinds for o in pod.owners):
                continue
            images = "#".join(sorted(pod.container_images))
            groups: list[OwnerImages] = [
                (str(pod.namespace), o.kind, o.name, images) for o in pod.owners
            ]
            for owned in groups:
                occurrences[owned] = occurrences.get(owned, 0) + 1
            keys = _keys(pod)
            if keys not in first_seen:
                first_seen.add(keys)
                continue
            for owned in groups:
                duplicates.setdefault(owned, {}).setdefault(node.name, []).append(pod)
    candidates: list[tuple[NodeName | None, list[tuple[Pod, str]]]] = []
    for group, by_node in sorted(duplicates.items()):
        targets = feasible_nodes([p for here in by_node.values() for p in here], nodes)
        if len(targets) < 2:
            continue
        share = math.ceil(occurrences[group] / len(targets))
        for node_name, here in sorted(by_node.items()):
            # `here` lists the duplicates only: the node keeps one more than that.
            if len(here) + 1 <= share:
                continue
            reason = (
                f"{len(here) + 1} pods of {group[1]}/{group[2]} on {node_name}, even share {share}"
            )
            candidates.append((node_name, [(pod, reason) for pod in here[share - 1 :]]))
    context.evict_node_by_node(strategy=NAME, candidates=candidates)


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE, NAME, args=(RemoveDuplicatesArgs, parse_args), run=run
)
