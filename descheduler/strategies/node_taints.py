"""RemovePodsViolatingNodeTaints: evict pods from nodes with NoSchedule taints they do not
tolerate (PreferNoSchedule too when `includePreferNoSchedule`); `excludedTaints` and
`includedTaints` name taints as `key` or `key=value`."""

from __future__ import annotations

from descheduler.config import NodeTaintsArgs
from descheduler.evictor import Evictor, sort_candidates
from tas.cluster.model import Taint, TaintEffect

STRATEGY = "RemovePodsViolatingNodeTaints"


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


def run(args: NodeTaintsArgs, evictor: Evictor) -> None:
    state = evictor.state
    for pod in sort_candidates(state.running_in_scope()):
        if pod.node_name is None or not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        node = state.nodes[pod.node_name]
        for taint in node.taints:
            if relevant(taint, args) and not any(t.tolerates(taint) for t in pod.tolerations):
                evictor.evict(
                    pod,
                    strategy=STRATEGY,
                    reason=f"taint {taint.key}={taint.value}:{taint.effect} on {node.name} "
                    "is not tolerated",
                )
                break
        if evictor.stopped:
            return
