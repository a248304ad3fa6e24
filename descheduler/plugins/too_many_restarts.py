"""RemovePodsHavingTooManyRestarts: evict pods restarted at least `podRestartThreshold` times
(init containers counted with `includingInitContainers`), as upstream does."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from tas.cluster.model import Pod

NAME = PluginName("RemovePodsHavingTooManyRestarts")


@dataclass(frozen=True, slots=True)
class TooManyRestartsArgs:
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> TooManyRestartsArgs:
    threshold = r.integer("podRestartThreshold", None, minimum=1)
    if threshold is None and r.raw.get("podRestartThreshold") is None:
        r.problem(r.at("podRestartThreshold"), "is required")
    return TooManyRestartsArgs(
        pod_restart_threshold=threshold or 1,
        including_init_containers=r.boolean("includingInitContainers", False),
        namespaces=r.namespaces(),
    )


def restarts(pod: Pod, *, including_init_containers: bool) -> int:
    extra = pod.init_container_restarts if including_init_containers else 0
    return pod.container_restarts + extra


def run(args: TooManyRestartsArgs, context: PluginContext) -> None:
    evictor = context.evictor
    for pod in sort_candidates(evictor.state.running_in_scope()):
        count = restarts(pod, including_init_containers=args.including_init_containers)
        if count < args.pod_restart_threshold:
            continue
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        evictor.evict(
            pod,
            strategy=NAME,
            reason=f"{count} restarts, threshold {args.pod_restart_threshold}",
        )
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=TooManyRestartsArgs,
    parse_args=parse_args,
    run=run,
)
