"""RemovePodsViolatingNodeTaints: evict pods from nodes with NoSchedule taints they do not
tolerate (PreferNoSchedule too when `includePreferNoSchedule`); `excludedTaints` and
`includedTaints` name taints as `key` or `key=value`."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Taint, TaintEffect

NAME = PluginName("RemovePodsViolatingNodeTaints")


@dataclass(frozen=True, slots=True)
class NodeTaintsArgs:
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()
    included_taints: tuple[str, ...] = ()
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> NodeTaintsArgs:
    return NodeTaintsArgs(
        include_prefer_no_schedule=r.boolean("includePreferNoSchedule", False),
        excluded_taints=r.strings("excludedTaints"),
        included_taints=r.strings("includedTaints"),
        namespaces=r.namespaces(),
    )


def _named(taint: Taint, names: tuple[str, ...]) -> bool:
    return taint.key in names or f"{taint.key}={taint.value}" in names


def relevant(taint: Taint, args: NodeTaintsArgs) -> bool:
    if taint.effect is TaintEffect.PREFER_NO_SCHEDULE and not args.include_prefer_no_schedule:
        return False
    if taint.effect is TaintEffect.NO_EXECUTE:
        return False  # the kubelet evicts for NoExecute taints itself
    if _named(taint, args.excluded_taints):
        return False
    return not args.included_taints or _named(taint, args.included_taints)


def run(args: NodeTaintsArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    for pod in sort_candidates(state.running_in_scope()):
        if pod.node_name is None or not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        node = state.nodes[pod.node_name]
        for taint in node.taints:
            if relevant(taint, args) and not any(t.tolerates(taint) for t in pod.tolerations):
                evictor.evict(
                    pod,
                    strategy=NAME,
                    reason=f"taint {taint.key}={taint.value}:{taint.effect} on {node.name} "
                    "is not tolerated",
                )
                break
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=NodeTaintsArgs,
    parse_args=parse_args,
    run=run,
)
