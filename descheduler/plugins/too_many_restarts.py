"""RemovePodsHavingTooManyRestarts: evict pods restarted at least `podRestartThreshold` times
(init containers counted with `includingInitContainers`), optionally only pods in some
`states` (`Running`, or containers waiting in `CrashLoopBackOff`), as upstream does: node by
node, most restarted first."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Pod

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
    states = r.strings("states")
    for index, state in enumerate(states):
        if state not in STATES:
            r.problem(
                f"{r.at('states')}[{index}]",
                f"unknown state {state!r}; known: " + ", ".join(STATES),
            )
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


def run(args: TooManyRestartsArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    for node in state.ready_nodes:
        found = []
        for pod in state.pods_on_ready_node(node.name, include_finished=True):
            count = restarts(pod, including_init_containers=args.including_init_containers)
            if count < args.pod_restart_threshold or not in_states(pod, args):
                continue
            if (
                evictor.selected(pod, args.pods)
                and evictor.evictable(pod)
                and evictor.pre_eviction_ok(pod)
            ):
                found.append((count, pod))
        found.sort(key=lambda item: -item[0])
        for count, pod in found:
            reason = f"{count} restarts, threshold {args.pod_restart_threshold}"
            if evictor.evict(pod, strategy=NAME, reason=reason):
                continue
            if evictor.stopped:
                return
            if evictor.node_exhausted(node.name):
                break


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=TooManyRestartsArgs,
    parse_args=parse_args,
    run=run,
)
