"""PodLifeTime: evict pods older than `maxPodLifeTimeSeconds`, oldest first."""

from __future__ import annotations

from descheduler.config import PodLifeTimeArgs
from descheduler.evictor import Evictor

STRATEGY = "PodLifeTime"


def run(args: PodLifeTimeArgs, evictor: Evictor) -> None:
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
            strategy=STRATEGY,
            reason=f"age {age:.0f}s exceeds maxPodLifeTimeSeconds {args.max_pod_life_time_seconds}",
        )
        if evictor.stopped:
            return
