"""PodLifeTime: evict pods older than `maxPodLifeTimeSeconds`, oldest first."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName

NAME = PluginName("PodLifeTime")


@dataclass(frozen=True, slots=True)
class PodLifeTimeArgs:
    max_pod_life_time_seconds: int = 0
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> PodLifeTimeArgs:
    seconds = r.integer("maxPodLifeTimeSeconds", None, minimum=1)
    if seconds is None and r.raw.get("maxPodLifeTimeSeconds") is None:
        r.problem(r.at("maxPodLifeTimeSeconds"), "is required")
    return PodLifeTimeArgs(max_pod_life_time_seconds=seconds or 1, namespaces=r.namespaces())


def run(args: PodLifeTimeArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    aged = [
        ((state.now - pod.creation_timestamp).total_seconds(), pod)
        for pod in state.running_in_scope()
        if pod.creation_timestamp is not None
    ]
    aged.sort(key=lambda item: -item[0])
    for age, pod in aged:
        if age <= args.max_pod_life_time_seconds:
            break
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        evictor.evict(
            pod,
            strategy=NAME,
            reason=f"age {age:.0f}s exceeds maxPodLifeTimeSeconds {args.max_pod_life_time_seconds}",
        )
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=PodLifeTimeArgs,
    parse_args=parse_args,
    run=run,
)
