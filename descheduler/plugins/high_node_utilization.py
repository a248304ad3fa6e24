"""HighNodeUtilization, as upstream: empty the least used nodes so the cluster autoscaler can
remove them. A node is underutilized when every thresholded resource (cpu, memory, pods or an
extended resource, on requests) is at or below `thresholds`; pods leave the least used of them
first, for the other schedulable nodes, while those have room. `evictionModes:
[OnlyThresholdingResources]` moves only pods that request a thresholded resource;
`evictableNamespaces.exclude` keeps namespaces' pods where they are."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from descheduler.utilization import (
    BASIC,
    below,
    capacity_of,
    evict_from_sources,
    group_nodes,
    log,
    parse_evictable_namespaces,
    percentages,
    report_classes,
    requests_snapshot,
)
from tas.cluster.model import Node, Pod

NAME = PluginName("HighNodeUtilization")


class EvictionMode(enum.StrEnum):
    ONLY_THRESHOLDING_RESOURCES = "OnlyThresholdingResources"


@dataclass(frozen=True, slots=True)
class HighNodeUtilizationArgs:
    thresholds: dict[str, float] = field(default_factory=dict)
    number_of_nodes: int = 0
    eviction_modes: frozenset[EvictionMode] = frozenset()
    evictable_namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)

    @property
    def resources(self) -> tuple[str, ...]:
        return (*self.thresholds, *(r for r in BASIC if r not in self.thresholds))


def parse_args(r: FieldReader) -> HighNodeUtilizationArgs:
    thresholds = r.percentages("thresholds")
    if not thresholds:
        r.problem(r.at("thresholds"), "no resource threshold is configured")
    modes = r.strings_of("evictionModes", tuple(EvictionMode), what="mode")
    return HighNodeUtilizationArgs(
        thresholds=thresholds,
        number_of_nodes=r.integer("numberOfNodes", 0) or 0,
        eviction_modes=frozenset(EvictionMode(m) for m in modes if m in set(EvictionMode)),
        evictable_namespaces=parse_evictable_namespaces(r),
    )


def run(args: HighNodeUtilizationArgs, context: PluginContext) -> None:
    state = context.state
    nodes = state.ready_nodes
    pods = {n.name: state.pods_on_ready_node(n.name) for n in nodes}
    snapshot = requests_snapshot(nodes, pods, args.resources)
    full = dict.fromkeys(args.thresholds, 100.0)
    percent = {n.name: percentages(snapshot.nodes[n.name], capacity_of(n)) for n in nodes}

    def category(node: Node, usage: Mapping[str, float]) -> str:
        if below(usage, args.thresholds):
            return "underutilized"
        return "" if node.unschedulable else "overutilized"

    under, targets = group_nodes(nodes, snapshot, percent, category, full, args.resources)
    log.info('"Number of underutilized nodes" totalNumber=%d', len(under))
    if not report_classes(
        context.classified,
        usages=percent,
        low=args.thresholds,
        high=full,
        under=under,
        over=[],
        destinations=len(targets),
        number_of_nodes=args.number_of_nodes,
        no_destination="No node is available to schedule the pods, nothing to do here",
    ):
        return
    under.sort(key=lambda i: (i.total, i.node.name))
    thresholded = set(args.thresholds)
    only_thresholding = EvictionMode.ONLY_THRESHOLDING_RESOURCES in args.eviction_modes

    def removable(pod: Pod) -> bool:
        if only_thresholding and not pod.requested_resources & thresholded:
            return False
        return context.evictor.filter(pod)

    evict_from_sources(
        strategy=NAME,
        context=context,
        sources=under,
        destinations=targets,
        resources=args.resources,
        snapshot=snapshot,
        removable=removable,
        excluded=args.evictable_namespaces,
        per_node_limit=None,
        reason=lambda info: f"node {info.node.name} is underutilized: emptying it",
    )


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE, NAME, args=(HighNodeUtilizationArgs, parse_args), run=run
)
