"""RemovePodsHavingTooManyRestarts: evict pods restarted at least `podRestartThreshold` times
(init containers counted with `includingInitContainers`), optionally only pods in some
`states` (`Running`, or containers waiting in `CrashLoopBackOff`), as upstream does: node by
node, most restarted first."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import Plugin, PluginContext, PluginName
from tas.cluster.model import Node, Pod

NAME = PluginName("RemovePodsHavingTooManyRestarts")
STATES = ("CrashLoopBackOff", "Running")


@dataclass(frozen=True, slots=True)
class TooManyRestartsArgs:
    pod_restart_threshold: int = 1
    including_init_containers: bool = False
    states: frozenset[str] = frozenset()
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> TooManyRestartsArgs:
    threshold = r.integer("podRestartThreshold", None, minimum=1)
    if threshold is None and r.raw.get("podRestartThreshold") is None:
        r.problem(r.at("podRestartThreshold"), "is required (at least 1)")
    states = r.strings_of("states", STATES, what="state")
    return TooManyRestartsArgs(
        pod_restart_threshold=threshold or 1,
        including_init_containers=r.boolean("includingInitContainers", False),
        states=frozenset(states),
        pods=r.pod_selection(),
    )


def restarts(pod: Pod, *, including_init_containers: bool) -> int:
    extra = pod.init_container_restarts if including_init_containers else 0
    return pod.container_restarts + extra


def in_states(pod: Pod, args: TooManyRestartsArgs) -> bool:
    if not args.states or pod.phase in args.states:
        return True
    statuses = pod.container_statuses
    if args.including_init_containers:
        statuses = (*statuses, *pod.init_container_statuses)
    return any(s.waiting_reason in args.states for s in statuses)


def _candidates(
    args: TooManyRestartsArgs, node: Node, context: PluginContext
) -> list[tuple[Pod, str]]:
    """The node's pods restarted too often, most restarted first."""
    found = []
    for pod in context.state.pods_on_ready_node(node.name, include_finished=True):
        count = restarts(pod, including_init_containers=args.including_init_containers)
        if count < args.pod_restart_threshold or not in_states(pod, args):
            continue
        if not context.selected(pod, args.pods) or not context.evictor.filter(pod):
            continue
        if context.evictor.pre_eviction_filter(pod):
            found.append((count, pod))
    found.sort(key=lambda item: -item[0])
    threshold = args.pod_restart_threshold
    return [(pod, f"{count} restarts, threshold {threshold}") for count, pod in found]


PLUGIN = Plugin.node_by_node(NAME, args=(TooManyRestartsArgs, parse_args), candidates=_candidates)
