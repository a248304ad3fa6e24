"""RemovePodsViolatingNodeTaints: evict pods from nodes with NoSchedule taints they do not
tolerate (PreferNoSchedule too when `includePreferNoSchedule`); `excludedTaints` and
`includedTaints` name taints as `key` or `key=value`. As upstream: node by node, NoExecute
taints are left to the kubelet."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import Plugin, PluginContext, PluginName
from tas.cluster.model import Node, Pod, Taint, TaintEffect

NAME = PluginName("RemovePodsViolatingNodeTaints")


@dataclass(frozen=True, slots=True)
class NodeTaintsArgs:
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()
    #: None: every taint counts; a tuple: only those named.
    included_taints: tuple[str, ...] | None = None
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> NodeTaintsArgs:
    excluded = r.strings("excludedTaints")
    included = r.strings("includedTaints") if r.has("includedTaints") else None
    if excluded and included:
        r.problem(r.path, "give includedTaints or excludedTaints, not both")
    return NodeTaintsArgs(
        include_prefer_no_schedule=r.boolean("includePreferNoSchedule", False),
        excluded_taints=excluded,
        included_taints=included,
        pods=r.pod_selection(),
    )


def _named(taint: Taint, names: tuple[str, ...]) -> bool:
    return taint.key in names or (bool(taint.value) and f"{taint.key}={taint.value}" in names)


def relevant(taint: Taint, args: NodeTaintsArgs) -> bool:
    effects = {TaintEffect.NO_SCHEDULE}
    if args.include_prefer_no_schedule:
        effects.add(TaintEffect.PREFER_NO_SCHEDULE)
    if taint.effect not in effects or _named(taint, args.excluded_taints):
        return False
    return args.included_taints is None or _named(taint, args.included_taints)


def _candidates(
    args: NodeTaintsArgs, node: Node, context: PluginContext
) -> Iterator[tuple[Pod, str]]:
    taints = [t for t in node.taints if relevant(t, args)]
    if not taints:
        return
    for pod in context.state.pods_on_ready_node(node.name):
        if not context.selected(pod, args.pods) or not context.evictor.filter(pod):
            continue
        if not context.evictor.pre_eviction_filter(pod):
            continue
        untolerated = next(
            (t for t in taints if not any(x.tolerates(t) for x in pod.tolerations)), None
        )
        if untolerated is not None:
            yield (
                pod,
                (
                    f"taint {untolerated.key}={untolerated.value}:{untolerated.effect} on "
                    f"{node.name} is not tolerated"
                ),
            )


PLUGIN = Plugin.node_by_node(NAME, args=(NodeTaintsArgs, parse_args), candidates=_candidates)
