"""RemoveDuplicates: spread pods of one owner. A node holding more of an owner's pods than the
even share (ceil(pods / feasible nodes)) gives up the excess; owners of `excludeOwnerKinds`
are left alone."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import owner_key, sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Pod
from tas.fit import matches_node_selection, untolerated_taint
from tas.types import NodeName

NAME = PluginName("RemoveDuplicates")


@dataclass(frozen=True, slots=True)
class RemoveDuplicatesArgs:
    exclude_owner_kinds: tuple[str, ...] = ()
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> RemoveDuplicatesArgs:
    return RemoveDuplicatesArgs(
        exclude_owner_kinds=r.strings("excludeOwnerKinds"), namespaces=r.namespaces()
    )


def run(args: RemoveDuplicatesArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    groups: dict[tuple[str, str, str], list[Pod]] = {}
    for pod in state.running_in_scope():
        owner = pod.controller
        if owner is None or owner.kind in args.exclude_owner_kinds:
            continue
        groups.setdefault(owner_key(pod), []).append(pod)
    for key, pods in sorted(groups.items()):
        if len(pods) < 2:
            continue
        sample = pods[0]
        feasible = [
            n
            for n in state.ready_nodes
            if not n.unschedulable
            and matches_node_selection(sample, n)
            and untolerated_taint(sample, n.taints) is None
        ]
        share = math.ceil(len(pods) / max(1, len(feasible)))
        by_node: dict[NodeName, list[Pod]] = {}
        for pod in pods:
            if pod.node_name is not None:
                by_node.setdefault(pod.node_name, []).append(pod)
        for node, here in sorted(by_node.items()):
            if len(here) <= share:
                continue
            removable = [p for p in here if evictor.evictable(p, namespaces=args.namespaces)]
            # Keep the ones evicted last in the usual order; the excess goes first.
            for pod in sort_candidates(removable)[: len(here) - share]:
                evictor.evict(
                    pod,
                    strategy=NAME,
                    reason=f"{len(here)} pods of {key[1]}/{key[2]} on {node}, even share {share}",
                )
                if evictor.stopped:
                    return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.BALANCE}),
    args_type=RemoveDuplicatesArgs,
    parse_args=parse_args,
    run=run,
)
